// Scenario 3, cold start: an endpoint scaled to zero gets a job; how long until the job starts (its delayTime: from
// submission to the worker's take), with the process executor starting bench/noop-worker (TypeScript SDK, no-op
// handler). With FlashBoot the idle worker is kept as a standby instead of being stopped, and the same measure
// shows what a warm start costs.

import type { Ctx, Result } from '../lib/context.ts';
import { round, Samples, sleep, table } from '../lib/stats.ts';
import { startWharf, type Wharf } from '../lib/wharf.ts';

export async function s3(ctx: Ctx): Promise<Result> {
  const rounds = ctx.size(5, 1);
  ctx.log(`s3: cold start x${rounds}, process executor, with and without FlashBoot`);
  const w = await startWharf(ctx, 's3', {
    overrides: { executor: 'process', workerPingIntervalMs: 1000, shutdownGraceMs: 2000 },
  });
  const endpoint = {
    computeType: 'CPU',
    workersMin: 0,
    workersMax: 1,
    idleTimeout: 1,
    scalerType: 'QUEUE_DELAY',
    scalerValue: 1,
  };
  const cold = await w.createEndpoint({ ...endpoint, flashboot: false });
  const flash = await w.createEndpoint({ ...endpoint, flashboot: true });

  const coldDelays = new Samples();
  const coldRounds: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await waitForWorkers(w, cold, (h) => total(h) === 0, 'scale to zero');
    const d = await oneJob(w, cold);
    coldDelays.add(d);
    coldRounds.push(d);
  }

  // FlashBoot: the first job starts a worker; after idleTimeout it becomes a standby; then measure.
  await oneJob(w, flash);
  const flashDelays = new Samples();
  const flashRounds: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await waitForWorkers(w, flash, (h) => (h.workers?.standby ?? 0) >= 1 && active(h) === 0, 'standby');
    const d = await oneJob(w, flash);
    flashDelays.add(d);
    flashRounds.push(d);
  }
  await w.close();

  const c = coldDelays.summary();
  const f = flashDelays.summary();
  const markdown = [
    table(
      ['start', 'runs', 'median ms', 'max ms', 'each run (ms)'],
      [
        ['cold (process executor, scale from zero)', c.count, c.p50, c.max, coldRounds.join(', ')],
        ['FlashBoot standby', f.count, f.p50, f.max, flashRounds.join(', ')],
      ],
    ),
    '',
    "Measured as the job's `delayTime` (submission → the worker's take, server clock). The cold path is: the " +
      'submission wakes the supervisor (a job for an endpoint without workers pokes it at once), the process ' +
      'executor spawns `node worker.ts`, Node starts and strips the TypeScript, the SDK long-polls job-take and gets ' +
      "the job. The first start also fills Node's compile cache in the data directory (the executor sets " +
      '`NODE_COMPILE_CACHE` for its workers): the first figure of the row is a start with an empty cache, the later ' +
      'ones load the compiled SDK from it, as every start after the first one on a node does. A FlashBoot standby keeps its take poll open, so the submission hands the job straight to it, claimed ' +
      "in the submit's own write: its delayTime is 0 by construction, and the worker has the job once that write is " +
      'on disk (one group commit and its fsync, ~1 ms here).',
  ].join('\n');
  return {
    id: '3',
    title: 'Cold start (process executor)',
    markdown,
    json: {
      coldMedianMs: round(c.p50),
      coldFirstMs: round(coldRounds[0] ?? Number.NaN),
      coldMaxMs: round(c.max),
      flashbootMedianMs: round(f.p50),
      flashbootMaxMs: round(f.max),
      runs: rounds,
    },
  };
}

type Health = { workers?: Record<string, number> };
const active = (h: Health): number =>
  (h.workers?.idle ?? 0) + (h.workers?.running ?? 0) + (h.workers?.initializing ?? 0);
const total = (h: Health): number => active(h) + (h.workers?.standby ?? 0);

async function waitForWorkers(w: Wharf, ep: string, ok: (h: Health) => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const h = await w.api('GET', `/v2/${ep}/health`);
    if (ok(h.json as Health)) return;
    await sleep(50);
  }
  throw new Error(`s3: endpoint ${ep} did not reach ${what}`);
}

/** Submit one job and wait for it; returns its delayTime. */
async function oneJob(w: Wharf, ep: string): Promise<number> {
  const run = await w.api('POST', `/v2/${ep}/run`, { input: { n: 1 } });
  if (run.status !== 200) throw new Error(`s3: /run answered ${run.status} ${run.text}`);
  const s = await w.api('POST', `/v2/${ep}/status-sync/${run.json.id}?wait=30000`);
  if (s.json?.status !== 'COMPLETED') throw new Error(`s3: job ended ${s.text}`);
  return s.json.delayTime as number;
}
