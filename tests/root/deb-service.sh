#!/bin/sh
# The Debian package under systemd, as docs/service.md and the README's TLS
# recipe run it. A clean root with systemd installs the .deb and boots in
# systemd-nspawn, in a network namespace of its own. Then:
# - neurond.service, which the package enabled, is active under a dynamic
#   user with its database in /var/lib/private/neurond, and / and /metrics
#   answer; with no Neuron driver in the container, /metrics has no device
#   series and neurond_backend_devices 0, and the journal says why;
# - a remote write endpoint: libcurl, which the daemon loads only then, is
#   installed and sends requests;
# - the README's TLS recipe: a certificate, key and password file that stay
#   root's, handed to the service with LoadCredential=, and listen = :9710:
#   HTTPS with basic auth answers on 127.0.0.1 and ::1, 401 without the
#   password, /healthz without it;
# - neurond.socket: with the service stopped and the socket enabled, a
#   request starts the service on the socket systemd passes it.
#
# Usage, as root from the top of the source tree (tests/root/lib.sh):
#   tests/root/deb-service.sh neurond_VERSION_ARCH.deb
set -eu
. "$(dirname "$0")/lib.sh"
why=$(root_can_make) || { echo "SKIP: cannot make a clean root here: $why"; exit 77; }
command -v systemd-nspawn >/dev/null ||
  { echo "FAIL: systemd-nspawn is not installed (build-aux/install-deps.sh --test)" >&2; exit 1; }
deb=${1:?usage: $0 neurond_VERSION_ARCH.deb}
[ -f "$deb" ] || { echo "FAIL: no $deb" >&2; exit 1; }

root=$(root_new deb-service)
cp "$deb" "$root/tmp/"
echo "+ apt-get install systemd curl openssl apache2-utils ./$(basename "$deb")"
logged "$ROOT_WORK/deb-service-install.log" root_run "$root" "in_root 'apt-get update -qq &&
  apt-get install -y -qq --no-install-recommends systemd systemd-sysv curl openssl apache2-utils /tmp/$(basename "$deb")'"

echo "+ systemd-nspawn --boot"
systemd-nspawn -D "$root" --register=no --keep-unit --private-network --quiet --boot \
  >"$ROOT_WORK/deb-service-boot.log" 2>&1 &
nspawn=$!
trap 'kill -TERM "$nspawn" 2>/dev/null || true; wait "$nspawn" 2>/dev/null || true' EXIT

# The container's init, once it runs.
init=
for _ in $(seq 100); do
  init=$(pgrep -P "$nspawn" -x systemd || true)
  [ -z "$init" ] || break
  sleep 0.2
done
[ -n "$init" ] || { echo "FAIL: the container's systemd did not start" >&2; cat "$ROOT_WORK/deb-service-boot.log" >&2; exit 1; }

# in_container COMMAND: the shell COMMAND inside the booted container; on
# failure the service's journal is shown.
in_container() {
  nsenter -t "$init" --all --root --wd env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 /bin/sh -euc "$1" ||
    {
      echo "FAIL: $1" >&2
      nsenter -t "$init" --all --root --wd journalctl --no-pager -n 40 -u neurond.service -u neurond.socket >&2 || true
      exit 1
    }
}
# wait_container COMMAND: until COMMAND succeeds inside the container (60 s).
wait_container() {
  in_container "for i in \$(seq 120); do if $1; then exit 0; fi; sleep 0.5; done; exit 1"
}

wait_container "systemctl is-active --quiet neurond.service"
in_container '
  pid=$(systemctl show -p MainPID --value neurond.service)
  [ "$(stat -c %u /proc/$pid)" -ne 0 ]
  echo "ok: neurond.service is active as a dynamic user, uid $(stat -c %u /proc/$pid)"'
wait_container "test -f /var/lib/private/neurond/neurond.db"
in_container '
  curl -fsS --max-time 10 http://127.0.0.1:9710/ | grep "<title>" >/dev/null
  curl -fsS --max-time 10 http://127.0.0.1:9710/metrics >/tmp/metrics
  grep -qx "neurond_backend_devices 0" /tmp/metrics
  if grep -q "^neuroncore_" /tmp/metrics; then echo "device series without a driver" >&2; exit 1; fi
  journalctl --no-pager -u neurond.service | grep -q "no devices: /sys/devices/virtual/neuron_device is missing"
  echo "ok: it serves / and /metrics on 127.0.0.1:9710, its database in /var/lib/private/neurond; no driver, no device series, and it says why"'

echo "+ remote write, whose libcurl the daemon loads only when an endpoint is configured"
in_container '
  cp /etc/neurond/neurond.conf /tmp/neurond.conf.orig
  printf "%s\n" "[remote_write local]" "url = http://127.0.0.1:9/api/v1/write" >>/etc/neurond/neurond.conf
  systemctl restart neurond.service'
# Nothing listens on port 9: every request gets no answer and is retried.
wait_container 'curl -fsS --max-time 5 http://127.0.0.1:9710/metrics |
  grep -q "^neurond_remote_write_retries_total{endpoint=\"local\"} [1-9]"'
in_container '
  cp /tmp/neurond.conf.orig /etc/neurond/neurond.conf
  systemctl restart neurond.service
  echo "ok: with a remote write endpoint, the package'"'"'s libcurl sends requests (refused, retried)"'

echo "+ the README's TLS recipe: LoadCredential= and listen = :9710"
in_container '
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=neuron-host \
    -addext "subjectAltName=DNS:neuron-host" \
    -keyout /etc/neurond/key.pem -out /etc/neurond/cert.pem 2>/dev/null
  chmod 600 /etc/neurond/key.pem
  htpasswd -nbB prometheus the-password >/etc/neurond/users
  mkdir -p /etc/systemd/system/neurond.service.d
  printf "%s\n" "[Service]" \
    "LoadCredential=tls.crt:/etc/neurond/cert.pem" \
    "LoadCredential=tls.key:/etc/neurond/key.pem" \
    "LoadCredential=users:/etc/neurond/users" >/etc/systemd/system/neurond.service.d/tls.conf
  printf "%s\n" "listen = :9710" \
    "tls_cert = /run/credentials/neurond.service/tls.crt" \
    "tls_key = /run/credentials/neurond.service/tls.key" \
    "basic_auth_users = /run/credentials/neurond.service/users" \
    "healthz_open = true" \
    "allowed_hosts = neuron-host" >>/etc/neurond/neurond.conf
  systemctl daemon-reload
  systemctl restart neurond.service'
https_answers() {
  wait_container "curl -fsS --max-time 5 -o /dev/null --cacert /etc/neurond/cert.pem \
    --resolve neuron-host:9710:127.0.0.1 -u prometheus:the-password https://neuron-host:9710/metrics"
  in_container '
    for address in 127.0.0.1 [::1]; do
      c="curl -sS --max-time 10 --cacert /etc/neurond/cert.pem --resolve neuron-host:9710:$address -o /dev/null -w %{http_code}"
      [ "$($c -u prometheus:the-password https://neuron-host:9710/metrics)" = 200 ]
      [ "$($c https://neuron-host:9710/metrics)" = 401 ]
      [ "$($c https://neuron-host:9710/healthz)" = 200 ]
    done'
}
https_answers
echo "ok: HTTPS with basic auth on 127.0.0.1 and ::1 (200 with the password, 401 without, /healthz open)"

echo "+ neurond.socket"
in_container '
  systemctl stop neurond.service
  systemctl enable --now neurond.socket 2>/dev/null
  ! systemctl is-active --quiet neurond.service'
https_answers
in_container '
  systemctl is-active --quiet neurond.service
  journalctl --no-pager -u neurond.service | grep -q "socket from the service manager"'
echo "ok: a request to the socket started the service, which serves on it"

kill -TERM "$nspawn"
wait "$nspawn" || true
trap - EXIT
rm -rf "$root"
echo "PASS: the package's service, TLS recipe and socket work under systemd"
