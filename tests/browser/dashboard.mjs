// Dashboard end to end: the real daemon on the device model, the real page in
// headless Chromium. Checks what a person relies on, saves screenshots of the
// main views to $SCREENSHOT_DIR. Every wait is bounded. The daemon's clock is
// held (/api/v1/admin/ticks) and moved a tick at a time by the test: the page
// and the API are compared on one tick, however slowly either runs.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, startKubelet, instances, launch, tempDir, cleanup, getJSON, getAnswer, holdTicks, runTicks } from './lib.mjs';

const shots = process.env.SCREENSHOT_DIR || 'screenshots';
mkdirSync(shots, { recursive: true });
const work = tempDir('neurond-browser-');
const problems = [];
let daemon = null;
let kubelet = null;
let ctx = null;
let step = 'start';

function watch(page) {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|Failed to fetch/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
}
const shot = (page, name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
const state = (page, s) => page.waitForFunction((want) => document.body.dataset.state === want, s, { timeout: 20000 });
const loaded = (page, range) => page.waitForFunction((r) => {
  const c = document.getElementById('charts');
  return c.dataset.loaded === r && c.querySelectorAll('.uplot').length > 0;
}, range, { timeout: 20000 });
// Until every part of the page that carries the tick it shows (tiles, devices
// table, runtimes) shows tick t: the page polls once per interval.
const shows = (page, t) => page.waitForFunction((want) => ['tiles', 'devices', 'runtimes']
  .every((id) => document.getElementById(id).dataset.tick === want), String(t), { timeout: 20000 });
// Rates need two ticks the page has seen: once it shows the held tick, one
// more is run, and the link rate is waited for.
async function twoTicksShown(page, api, held) {
  await shows(page, held.tick);
  const next = await runTicks(api, 1);
  await shows(page, next.tick);
  await page.waitForFunction(() => /B\/s/.test(document.getElementById('topo-desc').textContent), null, { timeout: 10000 });
  return next;
}
// The next frame painted after a change the page reacts to (a colour scheme).
const painted = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function main() {
  step = 'daemon';
  // Mixed jobs (some devices idle with memory held), the memory categories and
  // one device down: every state the page draws differently is on screen.
  const backend = 'model:trn1.32xlarge,scenario=mixed,memory_categories=on,fault=device_down:9';
  // A kubelet that gave cores 0-3 to one container, neuron5 to another and
  // neuron12, which the mixed scenario keeps idle, to a third.
  kubelet = await startKubelet(work, [
    { namespace: 'ml', name: 'train-0', containers: [{ name: 'worker', devices: [{ resource: 'aws.amazon.com/neuroncore', ids: ['0', '1', '2', '3'] }] }] },
    { namespace: 'serve', name: 'infer-0', containers: [{ name: 'server', devices: [{ resource: 'aws.amazon.com/neuron', ids: ['5'] }] }] },
    { namespace: 'batch', name: 'hold-0', containers: [{ name: 'main', devices: [{ resource: 'aws.amazon.com/neurondevice', ids: ['12'] }] }] },
  ]);
  const extra = ['--pod-resources-socket', kubelet.socket, '--enable-admin'];
  daemon = await startDaemon({ backend, db: join(work, 'a.db'), extra });
  const api = daemon.url;
  const inv = await getJSON(`${api}api/v1/devices`);
  const nCores = inv.devices.reduce((n, d) => n + d.cores, 0);

  ctx = await launch(join(work, 'profile'));
  const page = ctx.pages()[0] || await ctx.newPage();
  watch(page);
  await page.emulateMedia({ colorScheme: 'light' });

  step = 'load';
  await page.goto(`${api}#device=0&range=live`);
  await state(page, 'live');
  await loaded(page, 'live');
  // From here on the daemon's clock is held: the page says so, and the test
  // moves it tick by tick.
  let held = await holdTicks(api);
  await state(page, 'held');
  assert.match(await page.textContent('#banner'), /clock is held/);
  held = await twoTicksShown(page, api, held);

  step = 'heatmap core count';
  const cores = await page.$eval('#heatmap', (c) => Number(c.dataset.cores));
  assert.equal(cores, nCores, 'heatmap shows every core');
  assert.equal(await page.locator('#devices tbody tr').count(), inv.devices.length, 'one table row per device');
  await page.waitForFunction(() => document.querySelectorAll('#hbm-legend span').length > 0, null, { timeout: 20000 });
  assert.ok(await page.$eval('#devices tbody tr:nth-child(10)', (r) => r.classList.contains('down')), 'neuron9 shown down');
  const idleHeld = await page.$$eval('.tile', (ts) => ts.find((t) => t.querySelector('dt').textContent === 'Idle, memory held').querySelector('dd').firstChild.textContent);
  assert.ok(Number(idleHeld) > 0, `idle cores holding memory are counted (${idleHeld})`);
  await shot(page, 'trn1.32xlarge-overview-light');

  step = 'pods';
  await page.waitForFunction(() => document.querySelectorAll('#pods tbody tr').length === 3, null, { timeout: 20000 });
  assert.ok(await page.isVisible('#pods-card'), 'the pods card is shown');
  assert.match(await page.textContent('#pods-note'), /^3 containers hold NeuronCores or devices/);
  const pods = await page.$$eval('#pods tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(pods.map((r) => r.slice(0, 5)), [['ml', 'train-0', 'worker', '0-3', 'neuron0, neuron1'],
    ['serve', 'infer-0', 'server', '10-11', 'neuron5'], ['batch', 'hold-0', 'main', '24-25', 'neuron12']]);
  assert.doesNotMatch(pods[1][5], /idle/, 'a busy container is not idle');
  assert.match(pods[2][5], /^idle /, 'a container whose cores are idle is shown idle');
  await page.focus('#heatmap');
  await page.keyboard.press('Home');
  await page.waitForFunction(() => /pod ml\/train-0 · worker/.test(document.getElementById('tip').textContent), null, { timeout: 10000 });
  await page.locator('#pods-card').screenshot({ path: join(shots, 'trn1.32xlarge-pods.png') });

  step = 'value matches /api/v1/latest';
  const target = inv.devices[3].first_core + 1;   // second core of neuron3
  await page.focus('#heatmap');
  await page.keyboard.press('Home');
  for (let i = 0; i < 7; i++) await page.keyboard.press('ArrowRight');
  // The clock is held: the API answers from the held tick, and the page,
  // once its tooltip shows that tick, shows it everywhere (one request).
  const [util, mem] = await Promise.all([
    getAnswer(`${api}api/v1/latest?metric=neuroncore_utilization_ratio&neuroncore=${target}`),
    getAnswer(`${api}api/v1/latest?metric=neuron_device_memory_used_bytes&neuron_device=3`),
  ]);
  assert.deepEqual([util.tick, mem.tick], [held.tick, held.tick], 'the API answers from the held tick');
  await page.waitForFunction((t) => document.getElementById('tip').dataset.tick === t, String(held.tick), { timeout: 10000 });
  const seen = await page.evaluate(() => {
    const tip = document.getElementById('tip');
    const row = document.querySelectorAll('#devices tbody tr')[3];
    const ticks = ['tiles', 'devices', 'runtimes'].map((id) => document.getElementById(id).dataset);
    return { core: tip.dataset.core, ts: Number(tip.dataset.ts), text: tip.textContent, tick: tip.dataset.tick,
      hbmTs: Number(document.getElementById('devices').dataset.ts), bytes: row.querySelector('.txt').dataset.bytes,
      ticks: ticks.map((d) => d.tick), stamps: ticks.map((d) => Number(d.ts)) };
  });
  assert.equal(seen.core, String(target), 'arrow keys move the focus to the 8th core');
  const at = held.timestamp;
  assert.deepEqual([util.data.result[0].value[0], mem.data.result[0].value[0]], [at, at], 'the API\'s values are of the held tick');
  assert.deepEqual({ ts: seen.ts, hbmTs: seen.hbmTs, ticks: seen.ticks, stamps: seen.stamps },
    { ts: at, hbmTs: at, ticks: Array(3).fill(String(held.tick)), stamps: Array(3).fill(at) }, 'the page shows the held tick, one tick on one screen');
  const u = util.data.result[0].value[1];
  assert.ok(seen.text.includes(`utilization ${(Number(u) * 100).toFixed(1)} %`), `tooltip "${seen.text}" shows ${u}`);
  assert.equal(Number(seen.bytes), Number(mem.data.result[0].value[1]), 'HBM used of neuron3 matches');
  assert.ok(seen.text.includes(`memory held`), 'tooltip shows memory held');
  assert.match(await page.textContent('#core-focus'), new RegExp(`NeuronCore ${target}, (runtime [^:]+|no runtime): utilization`), 'focused core is announced');

  step = 'who uses which core';
  // The tooltip names the runtime holding the core, as /api/v1/devices does
  // (training holds neuron3's cores for the whole run).
  const owner = (await getJSON(`${api}api/v1/devices`)).devices[3].neuroncores[1];
  assert.equal(owner.neuroncore, target);
  assert.ok(owner.runtime_tag, 'neuron3 core is held by a runtime');
  assert.ok((await page.textContent('#tip')).includes(`runtime ${owner.runtime_tag} (pid ${owner.pid})`), 'tooltip names the runtime');
  // The runtimes table: one row per runtime with its pid and cores, the
  // held tick's, as the API lists them.
  await shows(page, held.tick);
  const rts = await getAnswer(`${api}api/v1/runtimes`);
  assert.equal(rts.tick, held.tick, 'the runtimes are the held tick\'s');
  const shown = await page.$$eval('#runtimes tbody tr[data-runtime]', (rs) => rs.map((r) => [r.dataset.runtime, r.children[1].textContent, r.children[2].textContent]));
  assert.deepEqual(shown.map((x) => x[0]), rts.data.runtimes.map((r) => r.runtime_tag), 'runtimes shown as the API lists them');
  assert.ok(shown.length > 0, 'runtimes are shown');
  for (const r of rts.data.runtimes) {
    const row = shown.find((x) => x[0] === r.runtime_tag);
    assert.equal(row[1], String(r.pid), `pid of ${r.runtime_tag}`);
    assert.ok(row[2].startsWith(`${r.neuroncores[0]}`) && row[2].includes(`neuron${r.neuron_devices[0]}`), `cores of ${r.runtime_tag}: ${row[2]}`);
  }
  await page.locator('#runtimes').screenshot({ path: join(shots, 'trn1.32xlarge-runtimes.png') });
  await page.locator('.heat-card').screenshot({ path: join(shots, 'trn1.32xlarge-core-focus.png') });

  step = 'keyboard selects a core';
  await page.keyboard.press('Enter');
  await page.waitForFunction((c) => location.hash.includes(`core=${c}`), target, { timeout: 5000 });
  await loaded(page, 'live');
  assert.match(await page.textContent('#charts-title'), new RegExp(`NeuronCore ${target}`));

  step = 'topology is keyboard operable';
  await page.focus('#topology g.dev[tabindex="0"]');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash.includes('device=2'), null, { timeout: 5000 });
  await loaded(page, 'live');
  assert.match(await page.textContent('#charts-title'), /^neuron2\b/);

  step = 'selecting a device shows its charts';
  await page.click('#devices tbody tr:nth-child(6) .dev-btn');
  await page.waitForFunction(() => location.hash.includes('device=5'), null, { timeout: 5000 });
  await loaded(page, 'live');
  assert.match(await page.textContent('#charts-title'), /^neuron5\b/);
  const titles = await page.$$eval('#charts figure', (f) => f.map((x) => x.dataset.title));
  assert.equal(titles.length, 4, `device charts: ${titles.join(', ')}`);
  assert.ok(await page.$eval('#charts', (c) => Number(c.dataset.points) > 0), 'live history has points');
  // Live mode appends the next tick to the charts.
  held = await runTicks(api, 1);
  await page.waitForFunction((t) => Number(document.getElementById('charts').dataset.lastX) === t, held.timestamp, { timeout: 10000 });
  await page.evaluate(() => window.scrollTo(0, document.getElementById('charts-title').getBoundingClientRect().top + window.scrollY - 70));
  await page.screenshot({ path: join(shots, 'trn1.32xlarge-device-charts.png') });

  step = 'range picker loads history';
  const req = page.waitForRequest((r) => r.url().includes('query_range') && r.url().includes('neuron_device=5'), { timeout: 10000 });
  await page.click('#ranges button[data-range="1h"]');
  const url = new URL((await req).url());
  assert.ok(Number(url.searchParams.get('end')) - Number(url.searchParams.get('start')) >= 3599, '1 h range requested');
  await loaded(page, '1h');
  assert.equal(await page.getAttribute('#ranges button[data-range="1h"]', 'aria-pressed'), 'true');
  assert.match(await page.evaluate(() => location.hash), /range=1h/);
  assert.ok(await page.$eval('#charts', (c) => Number(c.dataset.points) > 0), '1 h history has points');
  await page.click('#ranges button[data-range="custom"]');
  await loaded(page, 'custom');
  assert.ok(await page.isVisible('#custom'), 'custom range form is shown');
  await page.click('#ranges button[data-range="live"]');
  await loaded(page, 'live');

  step = 'shared URL restores the view';
  const page2 = await ctx.newPage();
  watch(page2);
  await page2.goto(`${api}#core=${target}&range=24h`);
  await loaded(page2, '24h');
  assert.match(await page2.textContent('#charts-title'), new RegExp(`NeuronCore ${target}`));
  assert.equal(await page2.getAttribute('#ranges button[data-range="24h"]', 'aria-pressed'), 'true');
  await page2.close();

  step = 'dark scheme';
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForFunction(() => matchMedia('(prefers-color-scheme: dark)').matches, null, { timeout: 5000 });
  await painted(page);
  await loaded(page, 'live');
  await shot(page, 'trn1.32xlarge-overview-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  step = 'unreachable state';
  const port = daemon.port;
  const r = await daemon.stop();
  daemon = null;
  assert.equal(r.code, 0, 'daemon exits cleanly on SIGTERM');
  await state(page, 'unreachable');
  assert.ok(await page.isVisible('#banner'), 'banner shown');
  assert.match(await page.textContent('#banner'), /unreachable/);
  assert.equal(await page.textContent('#health'), 'unreachable');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(shots, 'trn1.32xlarge-unreachable.png') });

  step = 'recovery on restart';
  daemon = await startDaemon({ backend, db: join(work, 'a.db'), port, extra });
  await state(page, 'live');
  assert.ok(await page.isHidden('#banner'), 'banner gone after recovery');
  await loaded(page, 'live');

  // The big instance, when the catalog has it.
  const big = 'trn3-gen2-ultraserver';
  if ((await instances()).includes(big)) {
    step = big;
    const d2 = await startDaemon({ backend: `model:${big},scenario=mixed,memory_categories=on`, db: join(work, 'b.db'), extra: ['--enable-admin'] });
    try {
      const held2 = await holdTicks(d2.url);
      const inv2 = await getJSON(`${d2.url}api/v1/devices`);
      await page.goto(`${d2.url}#device=0&range=live`);
      await state(page, 'held');
      await loaded(page, 'live');
      await twoTicksShown(page, d2.url, held2);
      assert.equal(await page.$eval('#heatmap', (c) => Number(c.dataset.cores)), inv2.devices.reduce((n, d) => n + d.cores, 0));
      await shot(page, `${big}-overview-light`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.waitForFunction(() => matchMedia('(prefers-color-scheme: dark)').matches, null, { timeout: 5000 });
      await painted(page);
      await loaded(page, 'live');
      await shot(page, `${big}-overview-dark`);
    } finally {
      await d2.stop();
    }
  } else {
    console.log(`# ${big} is not in the model catalog; no screenshot for it`);
  }
  assert.deepEqual(problems, [], 'no page errors or CSP violations');
}

let failed = false;
try {
  await main();
  console.log(`PASS: dashboard end to end; screenshots in ${shots}`);
} catch (e) {
  failed = true;
  console.error(`FAIL at "${step}": ${e.stack || e}`);
  if (problems.length) console.error(problems.join('\n'));
  if (daemon) console.error(daemon.log());
} finally {
  if (ctx) await ctx.close().catch(() => {});
  if (daemon) await daemon.stop();
  if (kubelet) await kubelet.stop();
  cleanup(work);
}
process.exit(failed ? 1 : 0);
