// The durable peers: a job queue on the local PostgreSQL (graphile-worker, pg-boss), measured the way the BullMQ
// peer is (bench/scenarios/peer-bullmq.ts) and with the same layout as scenario 1: no-op jobs added one at a time by
// LOAD_CONCURRENCY concurrent producers in the harness process, run by WORKERS × WORKER_CONCURRENCY no-op workers in
// the worker-host process, jobs/s from the first add to the last completion. Unlike BullMQ on Redis, an add is
// acknowledged after its commit is flushed to disk when the server runs with synchronous_commit and fsync on (both
// read and reported), which is Wharf's /run guarantee. Each run has a database of its own (created and dropped here, nothing in `test` is
// touched) with one schema per phase, so the end-to-end phase starts on empty tables as Wharf's does.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Client as PgClient } from 'pg';
import { LOAD_CONCURRENCY } from './baselines.ts';
import { e2eWarmupMs, endToEndSeparate, WORKER_CONCURRENCY, WORKERS } from './s1-throughput.ts';
import { cpuMsOf, spawnChild } from '../lib/child.ts';
import type { Ctx, Result } from '../lib/context.ts';
import { closedLoopFn } from '../lib/load.ts';
import { PG_ADMIN_URL, reasonOf, sql } from '../lib/pg.ts';
import { pct, ratio, round, sleep, table } from '../lib/stats.ts';

/** Where the databases of the peer runs are created (any database of the server; it is only connected to). */
/**
 * Connections of the producer's pool (and of graphile-worker's runners, which share one). One per producer would
 * mirror the HTTP load generator's one socket per client, but the server is shared (max_connections 100 here, and
 * the test suites use it too): a trial with 50 for the producer and graphile-worker's default 10 per runner held 91
 * connections. 20 each keeps a run under ~45.
 */
export const PG_POOL = 20;

export interface Producer {
  add(i: number): Promise<unknown>;
  close(): Promise<void>;
}

export interface PgPeer {
  /** Scenario id (BENCH_SCENARIOS) and the prefix of the JSON keys, e.g. 'graphile'. */
  id: string;
  /** Display name, e.g. 'graphile-worker'. */
  name: string;
  /** The npm package (its installed version is reported). */
  pkg: string;
  /** JSON key of the Wharf / peer ratio (the target reads it). */
  ratioKey: string;
  /** Install the library's tables in `schema` (a fresh one) and return its producer API. */
  producer(url: string, schema: string): Promise<Producer>;
  /** What the worker host needs to run the peer's workers against `schema`. */
  hostPayload(url: string, schema: string): Record<string, unknown>;
  /** Extra environment of the worker host. */
  hostEnv?: Record<string, string>;
  /** SQL answering `n`: jobs in `schema` not completed yet. */
  unfinishedSql(schema: string): string;
  /** How the peer is set up, one sentence for the report. */
  setup: string;
}

interface Settings {
  version: string;
  synchronousCommit: string;
  fsync: string;
  walSyncMethod: string;
  /** A committed add is on disk before it is acknowledged. */
  durable: boolean;
}

export async function runPgPeer(ctx: Ctx, peer: PgPeer): Promise<Result> {
  const title = `Peer: ${peer.name} (PostgreSQL)`;
  const skipped = (reason: string): Result => {
    ctx.log(`${peer.id}: skipped: ${reason}`);
    return { id: peer.id, title, markdown: `Skipped: ${reason}.`, json: { skipped: true, reason } };
  };
  if (packageVersion(peer.pkg) === '?') return skipped(`${peer.pkg} is not installed (npm install)`);
  const db = `wharf_bench_${peer.id}_${process.pid}`;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${db}`;
  try {
    await sql(PG_ADMIN_URL, `CREATE DATABASE ${db}`, 2000);
  } catch (error) {
    return skipped(`could not create a database on the PostgreSQL at ${url.host} (${reasonOf(error)})`);
  }
  // A pooled connection that the peer's library left open is ended by DROP DATABASE … WITH (FORCE) (SQLSTATE 57P01,
  // "terminating connection due to administrator command"), and some pools re-emit that as an 'error' event nobody
  // listens to, which would end the whole harness. Only that error is tolerated, and only while this peer runs.
  const terminated = (error: unknown): void => {
    if ((error as { code?: string } | null)?.code !== '57P01') throw error;
    ctx.log(`${peer.id}: a connection of the peer's pool was terminated by the server (${reasonOf(error)})`);
  };
  process.on('uncaughtException', terminated);
  try {
    return await compare(ctx, peer, title, url.toString());
  } catch (error) {
    return skipped(`${peer.name} failed: ${reasonOf(error)}`);
  } finally {
    await sql(PG_ADMIN_URL, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, 2000).catch((error: unknown) =>
      ctx.log(`${peer.id}: could not drop database ${db}: ${reasonOf(error)}`),
    );
    // Let the pools notice their terminated connections while the guard is still in place.
    await new Promise((resolve) => setTimeout(resolve, 500));
    process.off('uncaughtException', terminated);
  }
}

async function compare(ctx: Ctx, peer: PgPeer, title: string, url: string): Promise<Result> {
  const durationMs = ctx.size(5000, 400);
  const { default: pg } = await import('pg');
  const mon = new pg.Client({ connectionString: url, application_name: 'wharf-bench-monitor' });
  await mon.connect();
  try {
    const settings = await readSettings(mon);

    ctx.log(`${peer.id}: adds, no workers`);
    const adder = await peer.producer(url, 'bench_adds');
    const adds = await closedLoopFn(LOAD_CONCURRENCY, durationMs, (i) => adder.add(i));
    await adder.close();
    if (adds.errors > 0) ctx.log(`${peer.id}: ${adds.errors} add errors, first: ${adds.firstError}`);

    ctx.log(`${peer.id}: Wharf end to end again, for a side-by-side figure under the same load`);
    const wharfRun = await endToEndSeparate(ctx, `${peer.id}-wharf`, {});

    ctx.log(`${peer.id}: end to end, ${WORKERS} workers x ${WORKER_CONCURRENCY} in a separate process`);
    const schema = 'bench_e2e';
    const producer = await peer.producer(url, schema);
    const host = spawnChild(
      'worker-host.ts',
      { ...peer.hostPayload(url, schema), n: WORKERS, concurrency: WORKER_CONCURRENCY },
      peer.hostEnv ? { env: peer.hostEnv } : {},
    );
    let e2e: E2eFigures;
    try {
      await host.ready;
      e2e = await endToEnd(
        mon,
        peer,
        schema,
        durationMs,
        e2eWarmupMs(ctx),
        producer,
        () => host.cpuMs(),
        (target) => host.call<{ completed: number }>('waitCompleted', { target, timeoutMs: 120_000 }),
      );
    } finally {
      await host.stop();
      await producer.close();
    }
    if (e2e.errors > 0) ctx.log(`${peer.id}: ${e2e.errors} add errors while the workers ran, first: ${e2e.firstError}`);
    return result(ctx, peer, title, settings, adds.rps, adds.errors, e2e, wharfRun);
  } finally {
    await mon.end();
  }
}

interface E2eFigures {
  jobs: number;
  jobsPerS: number;
  addsPerS: number;
  drainMs: number;
  errors: number;
  firstError: string | null;
  unfinished: number;
  /** CPU per job (µs): the worker host, the PostgreSQL backends of this database, the adding (harness) process. */
  workerCpuUs: number;
  dbCpuUs: number;
  producerCpuUs: number;
}

async function endToEnd(
  mon: PgClient,
  peer: PgPeer,
  schema: string,
  durationMs: number,
  warmupMs: number,
  producer: Producer,
  hostCpuMs: () => number,
  waitRan: (target: number) => Promise<{ completed: number }>,
): Promise<E2eFigures> {
  // The same warm-up as Wharf's end-to-end window (the host counts completions from its start).
  const warm = warmupMs > 0 ? await closedLoopFn(LOAD_CONCURRENCY, warmupMs, (i) => producer.add(i)) : null;
  const warmJobs = warm?.requests ?? 0;
  if (warmJobs > 0) await waitRan(warmJobs);
  const backends0 = await backendCpu(mon);
  const host0 = hostCpuMs();
  const own0 = process.cpuUsage();
  const start = performance.timeOrigin + performance.now();
  const load = await closedLoopFn(LOAD_CONCURRENCY, durationMs, (i) => producer.add(i));
  const acked = performance.timeOrigin + performance.now();
  const own = process.cpuUsage(own0);
  // The worker host counts jobs as its handler returns them; the completion is a commit after that, so the end is
  // when the database has no unfinished job left (polled only from then on: a few polls, not a load).
  const ran = await waitRan(warmJobs + load.requests);
  let unfinished = Number.NaN;
  let end = Number.NaN;
  if (ran.completed >= warmJobs + load.requests) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      unfinished = (await mon.query<{ n: number }>(peer.unfinishedSql(schema))).rows[0]?.n ?? Number.NaN;
      if (unfinished === 0) {
        end = performance.timeOrigin + performance.now();
        break;
      }
      if (Date.now() > deadline) break;
      await sleep(5);
    }
  }
  const hostCpu = hostCpuMs() - host0;
  const dbCpu = (await backendCpu(mon, backends0)).total;
  const jobs = load.requests;
  return {
    jobs,
    jobsPerS: (jobs / (end - start)) * 1000,
    addsPerS: load.rps,
    drainMs: Math.max(0, end - acked),
    errors: load.errors,
    firstError: load.firstError,
    unfinished,
    workerCpuUs: (hostCpu / jobs) * 1000,
    dbCpuUs: (dbCpu / jobs) * 1000,
    producerCpuUs: ((own.user + own.system) / 1000 / jobs) * 1000,
  };
}

/**
 * CPU time (ms) of the server processes serving this database (the monitor's own excepted), from /proc; with
 * `since`, the CPU used since then, counting backends that appeared meanwhile from zero (a backend that exited
 * meanwhile is lost: the pools keep theirs open while they are busy).
 */
async function backendCpu(
  mon: PgClient,
  since?: { perPid: Map<number, number> },
): Promise<{ perPid: Map<number, number>; total: number }> {
  const { rows } = await mon.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const perPid = new Map<number, number>();
  for (const { pid } of rows) perPid.set(pid, cpuMsOf(pid));
  let total = 0;
  for (const [pid, ms] of perPid) total += ms - (since?.perPid.get(pid) ?? 0);
  return { perPid, total };
}

async function readSettings(mon: PgClient): Promise<Settings> {
  const { rows } = await mon.query<{ v: string; sc: string; fsync: string; wsm: string }>(
    "SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc, " +
      "current_setting('fsync') AS fsync, current_setting('wal_sync_method') AS wsm",
  );
  const r = rows[0]!;
  // Without synchronous standbys, every value but `off` waits for the local WAL flush before COMMIT returns.
  return {
    version: r.v,
    synchronousCommit: r.sc,
    fsync: r.fsync,
    walSyncMethod: r.wsm,
    durable: r.fsync === 'on' && r.sc !== 'off',
  };
}

function result(
  ctx: Ctx,
  peer: PgPeer,
  title: string,
  s: Settings,
  addsRps: number,
  addErrors: number,
  e: E2eFigures,
  wharf: Awaited<ReturnType<typeof endToEndSeparate>>,
): Result {
  const s1 = ctx.results.find((r) => r.id === '1')?.json;
  const wharfSubmit = typeof s1?.['submitPerS'] === 'number' ? s1['submitPerS'] : Number.NaN;
  const hello = ctx.baselines?.helloRps ?? Number.NaN;
  const n = peer.name;
  const markdown = [
    table(
      ['measure', 'Wharf', n, `Wharf / ${n}`],
      [
        [`submissions/s (c=${LOAD_CONCURRENCY}, no workers)`, wharfSubmit, addsRps, ratio(wharfSubmit, addsRps)],
        [
          `end-to-end jobs/s (${WORKERS} workers × ${WORKER_CONCURRENCY}, separate process)`,
          wharf.jobsPerS,
          e.jobsPerS,
          ratio(wharf.jobsPerS, e.jobsPerS),
        ],
        ['end to end, of hello-world req/s', pct(ratio(wharf.jobsPerS, hello)), pct(ratio(e.jobsPerS, hello)), ''],
        [
          'server CPU µs per job (Wharf: its server process; peer: its PostgreSQL backends)',
          wharf.serverCpuUs,
          e.dbCpuUs,
          ratio(wharf.serverCpuUs, e.dbCpuUs),
        ],
        [
          'worker process CPU µs per job',
          wharf.workerCpuUs,
          e.workerCpuUs,
          ratio(wharf.workerCpuUs ?? Number.NaN, e.workerCpuUs),
        ],
        ['adding process CPU µs per job (the harness)', null, e.producerCpuUs, ''],
      ],
    ),
    '',
    `The Wharf end-to-end figure here is measured again right before ${n}'s, so that both see the same machine load; ` +
      `the submissions figure is scenario 1's. ${n} ${packageVersion(peer.pkg)} on PostgreSQL ${s.version} ` +
      `(synchronous_commit ${s.synchronousCommit}, fsync ${s.fsync}, wal_sync_method ${s.walSyncMethod}), in a ` +
      `database of its own; ${peer.setup} ` +
      (s.durable
        ? 'The same guarantee as Wharf: an add is acknowledged after its commit is flushed to disk (WAL fsync), as a ' +
          'Wharf /run is after its SQLite commit is fsynced, and so is each completion. '
        : 'Not the same guarantee on this server: with synchronous_commit or fsync off, an add is acknowledged ' +
          'before it is on disk. ') +
      'Adds go straight to PostgreSQL (no HTTP), while every Wharf submission is an authenticated HTTP request. ' +
      `${e.jobs} jobs; adds ${round(e.addsPerS)}/s while the workers ran; the last completion ${round(e.drainMs)} ms ` +
      "after the last add. The peer's server CPU counts the backends of its database only (not the WAL writer or " +
      "the checkpointer), Wharf's its whole server process; the adding process is the HTTP load generator for " +
      'Wharf (not measured) and the client library for the peer.',
  ].join('\n');
  return {
    id: peer.id,
    title,
    markdown,
    json: {
      addsPerS: round(addsRps),
      e2eJobsPerS: round(e.jobsPerS),
      e2eJobs: e.jobs,
      wharfE2eJobsPerS: round(wharf.jobsPerS),
      [peer.ratioKey]: round(ratio(wharf.jobsPerS, e.jobsPerS)),
      durableAck: s.durable,
      synchronousCommit: s.synchronousCommit,
      fsync: s.fsync,
      dbCpuUsPerJob: round(e.dbCpuUs),
      workerCpuUsPerJob: round(e.workerCpuUs),
      producerCpuUsPerJob: round(e.producerCpuUs),
      wharfServerCpuUsPerJob: round(wharf.serverCpuUs),
      wharfWorkerCpuUsPerJob: round(wharf.workerCpuUs ?? Number.NaN),
      workers: WORKERS,
      workerConcurrency: WORKER_CONCURRENCY,
      drainMs: round(e.drainMs),
      unfinished: e.unfinished,
      errors: addErrors + e.errors,
      version: packageVersion(peer.pkg),
    },
  };
}

export function packageVersion(name: string): string {
  try {
    const pkg = readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8');
    return (JSON.parse(pkg) as { version: string }).version;
  } catch {
    return '?';
  }
}
