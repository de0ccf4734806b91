// The durable peer on PostgreSQL: pg-boss, `send` as the producer and `work` with batches as the workers
// (bench/scenarios/peer-postgres.ts measures it).

import type { Ctx, Result } from '../lib/context.ts';
import { PG_POOL, runPgPeer, type PgPeer } from './peer-postgres.ts';
import { WORKER_CONCURRENCY, WORKERS } from './s1-throughput.ts';

export const PGBOSS_QUEUE = 'noop';
/** The workers' idle poll (pg-boss's minimum; the default is 2 s). */
export const PGBOSS_POLL_S = 0.5;

export const PGBOSS: PgPeer = {
  id: 'pgboss',
  name: 'pg-boss',
  pkg: 'pg-boss',
  ratioKey: 'wharfOverPgboss',
  async producer(url, schema) {
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({
      connectionString: url,
      schema,
      max: PG_POOL,
      supervise: false,
      schedule: false,
    });
    boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
    await boss.start();
    // A default queue: no `notify`. With it every send also NOTIFYs, and PostgreSQL serialises the commits of
    // notifying transactions (a cluster-wide lock held until the commit is flushed): ~3.5× fewer jobs/s here.
    await boss.createQueue(PGBOSS_QUEUE);
    return { add: (i) => boss.send(PGBOSS_QUEUE, { n: i }), close: () => boss.stop({ graceful: false }) };
  },
  hostPayload: (url, schema) => ({
    mode: 'pgboss',
    connectionString: url,
    schema,
    queue: PGBOSS_QUEUE,
    pollS: PGBOSS_POLL_S,
  }),
  unfinishedSql: (schema) => `SELECT count(*)::int AS n FROM ${schema}.job WHERE state <> 'completed'`,
  setup:
    `\`send\` from a pool of ${PG_POOL} connections; one instance in the worker process with \`work\` at ` +
    `localConcurrency ${WORKERS}, batchSize ${WORKER_CONCURRENCY} (${WORKERS} fetch loops taking up to ` +
    `${WORKER_CONCURRENCY} jobs each, as Wharf's workers take them), its default pool (10 connections), polling ` +
    `every ${PGBOSS_POLL_S} s (its minimum) and burstWhenBatchFull (no wait while fetches come back full); a default ` +
    "queue without NOTIFY (with it, adds serialise on PostgreSQL's cluster-wide notify lock: ~3.5× fewer jobs/s in " +
    'a trial run); supervision and scheduling off (nothing to maintain in a run this short); default retention ' +
    '(completed jobs kept, as Wharf keeps results).',
};

export function peerPgboss(ctx: Ctx): Promise<Result> {
  return runPgPeer(ctx, PGBOSS);
}
