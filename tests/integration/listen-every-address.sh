#!/bin/sh
# --listen :PORT and --listen [::]:PORT serve every address, IPv4 and IPv6,
# as node_exporter's do: the daemon answers on 127.0.0.1 and on ::1, and its
# log names a dashboard URL that works.
. "$(dirname "$0")/lib.sh"
need curl
grep -q ' lo$' /proc/net/if_inet6 2>/dev/null || skip "no IPv6 loopback address here"

for spec in ":0" "[::]:0"; do
        start_daemon --listen "$spec" --backend model:trn1.2xlarge
        for url in "http://127.0.0.1:$PORT" "http://[::1]:$PORT"; do
                URL=$url
                [ "$(http_status /metrics)" = 200 ] || fail "--listen $spec: $url/metrics does not answer"
        done
        logged=$(sed -n 's/.*dashboard at \([^ ,]*\),.*/\1/p' "$DAEMON_LOG")
        [ "$logged" = "http://127.0.0.1:$PORT/" ] || fail "--listen $spec: the log names the dashboard '$logged'"
        stop_daemon
done
echo "--listen :PORT and [::]:PORT answer on 127.0.0.1 and ::1"
