#!/bin/sh
# contrib/kubernetes/neurond.yaml: the DaemonSet mounts /sys read only where
# its sysfs backend looks, sets resource limits, probes /healthz on the port
# the Service and the ServiceMonitor name, relays the kubelet's
# pod-resources socket to the one neurond is given, and passes flags that
# neurond accepts; every object validates against Kubernetes' schemas.
# (tests/integration/contrib-kubernetes-start.sh runs the pod.)
. "$(dirname "$0")/lib.sh"
need python3
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"

python3 - "$top_srcdir/contrib/kubernetes/neurond.yaml" >"$TEST_TMP/args" <<'PY' || fail "neurond.yaml is inconsistent"
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
def check(cond, what):
    if not cond:
        sys.exit("neurond.yaml: " + what)
for kind in ("DaemonSet", "Service", "ServiceMonitor"):
    check(kind in docs, "no " + kind)
pod = docs["DaemonSet"]["spec"]["template"]["spec"]
c = pod["containers"][0]
args = c["args"]
backend = [a.split("=", 1)[1] for a in args if a.startswith("--backend=")]
check(backend and backend[0].startswith("sysfs:"), "the backend is not sysfs with a root")
root = backend[0].split(":", 1)[1]
mounts = {m["name"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
sysmount = [m for m in mounts.values() if m["mountPath"] == root]
check(sysmount and sysmount[0].get("readOnly"), "the sysfs root %s is not mounted read only" % root)
check(vols[sysmount[0]["name"]]["hostPath"]["path"] == "/sys", "the sysfs mount is not the host's /sys")
check({"cpu", "memory"} <= set(c["resources"]["limits"]), "cpu and memory limits missing")
check(c["securityContext"].get("readOnlyRootFilesystem") and not c["securityContext"].get("allowPrivilegeEscalation"),
      "the container is not locked down")
db = [a.split("=", 1)[1] for a in args if a.startswith("--db=")]
check(db and any(db[0].startswith(m["mountPath"] + "/") for m in mounts.values()), "the database is not on a volume")
port = c["ports"][0]
check(c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}, "readiness probe is not /healthz")
check(any(a == "--listen=0.0.0.0:%d" % port["containerPort"] for a in args), "neurond does not listen on the container port")
svc_port = docs["Service"]["spec"]["ports"][0]
check(svc_port["name"] == port["name"] and svc_port["targetPort"] == port["name"], "the Service does not target the pod port")
sm = docs["ServiceMonitor"]["spec"]
check(sm["endpoints"][0]["port"] == svc_port["name"] and sm["endpoints"][0]["path"] == "/metrics", "the ServiceMonitor misses the port")
labels = docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
check(all(labels.get(k) == v for k, v in sm["selector"]["matchLabels"].items()), "the ServiceMonitor selects nothing")
check(all(labels.get(k) == v for k, v in docs["Service"]["spec"]["selector"].items()), "the Service selects no pod")
# Pod labels: neurond's socket is the relay's, which reaches the kubelet's
# read only; the ServiceMonitor drops the target's own pod labels.
relay = [x for x in pod["containers"] if x.get("command") == ["socat"]]
check(relay, "no pod-resources relay")
listen = [a for a in relay[0]["args"] if a.startswith("UNIX-LISTEN:")]
socket = [a.split("=", 1)[1] for a in args if a.startswith("--pod-resources-socket=")]
check(listen and socket and listen[0].split(":", 1)[1].split(",")[0] == socket[0],
      "neurond's --pod-resources-socket is not the relay's socket")
relay_mounts = {m["mountPath"]: m for m in relay[0]["volumeMounts"]}
check(relay_mounts.get("/var/lib/kubelet/pod-resources", {}).get("readOnly"), "the kubelet's socket is not mounted read only")
check(vols[relay_mounts["/var/lib/kubelet/pod-resources"]["name"]]["hostPath"]["path"] == "/var/lib/kubelet/pod-resources",
      "the relay does not mount the kubelet's pod-resources directory")
drops = [r for r in sm["endpoints"][0].get("relabelings", []) if r.get("action") == "labeldrop"]
check(drops and all(l in drops[0]["regex"].split("|") for l in ("pod", "namespace", "container")),
      "the ServiceMonitor keeps the target's pod, namespace and container labels")
print("\n".join(a for a in args if not a.startswith(("--backend=", "--db="))))
PY
# The flags must be ones neurond accepts (the backend swapped for the model,
# as /host/sys is not here).
# shellcheck disable=SC2046
"$NEUROND" --check-config $(cat "$TEST_TMP/args") --backend model:trn1.2xlarge --db "$TEST_TMP/k.db" >/dev/null ||
        fail "neurond rejects the DaemonSet's flags: $(cat "$TEST_TMP/args" | tr '\n' ' ')"
echo "neurond.yaml: DaemonSet, Service and ServiceMonitor agree"

# The objects against Kubernetes' schemas (and the Prometheus Operator's),
# with the npm packages that make check installs; and a broken copy, to
# show that the check refuses what it should.
need node
for p in kubernetes-models @kubernetes-models/prometheus-operator; do
        [ -f "$NODE_MODULES/$p/package.json" ] ||
                skip "$p is not in $NODE_MODULES (configure found no npm, or NODE_MODULES lacks it)"
done
python3 - "$top_srcdir/contrib/kubernetes/neurond.yaml" "$TEST_TMP/objects.json" "$TEST_TMP/broken.json" <<'PY'
import json, sys, yaml
objects = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
json.dump(objects, open(sys.argv[2], "w"))
for o in objects:
    if o["kind"] == "DaemonSet":
        o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "a lot"
    if o["kind"] == "ServiceMonitor":
        o["spec"]["endpoints"][0]["relabelings"][0]["action"] = "rename"
json.dump(objects, open(sys.argv[3], "w"))
PY
node "$top_srcdir/tests/integration/kube-validate.mjs" "$TEST_TMP/objects.json" >"$TEST_TMP/valid.log" ||
        fail "the manifest does not validate: $(grep 'not ok' "$TEST_TMP/valid.log")"
[ "$(grep -c '^ok' "$TEST_TMP/valid.log")" -eq 4 ] || fail "expected 4 valid objects: $(cat "$TEST_TMP/valid.log")"
node "$top_srcdir/tests/integration/kube-validate.mjs" "$TEST_TMP/broken.json" >"$TEST_TMP/broken.log" &&
        fail "a broken quantity and relabeling action validate"
[ "$(grep -c '^not ok' "$TEST_TMP/broken.log")" -eq 2 ] || fail "the validator missed a fault: $(cat "$TEST_TMP/broken.log")"
echo "neurond.yaml: $(grep -c '^ok' "$TEST_TMP/valid.log") objects valid against the Kubernetes and Prometheus Operator schemas"
