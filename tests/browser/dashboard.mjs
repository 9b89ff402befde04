// Dashboard end to end: the real daemon on the device model, the real page in
// headless Chromium. Checks what a person relies on, saves screenshots of the
// main views to $SCREENSHOT_DIR. Every wait is bounded.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, startKubelet, instances, launch, tempDir, cleanup, getJSON } from './lib.mjs';

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
  const extra = ['--pod-resources-socket', kubelet.socket];
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
  // Rates need two samples; wait for the link rate to be shown.
  await page.waitForFunction(() => /B\/s/.test(document.getElementById('topo-desc').textContent), null, { timeout: 15000 });

  step = 'heatmap core count';
  const cores = await page.$eval('#heatmap', (c) => Number(c.dataset.cores));
  assert.equal(cores, nCores, 'heatmap shows every core');
  assert.equal(await page.locator('#devices tbody tr').count(), inv.devices.length, 'one table row per device');
  await page.waitForFunction(() => document.querySelectorAll('#hbm-legend span').length > 0, null, { timeout: 20000 });
  assert.ok(await page.$eval('#devices tbody tr:nth-child(10)', (r) => r.classList.contains('down')), 'neuron9 shown down');
  const held = await page.$$eval('.tile', (ts) => ts.find((t) => t.querySelector('dt').textContent === 'Idle, memory held').querySelector('dd').firstChild.textContent);
  assert.ok(Number(held) > 0, `idle cores holding memory are counted (${held})`);
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
  // Right after the page shows a new tick, /api/v1/latest almost always
  // still has that tick; retry the rare time a tick fell in between.
  let matched = false;
  for (let attempt = 0; attempt < 20 && !matched; attempt++) {
    const prev = await page.$eval('#tip', (t) => Number(t.dataset.ts));
    await page.waitForFunction((p) => Number(document.getElementById('tip').dataset.ts) !== p, prev, { timeout: 10000 });
    const [util, mem] = await Promise.all([
      getJSON(`${api}api/v1/latest?metric=neuroncore_utilization_ratio&neuroncore=${target}`).then((d) => d.result[0]),
      getJSON(`${api}api/v1/latest?metric=neuron_device_memory_used_bytes&neuron_device=3`).then((d) => d.result[0]),
    ]);
    const seen = await page.evaluate(() => {
      const tip = document.getElementById('tip');
      const row = document.querySelectorAll('#devices tbody tr')[3];
      return { core: tip.dataset.core, ts: Number(tip.dataset.ts), text: tip.textContent,
        hbmTs: Number(document.getElementById('devices').dataset.ts), bytes: row.querySelector('.txt').dataset.bytes };
    });
    assert.equal(seen.core, String(target), 'arrow keys move the focus to the 8th core');
    if (util.value[0] === seen.ts && mem.value[0] === seen.hbmTs) {
      assert.ok(seen.text.includes(`utilization ${(Number(util.value[1]) * 100).toFixed(1)} %`), `tooltip "${seen.text}" shows ${util.value[1]}`);
      assert.equal(Number(seen.bytes), Number(mem.value[1]), 'HBM used of neuron3 matches');
      assert.ok(seen.text.includes(`memory held`), 'tooltip shows memory held');
      matched = true;
    }
  }
  assert.ok(matched, 'caught the page and /api/v1/latest on the same tick');
  assert.match(await page.textContent('#core-focus'), new RegExp(`NeuronCore ${target}, (runtime [^:]+|no runtime): utilization`), 'focused core is announced');

  step = 'who uses which core';
  // The tooltip names the runtime holding the core, as /api/v1/devices does
  // (training holds neuron3's cores for the whole run).
  const owner = (await getJSON(`${api}api/v1/devices`)).devices[3].neuroncores[1];
  assert.equal(owner.neuroncore, target);
  assert.ok(owner.runtime_tag, 'neuron3 core is held by a runtime');
  assert.ok((await page.textContent('#tip')).includes(`runtime ${owner.runtime_tag} (pid ${owner.pid})`), 'tooltip names the runtime');
  // The runtimes table: one row per runtime with its pid and cores. A
  // runtime may start or exit between the two reads: compare those in both.
  await page.waitForFunction(() => document.querySelectorAll('#runtimes tbody tr[data-runtime]').length > 0, null, { timeout: 20000 });
  const rts = (await getJSON(`${api}api/v1/runtimes`)).runtimes;
  const shown = await page.$$eval('#runtimes tbody tr[data-runtime]', (rs) => rs.map((r) => [r.dataset.runtime, r.children[1].textContent, r.children[2].textContent]));
  const both = rts.filter((r) => shown.some((x) => x[0] === r.runtime_tag));
  assert.ok(both.length >= rts.length - 1 && both.length > 0, `runtimes shown ${shown.map((x) => x[0])} as the API lists them`);
  for (const r of both) {
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
  const before = await page.$eval('#charts', (c) => Number(c.dataset.lastX || 0));
  await page.waitForFunction((b) => Number(document.getElementById('charts').dataset.lastX) > b, before, { timeout: 10000 });
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
  await page.waitForTimeout(1200);
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
    const d2 = await startDaemon({ backend: `model:${big},scenario=mixed,memory_categories=on`, db: join(work, 'b.db') });
    try {
      const inv2 = await getJSON(`${d2.url}api/v1/devices`);
      await page.goto(`${d2.url}#device=0&range=live`);
      await state(page, 'live');
      await loaded(page, 'live');
      await page.waitForFunction(() => /B\/s/.test(document.getElementById('topo-desc').textContent), null, { timeout: 15000 });
      assert.equal(await page.$eval('#heatmap', (c) => Number(c.dataset.cores)), inv2.devices.reduce((n, d) => n + d.cores, 0));
      await shot(page, `${big}-overview-light`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.waitForTimeout(1200);
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
