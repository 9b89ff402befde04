#!/bin/sh
# contrib/container/Containerfile, checked without a container engine: the
# Debian packages of its final stage provide every library neurond links,
# and the image it describes (Debian's /usr and /etc with the project's
# `make install`) runs its entrypoint and command as its user, 65534, on a
# read-only root: neurond starts with its default paths and serves the
# dashboard, /metrics and /healthz (tests/integration/kube-pod.py).
. "$(dirname "$0")/lib.sh"
need python3 readelf dpkg setpriv chroot unshare curl
/usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
[ "$(id -u)" -eq 0 ] || skip "running a container's command as another user on a root of its own needs root"
enter_mount_namespace net
containerfile=$top_srcdir/contrib/container/Containerfile

# The final stage's packages against the libraries neurond needs
# (readelf's NEEDED, and those it loads when first needed: gRPC's for pod
# labels, libcurl for remote write; found by ldd or ldconfig, owned per
# dpkg; the C library is in every Debian image).
packages=$(/usr/bin/python3 - "$containerfile" <<'PY'
import re, shlex, sys
text = re.sub(r"\\\n", " ", open(sys.argv[1]).read())
final = text[text.rindex("\nFROM "):]
for command in re.split(r"&&|;|\n", final):
    argv = shlex.split(command, comments=True)
    if "apt-get" in argv and "install" in argv:
        print("\n".join(a for a in argv[argv.index("install") + 1:] if not a.startswith("-")))
PY
)
[ -n "$packages" ] || fail "no apt-get install in the Containerfile's final stage"
loaded=$(sed -n 's/^#define [A-Z]*_SONAME "\(.*\)"/\1/p' "$top_builddir/config.h")
[ "$(echo "$loaded" | wc -w)" -eq 2 ] || fail "config.h does not name gRPC's library and libcurl: $loaded"
for lib in $(readelf -d "$NEUROND_BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') $loaded; do
        path=$( (ldd "$NEUROND_BIN"; ldconfig -p | sed 's/ (.*) / /') | awk -v l="$lib" '$1 == l { print $3; exit }')
        owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null ||
                dpkg -S "/usr$path" 2>/dev/null) || fail "no Debian package owns $lib ($path)"
        owner=${owner%%:*}
        # libc6, and libgcc-s1 which it depends on (a clang build links it),
        # are in every Debian image.
        case $owner in libc6 | libgcc-s1) continue ;; esac
        echo "$packages" | grep -qx "$owner" ||
                fail "neurond needs $lib from $owner, which the Containerfile's final stage does not install"
done
echo "$packages" | grep -qx socat || fail "the image has no socat for the DaemonSet's pod-resources relay"

# The install step, into a tree of the build's own prefix.
need_image_prefix
install_into "$TEST_TMP/image"
for f in bin/neurond share/neurond/web/index.html share/neurond/web/vendor/uPlot.iife.min.js \
        etc/neurond/neurond.conf share/man/man8/neurond.8; do
        [ -f "$TEST_TMP/image/usr/local/$f" ] || fail "make install put no $f under /usr/local"
done

# The recipe makes /var/lib/neurond, the default database's directory for
# --localstatedir=/var; this build's default is under its own prefix.
default_db=$("$NEUROND_BIN" --help | tr -s ' \n' '  ' | sed -n 's/.*(default \$STATE_DIRECTORY\/neurond.db, else \([^)]*\)).*/\1/p')
case $default_db in /*/neurond.db) ;; *) fail "no default database in --help: '$default_db'" ;; esac
grep -q -- '--localstatedir=/var ' "$containerfile" || fail "the recipe's localstatedir is not /var"
mkdir "$TEST_TMP/pod"
start_helper /usr/bin/python3 "$top_srcdir/tests/integration/kube-pod.py" --map-path "/var/lib/neurond=${default_db%/*}" \
        image "$containerfile" "$TEST_TMP/image" "$TEST_TMP/pod"
pod=$HELPER_PID
wait_until 60 pod_ready "$pod" || fail "the image's command did not become ready: $(cat "$TEST_TMP/pod/image.log")"
URL=http://127.0.0.1:$(cat "$TEST_TMP/pod/ready")
[ "$(http_status /healthz)" = 200 ] || fail "/healthz does not answer 200"
http / >"$TEST_TMP/index.html" && grep -q '<title>' "$TEST_TMP/index.html" || fail "the installed dashboard is not served"
http /metrics >"$TEST_TMP/metrics" && grep -q '^neurond_build_info' "$TEST_TMP/metrics" || fail "no /metrics"
grep -q "running as root" "$TEST_TMP/pod/image.log" && fail "the image runs neurond as root"
kill -TERM "$pod"
wait_helper "$pod" >"$TEST_TMP/stop.log" || fail "the image's command did not exit cleanly: $(cat "$TEST_TMP/stop.log")"
echo "Containerfile: its packages cover neurond's libraries; make install's tree runs as 65534 on a read-only root"
