// Shared by the browser test and the dashboard benchmark: start the daemon
// on 127.0.0.1 (port 0 unless given), stop it, and launch headless Chromium.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set (run through make)`);
  return process.env[k];
};

export function playwright() {
  const require = createRequire(join(env('NODE_MODULES'), 'x.js'));
  return require('playwright-core');
}

export function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}

// Every bound on waiting is ten times longer when the daemon runs under a
// wrapper (valgrind), as in tests/integration/lib.sh.
export const SLOW = process.env.NEUROND_WRAPPER ? 10 : 1;

// Resolves to { proc, port, url, stop() } once the daemon logs its port:
// within 60 s (times SLOW), a bound for a loaded machine that costs nothing
// when the daemon is quick, as the wait ends with the log line.
export function startDaemon({ backend, db, port = 0, extra = [] }) {
  const args = ['--listen', `127.0.0.1:${port}`, '--db', db, '--web-root', env('DASHBOARD_ROOT'), '--backend', backend, ...extra];
  // neurond refuses to run as root unless told to; CI runs the tests as root.
  if (process.getuid && process.getuid() === 0) args.push('--allow-root');
  const proc = spawn(env('NEUROND'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, sig) => resolve({ code, sig })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`daemon did not start within ${60 * SLOW} s: ${log}`)); }, 60000 * SLOW);
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening on port (\d+)/.exec(log);
      if (m && timer) {
        clearTimeout(timer);
        const p = Number(m[1]);
        resolve({
          proc, port: p, url: `http://127.0.0.1:${p}/`, log: () => log,
          async stop() {
            proc.kill('SIGTERM');
            const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
            const r = await exited;
            clearTimeout(t);
            return r;
          },
        });
      }
    });
    exited.then((r) => { clearTimeout(timer); reject(new Error(`daemon exited (${r.code}): ${log}`)); });
  });
}

export async function instances() {
  const proc = spawn(env('NEUROND'), ['--list-instances'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  proc.stdout.on('data', (c) => { out += c; });
  await new Promise((r) => proc.on('exit', r));
  return out;
}

// Chromium with the flags this machine needs and a fresh profile.
export async function launch(profile, opts = {}) {
  const { chromium } = playwright();
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
    viewport: { width: 1440, height: 1000 },
    ...opts,
  });
}

// The test suite's kubelet (tests/integration/fake-kubelet.py, a gRPC
// server) on dir/kubelet.sock, answering with pods (its STATE's "pods").
// Resolves to { socket, stop() } once it listens.
export async function startKubelet(dir, pods) {
  const top = env('top_srcdir');
  const socket = join(dir, 'kubelet.sock');
  writeFileSync(join(dir, 'pods.json'), JSON.stringify({ pods }));
  const proc = spawn('/usr/bin/python3', [join(top, 'tests/integration/fake-kubelet.py'), join(top, 'kube/podresources.proto'),
    socket, join(dir, 'pods.json'), join(dir, 'calls')], { stdio: 'ignore' });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  for (let i = 0; i < 300 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(socket)) {
    proc.kill('SIGKILL');
    throw new Error('the fake kubelet did not listen');
  }
  return { socket, async stop() { proc.kill('SIGTERM'); await exited; } };
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

// The whole answer ({ status, tick, data }) of a successful JSON request.
export async function getAnswer(url, init) {
  const res = await fetch(url, init);
  const body = await res.json();
  if (body.status !== 'success') throw new Error(`${url}: ${body.error}`);
  return body;
}

export async function getJSON(url) {
  return (await getAnswer(url)).data;
}

// The daemon's clock (/api/v1/admin/ticks; the daemon needs --enable-admin):
// holdTicks() stops its timer, answered once no tick of it follows;
// runTicks(n) runs n ticks and resolves once the last is published. Both
// resolve to { tick, timestamp }, the latest tick then.
async function ticks(api, query) {
  const body = await getAnswer(`${api}api/v1/admin/ticks?${query}`, { method: 'POST', signal: AbortSignal.timeout(300000 * SLOW) });
  return { tick: body.tick, timestamp: body.data.timestamp };
}
export const holdTicks = (api) => ticks(api, 'hold=true');
export const runTicks = (api, n) => ticks(api, `run=${n}`);
