'use strict';
// First dashboard: live per-core utilization and HBM per device, read from
// the REST API once per second.

const GiB = 1024 ** 3;
let devices = [];

async function getJSON(path) {
  const res = await fetch(path, { cache: 'no-store' });
  const body = await res.json();
  if (body.status !== 'success') throw new Error(body.error || res.statusText);
  return body.data;
}

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Idle is grey-blue, busy is orange-red: readable in light and dark schemes.
function utilColor(u) {
  const hue = 210 - 200 * u;
  return `hsl(${hue}, 70%, ${55 - 10 * u}%)`;
}

function setHealth(ok, text) {
  const h = document.getElementById('health');
  h.textContent = text;
  h.className = 'badge ' + (ok ? 'ok' : 'bad');
}

function render(latest) {
  const util = new Map(), mem = new Map();
  for (const r of latest.result) {
    const name = r.metric.__name__;
    if (name === 'neuroncore_utilization_ratio') util.set(r.metric.neuroncore, +r.value[1]);
    else if (name === 'neuron_device_memory_used_bytes') mem.set(r.metric.neuron_device, +r.value[1]);
  }
  const cores = document.getElementById('cores');
  const hbm = document.getElementById('hbm');
  cores.replaceChildren();
  hbm.replaceChildren();
  let busy = 0, n = 0, used = 0, total = 0;
  for (const d of devices) {
    const box = el('div', { class: 'device' });
    box.append(el('span', {}, `neuron${d.index}`));
    const cells = el('div', { class: 'cells' });
    for (let c = d.first_core; c < d.first_core + d.cores; c++) {
      const u = util.get(String(c));
      const pct = u === undefined ? 'no data' : `${(u * 100).toFixed(0)} %`;
      const cell = el('div', { class: 'cell', title: `device ${d.index}, core ${c}: ${pct}`, 'aria-label': `core ${c} ${pct}` });
      cell.style.background = u === undefined ? 'transparent' : utilColor(u);
      cells.append(cell);
      if (u !== undefined) { busy += u; n++; }
    }
    box.append(cells);
    cores.append(box);

    const m = mem.get(String(d.index));
    const frac = m === undefined ? 0 : m / d.memory_total_bytes;
    const row = el('div', { class: 'bar' });
    row.append(el('span', {}, `neuron${d.index}`));
    const track = el('div', { class: 'track' });
    const fill = el('div', { class: 'fill' });
    fill.style.width = `${(frac * 100).toFixed(1)}%`;
    track.append(fill);
    row.append(track);
    row.append(el('span', {}, m === undefined ? 'no data' : `${(m / GiB).toFixed(1)} / ${(d.memory_total_bytes / GiB).toFixed(0)} GiB`));
    hbm.append(row);
    if (m !== undefined) { used += m; total += d.memory_total_bytes; }
  }
  const tiles = [
    ['Devices', String(devices.length)],
    ['NeuronCores', String(n)],
    ['Utilization', n ? `${(busy / n * 100).toFixed(1)} %` : 'no data'],
    ['HBM used', total ? `${(used / GiB).toFixed(0)} / ${(total / GiB).toFixed(0)} GiB` : 'no data'],
  ];
  const ov = document.getElementById('overview');
  ov.replaceChildren(...tiles.map(([k, v]) => { const t = el('div'); t.append(el('dt', {}, k), el('dd', {}, v)); return t; }));
}

async function refresh() {
  try {
    if (!devices.length) {
      const inv = await getJSON('api/v1/devices');
      devices = inv.devices;
      document.getElementById('instance').textContent = `${inv.instance_type} · ${inv.backend}`;
    }
    render(await getJSON('api/v1/latest'));
    setHealth(true, 'live');
  } catch (e) {
    setHealth(false, 'neurond unreachable');
  }
}

refresh();
setInterval(refresh, 1000);
