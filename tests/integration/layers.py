#!/usr/bin/env python3
"""The layers rule (README, Layout): lib/ depends on nothing of ours;
collectors/, kube/, storage/, web/ and remote/ depend only on lib/ (and on their
own folder); daemon/ wires them. Checked twice: in the #include lines of the
sources, and in the symbols the built objects need from each other
(nm -u), which must also form no cycle."""
import os
import re
import subprocess
import sys

SRC = os.environ["top_srcdir"]
BUILD = os.environ.get("top_builddir", SRC)
LAYERS = ["lib", "collectors", "kube", "storage", "web", "remote", "daemon"]
ALLOWED = {
    "lib": {"lib"},
    "collectors": {"lib", "collectors"},
    "kube": {"lib", "kube"},
    "storage": {"lib", "storage"},
    "web": {"lib", "web"},
    "remote": {"lib", "remote"},
    "daemon": set(LAYERS),
}
problems = []

include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for layer in LAYERS:
    folder = os.path.join(SRC, layer)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            text = f.read()
        for target in include.findall(text):
            if target == "config.h":
                continue
            top = target.split("/")[0]
            if top not in ALLOWED[layer]:
                problems.append(f"{layer}/{name} includes {target}")

# Which object defines each symbol, and which it needs.
objects = {}
for layer in LAYERS:
    folder = os.path.join(BUILD, layer)
    if not os.path.isdir(folder):
        continue
    for name in sorted(os.listdir(folder)):
        if name.endswith(".o"):
            objects[f"{layer}/{name}"] = os.path.join(folder, name)
if not objects:
    sys.exit(f"no objects under {BUILD}: build first")


def nm(path, flag):
    out = subprocess.run(["nm", flag, path], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


defined_by = {}
for obj, path in objects.items():
    for sym in nm(path, "--defined-only"):
        defined_by.setdefault(sym, obj)
needs = {}
for obj, path in objects.items():
    deps = set()
    for sym in nm(path, "-u"):
        other = defined_by.get(sym)
        if other and other != obj:
            deps.add(other)
            layer, other_layer = obj.split("/")[0], other.split("/")[0]
            if other_layer not in ALLOWED[layer]:
                problems.append(f"{obj} needs {sym} from {other}")
    needs[obj] = deps

# Cycles among objects: depth-first search, reporting each cycle once.
state, stack = {}, []


def visit(obj):
    state[obj] = "open"
    stack.append(obj)
    for dep in sorted(needs[obj]):
        if state.get(dep) == "open":
            cycle = stack[stack.index(dep):] + [dep]
            problems.append("link cycle: " + " -> ".join(cycle))
        elif dep not in state:
            visit(dep)
    stack.pop()
    state[obj] = "done"


for obj in sorted(needs):
    if obj not in state:
        visit(obj)

# TAP, as make check's driver reads it.
print("1..1")
for problem in problems:
    print("# " + problem)
verdict = "not ok" if problems else "ok"
print(f"{verdict} 1 - layers: {len(objects)} objects, includes and symbols follow lib <- collectors/kube/storage/web/remote <- daemon")
