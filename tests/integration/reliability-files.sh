#!/bin/sh
# Files that are not what a setting expects never hang the daemon. A FIFO,
# /dev/zero, a file of NULs or a config line longer than the INI reader's
# buffer, given as the config file or as any file the settings name
# (basic_auth_users, bearer_token_file, tls_cert, tls_key), is refused
# within a second (ten under valgrind) with exit status 2 and one line
# naming the file, both by --check-config and by a normal start, and no
# database is made. In a sysfs tree, FIFOs and a device in place of
# attributes read as absent values while the daemon starts and ticks.
. "$(dirname "$0")/lib.sh"
need curl
need openssl
: "${MODEL_SYSFS:?run through make check}"

DB=$TEST_TMP/never.db

# refused WHAT EXPECTED ARGS...: `neurond ARGS` exits 2 with --check-config
# and without, saying EXPECTED (grep -F). A read that blocks would never
# return: 10 s (times SLOW) tells that from a slow machine.
refused() {
  _what=$1 _expect=$2
  shift 2
  for _mode in --check-config --log-level=info; do
    "$NEUROND" --allow-root --listen 127.0.0.1:0 --db "$DB" --backend model:trn1.2xlarge "$_mode" "$@" \
      >"$TEST_TMP/refused.log" 2>&1 &
    wait_exit 10 $! || fail "$_what ($_mode): still running after $((10 * SLOW)) s: $(cat "$TEST_TMP/refused.log")"
    [ "$EXIT_STATUS" -eq 2 ] ||
      fail "$_what ($_mode): exit status $EXIT_STATUS, expected 2: $(cat "$TEST_TMP/refused.log")"
    grep -qF -- "$_expect" "$TEST_TMP/refused.log" ||
      fail "$_what ($_mode): the error does not say '$_expect': $(cat "$TEST_TMP/refused.log")"
    [ ! -e "$DB" ] || fail "$_what ($_mode): the database was made despite the bad file"
  done
}

mkfifo "$TEST_TMP/fifo"
head -c 100 /dev/zero >"$TEST_TMP/nuls"

# The config file. The long line is cut by inih at 199 bytes, and its
# tail would read as "admin = true".
origin=$(printf '%*s' $((211 - 22 - 12)) '' | tr ' ' a)
printf 'cors_origin = https://%sadmin = true\n' "$origin" >"$TEST_TMP/long.conf"
[ "$(head -n 1 "$TEST_TMP/long.conf" | tr -d '\n' | wc -c)" -eq 211 ] || fail "the long line is not 211 bytes"
refused "a 211-byte line" "long.conf:1: the line is longer than 197 bytes" --config "$TEST_TMP/long.conf"
refused "a file of NULs" "line 1 holds a NUL byte: not a text file" --config "$TEST_TMP/nuls"
truncate -s 300M "$TEST_TMP/huge"
refused "300 MB of NULs" "huge: is larger than 1 MiB" --config "$TEST_TMP/huge"
rm "$TEST_TMP/huge"
refused "a FIFO as the config" "config file $TEST_TMP/fifo: is a FIFO, not a regular file" --config "$TEST_TMP/fifo"
refused "/dev/zero as the config" "config file /dev/zero: is a character device, not a regular file" --config /dev/zero
echo "config file: every case refused"

# The files the settings name, each given a FIFO, /dev/zero and NULs.
make_tls_cert
make_users_file "$TEST_TMP/users" prometheus secret 4
for bad in "$TEST_TMP/fifo" /dev/zero "$TEST_TMP/nuls"; do
  case $bad in
    */fifo) says="is a FIFO, not a regular file" ;;
    /dev/zero) says="is a character device, not a regular file" ;;
    *) says="line 1 holds a NUL byte" ;;
  esac
  printf '[neurond]\nbasic_auth_users = %s\n' "$bad" >"$TEST_TMP/files.conf"
  refused "basic_auth_users $bad" "basic_auth_users: $bad: $says" --config "$TEST_TMP/files.conf"
  printf '[neurond]\nbearer_token_file = %s\n' "$bad" >"$TEST_TMP/files.conf"
  refused "bearer_token_file $bad" "bearer_token_file: $bad: $says" --config "$TEST_TMP/files.conf"
  printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$bad" "$TLS_KEY" >"$TEST_TMP/files.conf"
  refused "tls_cert $bad" "reading $bad: $says" --config "$TEST_TMP/files.conf"
  printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$TLS_CERT" "$bad" >"$TEST_TMP/files.conf"
  refused "tls_key $bad" "reading $bad: $says" --config "$TEST_TMP/files.conf"
done
# A key of another certificate: GnuTLS refuses the pair.
cp "$TLS_CERT" "$TEST_TMP/first-cert.pem"
make_tls_cert
printf '[neurond]\ntls_cert = %s\ntls_key = %s\n' "$TEST_TMP/first-cert.pem" "$TLS_KEY" >"$TEST_TMP/files.conf"
refused "a key of another certificate" "tls_cert and tls_key: " --config "$TEST_TMP/files.conf"
# The same files, when they are what they should be, are taken.
printf '[neurond]\nbasic_auth_users = %s\ntls_cert = %s\ntls_key = %s\n' "$TEST_TMP/users" "$TLS_CERT" "$TLS_KEY" \
  >"$TEST_TMP/files.conf"
"$NEUROND" --config "$TEST_TMP/files.conf" --backend model:trn1.2xlarge --db "$DB" --check-config \
  >"$TEST_TMP/check.log" 2>&1 || fail "good files refused: $(cat "$TEST_TMP/check.log")"
echo "auth and TLS files: every case refused"

# A sysfs tree with FIFOs where the driver's version, a device's name and
# serial number, a core's architecture and a core's busy counters are, and
# /dev/zero as an ECC counter. Reading any of them would block for ever.
"$MODEL_SYSFS" model:trn1.2xlarge "$TEST_TMP/tree" 100 1 >/dev/null
root=$(readlink -f "$TEST_TMP/tree")
dev=$root/devices/virtual/neuron_device/neuron0
for f in module/neuron/version devices/virtual/neuron_device/neuron0/info/architecture/device_name \
  devices/virtual/neuron_device/neuron0/info/serial_number \
  devices/virtual/neuron_device/neuron0/neuron_core0/info/architecture/arch_type \
  devices/virtual/neuron_device/neuron0/neuron_core1/stats/tensor_engine/pe_cntrs; do
  [ -f "$root/$f" ] || fail "the model's tree lacks $f"
  rm "$root/$f"
  mkfifo "$root/$f"
done
ecc=$dev/stats/hardware/sram_ecc_uncorrected
[ -f "$ecc" ] || fail "the model's tree lacks $ecc"
rm "$ecc"
ln -s /dev/zero "$ecc"

start_daemon sysfs --backend "sysfs:$root" --interval 100ms --log-level debug
# Ten ticks of 100 ms: no tick waits on a FIFO.
wait_until 3 tick_at_least 10 || fail "the ticks do not advance with FIFOs in the tree"
http /api/v1/devices --fail >"$TEST_TMP/devices"
grep -q '"driver_version":""' "$TEST_TMP/devices" || fail "a FIFO as the driver version: $(cat "$TEST_TMP/devices")"
grep -q '"name":"","arch":"[^"]*","core_arch":""' "$TEST_TMP/devices" ||
  fail "FIFOs as device name and core arch: $(cat "$TEST_TMP/devices")"
grep -q '"serial_number":""' "$TEST_TMP/devices" || fail "a FIFO as serial number: $(cat "$TEST_TMP/devices")"
http /metrics --fail >"$TEST_TMP/metrics"
grep -q '^hardware_ecc_events_total{neuron_device_index="0",event_type="sram_ecc_uncorrected"}' "$TEST_TMP/metrics" &&
  fail "/dev/zero as an ECC counter gives a value"
grep -q '^hardware_ecc_events_total{neuron_device_index="0",event_type="mem_ecc_uncorrected"} 0$' "$TEST_TMP/metrics" ||
  fail "the readable ECC counters are absent too"
grep -q '^neuroncore_memory_used_bytes{neuron_device="0",neuroncore="1"} ' "$TEST_TMP/metrics" ||
  fail "the readable files of the core with the FIFO are absent too"
metric_is 'neurond_collector_up{collector="backend"}' 1 || fail "the backend is not up"
# The first file that fails each tick, in the debug log: the FIFO pe_cntrs.
file_has "$DAEMON_LOG" "first: devices/virtual/neuron_device/neuron0/neuron_core1/stats/tensor_engine/pe_cntrs: " ||
  fail "the FIFO as pe_cntrs was not refused"
stop_daemon sysfs
echo "sysfs: FIFOs and a device read as absent values, the ticks go on"
echo "reliability-files: ok"
