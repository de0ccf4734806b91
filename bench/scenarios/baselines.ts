// The two ceilings every Wharf figure is divided by, measured in the same run on the same machine:
// - HTTP: Fastify's hello world (JSON POST) through the same load generator and process layout;
// - durability: node:sqlite in WAL mode with synchronous=FULL, one row per commit and batched.

import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { spawnChild } from '../lib/child.ts';
import type { Baselines, Ctx, Result } from '../lib/context.ts';
import { closedLoop, makePool } from '../lib/load.ts';
import { round, table } from '../lib/stats.ts';

/** The concurrency of every throughput measurement (hello world, /run, BullMQ adds). */
export const LOAD_CONCURRENCY = 50;

export async function baselines(ctx: Ctx): Promise<{ result: Result; baselines: Baselines }> {
  ctx.log('baseline: Fastify hello world');
  const child = spawnChild('hello-server.ts', {});
  const { url } = await child.ready;
  const pool = makePool(url as string, LOAD_CONCURRENCY);
  const request = (): { method: 'POST'; path: string; body: string } => ({
    method: 'POST',
    path: '/',
    body: '{"input":{"n":1}}',
  });
  const warmupMs = ctx.size(500, 100);
  const cpuC1 = child.cpuMs();
  const c1 = await closedLoop({ pool, concurrency: 1, durationMs: ctx.size(3000, 300), warmupMs, request });
  // At c=1 every request pays its own wake-up, read and write syscalls: the per-request floor a /runsync round trip
  // (four such exchanges) is measured against.
  const helloCpuUsC1 = ((child.cpuMs() - cpuC1) / c1.answered) * 1000;
  const cpu0 = child.cpuMs();
  const c50 = await closedLoop({
    pool,
    concurrency: LOAD_CONCURRENCY,
    durationMs: ctx.size(5000, 400),
    warmupMs,
    request,
  });
  const helloCpuUs = ((child.cpuMs() - cpu0) / c50.answered) * 1000;
  await pool.close();
  await child.stop();

  ctx.log('baseline: node:sqlite WAL synchronous=FULL');
  const store = storeBaseline(join(ctx.dir('store-baseline'), 'raw.db'), ctx.size(3000, 300));

  const b: Baselines = {
    helloRps: c50.rps,
    helloRpsC1: c1.rps,
    helloP50c1: c1.latency.p50,
    helloP99c1: c1.latency.p99,
    helloP50c50: c50.latency.p50,
    helloP99c50: c50.latency.p99,
    helloCpuUs,
    helloCpuUsC1,
    storeCommitsPerS: store.commitsPerS,
    storeBatchedRowsPerS: store.batchedRowsPerS,
  };
  const markdown = [
    table(
      ['baseline', 'concurrency', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'server CPU µs/request'],
      [
        ['Fastify hello world (JSON POST)', 1, c1.rps, c1.latency.p50, c1.latency.p99, c1.latency.p999, helloCpuUsC1],
        [
          'Fastify hello world (JSON POST)',
          LOAD_CONCURRENCY,
          c50.rps,
          c50.latency.p50,
          c50.latency.p99,
          c50.latency.p999,
          helloCpuUs,
        ],
      ],
    ),
    '',
    table(
      ['durability baseline (node:sqlite, WAL, synchronous=FULL)', 'rows/s', 'commits/s', 'ms per commit'],
      [
        ['one row per commit', store.commitsPerS, store.commitsPerS, 1000 / store.commitsPerS],
        [`${store.batch} rows per commit`, store.batchedRowsPerS, store.batchedRowsPerS / store.batch, store.batchMs],
      ],
    ),
  ].join('\n');
  return {
    baselines: b,
    result: {
      id: 'baseline',
      title: 'Baselines',
      markdown,
      json: {
        helloRpsC1: round(c1.rps),
        helloRpsC50: round(c50.rps),
        helloP50c1: round(c1.latency.p50),
        helloP99c1: round(c1.latency.p99),
        helloP50c50: round(c50.latency.p50),
        helloP99c50: round(c50.latency.p99),
        helloCpuUsPerReq: round(helloCpuUs),
        helloCpuUsPerReqC1: round(helloCpuUsC1),
        storeCommitsPerS: round(store.commitsPerS),
        storeBatchedRowsPerS: round(store.batchedRowsPerS),
        storeBatch: store.batch,
      },
    },
  };
}

/** Raw insert/commit rate of a jobs-like table: the most any durable queue on this disk can acknowledge. */
function storeBaseline(
  path: string,
  durationMs: number,
): { commitsPerS: number; batchedRowsPerS: number; batch: number; batchMs: number } {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec(`CREATE TABLE jobs (id TEXT PRIMARY KEY, endpoint_id TEXT NOT NULL, status TEXT NOT NULL, input TEXT NOT NULL,
    policy TEXT NOT NULL, created_at INTEGER NOT NULL, queued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)`);
  db.exec(`CREATE INDEX jobs_queue ON jobs (endpoint_id, queued_at) WHERE status = 'IN_QUEUE'`);
  db.exec('CREATE INDEX jobs_expires ON jobs (expires_at)');
  const insert = db.prepare(
    `INSERT INTO jobs (id, endpoint_id, status, input, policy, created_at, queued_at, expires_at)
     VALUES (?, 'ep', 'IN_QUEUE', '{"n":1}', '{"executionTimeoutMs":600000,"lowPriority":false,"ttlMs":86400000}', ?, ?, ?)`,
  );
  let id = 0;
  const row = (): void => {
    const now = Date.now();
    insert.run(`job-${++id}-${'x'.repeat(30)}`, now, now, now + 86_400_000);
  };

  let commits = 0;
  let t0 = performance.now();
  while (performance.now() - t0 < durationMs) {
    db.exec('BEGIN IMMEDIATE');
    row();
    db.exec('COMMIT');
    commits++;
  }
  const commitsPerS = (commits / (performance.now() - t0)) * 1000;

  const batch = 1000;
  let rows = 0;
  let batches = 0;
  t0 = performance.now();
  while (performance.now() - t0 < durationMs) {
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < batch; i++) row();
    db.exec('COMMIT');
    rows += batch;
    batches++;
  }
  const elapsed = performance.now() - t0;
  db.close();
  return { commitsPerS, batchedRowsPerS: (rows / elapsed) * 1000, batch, batchMs: elapsed / batches };
}
