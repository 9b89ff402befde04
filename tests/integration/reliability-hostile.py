"""Sends hostile requests to every endpoint of a running neurond and checks
that each gets a 4xx answer with a body that says what is wrong.
Usage: reliability-hostile.py PORT. Exit status 1 and one line per problem
when any request is answered otherwise."""
import socket
import sys

PORT = int(sys.argv[1])
ENDPOINTS = ["/metrics", "/healthz", "/api/v1/devices", "/api/v1/latest", "/api/v1/query_range",
             "/api/v1/status", "/", "/index.html"]
# Endpoints whose parameters are validated (the others are scraped with none).
PARAM_ENDPOINTS = ["/api/v1/devices", "/api/v1/latest", "/api/v1/query_range", "/api/v1/status"]
LONG = "a" * 100000
M = "metric=neuroncore_utilization_ratio"


def request(raw, timeout=10):
    """Sends raw bytes, returns (status, headers+body bytes)."""
    with socket.create_connection(("127.0.0.1", PORT), timeout=timeout) as s:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before reading it all
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
    if not data.startswith(b"HTTP/1."):
        return None, data
    return int(data.split(b" ", 2)[1]), data


def get(target, method="GET", headers=b""):
    if isinstance(target, str):
        target = target.encode("latin-1")
    return request(method.encode() + b" " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
                   b"Connection: close\r\n\r\n")


cases = []
for ep in ENDPOINTS:
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"]:
        cases.append((f"{method} {ep}", lambda ep=ep, m=method: get(ep, m), {405}))
    for suffix in ["%00", "%00.json", "/../../../../etc/passwd", "/..%2f..%2fetc%2fpasswd", "%ff%fe",
                   "%", "%zz", "%c0%af", "/%2e%2e/%2e%2e/etc/passwd", "\\..\\..\\etc\\passwd"]:
        cases.append((f"GET {ep}{suffix}", lambda ep=ep, s=suffix: get(ep.rstrip("/") + s), None))
    cases.append((f"GET {ep}?<100 kB>", lambda ep=ep: get(ep + "?q=" + LONG), None))
    cases.append((f"GET {ep} with 100 kB of headers",
                  lambda ep=ep: get(ep, headers=b"X-Filler: " + LONG.encode() + b"\r\n"), None))
    # Raw NUL bytes, which end a string in libmicrohttpd's parser: the
    # daemon sees what the NUL hid, or libmicrohttpd refuses the line.
    for where, raw in [("in the path", b"GET " + ep.encode() + b"\x00x HTTP/1.1\r\n"),
                       ("before the version", b"GET " + ep.encode() + b"\x00 HTTP/1.1\r\n"),
                       ("in the query", b"GET " + ep.encode() + b"?a\x00b=1 HTTP/1.1\r\n"),
                       ("before the path", b"GET \x00" + ep.encode() + b" HTTP/1.1\r\n"),
                       ("in the method", b"GET\x00X " + ep.encode() + b" HTTP/1.1\r\n"),
                       ("in the version", b"GET " + ep.encode() + b" HTTP/1\x00.1\r\n")]:
        cases.append((f"a NUL {where}: {ep}", lambda raw=raw: request(raw + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n"),
                      None))
    for where, header in [("in a header value", b"X-A: a\x00b\r\n"), ("ending a header value", b"X-A: a\x00\r\n"),
                          ("in a header name", b"X\x00A: b\r\n"), ("starting a header line", b"\x00X-A: b\r\n"),
                          ("as a header line", b"\x00\r\n")]:
        cases.append((f"a NUL {where}: {ep}", lambda ep=ep, h=header: get(ep, headers=h), None))
    cases.append((f"GET {ep} with a header without a colon", lambda ep=ep: get(ep, headers=b"garbage\r\n"), None))

for ep in PARAM_ENDPOINTS:
    for query in ["metric=%ff%fe", "metric=%c3%28", "metric=%00", "metric=neuroncore_utilization_ratio%00x",
                  "metric=%zz", "metric=../../etc/passwd", "%ff=1", "neuroncore=%ff", "x=%", "a=b&" * 40,
                  "metric=" + "9" * 400, M + "&" + M]:
        cases.append((f"GET {ep}?{query[:60]}", lambda ep=ep, q=query: get(ep + "?" + q), None))

QR = "/api/v1/query_range?" + M + "&"
for query in ["start=NaN", "start=nan", "end=NaN", "start=-1", "end=-1", "start=-1e309", "start=1e309",
              "start=inf", "start=-inf", "start=99999999999999999999999999", "end=18446744073709551617",
              "step=0", "step=-1", "step=-1s", "step=NaN", "step=1e400", "step=99999999999999999999999d",
              "step=1ms&start=0&end=2000000000", "start=10&end=5", "start=2026-13-45T99:99:99Z",
              "start=1&start=2", "step=1s&step=2s", "agg=avg&agg=max", "agg=%00", "neuroncore=" + "x" * 100,
              "start=0x10", "start=1e3", "start=%205", "start=5%20", "start=%0a5"]:
    cases.append((f"GET query_range?{query[:60]}", lambda q=query: get(QR + q), None))

problems = []
for name, send, expected in cases:
    try:
        status, data = send()
    except OSError as e:
        problems.append(f"{name}: {e}")
        continue
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    if status is None:
        problems.append(f"{name}: no HTTP answer ({data[:80]!r})")
    elif expected is not None:
        if status not in expected:
            problems.append(f"{name}: {status}, expected {min(expected)}..{max(expected)}")
    elif not 400 <= status < 500:
        problems.append(f"{name}: {status}, expected 4xx")
    elif len(body.strip()) == 0:
        problems.append(f"{name}: {status} with an empty body")
for p in problems:
    print(p)
print(f"{len(cases)} hostile requests, {len(problems)} problems")
sys.exit(1 if problems else 0)
