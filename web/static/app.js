'use strict';
// neurond dashboard: reads only the REST API (same origin), polls
// /api/v1/latest once per daemon interval (every metric shown in one request,
// so that one screen shows one tick), draws the cores on a canvas (fast
// for 1,152 cores), the NeuronLink topology as SVG and history with uPlot.
// Counter rates are computed here from successive values.

(function () {
  const GiB = 1024 ** 3;
  const SVGNS = 'http://www.w3.org/2000/svg';
  const RANGES = { live: 300, '1h': 3600, '24h': 86400, '7d': 604800 };
  const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const DMA_DIRS = [
    ['host_to_device', 'host→dev', '--c-h2d'],
    ['device_to_host', 'dev→host', '--c-d2h'],
    ['device_to_device', 'dev→dev', '--c-d2d'],
  ];
  const CAT_COLORS = ['#2563eb', '#7c3aed', '#0891b2', '#16a34a', '#ea580c', '#db2777', '#ca8a04', '#64748b', '#0d9488'];
  const BYTE_INCRS = Array.from({ length: 56 }, (_, i) => 2 ** i); // ticks at round GiB/MiB
  // Every metric a screen shows, asked for in one /api/v1/latest request:
  // the daemon answers it from one tick. The memory categories are 11
  // series per core, and only on hosts (or models) that report them.
  const LIVE_METRICS = ['neuroncore_utilization_ratio', 'neuroncore_memory_used_bytes', 'neuroncore_memory_usage_bytes',
    'neuron_device_memory_used_bytes', 'neuron_device_up', 'neuron_device_dma_bytes_total',
    'neuron_link_transmit_bytes_total', 'neuron_link_receive_bytes_total', 'neuron_runtime_memory_used_bytes',
    'execution_status_total', 'execution_latency_seconds'];
  const LIVE_QUERY = `api/v1/latest?${LIVE_METRICS.map((m) => `metric=${m}`).join('&')}`;
  const IDLE_UTIL = 0.05;           // below this a core counts as idle
  const HELD_BYTES = 64 * 1024 * 1024; // an idle core holding more than this stands out

  const $ = (id) => document.getElementById(id);

  // ---------- formatting ----------
  function fmtBytes(v) {
    if (!Number.isFinite(v)) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return `${v.toFixed(v >= 100 || i === 0 ? 0 : 1)} ${u[i]}`;
  }
  function fmtRate(v) {
    if (!Number.isFinite(v)) return '–';
    const u = ['B/s', 'kB/s', 'MB/s', 'GB/s', 'TB/s', 'PB/s'];
    let i = 0;
    while (Math.abs(v) >= 1000 && i < u.length - 1) { v /= 1000; i++; }
    return `${v.toFixed(v >= 100 || i === 0 ? 0 : 1)} ${u[i]}`;
  }
  const fmtPct = (r) => (Number.isFinite(r) ? `${(r * 100).toFixed(1)} %` : '–');
  const fmtInt = (n) => n.toLocaleString('en-US');
  function fmtTime(sec) {
    const d = new Date(sec * 1000);
    return d.toLocaleTimeString('en-GB', { hour12: false });
  }
  function fmtAge(s) {
    if (!Number.isFinite(s)) return '';
    if (s < 1) return '< 1 s';
    if (s < 90) return `${Math.round(s)} s`;
    if (s < 5400) return `${Math.round(s / 60)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }
  const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // ---------- state ----------
  const S = {
    inv: null, status: null, interval: 1,
    nCores: 0, slotOf: new Map(), coreDev: null, coreLocal: null,
    util: null, coreMem: null, coreCat: null,
    devMem: null, devTotal: null, devUp: null, dma: null, linkTx: null, linkRx: null,
    edges: new Map(), catNames: [], devCat: null,
    pods: null, corePod: new Map(), podsAnswered: false,
    coreTag: null, runtimes: [], rtStats: new Map(),
    counters: new Map(),
    ts: 0, tick: 0, serverNow: 0, fetchedAt: 0,
    state: 'connecting', failures: 0, lastOk: 0, tickNo: 0,
    sel: { kind: 'device', id: 0 }, range: { kind: 'live' },
  };

  // ---------- HTTP ----------
  // The whole answer: status, the tick it was read from, data.
  async function answer(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 5000);
    try {
      const res = await fetch(path, { cache: 'no-store', signal: ctl.signal });
      const date = res.headers.get('Date');
      if (date) S.serverNow = Date.parse(date) / 1000;
      const body = await res.json();
      if (body.status !== 'success') throw new Error(body.error || res.statusText);
      return body;
    } finally {
      clearTimeout(timer);
    }
  }
  const api = (path) => answer(path).then((b) => b.data);

  // ---------- inventory ----------
  async function loadInventory() {
    const inv = await api('api/v1/devices');
    S.inv = inv;
    const devs = inv.devices;
    S.nCores = devs.reduce((n, d) => n + d.cores, 0);
    S.slotOf = new Map();
    S.coreDev = new Int32Array(S.nCores);
    S.coreLocal = new Int32Array(S.nCores);
    let slot = 0;
    S.devSlot = new Int32Array(devs.length);
    devs.forEach((d, i) => {
      S.devSlot[i] = slot;
      for (let c = 0; c < d.cores; c++, slot++) {
        S.slotOf.set(String(d.first_core + c), slot);
        S.coreDev[slot] = i;
        S.coreLocal[slot] = c;
      }
    });
    const nd = devs.length;
    S.util = new Float64Array(S.nCores).fill(NaN);
    S.coreTag = new Array(S.nCores).fill('');
    S.coreMem = new Float64Array(S.nCores).fill(NaN);
    S.devMem = new Float64Array(nd).fill(NaN);
    S.devTotal = Float64Array.from(devs, (d) => d.memory_total_bytes);
    S.devUp = new Float64Array(nd).fill(NaN);
    S.dma = DMA_DIRS.map(() => new Float64Array(nd).fill(NaN));
    S.linkTx = new Float64Array(nd).fill(NaN);
    S.linkRx = new Float64Array(nd).fill(NaN);
    S.edges = new Map();
    S.counters = new Map();
    S.devIndex = new Map(devs.map((d, i) => [String(d.index), i]));
    if (S.sel.kind === 'device' && S.sel.id >= nd) S.sel = { kind: 'device', id: 0 };
    if (S.sel.kind === 'core' && !S.slotOf.has(String(S.sel.id))) S.sel = { kind: 'device', id: 0 };
    setText($('instance'), inv.instance_type);
    setText($('backend'), inv.backend);
    document.title = `${inv.instance_type} · neurond`;
    buildTiles();
    buildTable();
    heat.layout();
    topo.build();
  }

  // A counter's per-second rate from the previous value of the same series;
  // NaN on the first sample and after a reset.
  function rate(key, t, v) {
    const p = S.counters.get(key);
    if (p && t === p[0]) return p[2];     // same tick seen again
    const r = p && t > p[0] && v >= p[1] ? (v - p[1]) / (t - p[0]) : NaN;
    S.counters.set(key, [t, v, r]);
    return r;
  }

  // ---------- polling ----------
  let pollTimer = 0;
  async function poll() {
    clearTimeout(pollTimer);
    let ok = false;
    try {
      const wasDown = S.state === 'unreachable';
      if (!S.inv || wasDown) await loadInventory();
      const [st, health, pods, live, rts] = await Promise.all([
        api('api/v1/status'), api('api/v1/health'), api('api/v1/pods'), answer(LIVE_QUERY), api('api/v1/runtimes'),
      ]);
      S.fetchedAt = Date.now() / 1000;
      S.status = st;
      S.health = health;
      S.interval = Math.max(0.1, st.interval_seconds || 1);
      if (st.instance_type !== S.inv.instance_type) {
        await loadInventory();
        loadHistory();
      }
      const t0 = performance.now();
      const m = ingest(live);
      ingestRuntimes(rts.runtimes, m.neuron_runtime_memory_used_bytes, m.execution_status_total, m.execution_latency_seconds);
      ingestPods(pods);
      S.tickNo++;
      ok = true;
      setState(st);
      renderAll();
      if (wasDown) loadHistory();
      else charts.appendLive();
      // For the benchmark (a PerformanceObserver sees the entries; clearing
      // keeps the buffer from growing on a page left open for days).
      performance.measure('neurond:update', { start: t0 });
      performance.clearMeasures('neurond:update');
      if (S.tickNo === 1) performance.mark('neurond:first-data');
    } catch (e) {
      S.failures++;
      setState(null, e);
    }
    const delay = ok ? S.interval * 1000 : Math.min(5000, 1000 * 2 ** Math.min(S.failures - 1, 3));
    pollTimer = setTimeout(poll, delay);
  }

  // One /api/v1/latest answer, one tick: its values, and its tick and time
  // for every figure drawn from them. Returns the series by metric.
  function ingest(live) {
    const m = {};
    for (const k of LIVE_METRICS) m[k] = [];
    for (const r of live.data.result) { const a = m[r.metric.__name__]; if (a) a.push(r); }
    const util = m.neuroncore_utilization_ratio, cmem = m.neuroncore_memory_used_bytes, dmem = m.neuron_device_memory_used_bytes;
    const up = m.neuron_device_up, dma = m.neuron_device_dma_bytes_total, cat = m.neuroncore_memory_usage_bytes;
    const tx = m.neuron_link_transmit_bytes_total, rx = m.neuron_link_receive_bytes_total;
    const core = (r) => S.slotOf.get(r.metric.neuroncore);
    const dev = (r) => S.devIndex.get(r.metric.neuron_device);
    S.util.fill(NaN);
    S.coreTag.fill('');
    for (const r of util) {
      const s = core(r);
      if (s !== undefined) {
        S.util[s] = +r.value[1];
        S.coreTag[s] = r.metric.runtime_tag || '';
      }
    }
    S.coreMem.fill(NaN);
    for (const r of cmem) { const s = core(r); if (s !== undefined) S.coreMem[s] = +r.value[1]; }
    S.devMem.fill(NaN);
    for (const r of dmem) { const d = dev(r); if (d !== undefined) S.devMem[d] = +r.value[1]; }
    S.devUp.fill(NaN);
    for (const r of up) { const d = dev(r); if (d !== undefined) S.devUp[d] = +r.value[1]; }
    for (const a of S.dma) a.fill(NaN);
    for (const r of dma) {
      const d = dev(r);
      const k = DMA_DIRS.findIndex((x) => x[0] === r.metric.direction);
      if (d === undefined || k < 0) continue;
      S.dma[k][d] = rate(`dma|${r.metric.neuron_device}|${r.metric.direction}`, r.value[0], +r.value[1]);
    }
    S.linkTx.fill(NaN);
    S.linkRx.fill(NaN);
    const edges = new Map();
    for (const [list, arr, dir] of [[tx, S.linkTx, 'tx'], [rx, S.linkRx, 'rx']]) {
      for (const r of list) {
        const d = dev(r);
        if (d === undefined) continue;
        const v = rate(`${dir}|${r.metric.neuron_device}|${r.metric.peer_device}`, r.value[0], +r.value[1]);
        if (!Number.isFinite(v)) continue;
        arr[d] = (Number.isFinite(arr[d]) ? arr[d] : 0) + v;
        if (dir === 'tx') {
          const a = r.metric.neuron_device, b = r.metric.peer_device;
          const key = b === 'switch' || +a < +b ? `${a}|${b}` : `${b}|${a}`;
          edges.set(key, (edges.get(key) || 0) + v);
        }
      }
    }
    S.edges = edges;
    if (cat.length || S.catNames.length) {
      const names = new Set();
      S.devCat = S.inv.devices.map(() => new Map());
      S.coreCat = new Map();
      for (const r of cat) {
        const d = dev(r), c = r.metric.category, v = +r.value[1];
        if (d === undefined || !c) continue;
        names.add(c);
        S.devCat[d].set(c, (S.devCat[d].get(c) || 0) + v);
        const s = core(r);
        if (s !== undefined) {
          if (!S.coreCat.has(s)) S.coreCat.set(s, new Map());
          S.coreCat.get(s).set(c, v);
        }
      }
      S.catNames = [...names].sort();
    }
    if (live.data.timestamp) {
      S.ts = live.data.timestamp;
      S.tick = live.tick;
    }
    return m;
  }

  // Who holds which cores (/api/v1/pods): per core slot, the container.
  function ingestPods(pods) {
    S.pods = pods;
    S.corePod = new Map();
    for (const c of pods.containers) {
      for (const core of c.neuroncores) {
        const s = S.slotOf.get(String(core));
        if (s !== undefined) S.corePod.set(s, c);
      }
    }
  }

  // Who uses which core: the runtimes, their memory, executions and latency.
  // A runtime that exited is gone from the list, and so is its row.
  function ingestRuntimes(list, mem, exec, lat) {
    const stats = new Map(list.map((r) => [r.runtime_tag, { dev: NaN, host: NaN, ok: NaN, err: NaN, p50: NaN, p99: NaN }]));
    for (const r of mem) {
      const x = stats.get(r.metric.runtime_tag);
      if (x) x[r.metric.memory_location === 'host' ? 'host' : 'dev'] = +r.value[1];
    }
    for (const r of exec) {
      const x = stats.get(r.metric.runtime_tag);
      if (!x) continue;   // a core's counters (sysfs) name no runtime
      const v = rate(`exec|${r.metric.runtime_tag}|${r.metric.status_type}`, r.value[0], +r.value[1]);
      const k = r.metric.status_type === 'completed' ? 'ok' : 'err';
      if (Number.isFinite(v)) x[k] = (Number.isFinite(x[k]) ? x[k] : 0) + v;
    }
    for (const r of lat) {
      const x = stats.get(r.metric.runtime_tag);
      if (x && (r.metric.percentile === 'p50' || r.metric.percentile === 'p99')) x[r.metric.percentile] = +r.value[1];
    }
    S.runtimes = list;
    S.rtStats = stats;
  }

  // "0-7, 12" for a sorted core list.
  function ranges(cores) {
    const out = [];
    for (let i = 0; i < cores.length;) {
      let j = i;
      while (j + 1 < cores.length && cores[j + 1] === cores[j] + 1) j++;
      out.push(j > i ? `${cores[i]}-${cores[j]}` : `${cores[i]}`);
      i = j + 1;
    }
    return out.join(', ');
  }

  function fmtSeconds(v) {
    if (!Number.isFinite(v)) return '–';
    return v < 1 ? `${(v * 1000).toFixed(v < 0.01 ? 2 : 1)} ms` : `${v.toFixed(2)} s`;
  }

  function renderRuntimes() {
    const tb = document.querySelector('#runtimes tbody');
    const rows = S.runtimes.map((r) => {
      const x = S.rtStats.get(r.runtime_tag) || {};
      let us = 0, un = 0;
      for (const c of r.neuroncores) {
        const slot = S.slotOf.get(String(c));
        if (slot !== undefined && Number.isFinite(S.util[slot])) { us += S.util[slot]; un++; }
      }
      const tr = el('tr');
      const th = el('th', '', r.runtime_tag);
      th.scope = 'row';
      tr.dataset.runtime = r.runtime_tag;
      tr.append(th, el('td', 'num', String(r.pid)),
        el('td', '', `${ranges(r.neuroncores)} (neuron${r.neuron_devices.join(', neuron')})`),
        el('td', 'num', un ? fmtPct(us / un) : '–'), el('td', 'num', fmtBytes(x.dev)), el('td', 'num', fmtBytes(x.host)),
        el('td', 'num', Number.isFinite(x.ok) ? x.ok.toFixed(1) : '–'),
        el('td', 'num', Number.isFinite(x.err) ? x.err.toFixed(1) : '–'),
        el('td', 'num', `${fmtSeconds(x.p50)} / ${fmtSeconds(x.p99)}`));
      return tr;
    });
    if (!rows.length) {
      const td = el('td', 'muted', S.inv.backend.startsWith('sysfs')
        ? 'The driver does not say which process holds a core: no runtimes are known here.'
        : 'No Neuron runtime is running.');
      td.colSpan = 9;
      const tr = el('tr');
      tr.append(td);
      rows.push(tr);
    }
    tb.replaceChildren(...rows);
    const held = S.runtimes.reduce((n, r) => n + r.neuroncores.length, 0);
    setText($('runtimes-summary'), `${fmtInt(S.runtimes.length)} running, holding ${fmtInt(held)} of ${fmtInt(S.nCores)} NeuronCores`);
    $('runtimes').dataset.ts = String(S.ts);
    $('runtimes').dataset.tick = String(S.tick);
  }

  // ---------- health ----------
  function setState(st, err) {
    const banner = $('banner');
    const pill = $('health');
    let state, label, cls;
    if (!st) {
      state = 'unreachable'; label = 'unreachable'; cls = 'bad';
      banner.className = 'banner';
      banner.replaceChildren();
      const b = el('strong', '', 'neurond is unreachable. ');
      const last = S.ts ? `The figures below are from ${fmtTime(S.ts)} and are not updating. ` : '';
      banner.append(b, `Cannot reach ${location.host}${err && err.name === 'AbortError' ? ' (timed out)' : ''}. ${last}Retrying every few seconds; this page recovers by itself.`);
      banner.hidden = false;
    } else {
      const down = (st.collectors || []).filter((c) => !c.up).map((c) => c.name);
      const now = S.serverNow || Date.now() / 1000;
      const age = st.last_tick ? now - st.last_tick : Infinity;
      if (down.length) {
        state = 'collector-down'; label = 'collector down'; cls = 'warn';
        banner.className = 'banner warn';
        banner.replaceChildren(el('strong', '', `Collector ${down.join(', ')} is down. `),
          'neurond is running but cannot read the devices; values shown may be missing or stale. The daemon keeps retrying.');
        banner.hidden = false;
      } else if (st.held) {
        // A test (or a person) holds the daemon's clock: old is not stale.
        state = 'held'; label = 'clock held'; cls = 'warn';
        banner.className = 'banner warn';
        banner.replaceChildren(el('strong', '', 'The clock is held. '),
          'neurond\'s ticks are held through its admin endpoint: the figures move only as ticks are run.');
        banner.hidden = false;
      } else if (age > Math.max(5, 3 * S.interval) + 1) {
        state = 'stale'; label = 'stale'; cls = 'warn';
        banner.className = 'banner warn';
        banner.replaceChildren(el('strong', '', 'No fresh data. '), `The last tick was ${fmtAge(age)} ago.`);
        banner.hidden = false;
      } else {
        state = 'live'; label = 'live'; cls = 'ok';
        banner.hidden = true;
      }
      S.lastOk = Date.now();
      S.failures = 0;
      setText($('age'), st.last_tick ? `updated ${fmtTime(st.last_tick)}` : '');
      setText($('footer'), `neurond ${st.version} · ${st.backend} · every ${S.interval} s · up ${fmtAge(st.uptime_seconds)} · ${st.series} series`);
    }
    S.state = state;
    document.body.dataset.state = state;
    document.body.classList.toggle('offline', state === 'unreachable');
    pill.className = `pill ${cls}`;
    setText(pill, label);
  }

  // ---------- overview tiles ----------
  const tiles = {};
  function buildTiles() {
    const defs = [['devices', 'Devices'], ['cores', 'NeuronCores'], ['util', 'Utilization'], ['held', 'Idle, memory held'],
      ['hbm', 'HBM used'], ['dma', 'DMA'], ['link', 'NeuronLink'], ['health', 'Health']];
    const dl = $('tiles');
    dl.replaceChildren();
    for (const [k, label] of defs) {
      const box = el('div', 'tile');
      const dd = el('dd', '', '–');
      box.append(el('dt', '', label), dd);
      const t = { box, dd };
      if (k === 'util' || k === 'hbm') {
        const m = el('div', 'meter');
        t.bar = el('span');
        m.append(t.bar);
        box.append(m);
      }
      dl.append(box);
      tiles[k] = t;
    }
  }
  function tile(k, main, sub, frac, cls) {
    const t = tiles[k];
    const text = sub ? `${main}\u2002${sub}` : main;
    if (t.text !== text) {
      t.text = text;
      t.dd.replaceChildren(main);
      if (sub) t.dd.append(el('small', '', sub));
    }
    if (t.bar) t.bar.style.width = `${Math.max(0, Math.min(1, frac || 0)) * 100}%`;
    t.box.className = `tile${cls ? ' ' + cls : ''}`;
  }
  const sum = (a) => { let s = 0, n = 0; for (const v of a) if (Number.isFinite(v)) { s += v; n++; } return [s, n]; };

  function renderTiles() {
    const nd = S.inv.devices.length;
    const [upSum, upN] = sum(S.devUp);
    tile('devices', fmtInt(nd), upN ? `${fmtInt(upSum)} up` : '', 0, upN && upSum < nd ? 'bad' : '');
    let busy = 0, held = 0;
    for (let i = 0; i < S.nCores; i++) {
      if (S.util[i] >= IDLE_UTIL) busy++;
      else if (isHeld(i)) held++;
    }
    tile('cores', fmtInt(S.nCores), `${fmtInt(busy)} busy`);
    const [us, un] = sum(S.util);
    tile('util', un ? fmtPct(us / un) : '–', 'average', un ? us / un : 0);
    tile('held', fmtInt(held), held ? 'cores' : '', 0, held ? 'warn' : '');
    const [ms, mn] = sum(S.devMem);
    const [ts] = sum(S.devTotal);
    tile('hbm', mn ? fmtBytes(ms) : '–', `of ${fmtBytes(ts)}`, ts ? ms / ts : 0);
    const dmaTotal = S.dma.reduce((a, arr) => a + sum(arr)[0], 0);
    tile('dma', fmtRate(dmaTotal), 'all directions');
    const [lt, ln] = sum(S.linkTx);
    tile('link', ln ? fmtRate(lt) : (nd > 1 ? '–' : 'none'), ln ? 'transmit' : '');
    // The devices' health as the daemon's rules judge it (docs/health.md):
    // the worst state and how many devices are not healthy; stale data or
    // a collector that is down says so first.
    const cols = (S.status && S.status.collectors) || [];
    const down = cols.filter((c) => !c.up).length;
    const stale = S.state === 'stale';
    const h = S.health || { state: 'unknown', devices: nd, counts: {}, not_healthy: [] };
    const sick = h.not_healthy || [];
    const main = down ? `${down} of ${cols.length} down` : stale ? 'stale' : h.state;
    const sub = sick.length ? `${fmtInt(sick.length)} of ${fmtInt(h.devices)} not healthy` : `all ${fmtInt(h.devices)} healthy`;
    const cls = down || h.state === 'unhealthy' ? 'bad' : stale || h.state !== 'healthy' ? 'warn' : '';
    tile('health', main, sub, 0, cls);
    // Each device that is not healthy, its state and first reason, on hover.
    tiles.health.box.title = sick.map((d) => `device ${d.device}: ${d.state}${d.reasons.length ? ' (' + d.reasons[0].reason + ')' : ''}`).join('\n');
    $('tiles').dataset.ts = String(S.ts);
    $('tiles').dataset.tick = String(S.tick);
  }
  const isHeld = (i) => !(S.util[i] >= IDLE_UTIL) && Number.isFinite(S.util[i]) && S.coreMem[i] > HELD_BYTES;

  // ---------- heatmap (canvas) ----------
  const heat = (() => {
    const canvas = $('heatmap');
    const tip = $('tip');
    const ctx = canvas.getContext('2d');
    let L = null;       // layout
    let lut = [];
    let focus = -1, hover = -1;

    function buildLut() {
      const dark = isDark();
      const stops = dark
        ? [[0, [35, 43, 55]], [0.2, [44, 79, 143]], [0.45, [63, 127, 232]], [0.75, [242, 160, 61]], [1, [255, 90, 60]]]
        : [[0, [230, 235, 242]], [0.2, [169, 198, 245]], [0.45, [76, 134, 232]], [0.75, [242, 160, 61]], [1, [217, 56, 30]]];
      lut = [];
      for (let i = 0; i <= 100; i++) {
        const x = i / 100;
        let k = 0;
        while (k < stops.length - 2 && x > stops[k + 1][0]) k++;
        const [x0, c0] = stops[k], [x1, c1] = stops[k + 1];
        const f = (x - x0) / (x1 - x0);
        lut.push(`rgb(${c0.map((c, j) => Math.round(c + (c1[j] - c) * f)).join(',')})`);
      }
    }

    function layout() {
      if (!S.inv) return;
      buildLut();
      const devs = S.inv.devices;
      const W = Math.max(200, canvas.parentElement.clientWidth);
      const maxCores = Math.max(...devs.map((d) => d.cores));
      const cols = maxCores <= 2 ? maxCores : maxCores <= 8 ? Math.ceil(maxCores / 2) : Math.ceil(Math.sqrt(maxCores));
      const rows = Math.ceil(maxCores / cols);
      const maxH = Math.max(260, Math.min(560, window.innerHeight - 260));
      let best = null;
      for (let s = 56; s >= 5; s--) {
        const gap = s >= 12 ? 3 : s >= 8 ? 2 : 1;
        const pad = s >= 10 ? 6 : 3;
        const label = s >= 8 ? 15 : 0;
        const bw = cols * s + (cols - 1) * gap + 2 * pad;
        const bh = rows * s + (rows - 1) * gap + 2 * pad + label;
        const bgap = s >= 10 ? 10 : 6;
        const perRow = Math.max(1, Math.floor((W + bgap) / (bw + bgap)));
        const nRows = Math.ceil(devs.length / perRow);
        const H = nRows * bh + (nRows - 1) * bgap;
        best = { s, gap, pad, label, bw, bh, bgap, perRow, H, cols, rows, W };
        if (H <= maxH) break;
      }
      L = best;
      // Cell rectangles in CSS pixels, by core slot.
      L.cells = new Float32Array(S.nCores * 2);
      L.boxes = [];
      let slot = 0;
      devs.forEach((d, i) => {
        const bx = (i % L.perRow) * (L.bw + L.bgap);
        const by = Math.floor(i / L.perRow) * (L.bh + L.bgap);
        L.boxes.push([bx, by]);
        for (let c = 0; c < d.cores; c++, slot++) {
          L.cells[slot * 2] = bx + L.pad + (c % cols) * (L.s + L.gap);
          L.cells[slot * 2 + 1] = by + L.label + L.pad + Math.floor(c / cols) * (L.s + L.gap);
        }
      });
      const dpr = window.devicePixelRatio || 1;
      canvas.style.height = `${L.H}px`;
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(L.H * dpr);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      canvas.dataset.cores = String(S.nCores);
      canvas.dataset.devices = String(devs.length);
      setText($('cores-summary'), `${fmtInt(S.nCores)} cores on ${fmtInt(devs.length)} device${devs.length === 1 ? '' : 's'}`);
      draw();
    }

    function draw() {
      if (!L) return;
      const devs = S.inv.devices;
      const c = { bg: cssVar('--card'), box: cssVar('--line2'), line: cssVar('--line'), fg: cssVar('--fg'), muted: cssVar('--muted'),
        held: cssVar('--held'), accent: cssVar('--accent'), bad: cssVar('--bad') };
      ctx.clearRect(0, 0, L.W, L.H);
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      const selDev = S.sel.kind === 'device' ? S.sel.id : S.coreDev[S.slotOf.get(String(S.sel.id))];
      devs.forEach((d, i) => {
        const [bx, by] = L.boxes[i];
        ctx.fillStyle = c.box;
        ctx.fillRect(bx, by, L.bw, L.bh);
        if (i === selDev) {
          ctx.strokeStyle = c.accent;
          ctx.lineWidth = 2;
          ctx.strokeRect(bx + 1, by + 1, L.bw - 2, L.bh - 2);
        } else if (S.devUp[i] === 0) {
          ctx.strokeStyle = c.bad;
          ctx.lineWidth = 2;
          ctx.strokeRect(bx + 1, by + 1, L.bw - 2, L.bh - 2);
        }
        if (L.label) {
          ctx.fillStyle = c.muted;
          ctx.fillText(L.bw >= 60 ? `neuron${d.index}` : String(d.index), bx + L.pad, by + L.pad + 5);
        }
      });
      const s = L.s;
      for (let i = 0; i < S.nCores; i++) {
        const x = L.cells[i * 2], y = L.cells[i * 2 + 1];
        const u = S.util[i];
        ctx.fillStyle = Number.isFinite(u) ? lut[Math.max(0, Math.min(100, Math.round(u * 100)))] : c.bg;
        ctx.fillRect(x, y, s, s);
        if (isHeld(i)) {
          ctx.strokeStyle = c.held;
          ctx.lineWidth = Math.max(1, s / 10);
          ctx.beginPath();
          for (let k = -s; k < s; k += Math.max(3, s / 4)) {
            ctx.moveTo(x + Math.max(0, k), y + Math.max(0, -k));
            ctx.lineTo(x + Math.min(s, s + k), y + Math.min(s, s - k));
          }
          ctx.stroke();
          ctx.lineWidth = Math.max(1.5, s / 8);
          ctx.strokeRect(x + ctx.lineWidth / 2, y + ctx.lineWidth / 2, s - ctx.lineWidth, s - ctx.lineWidth);
        }
        if (S.sel.kind === 'core' && S.slotOf.get(String(S.sel.id)) === i) {
          ctx.strokeStyle = c.fg;
          ctx.lineWidth = 2;
          ctx.strokeRect(x - 1, y - 1, s + 2, s + 2);
        }
        if (L.s >= 26 && Number.isFinite(u)) {
          ctx.fillStyle = u > 0.6 ? '#fff' : c.fg;
          ctx.textAlign = 'center';
          ctx.fillText(`${Math.round(u * 100)}`, x + s / 2, y + s / 2);
          ctx.textAlign = 'start';
        }
      }
      if (focus >= 0 && document.activeElement === canvas) {
        const x = L.cells[focus * 2], y = L.cells[focus * 2 + 1];
        ctx.strokeStyle = c.accent;
        ctx.lineWidth = 3;
        ctx.strokeRect(x - 2.5, y - 2.5, s + 5, s + 5);
      }
      if (hover >= 0) showTip(hover);
      else if (focus >= 0 && document.activeElement === canvas) showTip(focus);
    }

    function describe(i) {
      const d = S.inv.devices[S.coreDev[i]];
      const core = d.first_core + S.coreLocal[i];
      const tag = S.coreTag[i];
      const rt = tag ? S.runtimes.find((r) => r.runtime_tag === tag) : null;
      return { d, core, util: fmtPct(S.util[i]), mem: fmtBytes(S.coreMem[i]), held: isHeld(i),
        runtime: tag ? `runtime ${tag}${rt ? ` (pid ${rt.pid})` : ''}` : 'no runtime' };
    }
    function showTip(i) {
      const x = describe(i);
      const cat = S.coreCat && S.coreCat.get(i);
      tip.replaceChildren(el('b', '', `neuron${x.d.index} · NeuronCore ${x.core}`), el('br'),
        x.runtime, el('br'), `utilization ${x.util}`, el('br'), `memory held ${x.mem}`);
      if (cat) for (const [k, v] of cat) tip.append(el('br'), `  ${k} ${fmtBytes(v)}`);
      if (x.held) tip.append(el('br'), el('span', 'held', 'idle with memory held'));
      const pod = S.corePod.get(i);
      if (pod) tip.append(el('br'), `pod ${pod.namespace}/${pod.pod} · ${pod.container}`);
      tip.dataset.core = String(x.core);
      tip.dataset.ts = String(S.ts);
      tip.dataset.tick = String(S.tick);
      tip.hidden = false;
      const cx = L.cells[i * 2], cy = L.cells[i * 2 + 1];
      const tw = tip.offsetWidth;
      tip.style.left = `${Math.max(0, Math.min(L.W - tw, cx + L.s / 2 - tw / 2))}px`;
      tip.style.top = `${cy + L.s + 6}px`;
    }
    // Screen readers hear the focused core when the focus moves, not on
    // every tick.
    function announce(i) {
      const x = describe(i);
      setText($('core-focus'), `neuron${x.d.index} NeuronCore ${x.core}, ${x.runtime}: utilization ${x.util}, memory held ${x.mem}${x.held ? ', idle with memory held' : ''}`);
    }

    function hit(ev) {
      if (!L) return -1;
      const r = canvas.getBoundingClientRect();
      const x = ev.clientX - r.left, y = ev.clientY - r.top;
      for (let i = 0; i < S.nCores; i++) {
        const cx = L.cells[i * 2], cy = L.cells[i * 2 + 1];
        if (x >= cx && x < cx + L.s && y >= cy && y < cy + L.s) return i;
      }
      return -1;
    }
    canvas.addEventListener('mousemove', (ev) => {
      const i = hit(ev);
      if (i === hover) return;
      hover = i;
      if (i < 0) tip.hidden = true;
      else showTip(i);
    });
    canvas.addEventListener('mouseleave', () => { hover = -1; tip.hidden = true; });
    canvas.addEventListener('click', (ev) => {
      const i = hit(ev);
      if (i >= 0) { focus = i; select({ kind: 'core', id: S.inv.devices[S.coreDev[i]].first_core + S.coreLocal[i] }); }
    });
    canvas.addEventListener('focus', () => { if (focus < 0) focus = 0; draw(); announce(focus); });
    canvas.addEventListener('blur', () => { if (hover < 0) tip.hidden = true; draw(); });
    canvas.addEventListener('keydown', (ev) => {
      if (!L || !S.nCores) return;
      const dev = S.coreDev[focus], d = S.inv.devices[dev];
      let n = focus;
      switch (ev.key) {
        case 'ArrowRight': n = Math.min(S.nCores - 1, focus + 1); break;
        case 'ArrowLeft': n = Math.max(0, focus - 1); break;
        case 'ArrowDown': n = Math.min(S.nCores - 1, focus + d.cores); break;
        case 'ArrowUp': n = Math.max(0, focus - (S.inv.devices[Math.max(0, dev - 1)].cores)); break;
        case 'PageDown': n = Math.min(S.nCores - 1, focus + d.cores * L.perRow); break;
        case 'PageUp': n = Math.max(0, focus - d.cores * L.perRow); break;
        case 'Home': n = 0; break;
        case 'End': n = S.nCores - 1; break;
        case 'Enter': case ' ':
          select({ kind: 'core', id: d.first_core + S.coreLocal[focus] });
          ev.preventDefault();
          return;
        default: return;
      }
      ev.preventDefault();
      focus = n;
      draw();
      announce(focus);
    });
    return { layout, draw, buildLut };
  })();

  // ---------- devices table ----------
  // Only rows scrolled into view are updated on a tick (144 devices on the
  // biggest instance); a row coming into view is brought up to date at once.
  let rows = [];
  const inView = new Set();
  const rowObserver = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const i = Number(e.target.dataset.row);
      if (e.isIntersecting) { inView.add(i); if (S.inv && S.ts) renderRow(i); } else inView.delete(i);
    }
  }, { root: document.querySelector('.table-wrap') });
  function buildTable() {
    const tb = document.querySelector('#devices tbody');
    rowObserver.disconnect();
    inView.clear();
    tb.replaceChildren();
    rows = S.inv.devices.map((d, i) => {
      const tr = el('tr');
      const b = el('button', 'dev-btn', `neuron${d.index}`);
      b.type = 'button';
      b.setAttribute('aria-label', `Chart neuron${d.index}`);
      b.addEventListener('click', () => select({ kind: 'device', id: i }));
      const th = el('th');
      th.scope = 'row';
      th.append(b, el('span', 'muted', ` ${d.name} · ${d.cores} cores`));
      const util = el('td', 'num');
      const hbmTd = el('td');
      const hbm = el('div', 'hbm');
      const bar = el('div', 'bar');
      const txt = el('span', 'txt');
      hbm.append(bar, txt);
      hbmTd.append(hbm);
      const dma = DMA_DIRS.map(() => el('td', 'num'));
      const tx = el('td', 'num'), rx = el('td', 'num');
      tr.append(th, util, hbmTd, ...dma, tx, rx);
      tr.dataset.row = String(i);
      tb.append(tr);
      rowObserver.observe(tr);
      return { tr, util, bar, txt, dma, tx, rx, segs: [], segKey: '' };
    });
  }
  const catColor = (k) => CAT_COLORS[k % CAT_COLORS.length];
  function renderTable() {
    const cats = S.catNames;
    const selDev = S.sel.kind === 'device' ? S.sel.id : S.coreDev[S.slotOf.get(String(S.sel.id))];
    rows.forEach((r, i) => {
      r.tr.classList.toggle('sel', i === selDev);
      r.tr.classList.toggle('down', S.devUp[i] === 0);
    });
    for (const i of inView) renderRow(i);
    const lg = $('hbm-legend');
    const lkey = cats.join('|');
    if (lg.dataset.key !== lkey) {
      lg.dataset.key = lkey;
      lg.replaceChildren(...cats.map((k, j) => {
        const s = el('span');
        const sw = el('i', 'swatch');
        sw.style.background = catColor(j);
        s.append(sw, k);
        return s;
      }));
    }
    $('devices').dataset.ts = String(S.ts);
    $('devices').dataset.tick = String(S.tick);
  }
  function renderRow(i) {
    const d = S.inv.devices[i], r = rows[i], cats = S.catNames;
    if (!r) return;
    let us = 0, un = 0;
    for (let c = S.devSlot[i], e = c + d.cores; c < e; c++) if (Number.isFinite(S.util[c])) { us += S.util[c]; un++; }
    setText(r.util, un ? fmtPct(us / un) : '–');
    const used = S.devMem[i], total = S.devTotal[i];
    setText(r.txt, `${fmtBytes(used)} / ${fmtBytes(total)}`);
    r.txt.dataset.bytes = String(used);
    // Segments: one per category when the backend reports them, else one.
    const parts = cats.length && S.devCat && S.devCat[i].size ? cats.map((k, j) => [k, S.devCat[i].get(k) || 0, catColor(j)])
      : [['used', used, cssVar('--c-mem')]];
    const key = parts.map((p) => p[0]).join('|');
    if (r.segKey !== key) {
      r.segKey = key;
      r.segs = parts.map((p) => { const s = el('span'); s.title = p[0]; s.style.background = p[2]; return s; });
      r.bar.replaceChildren(...r.segs);
    }
    parts.forEach((p, j) => {
      const w = `${total ? Math.max(0, p[1] / total * 100).toFixed(1) : 0}%`;
      if (r.segs[j].style.width !== w) r.segs[j].style.width = w;
    });
    DMA_DIRS.forEach((_, k) => setText(r.dma[k], fmtRate(S.dma[k][i])));
    setText(r.tx, fmtRate(S.linkTx[i]));
    setText(r.rx, fmtRate(S.linkRx[i]));
  }

  // ---------- pods ----------
  // The card is shown once the kubelet has answered (a host without
  // Kubernetes never shows it); a container whose cores are all idle says so.
  function renderPods() {
    const p = S.pods;
    const card = $('pods-card');
    if (p && p.answered !== null) S.podsAnswered = true;
    card.hidden = !p || p.state === 'off' || !S.podsAnswered;
    if (card.hidden) return;
    const note = $('pods-note');
    const n = p.containers.length;
    const held = `${n} container${n === 1 ? '' : 's'} hold${n === 1 ? 's' : ''} NeuronCores or devices`;
    note.classList.toggle('warn', p.state === 'error');
    setText(note, p.state === 'starting' ? `asking the kubelet at ${p.socket}`
      : p.state === 'error' ? `the kubelet does not answer: ${p.error}${n ? ` · showing its answer of ${fmtTime(p.answered)}` : ''}`
        : `${held} · the kubelet answered ${fmtTime(p.answered)}`);
    const rows = p.containers.map((c) => {
      const tr = el('tr');
      let sum = 0, k = 0;
      for (const core of c.neuroncores) {
        const v = S.util[S.slotOf.get(String(core))];
        if (Number.isFinite(v)) { sum += v; k++; }
      }
      const util = k ? sum / k : NaN;
      const idle = k > 0 && util < IDLE_UTIL;
      tr.append(el('td', '', c.namespace), el('td', '', c.pod), el('td', '', c.container),
        el('td', '', ranges(c.neuroncores) || '–'),
        el('td', '', c.neuron_devices.length ? `neuron${c.neuron_devices.join(', neuron')}` : '–'),
        el('td', idle ? 'num idle' : 'num', idle ? `idle ${fmtPct(util)}` : k ? fmtPct(util) : '–'));
      return tr;
    });
    document.querySelector('#pods tbody').replaceChildren(...rows);
    $('pods').dataset.ts = String(S.ts);
    $('pods').dataset.tick = String(S.tick);
  }

  // ---------- topology (SVG) ----------
  const topo = (() => {
    const root = $('topology');
    // Edges change every tick and are drawn on a canvas under the SVG (a
    // few hundred SVG strokes cost far more to repaint); the nodes stay SVG
    // for clicks, focus and titles.
    const canvas = $('topo-edges');
    const ctx = canvas.getContext('2d');
    let nodes = [], edgeSegs = new Map(), kind = '', lastSel = -1;
    const W = 400, H = 340;

    // Which layout: a 2D torus (w x h, 4 neighbours with wrap-around), a
    // ring (2 neighbours), a switch (links to peer "switch"), or a circle.
    function detect(devs) {
      const n = devs.length;
      const peers = devs.map((d) => new Set(d.peers || []));
      if (n <= 1) return { kind: 'none' };
      const idx = devs.map((d) => d.index);
      for (let w = 3; w <= n / 3; w++) {
        if (n % w) continue;
        const ok = devs.every((d, i) => {
          const x = i % w, y = Math.floor(i / w), h = n / w;
          const want = [y * w + (x + 1) % w, y * w + (x + w - 1) % w, ((y + 1) % h) * w + x, ((y + h - 1) % h) * w + x].map((j) => idx[j]);
          return peers[i].size === 4 && want.every((p) => peers[i].has(p));
        });
        if (ok) return { kind: 'torus', w, h: n / w };
      }
      if (peers.every((p) => p.size === 2)) return { kind: 'ring' };
      // All-to-all: chords for a few devices; past that, a star around the
      // switch (144 devices would need 10,296 chords).
      if (peers.every((p) => p.size === n - 1)) return { kind: n > 16 ? 'switch' : 'mesh' };
      if (peers.every((p) => p.size === 0)) return { kind: 'switch' };
      return { kind: 'graph' };
    }

    function build(asSwitch) {
      const devs = S.inv.devices;
      const t = asSwitch ? { kind: 'switch' } : detect(devs);
      kind = t.kind;
      root.replaceChildren();
      root.setAttribute('viewBox', `0 0 ${W} ${H}`);
      nodes = [];
      edgeSegs = new Map();
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      lastSel = -1;
      const n = devs.length;
      const names = { torus: `2D torus ${t.w}×${t.h}`, ring: 'ring', mesh: 'all-to-all', switch: 'all-to-all through the switch', graph: 'links', none: 'no NeuronLink (single device)' };
      setText($('topo-kind'), names[kind]);
      if (kind === 'none') { setText($('topo-desc'), ''); return; }
      const r = Math.max(3, Math.min(16, 600 / n));
      let pos;
      if (kind === 'torus') {
        const cw = (W - 80) / (t.w - 1 || 1), ch = (H - 60) / (t.h - 1 || 1);
        pos = devs.map((_, i) => [40 + (i % t.w) * cw, 30 + Math.floor(i / t.w) * ch]);
      } else {
        const R = Math.min(W, H) / 2 - r - 8;
        pos = devs.map((_, i) => [W / 2 + R * Math.sin(2 * Math.PI * i / n), H / 2 - R * Math.cos(2 * Math.PI * i / n)]);
      }
      const gNodes = svg('g', {});
      root.append(gNodes);
      const addEdge = (key, seg) => {
        if (!edgeSegs.has(key)) edgeSegs.set(key, []);
        edgeSegs.get(key).push(seg);
      };
      if (kind === 'switch') {
        pos.forEach(([x, y], i) => addEdge(`${devs[i].index}|switch`, [x, y, W / 2, H / 2]));
        const sw = svg('rect', { class: 'node switch', x: W / 2 - 34, y: H / 2 - 14, width: 68, height: 28, rx: 6 });
        const tl = svg('text', { class: 'label', x: W / 2, y: H / 2 });
        tl.textContent = 'Switch';
        gNodes.append(sw, tl);
      } else {
        const at = new Map(devs.map((d, i) => [d.index, i]));
        devs.forEach((d, i) => {
          for (const p of d.peers || []) {
            const j = at.get(p);
            if (j === undefined || d.index > p) continue;
            const key = `${d.index}|${p}`;
            const [x1, y1] = pos[i], [x2, y2] = pos[j];
            if (kind === 'torus' && (Math.abs(x1 - x2) > (W - 80) / (t.w - 1) + 1 || Math.abs(y1 - y2) > (H - 60) / (t.h - 1) + 1)) {
              // Wrap-around link: a short line from each end towards the border.
              const dx = Math.sign(x2 - x1) * 22, dy = Math.sign(y2 - y1) * 18;
              addEdge(key, [x1, y1, x1 - dx, y1 - dy]);
              addEdge(key, [x2, y2, x2 + dx, y2 + dy]);
            } else {
              addEdge(key, [x1, y1, x2, y2]);
            }
          }
        });
      }
      devs.forEach((d, i) => {
        // One tab stop for the whole picture (roving tabindex): arrow keys
        // move between devices, Enter charts the focused one.
        const g = svg('g', { class: 'dev', tabindex: i === 0 ? 0 : -1, role: 'button', 'aria-label': `neuron${d.index}` });
        const c = svg('circle', { class: 'node', cx: pos[i][0], cy: pos[i][1], r });
        const title = svg('title', {});
        g.append(c, title);
        if (r >= 9) {
          const tl = svg('text', { class: 'label', x: pos[i][0], y: pos[i][1] });
          tl.textContent = String(d.index);
          g.append(tl);
        }
        g.addEventListener('click', () => select({ kind: 'device', id: i }));
        const describe = () => setText(title, `neuron${d.index}: transmit ${fmtRate(S.linkTx[i])}, receive ${fmtRate(S.linkRx[i])}`);
        g.addEventListener('mouseenter', describe);
        g.addEventListener('focus', describe);
        g.addEventListener('keydown', (ev) => {
          if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); select({ kind: 'device', id: i }); return; }
          const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
          if (!step) return;
          ev.preventDefault();
          const j = (i + step + nodes.length) % nodes.length;
          g.setAttribute('tabindex', '-1');
          nodes[j].g.setAttribute('tabindex', '0');
          nodes[j].g.focus();
        });
        gNodes.append(g);
        nodes.push({ c, title, g });
      });
    }

    function render() {
      if (!S.inv) return;
      // Link counters against peer "switch" mean a switched fabric, whatever
      // the peer lists say.
      if (kind !== 'switch' && [...S.edges.keys()].some((k) => k.endsWith('|switch'))) build(true);
      if (kind === 'none') return;
      let max = 0, best = null, total = 0;
      for (const [k, v] of S.edges) { total += v; if (v > max) { max = v; best = k; } }
      const lo = cssVar('--line'), accent = [cssVar('--c-util'), cssVar('--c-d2h')];
      const thin = S.inv.devices.length > 32 ? 0.45 : 1;   // many edges share the picture
      // Same mapping from the viewBox as the SVG's xMidYMid meet.
      const cw = canvas.clientWidth, ch = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
      if (canvas.width !== Math.round(cw * dpr) || canvas.height !== Math.round(ch * dpr)) {
        canvas.width = Math.round(cw * dpr);
        canvas.height = Math.round(ch * dpr);
      }
      const k = Math.min(cw / W, ch / H);
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * (cw - W * k) / 2, dpr * (ch - H * k) / 2);
      ctx.lineCap = 'round';
      for (const [key, segs] of edgeSegs) {
        const v = S.edges.get(key);
        const f = Number.isFinite(v) && max > 0 ? v / max : 0;
        ctx.lineWidth = (Number.isFinite(v) ? 1.5 + 4.5 * f : 1) * thin;
        ctx.strokeStyle = !Number.isFinite(v) ? lo : f > 0.66 ? accent[1] : accent[0];
        ctx.globalAlpha = Number.isFinite(v) ? 0.35 + 0.65 * f : 0.6;
        ctx.beginPath();
        for (const [x1, y1, x2, y2] of segs) { ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); }
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
      const selDev = S.sel.kind === 'device' ? S.sel.id : S.coreDev[S.slotOf.get(String(S.sel.id))];
      if (selDev !== lastSel) {
        nodes.forEach((nd, i) => nd.c.classList.toggle('sel', i === selDev));
        lastSel = selDev;
      }
      const fmtKey = (k) => k.split('|').map((x) => (x === 'switch' ? 'switch' : `neuron${x}`)).join(' ↔ ');
      setText($('topo-desc'), best ? `Total ${fmtRate(total)}. Busiest: ${fmtKey(best)} at ${fmtRate(max)}. Wider, warmer edges carry more.` : 'Waiting for two samples to compute link rates.');
    }
    return { build, render };
  })();

  // ---------- charts (uPlot) ----------
  const charts = (() => {
    const box = $('charts');
    let list = [];      // { def, u, data }
    let loadSeq = 0;

    function isLive() { return S.range.kind === 'live'; }
    function span() {
      if (S.range.kind === 'custom') return [S.range.from, S.range.to];
      const now = S.ts || S.serverNow || Date.now() / 1000;
      return [now - RANGES[S.range.kind], now];
    }
    function pickStep(sp, width) {
      const raw = sp / Math.max(60, Math.floor(width / 2));
      const min = Math.max(1, Math.ceil(S.interval));
      for (const s of NICE_STEPS) if (s >= raw && s >= min) return s;
      return Math.ceil(raw / 86400) * 86400;
    }

    // Chart definitions for the selection. A series sums every stored series
    // of `metric` (filtered by `q`) whose labels pass `match`, or takes their
    // largest with combine 'max' (a core's utilization is one stored series
    // per runtime that held it, and a bucket may hold two); counters become
    // rates. `live` gives the value to append on each tick.
    function defs() {
      const devs = S.inv.devices;
      if (S.sel.kind === 'core') {
        const slot = S.slotOf.get(String(S.sel.id));
        const d = devs[S.coreDev[slot]];
        const q = `neuroncore=${S.sel.id}`;
        const memSeries = [{ label: 'held', metric: 'neuroncore_memory_used_bytes', q, color: cssVar('--c-mem'), live: () => S.coreMem[slot] }];
        S.catNames.forEach((k, j) => memSeries.push({ label: k, metric: 'neuroncore_memory_usage_bytes', q, match: (m) => m.category === k,
          color: CAT_COLORS[j % CAT_COLORS.length], live: () => (S.coreCat && S.coreCat.get(slot) ? S.coreCat.get(slot).get(k) : NaN) }));
        return {
          title: `NeuronCore ${S.sel.id} · neuron${d.index}`,
          charts: [
            { title: 'Utilization', unit: 'pct', series: [{ label: `core ${S.sel.id}`, metric: 'neuroncore_utilization_ratio', q, combine: 'max', color: cssVar('--c-util'), live: () => S.util[slot] }] },
            { title: 'Memory held', unit: 'bytes', series: memSeries },
          ],
        };
      }
      const i = S.sel.id, d = devs[i];
      const q = `neuron_device=${d.index}`;
      const palette = [cssVar('--c-util'), cssVar('--c-d2h'), cssVar('--c-d2d'), cssVar('--c-mem'), cssVar('--c-rx'), cssVar('--c-h2d'), '#ca8a04', '#64748b'];
      const util = [];
      for (let c = 0; c < d.cores; c++) {
        const core = d.first_core + c, slot = S.slotOf.get(String(core));
        util.push({ label: `core ${core}`, metric: 'neuroncore_utilization_ratio', q, match: (m) => m.neuroncore === String(core),
          combine: 'max', color: palette[c % palette.length], live: () => S.util[slot] });
      }
      const mem = [{ label: 'used', metric: 'neuron_device_memory_used_bytes', q, color: cssVar('--c-mem'), live: () => S.devMem[i] }];
      S.catNames.forEach((k, j) => mem.push({ label: k, metric: 'neuroncore_memory_usage_bytes', q, match: (m) => m.category === k,
        color: CAT_COLORS[j % CAT_COLORS.length], live: () => (S.devCat ? S.devCat[i].get(k) : NaN) }));
      const out = [
        { title: 'Utilization per core', unit: 'pct', series: util },
        { title: `HBM used (of ${fmtBytes(d.memory_total_bytes)})`, unit: 'bytes', max: d.memory_total_bytes, series: mem },
        { title: 'DMA throughput', unit: 'rate', series: DMA_DIRS.map(([dir, label, color], k) => ({ label, metric: 'neuron_device_dma_bytes_total', q,
          match: (m) => m.direction === dir, counter: true, color: cssVar(color), live: () => S.dma[k][i] })) },
      ];
      if (devs.length > 1) {
        out.push({ title: 'NeuronLink throughput', unit: 'rate', series: [
          { label: 'transmit', metric: 'neuron_link_transmit_bytes_total', q, counter: true, color: cssVar('--c-tx'), live: () => S.linkTx[i] },
          { label: 'receive', metric: 'neuron_link_receive_bytes_total', q, counter: true, color: cssVar('--c-rx'), live: () => S.linkRx[i] },
        ] });
      }
      return { title: `neuron${d.index} · ${d.name}`, charts: out };
    }

    const fmtFor = (unit) => (unit === 'pct' ? (v) => `${v.toFixed(v < 10 ? 1 : 0)} %` : unit === 'bytes' ? fmtBytes : fmtRate);
    const scaleVal = (unit, v) => (v == null || !Number.isFinite(v) ? null : unit === 'pct' ? v * 100 : v);

    function makePlot(def, host, data) {
      const muted = cssVar('--muted'), grid = cssVar('--line2');
      const fmt = fmtFor(def.unit);
      const xAxis = { values: (u, splits, ai, space, incr) => splits.map((v) => {
        const d = new Date(v * 1000), z = (n) => String(n).padStart(2, '0');
        if (incr >= 86400) return `${d.getDate()} ${d.toLocaleString('en-GB', { month: 'short' })}`;
        const hm = `${z(d.getHours())}:${z(d.getMinutes())}`;
        return incr < 60 ? `${hm}:${z(d.getSeconds())}` : hm;
      }) };
      const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '11px system-ui, sans-serif' };
      const opts = {
        width: Math.max(300, host.clientWidth - 4),
        height: 200,
        cursor: { drag: { x: true, y: false } },
        scales: { x: { time: true }, y: { range: def.unit === 'pct' ? [0, 100] : (u, lo, hi) => [0, Math.max(def.max || 0, hi > 0 ? hi * 1.1 : 1)] } },
        axes: [{ ...axis, ...xAxis }, { ...axis, size: 72, values: (u, vals) => vals.map((v) => fmt(v)),
          ...(def.unit === 'bytes' ? { incrs: BYTE_INCRS } : {}) }],
        series: [{ value: (u, v) => (v == null ? '–' : new Date(v * 1000).toLocaleString('en-GB', { hour12: false })) },
          ...def.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.6, points: { show: false },
            value: (u, v) => (v == null ? '–' : fmt(v)) }))],
        hooks: {
          setSelect: [(u) => {
            if (u.select.width < 5) return;
            const from = u.posToVal(u.select.left, 'x'), to = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, width: 0 }, false);
            setRange({ kind: 'custom', from: Math.floor(from), to: Math.ceil(to) });
          }],
        },
      };
      return new uPlot(opts, data, host);
    }

    // Merge series sampled on possibly different timestamps into uPlot's
    // columnar form: one shared x array, null where a series has no point.
    function align(cols) {
      const xs = new Set();
      for (const c of cols) for (const [t] of c) xs.add(t);
      const x = [...xs].sort((a, b) => a - b);
      const at = new Map(x.map((t, i) => [t, i]));
      return [x, ...cols.map((c) => { const y = new Array(x.length).fill(null); for (const [t, v] of c) y[at.get(t)] = v; return y; })];
    }
    // A null column where samples are missing for more than two steps (the
    // daemon was down), so uPlot breaks the line instead of bridging it.
    function gaps(data, step) {
      const x = data[0];
      const out = data.map(() => []);
      for (let i = 0; i < x.length; i++) {
        if (i && x[i] - x[i - 1] > 2.5 * step) {
          out[0].push(x[i - 1] + step);
          for (let k = 1; k < data.length; k++) out[k].push(null);
        }
        for (let k = 0; k < data.length; k++) out[k].push(data[k][i]);
      }
      return out;
    }
    function toRate(values) {
      const out = [];
      for (let k = 1; k < values.length; k++) {
        const dt = values[k][0] - values[k - 1][0], dv = values[k][1] - values[k - 1][1];
        out.push([values[k][0], dt > 0 && dv >= 0 ? dv / dt : null]);
      }
      return out;
    }

    async function load() {
      const seq = ++loadSeq;
      if (!S.inv) return;
      const d = defs();
      setText($('charts-title'), d.title);
      const [from, to] = span();
      const width = box.clientWidth > 900 ? box.clientWidth / 2 : box.clientWidth;
      const step = pickStep(to - from, width);
      setText($('charts-note'), `${isLive() ? 'live, ' : ''}${fmtTime(from)} – ${fmtTime(to)}${to - from > 86400 ? ` (${new Date(from * 1000).toLocaleDateString('en-GB')} – ${new Date(to * 1000).toLocaleDateString('en-GB')})` : ''} · step ${step} s`);
      box.dataset.loaded = '';
      const cache = new Map();
      const get = (s) => {
        const k = `${s.metric}|${s.q}|${s.counter ? 'last' : 'avg'}`;
        if (!cache.has(k)) {
          cache.set(k, api(`api/v1/query_range?metric=${s.metric}&${s.q}&start=${from.toFixed(3)}&end=${to.toFixed(3)}&step=${step}s&agg=${s.counter ? 'last' : 'avg'}`)
            .then((r) => r.result));
        }
        return cache.get(k);
      };
      let results;
      try {
        results = await Promise.all(d.charts.map((c) => Promise.all(c.series.map(get))));
      } catch (e) {
        // Keep what is drawn; the next successful poll after an outage reloads.
        if (seq !== loadSeq) return;
        setText($('charts-note'), `history could not be loaded (${e.message}); retrying when neurond answers`);
        if (!list.length) box.replaceChildren(el('p', 'muted', 'History could not be loaded.'));
        return;
      }
      if (seq !== loadSeq) return;
      for (const c of list) c.u.destroy();
      list = [];
      box.replaceChildren();
      let points = 0;
      d.charts.forEach((def, ci) => {
        const cols = def.series.map((s, si) => {
          const sum = new Map();
          for (const r of results[ci][si]) {
            if (s.match && !s.match(r.metric)) continue;
            const vals = r.values.map(([t, v]) => [t, +v]);
            for (const [t, v] of s.counter ? toRate(vals) : vals) {
              if (v === null) { if (!sum.has(t)) sum.set(t, null); continue; }
              const had = sum.get(t);
              sum.set(t, had == null ? v : s.combine === 'max' ? Math.max(had, v) : had + v);
            }
          }
          return [...sum].map(([t, v]) => [t, scaleVal(def.unit, v)]);
        });
        const data = gaps(align(cols), step);
        points += data[0].length;
        const fig = el('figure', 'chart');
        fig.dataset.title = def.title;
        fig.append(el('h3', '', def.title));
        const host = el('div');
        fig.append(host);
        box.append(fig);
        const u = makePlot(def, host, data);
        u.setScale('x', { min: from, max: to });
        list.push({ def, u, data, host });
      });
      box.dataset.loaded = S.range.kind;
      box.dataset.points = String(points);
      box.dataset.step = String(step);
    }

    // Live mode: append the tick's values to each chart and drop what fell
    // out of the window; uPlot redraws the one chart from its arrays.
    function appendLive() {
      if (!isLive() || !list.length || !S.ts) return;
      const cut = S.ts - RANGES.live;
      for (const c of list) {
        const x = c.data[0];
        if (x.length && x[x.length - 1] >= S.ts) continue;
        x.push(S.ts);
        c.def.series.forEach((s, k) => c.data[k + 1].push(scaleVal(c.def.unit, s.live())));
        let drop = 0;
        while (drop < x.length && x[drop] < cut) drop++;
        if (drop) for (const a of c.data) a.splice(0, drop);
        c.u.batch(() => {
          c.u.setData(c.data, false);
          c.u.setScale('x', { min: cut, max: S.ts });
        });
      }
      box.dataset.points = String(list.reduce((n, c) => n + c.data[0].length, 0));
      box.dataset.lastX = String(S.ts);
    }

    function resize() {
      for (const c of list) c.u.setSize({ width: Math.max(300, c.host.clientWidth - 4), height: 200 });
    }
    return { load, appendLive, resize };
  })();

  // ---------- selection, range and URL state ----------
  function renderAll() {
    if (!S.inv) return;
    renderTiles();
    heat.draw();
    renderRuntimes();
    renderTable();
    renderPods();
    topo.render();
  }
  function loadHistory() { charts.load(); }

  function writeHash() {
    const p = new URLSearchParams();
    p.set(S.sel.kind, S.sel.kind === 'device' ? String(S.inv ? S.inv.devices[S.sel.id].index : S.sel.id) : String(S.sel.id));
    p.set('range', S.range.kind);
    if (S.range.kind === 'custom') { p.set('from', String(S.range.from)); p.set('to', String(S.range.to)); }
    const h = `#${p.toString()}`;
    if (location.hash !== h) history.replaceState(null, '', h);
  }
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    if (p.has('core')) S.sel = { kind: 'core', id: Number(p.get('core')) || 0 };
    else if (p.has('device')) {
      const idx = Number(p.get('device')) || 0;
      const i = S.inv ? S.inv.devices.findIndex((d) => d.index === idx) : idx;
      S.sel = { kind: 'device', id: Math.max(0, i) };
    }
    const r = p.get('range');
    if (r === 'custom' && Number(p.get('from')) < Number(p.get('to'))) S.range = { kind: 'custom', from: Number(p.get('from')), to: Number(p.get('to')) };
    else if (r && RANGES[r]) S.range = { kind: r };
    if (S.inv && S.sel.kind === 'core' && !S.slotOf.has(String(S.sel.id))) S.sel = { kind: 'device', id: 0 };
    if (S.inv && S.sel.kind === 'device' && S.sel.id >= S.inv.devices.length) S.sel = { kind: 'device', id: 0 };
  }
  function syncRangeButtons() {
    for (const b of document.querySelectorAll('#ranges button')) b.setAttribute('aria-pressed', String(b.dataset.range === S.range.kind));
    const form = $('custom');
    form.hidden = S.range.kind !== 'custom';
    if (S.range.kind === 'custom') {
      $('custom-from').value = toLocalInput(S.range.from);
      $('custom-to').value = toLocalInput(S.range.to);
    }
  }
  function toLocalInput(sec) {
    const d = new Date(sec * 1000);
    const z = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${z(d.getMonth() + 1)}-${z(d.getDate())}T${z(d.getHours())}:${z(d.getMinutes())}:${z(d.getSeconds())}`;
  }
  function select(sel) {
    S.sel = sel;
    writeHash();
    renderAll();
    loadHistory();
  }
  function setRange(r) {
    S.range = r;
    writeHash();
    syncRangeButtons();
    loadHistory();
  }

  for (const b of document.querySelectorAll('#ranges button')) {
    b.addEventListener('click', () => {
      const k = b.dataset.range;
      if (k === 'custom') {
        const [from, to] = S.range.kind === 'custom' ? [S.range.from, S.range.to] : [Math.floor((S.ts || Date.now() / 1000) - 3600), Math.ceil(S.ts || Date.now() / 1000)];
        setRange({ kind: 'custom', from, to });
        $('custom-from').focus();
      } else {
        setRange({ kind: k });
      }
    });
  }
  $('custom').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const from = Date.parse($('custom-from').value) / 1000, to = Date.parse($('custom-to').value) / 1000;
    if (Number.isFinite(from) && Number.isFinite(to) && from < to) setRange({ kind: 'custom', from, to });
  });
  window.addEventListener('hashchange', () => {
    readHash();
    syncRangeButtons();
    renderAll();
    loadHistory();
  });

  // ---------- theme ----------
  const mq = window.matchMedia('(prefers-color-scheme: dark)');
  function isDark() {
    const t = document.documentElement.dataset.theme;
    return t ? t === 'dark' : mq.matches;
  }
  function applyTheme(t) {
    if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
    else delete document.documentElement.dataset.theme;
    const label = `Colour scheme: ${t === 'light' || t === 'dark' ? t : 'automatic'}`;
    $('theme').setAttribute('aria-label', label);
    $('theme').title = label;
    $('theme').textContent = t === 'light' ? '☀' : t === 'dark' ? '☾' : '◐';
    for (const r of rows) r.segKey = '';   // segment colours come from the scheme
    if (S.inv) { heat.layout(); topo.build(); renderAll(); loadHistory(); }
  }
  let themePref = '';
  try { themePref = localStorage.getItem('neurond-theme') || ''; } catch (e) { themePref = ''; }
  $('theme').addEventListener('click', () => {
    themePref = themePref === '' ? 'light' : themePref === 'light' ? 'dark' : '';
    try { localStorage.setItem('neurond-theme', themePref); } catch (e) { /* private mode */ }
    applyTheme(themePref);
  });
  mq.addEventListener('change', () => { if (!themePref) applyTheme(''); });

  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { heat.layout(); charts.resize(); }, 150);
  });

  // ---------- start ----------
  applyTheme(themePref);
  readHash();
  syncRangeButtons();
  (async () => {
    await poll();
    if (S.inv) { readHash(); writeHash(); renderAll(); loadHistory(); }
  })();
})();
