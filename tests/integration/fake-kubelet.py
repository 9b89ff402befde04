#!/usr/bin/python3
"""A stand-in for the kubelet's pod-resources API, for the tests: a real
gRPC server (Debian's python3-grpcio) on a unix socket, answering
v1.PodResourcesLister/List from kube/podresources.proto, whose Python
stubs are generated here at start with python3-grpc-tools.

Usage: fake-kubelet.py PROTO SOCKET STATE CALLS

STATE is a JSON file read again at every call, so a test reassigns devices
by replacing it (write a new file, then rename it over the old one):

  {"pods": [{"namespace": "ml", "name": "train-0",
             "containers": [{"name": "worker",
                             "devices": [{"resource": "aws.amazon.com/neuroncore",
                                          "ids": ["0", "1"]}]}]}],
   "delay": 0,          seconds to wait before answering (a slow kubelet)
   "status": null}      a gRPC status name to fail with instead ("UNAVAILABLE")

In pod and container names, {call} is replaced by the call's number, so
every answer differs from the one before. Each call appends its number (from
1) to CALLS when it starts, after reading STATE. SIGTERM stops the server and
removes the socket: the kubelet goes away."""
import json
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc
from grpc_tools import protoc

proto, socket_path, state_path, calls_path = sys.argv[1:5]

# The stubs, from the same interface definition as neurond's client.
stubs = tempfile.mkdtemp(prefix="fake-kubelet-")
proto_dir, proto_name = os.path.split(os.path.abspath(proto))
if protoc.main(["protoc", "-I" + proto_dir, "--python_out=" + stubs, "--grpc_python_out=" + stubs, proto_name]) != 0:
    sys.exit("fake-kubelet: protoc failed on " + proto)
sys.path.insert(0, stubs)
module = proto_name[: -len(".proto")]
pb = __import__(module + "_pb2")
pb_grpc = __import__(module + "_pb2_grpc")

calls = 0
calls_lock = threading.Lock()


class Lister(pb_grpc.PodResourcesListerServicer):
    def List(self, request, context):
        global calls
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
        with calls_lock:
            calls += 1
            call = calls
            with open(calls_path, "a", encoding="utf-8") as f:
                f.write("%d\n" % call)
        time.sleep(state.get("delay", 0))
        if state.get("status"):
            context.abort(getattr(grpc.StatusCode, state["status"]), "the fake kubelet fails on purpose")
        answer = pb.ListPodResourcesResponse()
        for p in state.get("pods", []):
            pod = answer.pod_resources.add(name=p["name"].format(call=call), namespace=p["namespace"])
            for c in p.get("containers", []):
                container = pod.containers.add(name=c["name"].format(call=call))
                for d in c.get("devices", []):
                    container.devices.add(resource_name=d["resource"], device_ids=d["ids"])
        return answer


server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
pb_grpc.add_PodResourcesListerServicer_to_server(Lister(), server)
if server.add_insecure_port("unix:" + socket_path) == 0:
    sys.exit("fake-kubelet: cannot listen on " + socket_path)
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())
signal.signal(signal.SIGINT, lambda *_: stopped.set())
server.start()
stopped.wait()
server.stop(0).wait()
try:
    os.unlink(socket_path)
except FileNotFoundError:
    pass
