// Scenario 4, deep queue: 1,000,000 queued jobs, inserted through the store API in big group commits (not HTTP).
// /run latency (c=1 and c=50) and take latency (c=1) compared with a near-empty queue; server memory (of a server
// started on the seeded database) and disk.

import type { Ctx, Result } from '../lib/context.ts';
import { closedLoop, type LoadResult } from '../lib/load.ts';
import { mib, ratio, round, table } from '../lib/stats.ts';
import { ADMIN_KEY, AUTH, startWharf, submitRequest, type Wharf } from '../lib/wharf.ts';
import { LOAD_CONCURRENCY } from './baselines.ts';

interface Probe {
  runC1: LoadResult;
  runC50: LoadResult;
  take: LoadResult;
  health: LoadResult;
  rss: number;
  heap: number;
  disk: number;
  store: { jobCounts: number; queueSnapshot: number; activeEndpointIds: number };
}

export async function s4(ctx: Ctx): Promise<Result> {
  const deep = ctx.size(1_000_000, 20_000);
  const w = await startWharf(ctx, 's4');
  const ep = await w.createEndpoint();
  // Takes need jobs to find: the "empty" queue holds just enough for the take probe (which runs first).
  const takes = ctx.size(2000, 200);
  await w.child.call('seed', { endpointId: ep, count: takes, chunk: takes });
  ctx.log('s4: probes on a near-empty queue');
  const empty = await probe(ctx, w, ep, 'empty');
  // The probes' own /run jobs go, so that the deep queue is the seeded one.
  await w.api('POST', `/v2/${ep}/purge-queue`);

  ctx.log(`s4: seeding ${deep.toLocaleString('en-US')} jobs through the store API`);
  const seeded = await w.child.call<{ ms: number }>('seed', { endpointId: ep, count: deep, chunk: 20_000 });
  ctx.log(`s4: seeded in ${round(seeded.ms / 1000)} s; a fresh server on the seeded database, then probes`);
  // The seed calls run inside the server process and leave their high-water mark in its RSS (freed heap and malloc
  // arenas stay mapped): the memory the deep queue costs is what a server started on it holds.
  await w.close();
  const deepServer = await startWharf(ctx, 's4-deep', { overrides: { dataDir: w.dataDir } });
  const full = await probe(ctx, deepServer, ep, 'deep');
  await deepServer.close();

  const row = (label: string, e: LoadResult, d: LoadResult) => [
    label,
    e.latency.p50,
    e.latency.p99,
    d.latency.p50,
    d.latency.p99,
    ratio(d.latency.p99, e.latency.p99),
  ];
  const markdown = [
    table(
      [
        'request',
        'empty p50 ms',
        'empty p99 ms',
        `${deep.toLocaleString('en-US')} queued p50 ms`,
        'p99 ms',
        'p99 ratio',
      ],
      [
        row('/run, c=1', empty.runC1, full.runC1),
        row(`/run, c=${LOAD_CONCURRENCY}`, empty.runC50, full.runC50),
        row('job-take (1 job), c=1', empty.take, full.take),
        row('/health, c=1', empty.health, full.health),
      ],
    ),
    '',
    table(
      ['queue', 'server RSS MiB', 'heap used MiB', 'database on disk MiB', '/run c=50 req/s'],
      [
        ['near-empty', mib(empty.rss), mib(empty.heap), mib(empty.disk), empty.runC50.rps],
        [`${deep.toLocaleString('en-US')} queued`, mib(full.rss), mib(full.heap), mib(full.disk), full.runC50.rps],
      ],
    ),
    '',
    table(
      ['store read (blocks the event loop)', 'used by', 'empty ms', `${deep.toLocaleString('en-US')} queued ms`],
      [
        ['jobCounts', '/health', empty.store.jobCounts, full.store.jobCounts],
        [
          'queueSnapshot',
          'autoscaler, every tick per active endpoint',
          empty.store.queueSnapshot,
          full.store.queueSnapshot,
        ],
        ['activeEndpointIds', 'autoscaler, every tick', empty.store.activeEndpointIds, full.store.activeEndpointIds],
      ],
    ),
    '',
    `Seeding ${deep.toLocaleString('en-US')} jobs through \`store.submitJob\` (20,000 per call burst, group-committed ` +
      `up to 2,000 per transaction) took ${round(seeded.ms / 1000)} s (${round((deep / seeded.ms) * 1000)} jobs/s). ` +
      'Disk per queued job: ' +
      `${round((full.disk - empty.disk) / deep)} bytes.`,
  ].join('\n');
  return {
    id: '4',
    title: 'Deep queue',
    markdown,
    json: {
      queued: deep,
      runP99EmptyC1: round(empty.runC1.latency.p99),
      runP99DeepC1: round(full.runC1.latency.p99),
      runP99EmptyC50: round(empty.runC50.latency.p99),
      runP99DeepC50: round(full.runC50.latency.p99),
      runP99Ratio: round(ratio(full.runC50.latency.p99, empty.runC50.latency.p99)),
      takeP99Empty: round(empty.take.latency.p99),
      takeP99Deep: round(full.take.latency.p99),
      healthP50Deep: round(full.health.latency.p50),
      jobCountsMsDeep: round(full.store.jobCounts),
      queueSnapshotMsDeep: round(full.store.queueSnapshot),
      activeEndpointIdsMsDeep: round(full.store.activeEndpointIds),
      rssMiB: round(mib(full.rss)),
      diskMiB: round(mib(full.disk)),
      seedJobsPerS: round((deep / seeded.ms) * 1000),
    },
  };
}

async function probe(ctx: Ctx, w: Wharf, ep: string, label: string): Promise<Probe> {
  const run = (concurrency: number, durationMs: number) =>
    closedLoop({
      pool: w.pool,
      concurrency,
      durationMs,
      warmupMs: ctx.size(300, 50),
      request: submitRequest(ep),
    });
  // One job per take, by a worker that joined with the owner's key (a take that found nothing would long-poll).
  const take = await closedLoop({
    pool: w.pool,
    concurrency: 1,
    total: ctx.size(1000, 100),
    request: () => ({
      method: 'GET',
      path: `/v2/${ep}/job-take/bench-deep-${label}?gpu=CPU&job_in_progress=0`,
      headers: { authorization: ADMIN_KEY },
    }),
  });
  const runC1 = await run(1, ctx.size(2000, 200));
  const runC50 = await run(LOAD_CONCURRENCY, ctx.size(3000, 300));
  const health = await closedLoop({
    pool: w.pool,
    concurrency: 1,
    total: ctx.size(50, 5),
    request: () => ({ method: 'GET', path: `/v2/${ep}/health`, headers: AUTH }),
  });
  for (const [name, r] of Object.entries({ runC1, runC50, take, health })) {
    if (r.errors > 0) ctx.log(`s4 ${label} ${name}: ${r.errors} errors, first: ${r.firstError}`);
  }
  const mem = await w.child.call<{ rss: number; heapUsed: number }>('mem');
  const disk = await w.child.call<number>('disk');
  const store = await w.child.call<Probe['store']>('storeTimings', { endpointId: ep });
  return { runC1, runC50, take, health, rss: mem.rss, heap: mem.heapUsed, disk, store };
}
