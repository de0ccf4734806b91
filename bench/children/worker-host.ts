// The worker host: N no-op workers in a process of their own, so they do not share the server's event loop.
// `wharf` mode runs TypeScript-SDK workers against a Wharf server; `bullmq` mode runs BullMQ workers on Redis with
// the same N and concurrency, `graphile` and `pgboss` modes the durable peers' workers on PostgreSQL (the peer
// comparisons). For the PostgreSQL peers a job counts here once its handler returned: the completion is committed
// after that, which the harness checks in the database (bench/scenarios/peer-postgres.ts).

import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import type { Runner } from 'graphile-worker';
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import type { WorkerHandle } from '../../src/sdk/worker/index.ts';
import { memory, payload, serveParent } from '../lib/child.ts';
import { startSdkWorkers, type SdkWorkersOptions } from './sdk-workers.ts';

type Payload =
  | ({ mode: 'wharf' } & SdkWorkersOptions)
  | { mode: 'bullmq'; queue: string; redis: { host: string; port: number }; n: number; concurrency: number }
  | { mode: 'graphile'; connectionString: string; schema: string; poolSize: number; n: number; concurrency: number }
  | {
      mode: 'pgboss';
      connectionString: string;
      schema: string;
      queue: string;
      pollS: number;
      n: number;
      concurrency: number;
    };

const p = payload<Payload>();
let sdk: WorkerHandle[] = [];
let bull: Worker[] = [];
let runners: Runner[] = [];
let boss: PgBoss | null = null;
let pgPool: Pool | null = null;
let completed = 0;
let lastCompletedAt = 0;
const waiters = new Set<() => void>();
const onCompleted = (): void => {
  completed++;
  lastCompletedAt = performance.timeOrigin + performance.now();
  for (const w of waiters) w();
};

switch (p.mode) {
  case 'wharf':
    sdk = startSdkWorkers(p);
    break;
  case 'bullmq':
    bull = Array.from({ length: p.n }, () => {
      const w = new Worker(p.queue, async () => ({}), { connection: p.redis, concurrency: p.concurrency });
      w.on('completed', onCompleted);
      return w;
    });
    await Promise.all(bull.map((w) => w.waitUntilReady()));
    break;
  case 'graphile': {
    // One runner (its own LISTEN connection and local queue) per worker, as Wharf's N SDK workers; one pool for all
    // of them, as the SDK workers share one HTTP client.
    const { run } = await import('graphile-worker');
    const { default: pg } = await import('pg');
    const { quietLogger } = await import('../lib/graphile-logger.ts');
    const logger = await quietLogger();
    const pool = new pg.Pool({ connectionString: p.connectionString, max: p.poolSize });
    pool.on('error', (error) => process.stderr.write(`pg pool: ${error.message}\n`));
    pgPool = pool;
    runners = await Promise.all(
      Array.from({ length: p.n }, () =>
        run({
          pgPool: pool,
          schema: p.schema,
          concurrency: p.concurrency,
          noHandleSignals: true,
          logger,
          taskList: { noop: async () => onCompleted() },
          preset: { worker: { localQueue: { size: p.concurrency } } },
        }),
      ),
    );
    break;
  }
  case 'pgboss': {
    const { PgBoss } = await import('pg-boss');
    boss = new PgBoss({
      connectionString: p.connectionString,
      schema: p.schema,
      supervise: false,
      schedule: false,
      migrate: false,
    });
    boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
    await boss.start();
    await boss.work(
      p.queue,
      {
        localConcurrency: p.n,
        batchSize: p.concurrency,
        pollingIntervalSeconds: p.pollS,
        burstWhenBatchFull: true,
      },
      async (jobs) => {
        for (let i = 0; i < jobs.length; i++) onCompleted();
      },
    );
    break;
  }
}

async function stopAll(): Promise<void> {
  await Promise.all([
    ...sdk.map((w) => w.stop({ timeoutMs: 1000 })),
    ...bull.map((w) => w.close()),
    ...runners.map((r) => r.stop()),
    boss?.stop({ graceful: true, timeout: 5000 }),
  ]);
  await pgPool?.end();
  sdk = [];
  bull = [];
  runners = [];
  boss = null;
  pgPool = null;
}

serveParent(
  {
    mem: () => memory(),
    waitCompleted: ({ target, timeoutMs }: { target: number; timeoutMs: number }) =>
      new Promise((resolve) => {
        const check = (): void => {
          if (completed >= target) finish();
        };
        const finish = (): void => {
          waiters.delete(check);
          clearTimeout(timer);
          resolve({ completed, lastCompletedAt });
        };
        const timer = setTimeout(finish, timeoutMs);
        waiters.add(check);
        check();
      }),
    stop: async () => {
      await stopAll();
      return null;
    },
  },
  stopAll,
);

process.send!({ ready: true, pid: process.pid });
