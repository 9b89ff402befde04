#!/bin/sh
# On a real host (the sysfs backend) the instance comes from the EC2
# instance metadata service: a fake IMDSv2 on 127.0.0.1 answers, neurond
# serves instance_info and neuron_hardware_info with its identity, puts the
# instance labels on every series with --instance-labels, and
# /api/v1/devices says the same.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need promtool

imds_port=$(free_port)
cat >"$TEST_TMP/imds.py" <<'PY'
import http.server, sys
TOKEN = "AQAEAtest-token=="
VALUES = {
    "instance-id": "i-0fedcba9876543210", "instance-type": "trn2.48xlarge",
    "placement/availability-zone": "us-west-2d", "placement/availability-zone-id": "usw2-az4",
    "placement/region": "us-west-2", "ami-id": "ami-0123456789abcdef0", "mac": "0a:1b:2c:3d:4e:5f",
    "network/interfaces/macs/0a:1b:2c:3d:4e:5f/subnet-id": "subnet-0aaaabbbbccccdddd",
    "tags/instance/Name": "trainer \"7\"",
}
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body=""):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_PUT(self):
        ok = self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        self.reply(200 if ok else 400, TOKEN if ok else "")
    def do_GET(self):
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            return self.reply(401)
        key = self.path.removeprefix("/latest/meta-data/")
        self.reply(200, VALUES[key]) if key in VALUES else self.reply(404)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
start_helper python3 "$TEST_TMP/imds.py" "$imds_port"
IMDS_PID=$HELPER_PID
imds_up() { curl -s --max-time 2 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
  "http://127.0.0.1:$imds_port/latest/api/token" | grep -q token; }
wait_until 10 imds_up || fail "the fake instance metadata service did not start"

start_daemon --backend "sysfs:$top_srcdir/tests/data/trn2" --instance-metadata "127.0.0.1:$imds_port" --instance-labels
http /metrics --fail >"$TEST_TMP/metrics"
http /api/v1/devices --fail >"$TEST_TMP/devices"
stop_daemon
kill -TERM "$IMDS_PID"
wait_helper "$IMDS_PID" || true

grep -q 'instance i-0fedcba9876543210 (trn2.48xlarge) in us-west-2d, from the instance metadata at 127.0.0.1:' "$DAEMON_LOG" ||
  fail "the log does not name the instance"
labels='instance_name="trainer \"7\"",instance_id="i-0fedcba9876543210",instance_type="trn2.48xlarge",availability_zone="us-west-2d",region="us-west-2",subnet_id="subnet-0aaaabbbbccccdddd"'
grep -qF "instance_info{$labels} 1" "$TEST_TMP/metrics" || fail "instance_info: $(grep '^instance_info' "$TEST_TMP/metrics")"
grep -qF "neuron_hardware_info{neuron_device_count=\"1\",neuroncore_per_device_count=\"4\",neuron_device_memory_size=\"103079215104\",neuron_device_type=\"trainium2\",neuroncore_version=\"v3d\",logical_neuroncore_config=\"2\",$labels} 1" \
  "$TEST_TMP/metrics" || fail "neuron_hardware_info: $(grep '^neuron_hardware_info' "$TEST_TMP/metrics")"
# Every series of the backend and the host carries them; neurond's own do not.
without=$(grep -v '^#' "$TEST_TMP/metrics" | grep -v '^neurond_\|^process_' | grep -cvF "$labels" || true)
[ "$without" -eq 0 ] || fail "$without series without the instance labels"
grep -q '^neurond_build_info{version=".*",backend=".*",instance_type="[^"]*"} 1$' "$TEST_TMP/metrics" ||
  fail "neurond_build_info changed"
promtool check metrics <"$TEST_TMP/metrics" || fail "promtool check metrics"
grep -qF '"instance":{"instance_id":"i-0fedcba9876543210","instance_type":"trn2.48xlarge","instance_name":"trainer \"7\"","availability_zone":"us-west-2d","availability_zone_id":"usw2-az4","region":"us-west-2","subnet_id":"subnet-0aaaabbbbccccdddd","ami_id":"ami-0123456789abcdef0","error":""}' \
  "$TEST_TMP/devices" || fail "/api/v1/devices: $(cat "$TEST_TMP/devices")"
echo "PASS: instance_info, neuron_hardware_info and the instance labels from instance metadata on 127.0.0.1"
