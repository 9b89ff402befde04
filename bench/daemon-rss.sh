#!/bin/sh
# make bench: the whole daemon's resident memory per instance type.
set -eu
builddir=${1:-.}
srcdir=${2:-.}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

echo "machine: $(uname -m), $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
# RSS of the whole daemon after ten simulated minutes at 1 s (several
# chunk flushes and rollups), per instance type the model knows.
# neurond refuses to run as root without --allow-root.
allow_root=
[ "$(id -u)" -ne 0 ] || allow_root=--allow-root
for spec in model:trn2.48xlarge,scenario=training model:trn3-gen2-ultraserver model:trn1.32xlarge; do
        : >"$tmp/log"
        "$builddir/daemon/neurond" --listen 127.0.0.1:0 --db "$tmp/rss.db" --backend "$spec,speed=60" \
                --web-root "$srcdir/web/static" $allow_root >"$tmp/log" 2>&1 &
        pid=$!
        sleep 10
        if ! kill -0 "$pid" 2>/dev/null; then
                echo "daemon RSS, $spec: not measured ($(head -n 1 "$tmp/log"))"
                pid=
                continue
        fi
        rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status")
        goal="< 16384"
        case $spec in *trn3*) goal="< 65536" ;; *trn1*) goal="(no goal; trn2 stand-in)" ;; esac
        printf '%-52s %12s   %s\n' "daemon RSS kB, ${spec#model:}" "$rss" "$goal"
        kill "$pid"
        wait "$pid" || true
        pid=
        rm -f "$tmp"/rss.db*
done
