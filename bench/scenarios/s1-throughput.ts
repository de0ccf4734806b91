// Scenario 1, async throughput: /run acknowledgements per second (acknowledged = committed), and end-to-end
// completed jobs per second with N no-op TypeScript-SDK workers on long-poll batch take, with the workers in a
// process of their own (the fair layout: the server keeps its core) and inside the server process (what a
// single-process deployment gets: workers and server share one event loop). Then what idle workers cost per job
// (s1-idle-fleet.ts).

import { performance } from 'node:perf_hooks';
import type { Ctx, Result } from '../lib/context.ts';
import { closedLoop } from '../lib/load.ts';
import { pct, ratio, round, table } from '../lib/stats.ts';
import {
  profileArgs,
  startSdkWorkers,
  startWharf,
  submitRequest,
  waitForIdleWorkers,
  type ServerWindow,
  type Wharf,
} from '../lib/wharf.ts';
import { LOAD_CONCURRENCY } from './baselines.ts';
import { idleFleet, idleFleetJson, idleFleetMarkdown } from './s1-idle-fleet.ts';

export const WORKERS = 4;
export const WORKER_CONCURRENCY = 16;

export interface ThroughputFigures {
  submitRps: number;
  submitP50: number;
  submitP99: number;
  /** Server CPU per acknowledged /run (µs). */
  submitCpuUs: number;
  submitWindow: ServerWindow;
  /** /run requests answered in the submit window (what its CPU and disk figures are divided by). */
  submitAnswered: number;
  e2eSeparate: E2E;
  e2eInProcess: E2E | null;
  /** Scenario 1 only: end to end with `--sqlite-fsync in-commit`, for comparison. */
  e2eInCommit?: E2E;
}

export interface E2E {
  jobs: number;
  jobsPerS: number;
  /** Acknowledged /run per second while the workers ran. */
  submitRps: number;
  /** Time after the last acknowledgement until the last job completed. */
  drainMs: number;
  errors: number;
  window: ServerWindow;
  /** Server CPU per completed job (µs); with in-process workers, theirs included. */
  serverCpuUs: number;
  /** Worker-host CPU per job (µs), when the workers had a process of their own. */
  workerCpuUs: number | null;
  /** Take requests (job-take-batch, answered with jobs or empty) per completed job: how well takes batch. */
  takesPerJob: number;
}

const TAKE_ROUTE = '/v2/:endpointId/job-take-batch/:workerId';

/**
 * Before an end-to-end window, the same load runs this long (and drains) on the same server and workers, for Wharf
 * and for the peers alike: a steady state is measured, not a JIT warming up. Without it, V8's optimising compiler
 * still took ~11% of a fresh Wharf server's CPU (perf, background threads) during a 5 s window, and the main thread
 * ran code not yet optimised.
 */
export function e2eWarmupMs(ctx: Ctx): number {
  return ctx.size(2000, 200);
}

/** Take requests the server has answered so far, from its own request histogram (one scrape of /metrics). */
async function takesAnswered(w: Wharf): Promise<number> {
  const text = (await w.api('GET', '/metrics')).text;
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('wharf_http_request_duration_seconds_count{') && line.includes(`route="${TAKE_ROUTE}"`)) {
      n += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return n;
}

export async function s1(ctx: Ctx): Promise<Result> {
  const f = await throughput(ctx, 's1', {}, !ctx.opts.tiny);
  // The same end-to-end run with SQLite syncing inside COMMIT (the shipped behaviour before the fsync moved off the
  // event loop), so that the change is measured against its own baseline in the same run.
  if (!ctx.opts.tiny) {
    ctx.log('s1: end to end again with --sqlite-fsync in-commit (comparison)');
    f.e2eInCommit = await endToEndSeparate(ctx, 's1-in-commit', { sqliteFsync: 'in-commit' });
  }
  const fleet = ctx.opts.tiny ? null : await idleFleet(ctx, 's1');
  const result = throughputResult(ctx, '1', 'Async throughput (SQLite store)', f);
  if (fleet) {
    result.markdown += `\n\n${idleFleetMarkdown(fleet)}`;
    Object.assign(result.json, idleFleetJson(fleet));
  }
  return result;
}

/** Measure submissions and end-to-end rates against a server started with `overrides` (S1; S6 with PostgreSQL). */
export async function throughput(
  ctx: Ctx,
  name: string,
  overrides: Record<string, unknown>,
  inProcessToo: boolean,
): Promise<ThroughputFigures> {
  const durationMs = ctx.size(5000, 400);

  ctx.log(`${name}: /run submissions, no workers`);
  const w = await startWharf(ctx, `${name}-submit`, { overrides });
  const ep = await w.createEndpoint();
  await w.profileStart();
  const endSubmit = await w.window();
  const submit = await closedLoop({
    pool: w.pool,
    concurrency: LOAD_CONCURRENCY,
    durationMs,
    warmupMs: ctx.size(500, 100),
    request: submitRequest(ep),
  });
  const submitWindow = await endSubmit();
  await w.profileStop(`${name}-submit`);
  if (submit.errors > 0) ctx.log(`${name}: ${submit.errors} submission errors, first: ${submit.firstError}`);

  ctx.log(`${name}: end to end, ${WORKERS} SDK workers x ${WORKER_CONCURRENCY} in a separate process`);
  // A fresh server, so that the jobs queued above do not weigh on this run; a quick run saves the start-up.
  if (!ctx.opts.quick) await w.close();
  const separate = await endToEndSeparate(ctx, name, overrides, ctx.opts.quick ? w : null);
  if (ctx.opts.quick) await w.close();

  let inProcess: E2E | null = null;
  if (inProcessToo) {
    ctx.log(`${name}: end to end, the same workers inside the server process`);
    const w = await startWharf(ctx, `${name}-e2e-inproc`, { overrides });
    const ep = await w.createEndpoint();
    await w.child.call('startWorkers', {
      endpointId: ep,
      n: WORKERS,
      concurrency: WORKER_CONCURRENCY,
      idPrefix: 'bench-in-',
    });
    await waitForIdleWorkers(w, ep, WORKERS);
    await warmUp(w, ep, e2eWarmupMs(ctx));
    inProcess = await endToEnd(w, ep, durationMs, null);
    await w.close();
  }
  return {
    submitRps: submit.rps,
    submitP50: submit.latency.p50,
    submitP99: submit.latency.p99,
    submitCpuUs: (submitWindow.cpuMs / submit.answered) * 1000,
    submitWindow,
    submitAnswered: submit.answered,
    e2eSeparate: separate,
    e2eInProcess: inProcess,
  };
}

/** Submit at full speed for `durationMs` while the workers run, then wait for the last completion. */
/** End to end with the SDK workers in a process of their own, on a fresh server (or on `reuse`). */
export async function endToEndSeparate(
  ctx: Ctx,
  name: string,
  overrides: Record<string, unknown>,
  reuse: Wharf | null = null,
): Promise<E2E> {
  const w = reuse ?? (await startWharf(ctx, `${name}-e2e`, { overrides }));
  const ep = await w.createEndpoint();
  const host = await startSdkWorkers(w, ep, {
    n: WORKERS,
    concurrency: WORKER_CONCURRENCY,
    idPrefix: 'bench-sep-',
    nodeArgs: profileArgs(ctx, `${name}-worker-host`),
  });
  await warmUp(w, ep, e2eWarmupMs(ctx));
  await w.profileStart();
  const e2e = await endToEnd(w, ep, ctx.size(5000, 400), () => host.cpuMs());
  await w.profileStop(`${name}-e2e`);
  await host.stop();
  if (!reuse) await w.close();
  return e2e;
}

/** The end-to-end load for `ms`, then until the last of its jobs completed: nothing of it is left for the window. */
async function warmUp(w: Wharf, ep: string, ms: number): Promise<void> {
  if (ms <= 0) return;
  await w.child.call('resetCompleted');
  const warm = await closedLoop({
    pool: w.pool,
    concurrency: LOAD_CONCURRENCY,
    durationMs: ms,
    request: submitRequest(ep),
  });
  await w.child.call('waitCompleted', { target: warm.requests, timeoutMs: 120_000 });
}

async function endToEnd(w: Wharf, ep: string, durationMs: number, workerCpuMs: (() => number) | null): Promise<E2E> {
  const request = submitRequest(ep);
  await w.child.call('resetCompleted');
  const takes0 = await takesAnswered(w);
  const end = await w.window();
  const hostCpu0 = workerCpuMs?.() ?? 0;
  const start = performance.timeOrigin + performance.now();
  const load = await closedLoop({ pool: w.pool, concurrency: LOAD_CONCURRENCY, durationMs, request });
  const acked = performance.timeOrigin + performance.now();
  const done = await w.child.call<{ completed: number; lastCompletedAt: number }>('waitCompleted', {
    target: load.requests,
    timeoutMs: 120_000,
  });
  const window = await end();
  const takes = (await takesAnswered(w)) - takes0;
  const hostCpu = workerCpuMs ? workerCpuMs() - hostCpu0 : Number.NaN;
  const last = done.completed >= load.requests ? done.lastCompletedAt : Number.NaN;
  return {
    jobs: load.requests,
    jobsPerS: (load.requests / (last - start)) * 1000,
    submitRps: load.rps,
    drainMs: Math.max(0, last - acked),
    errors: load.errors,
    window,
    serverCpuUs: (window.cpuMs / load.requests) * 1000,
    workerCpuUs: workerCpuMs ? (hostCpu / load.requests) * 1000 : null,
    takesPerJob: takes / load.requests,
  };
}

export function throughputResult(ctx: Ctx, id: string, title: string, f: ThroughputFigures): Result {
  const hello = ctx.baselines?.helloRps ?? Number.NaN;
  const helloCpu = ctx.baselines?.helloCpuUs ?? Number.NaN;
  const rows: Array<Array<string | number | null>> = [
    [
      `/run acknowledged (committed), c=${LOAD_CONCURRENCY}, no workers`,
      f.submitRps,
      pct(ratio(f.submitRps, hello)),
      f.submitCpuUs,
      null,
      commitNote(f.submitWindow),
      `p50 ${round(f.submitP50)} ms, p99 ${round(f.submitP99)} ms; ${diskNote(f.submitWindow, f.submitAnswered)}`,
    ],
    e2eRow('end to end, workers in a separate process', f.e2eSeparate, hello),
  ];
  if (f.e2eInProcess) rows.push(e2eRow('end to end, workers inside the server process', f.e2eInProcess, hello));
  if (f.e2eInCommit) {
    rows.push(e2eRow('end to end, separate process, `--sqlite-fsync in-commit` (comparison)', f.e2eInCommit, hello));
  }
  const markdown = [
    table(
      [
        'measure',
        'per second',
        'of hello-world req/s',
        'server CPU µs per job',
        'worker CPU µs per job',
        'commits',
        'notes',
      ],
      rows,
    ),
    '',
    `End to end = jobs submitted through /run (c=${LOAD_CONCURRENCY}) while ${WORKERS} no-op TypeScript-SDK workers ` +
      `(concurrency ${WORKER_CONCURRENCY} each, so they take with job-take-batch) run them, divided by the time from ` +
      'the first submission to the last completion. Each job costs the server at least three requests: /run, its ' +
      'share of a batch take, and its job-done post. A hello-world request costs the server ' +
      `${round(helloCpu)} µs of CPU. "commits" = commits per second, store writes per commit, the share of the ` +
      "server's wall time its event loop spent inside COMMIT (node:sqlite commits synchronously), and the WAL " +
      'fsyncs the write queue ran on the thread pool (default `--sqlite-fsync off-loop`; with `in-commit` SQLite ' +
      'syncs inside COMMIT, on the event loop).',
  ].join('\n');
  return {
    id,
    title,
    markdown,
    json: {
      submitPerS: round(f.submitRps),
      submitP50: round(f.submitP50),
      submitP99: round(f.submitP99),
      submitCpuUs: round(f.submitCpuUs),
      submitWritesPerCommit: round(f.submitWindow.writes / f.submitWindow.commits),
      e2eJobsPerS: round(f.e2eSeparate.jobsPerS),
      e2eJobs: f.e2eSeparate.jobs,
      e2eRatioToHello: round(ratio(f.e2eSeparate.jobsPerS, hello)),
      e2eServerCpuUsPerJob: round(f.e2eSeparate.serverCpuUs),
      e2eWorkerCpuUsPerJob: round(f.e2eSeparate.workerCpuUs ?? Number.NaN),
      e2eCommitShare: round(f.e2eSeparate.window.commitMs / f.e2eSeparate.window.wallMs),
      e2eTakesPerJob: round(f.e2eSeparate.takesPerJob),
      e2eWritesPerCommit: round(f.e2eSeparate.window.writes / f.e2eSeparate.window.commits),
      submitDiskKiBPerJob: diskKiBPer(f.submitWindow, f.submitAnswered),
      e2eDiskKiBPerJob: diskKiBPer(f.e2eSeparate.window, f.e2eSeparate.jobs),
      e2eInProcessJobsPerS: f.e2eInProcess ? round(f.e2eInProcess.jobsPerS) : null,
      e2eInCommitJobsPerS: f.e2eInCommit ? round(f.e2eInCommit.jobsPerS) : null,
      e2eInCommitServerCpuUsPerJob: f.e2eInCommit ? round(f.e2eInCommit.serverCpuUs) : null,
      e2eInCommitTakesPerJob: f.e2eInCommit ? round(f.e2eInCommit.takesPerJob) : null,
      helloCpuUsPerReq: round(helloCpu),
      workers: WORKERS,
      workerConcurrency: WORKER_CONCURRENCY,
      errors: f.e2eSeparate.errors + (f.e2eInProcess?.errors ?? 0),
    },
  };
}

/** WAL fsyncs off the event loop: how many per second and how long each took on the thread pool. */
export function fsyncNote(w: ServerWindow): string {
  if (w.fsyncs === 0) return 'fsync inside COMMIT';
  return (
    `${round((w.fsyncs / w.wallMs) * 1000)} WAL fsyncs/s off the loop, ${round(w.fsyncMs / w.fsyncs)} ms each ` +
    `(p99 ${round(w.fsyncP99Ms)}, max ${round(w.fsyncMaxMs)})`
  );
}

/**
 * KiB the server wrote to storage per job: what each fsync has to flush (a random-key index insert alone is a page).
 * NaN when not counted: with the PostgreSQL store (no commits counted here) the storage writes are the database
 * server's, not Wharf's, and outside Linux the kernel does not say.
 */
export function diskKiBPer(w: ServerWindow, jobs: number): number {
  if (w.commits === 0 || !Number.isFinite(w.diskWriteBytes)) return Number.NaN;
  return round(w.diskWriteBytes / jobs / 1024);
}

export function diskNote(w: ServerWindow, jobs: number, per = 'job'): string {
  const kib = diskKiBPer(w, jobs);
  return Number.isNaN(kib) ? 'storage writes not counted' : `${kib} KiB written to storage per ${per}`;
}

function commitNote(w: ServerWindow): string {
  if (w.commits === 0) return 'not counted (SQLite only)';
  return (
    `${round((w.commits / w.wallMs) * 1000)}/s, ${round(w.writes / w.commits)} writes each, ` +
    `${pct(w.commitMs / w.wallMs)} of the time in COMMIT; ${fsyncNote(w)}`
  );
}

function e2eRow(label: string, e: E2E, hello: number): Array<string | number | null> {
  return [
    label,
    e.jobsPerS,
    pct(ratio(e.jobsPerS, hello)),
    e.serverCpuUs,
    e.workerCpuUs,
    commitNote(e.window),
    `${e.jobs} jobs; /run ${round(e.submitRps)}/s meanwhile; drained ${round(e.drainMs)} ms after the last ack; ` +
      `${round(e.takesPerJob)} take requests per job; ${diskNote(e.window, e.jobs)}`,
  ];
}
