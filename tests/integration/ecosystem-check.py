#!/usr/bin/env python3
"""AWS's neuron-monitor dashboard and Datadog's aws_neuron check against neurond.

Run by ecosystem.sh, which starts a neurond per configuration and a real
Prometheus scraping them all (one job each), holds every neurond's clock and
runs their ticks a scrape at a time, so that the scrapes go on meanwhile of
one held tick. For every job this evaluates
every query of AWS's Grafana dashboard through Prometheus's HTTP API, at the
time of the job's latest scrape, narrowed to the job as the dashboard's
ad-hoc filter would narrow it, and checks that each returns data and that
each value agrees with what neurond's own REST API says for the same tick
(instant values) or the same ticks (rates). Then it checks that every name
of Datadog's metric map that has a source in neurond is served, and what
the CloudWatch agent reads.

    ecosystem-check.py PROMETHEUS_URL JOB=NEUROND_URL [JOB=NEUROND_URL ...]
"""

import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

# The 21 queries of AWS's neuron-monitor dashboard, in panel order, copied
# from aws-neuron/aws-neuron-sdk src/examples/neuron-monitor/neuron-monitor-grafana.json
# at commit 81ce03ae261e12925e53437a0f690478e6366155 (last changed in f5d2d79a).
DASHBOARD = [
    ("Instance Info", "instance_info"),
    ("Instance Count", "count(instance_info)"),
    ("vCPU Count", "sum (system_vcpu_count)"),
    ("vCPU Utilization", "avg(sum by (instance_id) (system_vcpu_usage_ratio))"),
    ("Host Memory Usage", "avg(system_memory_used_bytes / system_memory_total_bytes)"),
    ("NeuronCores in Use", "count(neuroncore_utilization_ratio > 0)"),
    ("NeuronCore Utilization", "avg(neuroncore_utilization_ratio)"),
    ("Execution Success Rate", 'sum(rate(execution_status_total{status_type="completed"}[1m]))'),
    ("Execution Error Rate", 'sum(rate(execution_status_total{status_type!="completed"}[1m]))'),
    ("Execution Status Rates", 'sum(rate(execution_status_total{status_type="completed"}[1m]))'),
    ("Execution Status Rates", 'sum(rate(execution_status_total{status_type!="completed"}[1m]))'),
    ("Execution Latency", "avg by (percentile) (execution_latency_seconds)"),
    ("NeuronCore Utilization", "avg by (neuroncore) (neuroncore_utilization_ratio)"),
    ("Neuron Runtime vCPU Usage", "avg by (usage_type) (neuron_runtime_vcpu_usage_ratio)"),
    ("Neuron Runtime Used Memory",
     "avg by (memory_location) (sum by (instance_id, memory_location) (neuron_runtime_memory_used_bytes))"),
    ("Host System Utilization", "avg(system_memory_used_bytes / system_memory_total_bytes)"),
    ("Host System Utilization", "avg(sum by (instance_id) (system_vcpu_usage_ratio))"),
    ("Host System Utilization", "avg(neuroncore_utilization_ratio)"),
    ("Host vCPU Usage", "avg by (usage_type) (system_vcpu_usage_ratio)"),
    ("Host Memory Usage", "avg(system_memory_used_bytes / system_memory_total_bytes)"),
    ("Host Memory Usage", "avg(system_memory_used_bytes)"),
]

# Datadog's metric map, copied from DataDog/integrations-core
# aws_neuron/datadog_checks/aws_neuron/metrics.py at commit
# 951b4d9a2c0180f762794f8e486fd21093417dff: the Prometheus names it reads
# (a counter's without _total). The names neurond has no source for are
# listed with the reason; every other one must be served.
DATADOG = [
    "execution_errors_created", "execution_errors", "execution_latency_seconds", "execution_status_created",
    "execution_status", "hardware_ecc_events_created", "hardware_ecc_events", "instance_info", "neuron_hardware_info",
    "neuron_runtime_memory_used_bytes", "neuron_runtime_vcpu_usage_ratio", "neuroncore_memory_usage_constants",
    "neuroncore_memory_usage_model_code", "neuroncore_memory_usage_model_shared_scratchpad",
    "neuroncore_memory_usage_runtime_memory", "neuroncore_memory_usage_tensors", "neuroncore_utilization_ratio",
    "process_cpu_seconds", "process_max_fds", "process_open_fds", "process_resident_memory_bytes",
    "process_start_time_seconds", "process_virtual_memory_bytes", "python_gc_collections",
    "python_gc_objects_collected", "python_gc_objects_uncollectable", "python_info", "system_memory_total_bytes",
    "system_memory_used_bytes", "system_swap_total_bytes", "system_swap_used_bytes", "system_vcpu_count",
    "system_vcpu_usage_ratio",
]
NO_SOURCE = {
    # The Python client's creation time of each of its counters, not a figure of the host.
    "execution_errors_created": "the exporter's own counter creation time",
    "execution_status_created": "the exporter's own counter creation time",
    "hardware_ecc_events_created": "the exporter's own counter creation time",
    # The Python interpreter that runs AWS's exporter; neurond is no Python program.
    "python_gc_collections": "the exporter's Python interpreter",
    "python_gc_objects_collected": "the exporter's Python interpreter",
    "python_gc_objects_uncollectable": "the exporter's Python interpreter",
    "python_info": "the exporter's Python interpreter",
}

METRICS = {
    "instance_info", "system_vcpu_count", "system_vcpu_usage_ratio", "system_memory_used_bytes",
    "system_memory_total_bytes", "neuroncore_utilization_ratio", "execution_status_total",
    "execution_latency_seconds", "neuron_runtime_vcpu_usage_ratio", "neuron_runtime_memory_used_bytes",
}

problems = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        problems.append(what)
    return ok


def get(url, params=None):
    if params:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]


def narrowed(expr, job):
    """The query as the dashboard's ad-hoc filter narrows it: job="..." in every selector."""
    def add(m):
        inner = m.group(2)
        return f'{m.group(1)}{{job="{job}"{"," + inner if inner else ""}}}'
    return re.sub(r"\b(" + "|".join(sorted(METRICS)) + r")\b(?:\{([^}]*)\})?", add, expr)


def close(a, b, rel=1e-6, absolute=1e-9):
    return abs(a - b) <= absolute + rel * max(abs(a), abs(b))


class Job:
    def __init__(self, prom, job, url):
        self.prom, self.job, self.url = prom, job, url.rstrip("/") + "/"
        # The job's latest successful scrape, at the time Prometheus stamped
        # its samples with: the dashboard's instant queries at that time see
        # exactly the exposition neurond served then, and no scrape that
        # Prometheus stores while this runs. (timestamp(up == 1) would be the
        # time of the query, not of the scrape.) A range vector carries each
        # sample's own time.
        for _ in range(30):
            r = get(prom + "api/v1/query", {"query": f'up{{job="{job}"}}[1m]'})["result"]
            ok = [float(t) for t, v in r[0]["values"] if v == "1"] if r else []
            if ok:
                break
            time.sleep(1)
        self.scraped = ok[-1]
        r = self.prom_query(f'neurond_last_poll_timestamp_seconds{{job="{job}"}}')
        # The tick that exposition was of, in neurond's time.
        self.tick = float(r[0]["value"][1])
        # The scrapes of the rate window [at - 1m, at]: when Prometheus
        # scraped, and the tick neurond served then.
        r = self.prom_query(f'neurond_last_poll_timestamp_seconds{{job="{job}"}}[1m]')
        self.scrapes = [(float(t), float(v)) for t, v in r[0]["values"]]
        self.window = [tick for _, tick in self.scrapes]

    def prom_query(self, expr):
        return get(self.prom + "api/v1/query", {"query": expr, "time": f"{self.scraped:.3f}"})["result"]

    def at(self, metric, tick, **labels):
        """neurond's stored values of metric at one tick (seconds): [(labels, value)]."""
        params = {"metric": metric, "start": f"{tick:.3f}", "end": f"{tick:.3f}", "step": "1ms", "agg": "last"}
        params.update(labels)
        return [(s["metric"], float(s["values"][-1][1]))
                for s in get(self.url + "api/v1/query_range", params)["result"] if s["values"]]

    def at_tick(self, metric, **labels):
        return self.at(metric, self.tick, **labels)


def one(result):
    return float(result[0]["value"][1]) if result else None


def by(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def expected(j, expr):
    """What neurond's REST API says each dashboard query should return:
    a number, or a dict by the grouping label."""
    tick = lambda m, **kw: [v for _, v in j.at_tick(m, **kw)]
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    if expr == "instance_info":
        return None  # compared with /api/v1/devices below
    if expr == "count(instance_info)":
        return 1.0
    if expr == "sum (system_vcpu_count)":
        return sum(tick("system_vcpu_count"))
    if expr in ("avg(sum by (instance_id) (system_vcpu_usage_ratio))",):
        return sum(tick("system_vcpu_usage_ratio"))
    if expr == "avg(system_memory_used_bytes / system_memory_total_bytes)":
        return tick("system_memory_used_bytes")[0] / tick("system_memory_total_bytes")[0]
    if expr == "avg(system_memory_used_bytes)":
        return tick("system_memory_used_bytes")[0]
    if expr == "count(neuroncore_utilization_ratio > 0)":
        return float(sum(1 for v in tick("neuroncore_utilization_ratio") if v > 0))
    if expr == "avg(neuroncore_utilization_ratio)":
        return mean(tick("neuroncore_utilization_ratio"))
    if expr == "avg by (neuroncore) (neuroncore_utilization_ratio)":
        return {m["neuroncore"]: v for m, v in j.at_tick("neuroncore_utilization_ratio")}
    if expr == "avg by (percentile) (execution_latency_seconds)":
        groups = {}
        for m, v in j.at_tick("execution_latency_seconds"):
            groups.setdefault(m["percentile"], []).append(v)
        return {k: mean(v) for k, v in groups.items()}
    if expr == "avg by (usage_type) (neuron_runtime_vcpu_usage_ratio)":
        groups = {}
        for m, v in j.at_tick("neuron_runtime_vcpu_usage_ratio"):
            groups.setdefault(m["usage_type"], []).append(v)
        return {k: mean(v) for k, v in groups.items()}
    if expr.startswith("avg by (memory_location)"):
        groups = {}
        for m, v in j.at_tick("neuron_runtime_memory_used_bytes"):
            groups[m["memory_location"]] = groups.get(m["memory_location"], 0) + v
        return groups
    if expr == "avg by (usage_type) (system_vcpu_usage_ratio)":
        return {m["usage_type"]: v for m, v in j.at_tick("system_vcpu_usage_ratio")}
    if "rate(execution_status_total" in expr:
        # rate() of neurond's stored counters at the ticks Prometheus scraped
        # in its window, at the times it scraped them, summed over the series
        # (a runtime that started or exited in the window included, as
        # Prometheus includes it).
        completed = 'status_type="completed"' in expr
        points = {}
        for scraped, tick in j.scrapes:
            for m, v in j.at("execution_status_total", tick):
                points.setdefault(json.dumps(m, sort_keys=True), []).append((scraped, v))
        rates = [prometheus_rate(p, j.scraped - 60, j.scraped) for k, p in points.items()
                 if (json.loads(k).get("status_type") == "completed") == completed]
        return sum(r for r in rates if r is not None)
    raise KeyError(expr)


def prometheus_rate(points, start, end):
    """rate() of one counter's (time, value) points in the window [start, end],
    as Prometheus 2.42 computes it (promql/functions.go, extrapolatedRate):
    the increase, resets counted, extrapolated towards the window's edges."""
    if len(points) < 2:
        return None
    (first_t, first_v), (last_t, last_v) = points[0], points[-1]
    increase = last_v - first_v + sum(prev for (_, prev), (_, cur) in zip(points, points[1:]) if cur < prev)
    sampled = last_t - first_t
    to_start, to_end = first_t - start, end - last_t
    if increase > 0 and first_v >= 0:
        # A counter is not extrapolated to below zero.
        to_start = min(to_start, sampled * first_v / increase)
    average = sampled / (len(points) - 1)
    interval = sampled + (to_start if to_start < average * 1.1 else average / 2)
    interval += to_end if to_end < average * 1.1 else average / 2
    return increase * interval / sampled / (end - start)


def agree(got, want):
    rel, absolute = 1e-6, 1e-9
    if isinstance(want, dict):
        return set(got) == set(want) and all(close(got[k], want[k], rel, absolute) for k in want)
    return got is not None and want is not None and close(got, want, rel, absolute)


def counters(j):
    """The counter samples the rate panels read: in Prometheus's window, the
    first and the last value of each series are neurond's at those ticks."""
    # Prometheus adds job and instance, and with --instance-labels neurond the instance's.
    extra = {"__name__", "job", "instance", "instance_name", "instance_id", "instance_type", "availability_zone",
             "region", "subnet_id"}
    key = lambda m: tuple(sorted((k, v) for k, v in m.items() if k not in extra))
    rest = [{key(m): v for m, v in j.at("execution_status_total", t)} for t in (j.window[0], j.window[-1])]
    series = j.prom_query(f'execution_status_total{{job="{j.job}"}}[1m]')
    full = [s for s in series if len(s["values"]) == len(j.window)]
    wrong = [key(s["metric"]) for s in full
             if float(s["values"][0][1]) != rest[0].get(key(s["metric"]))
             or float(s["values"][-1][1]) != rest[1].get(key(s["metric"]))]
    check(full and not wrong, f"{j.job}: {len(full)} execution_status_total series: first and last samples of the "
          f"rate window are neurond's at those ticks ({len(wrong)} differ)")


def dashboard(j):
    """Every dashboard query for one job."""
    counters(j)
    devices = get(j.url + "api/v1/devices")
    for panel, expr in DASHBOARD:
        result = j.prom_query(narrowed(expr, j.job))
        if not check(len(result) > 0, f"{j.job}: {panel}: {expr} returns data"):
            continue
        if expr == "instance_info":
            ident = devices["instance"]
            labels = result[0]["metric"]
            want = {"instance_id": ident["instance_id"], "instance_type": ident["instance_type"],
                    "availability_zone": ident["availability_zone"], "region": ident["region"],
                    "subnet_id": ident["subnet_id"], "instance_name": ident["instance_name"]}
            check(all(labels.get(k) == v for k, v in want.items() if v), f"{j.job}: instance_info is {want}")
            continue
        grouping = re.match(r"avg by \((\w+)\)", expr)
        got = by(result, grouping.group(1)) if grouping else one(result)
        want = expected(j, expr)
        check(agree(got, want),
              f"{j.job}: {panel}: {expr} = {short(got)}, neurond says {short(want)}")


def short(v):
    if isinstance(v, dict):
        keys = sorted(v)[:4]
        return "{" + ", ".join(f"{k}: {v[k]:.6g}" for k in keys) + (", ..." if len(v) > 4 else "") + "}"
    return "None" if v is None else f"{v:.6g}"


def exposition(url, openmetrics):
    req = urllib.request.Request(url + "metrics", headers={"Accept": "application/openmetrics-text"} if openmetrics
                                 else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def datadog(j):
    """Every name of Datadog's map with a source in neurond is served."""
    text = exposition(j.url, True)
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    samples = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M))
    for name in DATADOG:
        if name in NO_SOURCE:
            check(name not in families and name not in samples, f"{j.job}: Datadog's {name} absent ({NO_SOURCE[name]})")
        else:
            check(name in families or name in samples or name + "_total" in samples,
                  f"{j.job}: Datadog's {name} served")


def cloudwatch(j):
    """The CloudWatch agent decorates pods only when an info family
    neuron_hardware is there, and takes NeuronDevice to be neuroncore /
    neuroncore_per_device_count."""
    text = exposition(j.url, True)
    check(re.search(r"^# TYPE neuron_hardware info$", text, re.M) is not None, f"{j.job}: neuron_hardware info family")
    m = re.search(r'^neuron_hardware_info\{.*neuroncore_per_device_count="(\d+)"', text, re.M)
    if not check(m is not None, f"{j.job}: neuroncore_per_device_count"):
        return
    per = int(m.group(1))
    wrong = [line for line in re.findall(r'^neuroncore_utilization_ratio\{[^}]*\}', text, re.M)
             if int(re.search(r'neuroncore="(\d+)"', line).group(1)) // per !=
             int(re.search(r'neuron_device="(\d+)"', line).group(1))]
    check(not wrong, f"{j.job}: neuroncore / {per} is the core's neuron_device ({len(wrong)} wrong)")


def main():
    prom = sys.argv[1].rstrip("/") + "/"
    jobs = [Job(prom, *a.split("=", 1)) for a in sys.argv[2:]]
    for j in jobs:
        print(f"# {j.job}: latest scrape at {j.scraped:.3f}, tick {j.tick:.3f}, "
              f"rate window of {len(j.window)} ticks")
        dashboard(j)
        datadog(j)
        cloudwatch(j)
    if problems:
        print(f"{len(problems)} problems")
        sys.exit(1)


main()
