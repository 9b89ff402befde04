#!/usr/bin/env python3
"""Stands in for the service manager's notification socket: binds a datagram
socket at argv[1] and appends every message received to argv[2], one line per
assignment, "--" between datagrams. Stops on STOPPING=1 or after argv[3]
seconds (default 30)."""
import socket
import sys
import time

path, out = sys.argv[1], sys.argv[2]
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
deadline = time.monotonic() + limit
with open(out, "a", buffering=1) as f:
    f.write("BOUND\n")
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            data = sock.recv(4096).decode()
        except socket.timeout:
            break
        f.write(data.rstrip("\n") + "\n--\n")
        if "STOPPING=1" in data.split("\n"):
            break
