// /metrics in headless Chromium: the browser asks for gzip, gets one gzip
// stream and reads every family of it, neurond's own included (a page sent
// as two gzip members showed a browser only the first). Every wait is bounded.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startDaemon, launch, tempDir, cleanup } from './lib.mjs';

const work = tempDir('neurond-metrics-');
let daemon = null;
let ctx = null;

async function main() {
  daemon = await startDaemon({ backend: 'model:trn1.32xlarge,scenario=training', db: join(work, 'm.db') });
  ctx = await launch(join(work, 'profile'));
  const page = await ctx.newPage();
  // A navigation, as a person opens the page: Chromium's own Accept, so text.
  const res = await page.goto(`${daemon.url}metrics`, { timeout: 20000 });
  assert.equal(res.status(), 200);
  assert.equal(res.headers()['content-encoding'], 'gzip', 'Chromium asked for gzip and should get it');
  assert.match((await res.request().allHeaders())['accept-encoding'], /gzip/);
  check(await res.text(), 'navigation');
  // A fetch, as a script does, in both formats.
  for (const accept of ['text/plain;version=0.0.4', 'application/openmetrics-text;version=1.0.0']) {
    const got = await page.evaluate(async ([url, a]) => {
      const r = await fetch(url, { headers: { Accept: a } });
      return { body: await r.text(), encoding: r.headers.get('content-encoding') };
    }, [`${daemon.url}metrics`, accept]);
    assert.equal(got.encoding, 'gzip', `fetch with ${accept} was not sent gzip`);
    check(got.body, accept);
    if (accept.startsWith('application/openmetrics-text')) assert.ok(got.body.endsWith('# EOF\n'), 'OpenMetrics read to its end');
  }
}

function check(body, what) {
  for (const family of ['neuroncore_utilization_ratio{', 'neuron_link_transmit_bytes_total{', 'neurond_build_info{',
    'neurond_collector_up{', 'neurond_poll_duration_seconds ', 'neurond_http_requests_total{']) {
    assert.ok(body.includes(`\n${family}`), `${what}: ${family} missing from what Chromium read`);
  }
  console.log(`${what}: ${body.length} bytes decoded, every family there`);
}

try {
  await main();
  await ctx.close();
  ctx = null;
  const r = await daemon.stop();
  assert.equal(r.code, 0, 'daemon exit status');
  console.log('PASS: Chromium reads the whole gzip /metrics');
} catch (e) {
  console.error(`FAIL: ${e.stack || e}`);
  if (daemon) console.error(daemon.log().split('\n').slice(-20).join('\n'));
  process.exitCode = 1;
} finally {
  if (ctx) await ctx.close().catch(() => {});
  if (daemon) await daemon.stop().catch(() => {});
  cleanup(work);
}
