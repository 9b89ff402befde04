#!/bin/sh
# The systemd units: the service is ordered after the driver's loading,
# systemd-analyze verify is clean, and the service's offline security
# exposure is at most 1.5 (systemd-analyze's scale is 0-10; --threshold
# takes it times ten).
. "$(dirname "$0")/lib.sh"
need systemd-analyze

# The unit as make install writes it, pointing at the built daemon.
bindir=$(dirname "${NEUROND_BIN:-$NEUROND}")
sed -e "s|@bindir@|$bindir|g" -e "s|@sysconfdir@|/etc|g" "$top_srcdir/systemd/neurond.service.in" >"$TEST_TMP/neurond.service"
cp "$top_srcdir/systemd/neurond.socket" "$TEST_TMP/neurond.socket"
grep -q '@[a-z]*@' "$TEST_TMP/neurond.service" && fail "unsubstituted @...@ left in neurond.service"

# After the Neuron driver where systemd loads it.
grep -q '^After=.* systemd-modules-load\.service' "$TEST_TMP/neurond.service" ||
        fail "neurond.service is not ordered after systemd-modules-load.service"

cd "$TEST_TMP"
systemd-analyze verify --man=no ./neurond.service ./neurond.socket >verify.log 2>&1 || true
if [ -s verify.log ]; then
        cat verify.log >&2
        fail "systemd-analyze verify reports problems"
fi

systemd-analyze security --offline=true --no-pager neurond.service >security.log 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for neurond.service: \([0-9.]*\).*/\1/p' security.log)
[ -n "$exposure" ] || { cat security.log >&2; fail "no exposure level from systemd-analyze security"; }
systemd-analyze security --offline=true --threshold=15 neurond.service >/dev/null 2>&1 ||
        { grep '✗' security.log >&2; fail "exposure $exposure is above 1.5"; }
echo "neurond.service: verify clean, exposure $exposure"
