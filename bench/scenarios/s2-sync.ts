// Scenario 2, sync latency: /runsync round trips with a warm idle worker (one TypeScript-SDK worker with a no-op
// handler, in its own process, concurrency 64 so it never limits c=50) at concurrency 1 and 50, and the delayTime
// the server reports. Overhead = Wharf's round trip minus the hello-world round trip at the same concurrency.

import type { Ctx, Result } from '../lib/context.ts';
import { closedLoop, type LoadResult } from '../lib/load.ts';
import { round, Samples, table, type LatencySummary } from '../lib/stats.ts';
import { profileArgs, startSdkWorkers, startWharf, submitRequest, type ServerWindow } from '../lib/wharf.ts';
import { diskKiBPer, diskNote, fsyncNote } from './s1-throughput.ts';

type Run = {
  load: LoadResult;
  delay: LatencySummary;
  exec: LatencySummary;
  cpuUs: number;
  workerCpuUs: number;
  win: ServerWindow;
};

export async function s2(ctx: Ctx): Promise<Result> {
  ctx.log('s2: /runsync with a warm idle worker');
  const { c1, c50 } = await measure(ctx, 's2', {});
  // The same with SQLite syncing inside COMMIT (the behaviour before the fsync moved off the event loop).
  let before: { c1: Run; c50: Run } | null = null;
  if (!ctx.opts.tiny) {
    ctx.log('s2: again with --sqlite-fsync in-commit (comparison)');
    before = await measure(ctx, 's2-in-commit', { sqliteFsync: 'in-commit' });
  }
  return report(ctx, c1, c50, before);
}

async function measure(ctx: Ctx, name: string, overrides: Record<string, unknown>): Promise<{ c1: Run; c50: Run }> {
  const w = await startWharf(ctx, name, { overrides });
  const ep = await w.createEndpoint();
  const host = await startSdkWorkers(w, ep, {
    n: 1,
    concurrency: 64,
    idPrefix: 'bench-sync-',
    nodeArgs: profileArgs(ctx, `${name}-worker-host`),
  });

  const run = async (concurrency: number, label: string): Promise<Run> => {
    const r = await measureOnce(concurrency, label);
    if (r.load.consistent) return r;
    ctx.log(`s2: c=${concurrency}: the latencies recorded do not match the request rate (Little's law); again`);
    return measureOnce(concurrency, label);
  };
  const measureOnce = async (concurrency: number, label: string): Promise<Run> => {
    const delays = new Samples();
    const execs = new Samples();
    await w.profileStart();
    const end = await w.window();
    const hostCpu0 = host.cpuMs();
    const load = await closedLoop({
      pool: w.pool,
      concurrency,
      durationMs: ctx.size(concurrency === 1 ? 6000 : 5000, 400),
      // c=1 runs first on a fresh server: a longer warm-up, so that the JIT has settled (as in scenario 1).
      warmupMs: ctx.size(concurrency === 1 ? 2000 : 500, 100),
      request: submitRequest(ep, 'runsync'),
      onAnswer: (a) => {
        const body = JSON.parse(a.text) as { status: string; delayTime?: number; executionTime?: number };
        if (body.status !== 'COMPLETED') throw new Error(`runsync answered ${a.text}`);
        delays.add(body.delayTime ?? Number.NaN);
        execs.add(body.executionTime ?? Number.NaN);
      },
    });
    const win = await end();
    const workerCpuUs = ((host.cpuMs() - hostCpu0) / load.answered) * 1000;
    await w.profileStop(label);
    if (load.errors > 0) ctx.log(`s2: ${load.errors} errors at c=${concurrency}, first: ${load.firstError}`);
    const cpuUs = (win.cpuMs / load.answered) * 1000;
    return { load, delay: delays.summary(), exec: execs.summary(), cpuUs, workerCpuUs, win };
  };
  const c1 = await run(1, `${name}-runsync-c1`);
  const c50 = await run(50, `${name}-runsync-c50`);
  await host.stop();
  await w.close();
  return { c1, c50 };
}

function report(ctx: Ctx, c1: Run, c50: Run, before: { c1: Run; c50: Run } | null): Result {
  const b = ctx.baselines;
  const over = (v: number, base: number | undefined): number => (base === undefined ? Number.NaN : v - base);
  const row = (c: number | string, r: Run, h50?: number, h99?: number) => [
    c,
    r.load.rps,
    r.load.latency.p50,
    r.load.latency.p99,
    r.load.latency.p999,
    over(r.load.latency.p50, h50),
    over(r.load.latency.p99, h99),
    r.load.latency.p99 / r.load.latency.p50,
    `${r.delay.p50} / ${r.delay.p99}`,
    `${r.exec.p50} / ${r.exec.p99}`,
    r.cpuUs,
    r.workerCpuUs,
    `${round((r.win.commits / r.win.wallMs) * 1000)}/s, ${round(r.win.writes / r.win.commits)} writes each, ` +
      `${round(r.win.commitMs / r.win.commits)} ms each in COMMIT; ` +
      `${fsyncNote(r.win)}; ${diskNote(r.win, r.load.answered, 'round trip')}`,
  ];
  const markdown = [
    table(
      [
        'concurrency',
        'req/s',
        'p50 ms',
        'p99 ms',
        'p99.9 ms',
        'p50 overhead ms',
        'p99 overhead ms',
        'p99 / p50',
        'delayTime p50 / p99 ms',
        'executionTime p50 / p99 ms',
        'server CPU µs/req',
        'worker CPU µs/req',
        'commits',
      ],
      [
        row(1, c1, b?.helloP50c1, b?.helloP99c1),
        row(50, c50, b?.helloP50c50, b?.helloP99c50),
        ...(before
          ? [
              row('1, `in-commit` (comparison)', before.c1, b?.helloP50c1, b?.helloP99c1),
              row('50, `in-commit` (comparison)', before.c50, b?.helloP50c50, b?.helloP99c50),
            ]
          : []),
      ],
    ),
    '',
    'Overhead = /runsync round trip minus the hello-world round trip at the same concurrency. delayTime = submission → ' +
      "the job's start (0 when it goes straight to a waiting take); executionTime = start → the result post (the " +
      "submit's commit when handed over, the take's otherwise, and the worker's round trip); the rest of a round trip " +
      'is the request before the submit and the finish commit and answer after it. ' +
      'One /runsync is four ' +
      'HTTP exchanges on the server (the client request, the answer to the waiting worker take, the worker result ' +
      'post, the answer) and two group commits: the submit, which hands the job straight to the waiting take (claimed ' +
      "in the insert), and the finish. Only the finish waits for its WAL fsync (off the event loop): the submit's id " +
      "leaves with the answer, which the finish's fsync covers. " +
      'The `in-commit` rows are the same server with SQLite syncing inside each COMMIT, on the event loop (the ' +
      'behaviour before `--sqlite-fsync off-loop`), measured in the same run.',
  ].join('\n');
  return {
    id: '2',
    title: 'Sync latency (/runsync)',
    markdown,
    json: {
      c1: { rps: round(c1.load.rps), ...lat(c1.load.latency), ...extra(c1) },
      c50: { rps: round(c50.load.rps), ...lat(c50.load.latency), ...extra(c50) },
      overheadP50c1: round(over(c1.load.latency.p50, b?.helloP50c1)),
      overheadP99c1: round(over(c1.load.latency.p99, b?.helloP99c1)),
      p99OverP50c50: round(c50.load.latency.p99 / c50.load.latency.p50),
      inCommit: before
        ? {
            c1: { rps: round(before.c1.load.rps), ...lat(before.c1.load.latency), ...extra(before.c1) },
            c50: { rps: round(before.c50.load.rps), ...lat(before.c50.load.latency), ...extra(before.c50) },
          }
        : null,
      errors: c1.load.errors + c50.load.errors,
    },
  };
}

function extra(r: {
  delay: LatencySummary;
  exec: LatencySummary;
  cpuUs: number;
  win: ServerWindow;
  load: { answered: number };
}): Record<string, number> {
  return {
    delayP50: r.delay.p50,
    delayP99: r.delay.p99,
    executionP50: r.exec.p50,
    serverCpuUs: round(r.cpuUs),
    commitMs: round(r.win.commitMs / r.win.commits),
    diskKiB: diskKiBPer(r.win, r.load.answered),
  };
}

function lat(l: LatencySummary): Record<string, number> {
  return { p50: round(l.p50), p99: round(l.p99), p999: round(l.p999) };
}
