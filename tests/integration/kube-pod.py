#!/usr/bin/python3
"""Runs a pod the way the kubelet and a container runtime would, for the
tests: each container in a root of its own (a tmpfs holding the image,
read only when the manifest says so), with the volumes the manifest names
mounted from a stand-in node's file system, as the user, groups and
capabilities its security context gives, with no_new_privs; init
containers first, each to completion; then the probes. Run as root, in
private mount and network namespaces (tests/integration/lib.sh,
enter_mount_namespace net); never on a real system's own paths.

Usage:
  kube-pod.py image CONTAINERFILE IMAGE WORK
      a pod of the image alone: its ENTRYPOINT, CMD and USER, probed on
      /healthz at the port it EXPOSEs
  kube-pod.py pod CONTAINERFILE IMAGE WORK MANIFEST NODE
      the pod of the DaemonSet in MANIFEST, on the node whose root is NODE

The image is Debian's /usr and /etc (this host's: Debian 12, with the
packages the Containerfile installs) plus IMAGE, a `make install DESTDIR`
tree under the build's prefix, /usr/local; the Containerfile's final stage
gives the image's entrypoint, command, user and the directories it makes
with `install -d` (--map-path OLD=NEW moves one, for a build whose prefix
differs from the Containerfile's). When every probe passes, WORK/ready
holds the probed port; on SIGTERM the containers get SIGTERM, as at a pod's
deletion, and the exit status is 0 when each probed container exited 0.
Logs: WORK/NAME.log per container."""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import yaml

SLOW = int(os.environ.get("SLOW", "1"))
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What containerd and CRI-O grant a container unless it drops them.
DEFAULT_CAPS = {"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
                "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}
DEVICES = ["null", "zero", "full", "random", "urandom", "tty"]

mounted = []  # mount points, unmounted in reverse at the end


def fail(message):
    sys.exit("kube-pod: " + message)


def run(*argv):
    subprocess.run(argv, check=True)


def bind(source, target, read_only):
    run("mount", "--bind", source, target)
    mounted.append(target)
    if read_only:
        run("mount", "-o", "remount,bind,ro", target)


def image_config(containerfile, path_map):
    """The final stage's ENTRYPOINT, CMD, USER, EXPOSE and install -d lines."""
    with open(containerfile, encoding="utf-8") as f:
        text = re.sub(r"\\\n", " ", f.read())
    stage = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last_from = max(i for i, line in enumerate(stage) if line.upper().startswith("FROM "))
    config = {"entrypoint": [], "cmd": [], "user": "0", "ports": [], "dirs": []}
    for line in stage[last_from + 1:]:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word in ("ENTRYPOINT", "CMD"):
            config[word.lower()] = json.loads(rest)
        elif word == "USER":
            config["user"] = rest.strip()
        elif word == "EXPOSE":
            config["ports"] = [int(p.split("/")[0]) for p in rest.split()]
        elif word == "RUN":
            for command in re.split(r"&&|;", rest):
                argv = shlex.split(command)
                if argv[:2] == ["install", "-d"]:
                    opts = dict(zip(argv[2:-1:2], argv[3:-1:2]))
                    path = path_map.get(argv[-1], argv[-1])
                    config["dirs"].append((path, int(opts.get("-o", 0)), int(opts.get("-g", 0)),
                                           int(opts.get("-m", "0755"), 8)))
    return config


def make_dir(path, uid, gid, mode):
    os.makedirs(path, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def make_root(work, name, image, config, mounts, read_only):
    """A container's root: a tmpfs with the image, then its volumes."""
    root = os.path.join(work, "root-" + name)
    os.makedirs(root)
    run("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", root)
    mounted.append(root)
    for d in ("usr", "etc", "var/lib", "run", "proc", "sys", "dev", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    for link in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + link, os.path.join(root, link))
    bind("/usr", os.path.join(root, "usr"), True)
    bind("/etc", os.path.join(root, "etc"), True)
    bind(os.path.join(image, "usr/local"), os.path.join(root, "usr/local"), True)
    for path, uid, gid, mode in config["dirs"]:
        if not path.startswith("/usr/local/"):
            make_dir(root + path, uid, gid, mode)
    run("mount", "-t", "proc", "proc", os.path.join(root, "proc"))
    mounted.append(os.path.join(root, "proc"))
    # Every container has sysfs, read-only, as runc mounts it.
    run("mount", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", os.path.join(root, "sys"))
    mounted.append(os.path.join(root, "sys"))
    run("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", os.path.join(root, "dev"))
    mounted.append(os.path.join(root, "dev"))
    for device in DEVICES:
        target = os.path.join(root, "dev", device)
        open(target, "w").close()
        bind("/dev/" + device, target, False)
    for source, target, ro in mounts:
        target = root + target
        os.makedirs(target, exist_ok=True)
        bind(source, target, ro)
    if read_only:
        run("mount", "-o", "remount,ro", root)
    return root


def volume_sources(pod, node, work, fs_group):
    """Each volume's directory on the node, made as the kubelet makes it."""
    sources = {}
    for v in pod.get("volumes", []):
        if "hostPath" in v:
            path, kind = node + v["hostPath"]["path"], v["hostPath"].get("type", "")
            if kind == "DirectoryOrCreate" and not os.path.exists(path):
                # The kubelet's own: root's, mode 0755, whatever fsGroup says.
                os.makedirs(path, mode=0o755)
                os.chmod(path, 0o755)
            elif kind in ("Directory", "DirectoryOrCreate") and not os.path.isdir(path):
                fail("hostPath %s: no directory %s on the node" % (v["name"], v["hostPath"]["path"]))
            elif kind not in ("Directory", "DirectoryOrCreate"):
                fail("hostPath %s: type %r is not one this runner knows" % (v["name"], kind))
            sources[v["name"]] = path
        elif "imageDir" in v:
            # A new named volume of podman or docker: the owner and mode of
            # the image's directory where it is mounted.
            path = os.path.join(work, "volume-" + v["name"])
            make_dir(path, *v["imageDir"])
            sources[v["name"]] = path
        elif "emptyDir" in v:
            path = os.path.join(work, "volume-" + v["name"])
            os.makedirs(path)
            if v["emptyDir"].get("medium") == "Memory":
                run("mount", "-t", "tmpfs", "-o", "mode=0777", "tmpfs", path)
                mounted.append(path)
            # Mode 0777; with fsGroup, the group's and set-group-ID.
            os.chmod(path, 0o777)
            if fs_group is not None:
                os.chown(path, 0, fs_group)
                os.chmod(path, 0o2777)
            sources[v["name"]] = path
        else:
            fail("volume %s: only hostPath and emptyDir are known here" % v["name"])
    return sources


def identity(container, pod_context, config):
    """uid, gid, supplementary groups, capabilities and no_new_privs."""
    sc = container.get("securityContext", {})
    user, _, group = config["user"].partition(":")

    def setting(key, default):
        return sc.get(key, pod_context.get(key, default))

    uid = int(setting("runAsUser", int(user)))
    gid = int(setting("runAsGroup", int(group or 0)))
    if setting("runAsNonRoot", False) and uid == 0:
        fail("container %s: runAsNonRoot, but it would run as root" % container["name"])
    groups = list(pod_context.get("supplementalGroups", []))
    if pod_context.get("fsGroup") is not None:
        groups.append(pod_context["fsGroup"])
    caps = sc.get("capabilities", {})
    kept = set() if "ALL" in caps.get("drop", []) else DEFAULT_CAPS - set(caps.get("drop", []))
    kept |= set(caps.get("add", []))
    return uid, gid, groups, sorted(kept), not sc.get("allowPrivilegeEscalation", True)


def start(container, root, who, log):
    uid, gid, groups, caps, no_new_privs = who
    argv = ["setpriv", "--reuid", str(uid), "--regid", str(gid)]
    argv += ["--groups", ",".join(map(str, groups))] if groups else ["--clear-groups"]
    argv += ["--bounding-set", "".join(["-all"] + [",+" + c.lower() for c in caps]), "--inh-caps", "-all"]
    if no_new_privs:
        argv.append("--no-new-privs")
    return subprocess.Popen(["chroot", root] + argv + ["--"] + container["argv"],
                            env={"PATH": PATH, "HOME": "/"}, stdout=log, stderr=subprocess.STDOUT)


def probe(port, path, process, seconds):
    """Waits until GET path answers 2xx or 3xx; fails when the process exits."""
    url = "http://127.0.0.1:%d%s" % (port, path)
    end = time.monotonic() + seconds * SLOW
    while time.monotonic() < end:
        if process.poll() is not None:
            return "exited with status %d" % process.returncode
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if 200 <= answer.status < 400:
                    return None
        except OSError:
            pass
        time.sleep(0.1)
    return "no answer on %s within %d s" % (url, seconds * SLOW)


def main():
    args = sys.argv[1:]
    path_map = {}
    while len(args) >= 2 and args[0] == "--map-path":
        old, _, new = args[1].partition("=")
        path_map[old] = new
        args = args[2:]
    mode, containerfile, image, work = args[:4]
    config = image_config(containerfile, path_map)
    # The image's build steps that make directories (RUN install -d); one
    # under the build's prefix is made in its tree.
    for path, uid, gid, dir_mode in config["dirs"]:
        if path.startswith("/usr/local/"):
            make_dir(image + path, uid, gid, dir_mode)
    if mode == "image":
        # podman run --read-only -v NAME:DIR ... for each directory the
        # image makes for its data; --read-only comes with a tmpfs on /tmp.
        volumes = [{"name": "data%d" % i, "imageDir": d[1:]} for i, d in enumerate(config["dirs"])]
        mounts = [{"name": v["name"], "mountPath": d[0]} for v, d in zip(volumes, config["dirs"])]
        volumes.append({"name": "tmp", "emptyDir": {"medium": "Memory"}})
        mounts.append({"name": "tmp", "mountPath": "/tmp"})
        pod = {"volumes": volumes,
               "containers": [{"name": "image", "securityContext": {"readOnlyRootFilesystem": True},
                               "volumeMounts": mounts}]}
        node = work
        probed = {"image": (config["ports"][0], "/healthz", 20)}
    elif mode == "pod":
        with open(args[4], encoding="utf-8") as f:
            daemonset = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "DaemonSet"][0]
        pod, node = daemonset["spec"]["template"]["spec"], args[5]
        probed = {}
        for c in pod["containers"]:
            p = c.get("startupProbe") or c.get("readinessProbe")
            if p:
                ports = {port["name"]: port["containerPort"] for port in c.get("ports", [])}
                port = p["httpGet"]["port"]
                seconds = p.get("periodSeconds", 10) * p.get("failureThreshold", 3)
                probed[c["name"]] = (ports.get(port, port), p["httpGet"]["path"], seconds)
    else:
        fail("unknown mode " + mode)

    pod_context = pod.get("securityContext", {})
    sources = volume_sources(pod, node, work, pod_context.get("fsGroup")) if node else {}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    running = []
    status = 0
    try:
        for c in pod.get("initContainers", []) + pod["containers"]:
            # Kubernetes: command replaces the ENTRYPOINT, args the CMD.
            c["argv"] = c.get("command", config["entrypoint"]) + c.get("args", [] if "command" in c else config["cmd"])
            mounts = [(sources[m["name"]], m["mountPath"], m.get("readOnly", False)) for m in c.get("volumeMounts", [])]
            read_only = c.get("securityContext", {}).get("readOnlyRootFilesystem", False)
            root = make_root(work, c["name"], image, config, mounts, read_only)
            log = open(os.path.join(work, c["name"] + ".log"), "w")
            process = start(c, root, identity(c, pod_context, config), log)
            if c in pod.get("initContainers", []):
                if process.wait(timeout=60 * SLOW) != 0:
                    fail("init container %s exited with status %d: %s" % (
                        c["name"], process.returncode, open(log.name).read()))
                continue
            running.append((c["name"], process))
        for name, process in running:
            if name in probed:
                why = probe(*probed[name][:2], process, probed[name][2])
                if why:
                    fail("container %s: %s: %s" % (name, why, open(os.path.join(work, name + ".log")).read()))
        with open(os.path.join(work, "ready.tmp"), "w") as f:
            f.write("%d\n" % next(iter(probed.values()))[0])
        os.rename(os.path.join(work, "ready.tmp"), os.path.join(work, "ready"))
        stop.wait()
    finally:
        for name, process in reversed(running):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, process in reversed(running):
            try:
                process.wait(timeout=30 * SLOW)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            print("container %s exited with status %d" % (name, process.returncode))
            if name in probed and process.returncode != 0:
                status = 1
        for target in reversed(mounted):
            subprocess.run(["umount", "-l", target], check=False)
    sys.exit(status)


main()
