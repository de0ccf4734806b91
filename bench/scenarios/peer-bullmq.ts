// The peer: BullMQ on the local Redis, adding and processing no-op jobs in the same harness with the same layout as
// scenario 1 (adds at c=50 from this process, N workers × the same concurrency in a separate worker process). Run
// twice: on Redis as configured (here: no AOF, so an add is acknowledged from memory — the in-memory reference), and
// with `appendonly yes` + `appendfsync always` set for the run (an add is acknowledged once fsynced, as a Wharf /run
// is — the like-for-like comparison); the configuration is put back afterwards.

import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { spawnChild } from '../lib/child.ts';
import type { Ctx, Result } from '../lib/context.ts';
import { closedLoopFn } from '../lib/load.ts';
import { pct, ratio, round, table } from '../lib/stats.ts';
import { LOAD_CONCURRENCY } from './baselines.ts';
import { e2eWarmupMs, endToEndSeparate, WORKER_CONCURRENCY, WORKERS } from './s1-throughput.ts';

const REDIS = {
  host: process.env['BENCH_REDIS_HOST'] ?? '127.0.0.1',
  port: Number(process.env['BENCH_REDIS_PORT'] ?? 6379),
};

export async function peerBullmq(ctx: Ctx): Promise<Result> {
  if (!(await reachable(REDIS.host, REDIS.port))) return skipped(ctx, `no Redis at ${REDIS.host}:${REDIS.port}`);
  try {
    return await compare(ctx);
  } catch (error) {
    return skipped(ctx, `BullMQ failed: ${(error as Error).message.split('\n')[0]}`);
  }
}

function skipped(ctx: Ctx, reason: string): Result {
  ctx.log(`bullmq: skipped: ${reason}`);
  return { id: 'bullmq', title: 'Peer: BullMQ', markdown: `Skipped: ${reason}.`, json: { skipped: true, reason } };
}

async function compare(ctx: Ctx): Promise<Result> {
  const durationMs = ctx.size(5000, 400);
  const name = `wharf-bench-${process.pid}-${Date.now()}`;
  const queue = new Queue(name, { connection: REDIS });
  const failed = new Promise<never>((_, reject) => queue.once('error', reject));
  await Promise.race([queue.waitUntilReady(), failed]);
  const aof = lastLine(await redisCommand(['CONFIG', 'GET', 'appendonly']));
  const fsync = lastLine(await redisCommand(['CONFIG', 'GET', 'appendfsync']));
  const version = /redis_version:(\S+)/.exec(await redisCommand(['INFO', 'server']))?.[1] ?? '?';

  ctx.log('bullmq: adds, no workers');
  const adds = await closedLoopFn(LOAD_CONCURRENCY, durationMs, (i) => queue.add('noop', { n: i }));
  await queue.obliterate({ force: true });

  ctx.log('bullmq: Wharf end to end again, for a side-by-side figure under the same load');
  const wharfRun = await endToEndSeparate(ctx, 'bullmq-wharf', {});

  ctx.log(`bullmq: end to end, ${WORKERS} workers x ${WORKER_CONCURRENCY} in a separate process`);
  const run = await endToEnd(ctx, queue, name, durationMs);
  const e2e = run.jobsPerS;
  await queue.close();

  let durable: BullmqRun | string = 'not run in a tiny run';
  if (!ctx.opts.tiny) {
    ctx.log('bullmq: end to end again with appendonly yes + appendfsync always (acknowledged on disk)');
    durable = await withFsyncedAof(async () => {
      const durableName = `${name}-aof`;
      const q = new Queue(durableName, { connection: REDIS });
      try {
        await q.waitUntilReady();
        return await endToEnd(ctx, q, durableName, durableMs(ctx));
      } finally {
        await q.close();
      }
    });
  }
  if (typeof durable === 'string') ctx.log(`bullmq: durable run skipped: ${durable}`);
  const durableE2e = typeof durable === 'string' ? Number.NaN : durable.jobsPerS;

  // Wharf again, right before BullMQ, so that both see the same machine load.
  const wharf = ctx.results.find((r) => r.id === '1')?.json;
  const wharfSubmit = typeof wharf?.['submitPerS'] === 'number' ? wharf['submitPerS'] : Number.NaN;
  const wharfE2e = wharfRun.jobsPerS;
  const hello = ctx.baselines?.helloRps ?? Number.NaN;
  const markdown = [
    table(
      ['measure', 'Wharf', 'BullMQ', 'Wharf / BullMQ'],
      [
        [`submissions/s (c=${LOAD_CONCURRENCY}, no workers)`, wharfSubmit, adds.rps, ratio(wharfSubmit, adds.rps)],
        [
          `end-to-end jobs/s (${WORKERS} workers × ${WORKER_CONCURRENCY}, separate process)`,
          wharfE2e,
          e2e,
          ratio(wharfE2e, e2e),
        ],
        ['end to end, of hello-world req/s', pct(ratio(wharfE2e, hello)), pct(ratio(e2e, hello)), ''],
        [
          'end-to-end jobs/s, BullMQ with `appendonly yes`, `appendfsync always` (acknowledged on disk, like Wharf)',
          wharfE2e,
          typeof durable === 'string' ? `skipped: ${durable}` : durableE2e,
          ratio(wharfE2e, durableE2e),
        ],
      ],
    ),
    '',
    "The Wharf end-to-end figure here is measured again right before BullMQ's, so that both see the same machine " +
      "load; the submissions figure is scenario 1's.",
    `BullMQ ${bullmqVersion()} on Redis ${version} (appendonly ${aof}, appendfsync ${fsync}), default job options ` +
      '(completed jobs kept, as Wharf keeps results). As configured, not the same guarantee: a BullMQ add is ' +
      'acknowledged once Redis has it in memory' +
      (aof === 'yes' && fsync === 'always' ? ' and fsynced' : ', not on disk') +
      '; a Wharf /run is acknowledged after its commit is fsynced. The last row runs BullMQ again with the AOF ' +
      'fsynced on every write (set for the run with CONFIG SET, then put back; a shorter window), which gives its ' +
      'adds the guarantee a Wharf /run has. Adds go straight to Redis (no HTTP), while every Wharf submission is an ' +
      'authenticated HTTP request.',
  ].join('\n');
  return {
    id: 'bullmq',
    title: 'Peer: BullMQ',
    markdown,
    json: {
      addsPerS: round(adds.rps),
      e2eJobsPerS: round(e2e),
      e2eJobs: run.jobs,
      wharfE2eJobsPerS: round(wharfE2e),
      wharfOverBullmq: round(ratio(wharfE2e, e2e)),
      workers: WORKERS,
      workerConcurrency: WORKER_CONCURRENCY,
      redisAppendonly: aof,
      redisAppendfsync: fsync,
      // An add is on disk before it is acknowledged only with an AOF fsynced on every write.
      durableAck: aof === 'yes' && fsync === 'always',
      drainMs: round(run.drainMs),
      durableE2eJobsPerS: round(durableE2e),
      wharfOverDurableBullmq: round(ratio(wharfE2e, durableE2e)),
      // The second run's adds were fsynced before they were acknowledged (checked in Redis's configuration).
      durableRunAck: typeof durable !== 'string',
    },
  };
}

interface BullmqRun {
  jobsPerS: number;
  jobs: number;
  drainMs: number;
}

/** The durable run is shorter: an fsync per write makes each add slower, and a full-length run adds nothing. */
const durableMs = (ctx: Ctx): number => ctx.size(3000, 400);

/** Workers in their own process, the same warm-up as Wharf's end-to-end window, then the measured window. */
async function endToEnd(ctx: Ctx, queue: Queue, name: string, durationMs: number): Promise<BullmqRun> {
  const host = spawnChild('worker-host.ts', {
    mode: 'bullmq',
    queue: name,
    redis: REDIS,
    n: WORKERS,
    concurrency: WORKER_CONCURRENCY,
  });
  try {
    await host.ready;
    // The host counts completions from its start.
    const warm = await closedLoopFn(LOAD_CONCURRENCY, e2eWarmupMs(ctx), (i) => queue.add('noop', { n: i }));
    await host.call('waitCompleted', { target: warm.requests, timeoutMs: 120_000 });
    const start = performance.timeOrigin + performance.now();
    const load = await closedLoopFn(LOAD_CONCURRENCY, durationMs, (i) => queue.add('noop', { n: i }));
    const acked = performance.timeOrigin + performance.now();
    const done = await host.call<{ completed: number; lastCompletedAt: number }>('waitCompleted', {
      target: warm.requests + load.requests,
      timeoutMs: 120_000,
    });
    const end = done.completed >= warm.requests + load.requests ? done.lastCompletedAt : Number.NaN;
    return { jobsPerS: (load.requests / (end - start)) * 1000, jobs: load.requests, drainMs: Math.max(0, end - acked) };
  } finally {
    await host.stop();
    await queue.obliterate({ force: true });
  }
}

/**
 * Run `fn` with Redis writing an AOF fsynced on every write, then put the configuration back. Enabling the AOF at run
 * time schedules a rewrite (writes reach the AOF only once it is done); the run waits until it is. Returns why not
 * when Redis refused.
 */
async function withFsyncedAof<T>(fn: () => Promise<T>): Promise<T | string> {
  const before = {
    appendonly: lastLine(await redisCommand(['CONFIG', 'GET', 'appendonly'])),
    appendfsync: lastLine(await redisCommand(['CONFIG', 'GET', 'appendfsync'])),
  };
  try {
    for (const [key, value] of [
      ['appendfsync', 'always'],
      ['appendonly', 'yes'],
    ] as const) {
      const reply = await redisCommand(['CONFIG', 'SET', key, value]);
      if (!reply.startsWith('+OK')) return `CONFIG SET ${key} ${value}: ${reply.trim()}`;
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      const info = await redisCommand(['INFO', 'persistence']);
      const rewriting = !/aof_rewrite_in_progress:0/.test(info) || !/aof_rewrite_scheduled:0/.test(info);
      if (/aof_enabled:1/.test(info) && !rewriting) break;
      if (Date.now() > deadline) return 'the AOF did not come on within 30 s';
      await new Promise((r) => setTimeout(r, 100));
    }
    return await fn();
  } finally {
    await redisCommand(['CONFIG', 'SET', 'appendonly', before.appendonly]);
    await redisCommand(['CONFIG', 'SET', 'appendfsync', before.appendfsync]);
  }
}

function bullmqVersion(): string {
  try {
    const pkg = readFileSync(new URL('../../node_modules/bullmq/package.json', import.meta.url), 'utf8');
    return (JSON.parse(pkg) as { version: string }).version;
  } catch {
    return '?';
  }
}

/** One command in RESP over a plain socket; the raw reply text (enough to read a config value or INFO). */
function redisCommand(args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection(REDIS);
    let reply = '';
    const done = (): void => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(1000, done);
    socket.on('error', done);
    socket.on('data', (c) => {
      reply += c.toString();
      // Bulk replies announce their length; a short wait is simpler and enough for these small answers.
      setTimeout(done, 50);
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

const lastLine = (reply: string): string => reply.trim().split('\r\n').pop() ?? '?';

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
