#!/usr/bin/env python3
"""Reads a Grafana dashboard (argv[1]) and prints its PromQL queries with
Grafana's variables replaced (to argv[2], as a Prometheus rules file that
promtool can check) and the metric names they use, one a line, on stdout.
Panel targets and the query variables' label_values(...) both count."""
import json
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan", "atan2"}


def queries(dash):
    for panel in dash.get("panels", []):
        for p in [panel] + panel.get("panels", []):
            for t in p.get("targets", []):
                if t.get("expr"):
                    yield t["expr"]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        m = re.fullmatch(r"\s*label_values\(\s*(.*?)\s*,\s*[a-zA-Z_]\w*\s*\)\s*", q)
        if m:
            yield m.group(1)
        elif re.fullmatch(r"\s*query_result\((.*)\)\s*", q):
            yield re.fullmatch(r"\s*query_result\((.*)\)\s*", q).group(1)
        elif q.strip():
            sys.exit("unsupported variable query: " + q)


def expand(expr):
    return (expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
            .replace("$__range", "1h").replace("$instance", ".*").replace("$ultraserver", ".*"))


def metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # string literals
    e = re.sub(r"\{[^}]*\}", " ", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                      # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w$.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


dash = json.load(open(sys.argv[1]))
exprs = list(queries(dash))
if not exprs:
    sys.exit("no queries in the dashboard")
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write("      - record: dashboard_query_%d\n        expr: %s\n" % (i, json.dumps(expand(e))))
names = set()
for e in exprs:
    names |= metric_names(e)
print("\n".join(sorted(names)))
