#!/bin/sh
# The sample configuration that make install puts in /etc/neurond: as
# shipped (all defaults) and with every setting uncommented, it must pass
# --check-config, and it must name every setting the daemon knows.
. "$(dirname "$0")/lib.sh"

sample=$top_srcdir/contrib/neurond.conf
"$NEUROND" --check-config --config "$sample" >"$TEST_TMP/out" || fail "the sample does not pass --check-config"
grep -q 'interval 1000ms' "$TEST_TMP/out" || fail "the sample changes the default interval: $(cat "$TEST_TMP/out")"

sed -n 's/^# \([a-z_]* = .*\)$/\1/p' "$sample" >"$TEST_TMP/keys"
[ -s "$TEST_TMP/keys" ] || fail "no commented settings found in the sample"
sed 's/^# \([a-z_]* = .*\)$/\1/' "$sample" >"$TEST_TMP/uncommented.conf"
"$NEUROND" --check-config --config "$TEST_TMP/uncommented.conf" >/dev/null ||
        fail "the sample's documented values do not pass --check-config"

# Every key of the daemon (its long options, minus the actions) is documented.
for key in $("$NEUROND" --help | sed -n 's/^ *\(-., \)\{0,1\}--\([a-z-]*\) [A-Z].*/\2/p' | tr - _); do
        [ "$key" = config ] && continue
        grep -q "^$key = " "$TEST_TMP/keys" || fail "setting '$key' is missing from contrib/neurond.conf"
done
echo "sample configuration: $(wc -l <"$TEST_TMP/keys") settings documented"
