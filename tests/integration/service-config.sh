#!/bin/sh
# The sample configuration that make install puts in /etc/neurond: as
# shipped (all defaults) and with every setting uncommented, it must pass
# --check-config, its paths must be the ones this build was configured
# with, and it must name every setting the daemon knows.
. "$(dirname "$0")/lib.sh"

sample=${SAMPLE_CONFIG:?run through make check}
"$NEUROND" --check-config --config "$sample" >"$TEST_TMP/out" || fail "the sample does not pass --check-config"
grep -q 'interval 1000ms' "$TEST_TMP/out" || fail "the sample changes the default interval: $(cat "$TEST_TMP/out")"

sed -n 's/^# \([a-z_]* = .*\)$/\1/p' "$sample" >"$TEST_TMP/keys"
[ -s "$TEST_TMP/keys" ] || fail "no commented settings found in the sample"
sed 's/^# \([a-z_]* = .*\)$/\1/' "$sample" >"$TEST_TMP/uncommented.conf"
"$NEUROND" --check-config --config "$TEST_TMP/uncommented.conf" >"$TEST_TMP/uncommented.out" ||
        fail "the sample's documented values do not pass --check-config"

# Uncommented, it still has the daemon's defaults, paths included: the
# database...
[ "$(sed 's/, config .*//' "$TEST_TMP/out")" = "$(sed 's/, config .*//' "$TEST_TMP/uncommented.out")" ] ||
        fail "uncommented, the sample changes a default: $(cat "$TEST_TMP/uncommented.out")"
# ... and the web root (--help wraps its default over lines).
web_root=$("$NEUROND" --help | tr -s ' \n' '  ' | sed -n 's/.*--web-root DIR dashboard files (default \([^)]*\)).*/\1/p')
[ -n "$web_root" ] || fail "no --web-root default in --help"
grep -qx "# web_root = $web_root" "$sample" || fail "the sample's web_root is not the default $web_root"

# Every key of the daemon (its long options, minus the actions) is documented.
for key in $("$NEUROND" --help | sed -n 's/^ *\(-., \)\{0,1\}--\([a-z-]*\) [A-Z].*/\2/p' | tr - _); do
        [ "$key" = config ] && continue
        grep -q "^$key = " "$TEST_TMP/keys" || fail "setting '$key' is missing from contrib/neurond.conf"
done
echo "sample configuration: $(wc -l <"$TEST_TMP/keys") settings documented"
