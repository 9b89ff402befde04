#!/bin/sh
# --list-instances prints the catalog; bad model specs are usage errors.
. "$(dirname "$0")/lib.sh"

"$NEUROND" --list-instances >"$TEST_TMP/list" || fail "--list-instances failed"
rows=$(($(wc -l <"$TEST_TMP/list") - 1))
[ "$rows" -eq 15 ] || fail "expected 15 catalog rows, got $rows"
for name in inf1.xlarge inf1.2xlarge inf1.6xlarge inf1.24xlarge inf2.xlarge inf2.8xlarge inf2.24xlarge \
  inf2.48xlarge trn1.2xlarge trn1.32xlarge trn1n.32xlarge trn2.48xlarge trn2-ultraserver \
  trn3-gen1-ultraserver trn3-gen2-ultraserver; do
  grep -q "^$name " "$TEST_TMP/list" || fail "$name missing from --list-instances"
done
grep -q '^trn3-gen2-ultraserver .* 144  1152 *20736 *705.6 ' "$TEST_TMP/list" || fail "trn3-gen2 row: $(grep trn3-gen2 "$TEST_TMP/list")"

for spec in model:nope model:trn1.2xlarge,scenario=chaos model:trn1.2xlarge,fault=device_down:9; do
  rc=0
  "$NEUROND" --backend "$spec" --check-config --db "$TEST_TMP/never.db" >"$TEST_TMP/out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "--backend $spec exited $rc, expected 2"
done
"$NEUROND" --backend "model:trn2.48xlarge,scenario=mixed,seed=3,speed=5,fault=ecc:0@1m" --check-config \
  --db "$TEST_TMP/never.db" >/dev/null || fail "a valid spec with a fault was refused"
