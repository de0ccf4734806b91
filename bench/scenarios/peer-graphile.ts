// The durable peer on PostgreSQL: graphile-worker, its WorkerUtils `addJob` as the producer and its runner as the
// workers (bench/scenarios/peer-postgres.ts measures it).

import type { WorkerUtils } from 'graphile-worker';
import type { Ctx, Result } from '../lib/context.ts';
import { quietLogger } from '../lib/graphile-logger.ts';
import { WORKER_CONCURRENCY } from './s1-throughput.ts';
import { PG_POOL, runPgPeer, type PgPeer } from './peer-postgres.ts';

export const GRAPHILE: PgPeer = {
  id: 'graphile',
  name: 'graphile-worker',
  pkg: 'graphile-worker',
  ratioKey: 'wharfOverGraphile',
  async producer(url, schema) {
    const { makeWorkerUtils } = await import('graphile-worker');
    const utils: WorkerUtils = await makeWorkerUtils({
      connectionString: url,
      schema,
      maxPoolSize: PG_POOL,
      logger: await quietLogger(),
    });
    await utils.migrate();
    return {
      add: (i) => utils.addJob('noop', { n: i }),
      close: async () => {
        await utils.release();
      },
    };
  },
  hostPayload: (url, schema) => ({ mode: 'graphile', connectionString: url, schema, poolSize: PG_POOL }),
  // Keeps graphile-worker from formatting a "Completed task" line per job that the quiet logger would drop anyway.
  hostEnv: { NO_LOG_SUCCESS: '1' },
  unfinishedSql: (schema) => `SELECT count(*)::int AS n FROM ${schema}._private_jobs`,
  setup:
    `\`addJob\` from a WorkerUtils (a pool of ${PG_POOL} connections); one runner per worker (\`run\`, concurrency ` +
    `${WORKER_CONCURRENCY}, localQueue size ${WORKER_CONCURRENCY}: jobs fetched in batches as Wharf's workers take ` +
    `them), the runners sharing one pool of ${PG_POOL} connections as Wharf's SDK workers share one HTTP client, ` +
    'LISTEN/NOTIFY wake-ups, default completions (one DELETE per job: graphile-worker does not keep results, Wharf ' +
    "does), no success log lines (NO_LOG_SUCCESS). Every add NOTIFYs (graphile-worker's add_job always does), and " +
    'PostgreSQL serialises the commits of notifying transactions with a cluster-wide lock held until the commit is ' +
    'flushed, so adds commit one at a time: no group commit.',
};

export function peerGraphile(ctx: Ctx): Promise<Result> {
  return runPgPeer(ctx, GRAPHILE);
}
