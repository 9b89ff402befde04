// Prints the dashboard's figures as a Markdown block for bench/RESULTS.md.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { startDaemon, instances, launch, tempDir, cleanup, getJSON } from '../tests/browser/lib.mjs';

const seconds = Number(process.env.BENCH_SECONDS || 600);
const catalog = await instances();
const wanted = process.env.BENCH_INSTANCE || 'trn3-gen2-ultraserver';
const instance = catalog.includes(wanted) ? wanted : 'trn1.32xlarge';
const out = process.env.OUT_DIR || 'dashboard-out';
mkdirSync(out, { recursive: true });
const work = tempDir('neurond-bench-');
const daemon = await startDaemon({ backend: `model:${instance}`, db: join(work, 'bench.db') });
const ctx = await launch(join(work, 'profile'));
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };
const f1 = (x) => x.toFixed(1);

try {
  const inv = await getJSON(`${daemon.url}api/v1/devices`);
  const cores = inv.devices.reduce((n, d) => n + d.cores, 0);
  // Let the store hold a few ticks so the first load has history to draw.
  await new Promise((r) => setTimeout(r, 3000));
  const page = ctx.pages()[0] || await ctx.newPage();
  await page.addInitScript(() => {
    window.__bench = { updates: [], long: [] };
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__bench.updates.push(e.duration); }).observe({ entryTypes: ['measure'] });
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__bench.long.push(e.duration); }).observe({ entryTypes: ['longtask'] });
  });
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Performance.enable');
  const metrics = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));

  // First meaningful paint: the frame after the first tick's data is drawn
  // (tiles, heatmap, table, topology), from navigation start.
  await page.goto(`${daemon.url}#device=0&range=live`);
  await page.waitForFunction(() => performance.getEntriesByName('neurond:first-data').length > 0, null, { timeout: 30000 });
  const fmp = await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(() =>
    resolve(performance.getEntriesByName('neurond:first-data')[0].startTime), 0))));
  const fcp = await page.evaluate(() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime);
  await page.waitForFunction(() => document.getElementById('charts').dataset.loaded === 'live', null, { timeout: 30000 });
  await page.screenshot({ path: join(out, `${instance}.png`), fullPage: true });

  // Live updates: main-thread task time per tick from the CDP counters, and
  // the update's own script time from the page's measures.
  await page.waitForTimeout(5000);
  await page.evaluate(() => { window.__bench.updates.length = 0; window.__bench.long.length = 0; });
  const heap = [];
  // Heap is read after a forced GC; the GC's own task time is left out of
  // the per-update figure by summing only the spans between collections.
  const gcHeap = async () => { await cdp.send('HeapProfiler.collectGarbage'); return metrics(); };
  let after = await gcHeap();
  heap.push([0, after.JSHeapUsedSize, after.Nodes]);
  let task = 0;
  const t0 = Date.now();
  const sampleEvery = Math.max(10, Math.min(60, seconds / 10));
  while ((Date.now() - t0) / 1000 < seconds) {
    await page.waitForTimeout(sampleEvery * 1000);
    const before = await metrics();
    task += before.TaskDuration - after.TaskDuration;
    after = await gcHeap();
    heap.push([(Date.now() - t0) / 1000, after.JSHeapUsedSize, after.Nodes]);
  }
  const b = await page.evaluate(() => window.__bench);
  const ticks = b.updates.length;
  const taskPerTick = (task * 1000) / Math.max(1, ticks);
  const mib = (x) => f1(x / 1048576);
  const first = heap[1] || heap[0], last = heap[heap.length - 1];
  const lines = [
    `### Dashboard: ${instance} (${inv.devices.length} devices, ${cores} cores)${instance !== wanted ? ` — ${wanted} not in the model catalog yet` : ''}`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0].model}, ${mib(totalmem())} MiB RAM; headless Chromium ${ctx.browser() ? ctx.browser().version() : ''}, 1440×1000 viewport; ${new Date().toISOString().slice(0, 16)}Z.`,
    `Command: \`make bench-dashboard\` (BENCH_SECONDS=${seconds}${process.env.BENCH_INSTANCE ? `, BENCH_INSTANCE=${process.env.BENCH_INSTANCE}` : ''}).`,
    '',
    '| figure | value | goal |',
    '|---|---|---|',
    `| first contentful paint | ${f1(fcp)} ms | |`,
    `| first meaningful paint (first tick's data drawn) | ${f1(fmp)} ms | < 1000 ms |`,
    `| main-thread time per live update (all tasks: fetch, parse, script, style, layout, paint) | ${f1(taskPerTick)} ms mean over ${ticks} updates | < 50 ms |`,
    `| update script time (ingest + render + chart append) | median ${f1(q(b.updates, 0.5))} ms, p95 ${f1(q(b.updates, 0.95))} ms, max ${f1(Math.max(...b.updates))} ms | |`,
    `| long tasks (> 50 ms) during the run | ${b.long.length} | |`,
    `| JS heap after GC, start → end of ${Math.round(seconds)} s | ${mib(first[1])} → ${mib(last[1])} MiB (min ${mib(Math.min(...heap.slice(1).map((h) => h[1])))}, max ${mib(Math.max(...heap.slice(1).map((h) => h[1])))}) | steady |`,
    `| DOM nodes, start → end | ${first[2]} → ${last[2]} | steady |`,
    '',
    `Heap samples (s: MiB): ${heap.map(([t, h]) => `${Math.round(t)}: ${mib(h)}`).join(', ')}`,
    '',
  ];
  console.log(lines.join('\n'));
} finally {
  await ctx.close().catch(() => {});
  await daemon.stop();
  cleanup(work);
}
