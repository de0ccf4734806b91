import { jobCountsFrom } from '../job-counts.ts';
import type { JobStore } from '../types.ts';
import type { Db } from './db.ts';

/**
 * Per schema, like the leader's lock: deployments sharing a database compact independently. Migration 6's TRUNCATE
 * trigger takes the same lock.
 */
const COMPACT_LOCK_SQL = `hashtextextended('wharf.job_counts.' || current_schema(), 0)`;

type CountVerbs = Pick<JobStore, 'jobCounts' | 'queueSnapshot' | 'activeEndpointIds'>;

/**
 * Read-only aggregates for /health, the autoscaler and metrics: plain statements, no locks. They read the counters
 * that the triggers of migration 6 keep (a key's count is the sum of its rows, one per backend that changed such
 * jobs since the last compaction) and one index entry, never the jobs themselves, so they cost the same at any queue
 * depth. Like the queries they replace, they count jobs whose ttl ran out but that the sweep has not deleted yet.
 */
export function countVerbs(db: Db): CountVerbs {
  return {
    async jobCounts(endpointId) {
      const rows = await db.query<{ status: string; n: number; r: number }>(
        `SELECT status, SUM(n) AS n, COALESCE(SUM(n) FILTER (WHERE retried), 0) AS r
         FROM job_counts WHERE endpoint_id = $1 GROUP BY status`,
        [endpointId],
      );
      return jobCountsFrom(rows);
    },

    async queueSnapshot(endpointId) {
      // One statement, one snapshot: the counts and the oldest job agree. The oldest is the first entry of the
      // jobs_queue_normal index.
      const [r] = await db.query<{
        normal: number;
        low: number;
        oldest: number | null;
        running: number;
        running_low: number;
      }>(
        `SELECT COALESCE(SUM(n) FILTER (WHERE status = 'IN_QUEUE' AND NOT low_priority), 0) AS normal,
                COALESCE(SUM(n) FILTER (WHERE status = 'IN_QUEUE' AND low_priority), 0) AS low,
                COALESCE(SUM(n) FILTER (WHERE status = 'IN_PROGRESS'), 0) AS running,
                COALESCE(SUM(n) FILTER (WHERE status = 'IN_PROGRESS' AND low_priority), 0) AS running_low,
                (SELECT MIN(queued_at) FROM jobs
                 WHERE endpoint_id = $1 AND status = 'IN_QUEUE' AND NOT low_priority) AS oldest
         FROM job_counts WHERE endpoint_id = $1 AND status IN ('IN_QUEUE', 'IN_PROGRESS')`,
        [endpointId],
      );
      return {
        inQueue: r?.normal ?? 0,
        inQueueLowPriority: r?.low ?? 0,
        inProgress: r?.running ?? 0,
        inProgressLowPriority: r?.running_low ?? 0,
        oldestQueuedAt: r?.oldest ?? null,
      };
    },

    async activeEndpointIds() {
      // Each status's sum is never negative, so a positive sum over both means queued or running jobs.
      const rows = await db.query<{ endpoint_id: string }>(
        `SELECT endpoint_id FROM job_counts WHERE status IN ('IN_QUEUE', 'IN_PROGRESS')
         GROUP BY endpoint_id HAVING SUM(n) > 0`,
      );
      return rows.map((r) => r.endpoint_id);
    },
  };
}

/**
 * Fold the per-backend counter rows into backend 0 (the leader's housekeeping; counts are exact at any time, this
 * only keeps the rows few). Rows a transaction holds right now are skipped (SKIP LOCKED), so this never waits for a
 * writer, and a writer waits at most for this one short transaction. One compaction at a time (a leader hand-over
 * could start a second): the other returns at once. Keys whose count reached zero lose their row.
 */
export async function compactJobCounts(db: Db): Promise<void> {
  await db.tx(async (c) => {
    const lock = await c.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${COMPACT_LOCK_SQL}) AS ok`);
    if (!lock.rows[0]?.ok) return;
    await c.query(
      `WITH moved AS (
         DELETE FROM job_counts
         WHERE ctid = ANY(ARRAY(SELECT ctid FROM job_counts WHERE backend <> 0 FOR UPDATE SKIP LOCKED))
         RETURNING endpoint_id, status, low_priority, retried, n)
       INSERT INTO job_counts AS c (endpoint_id, status, low_priority, retried, backend, n)
       SELECT endpoint_id, status, low_priority, retried, 0, SUM(n) FROM moved
       GROUP BY endpoint_id, status, low_priority, retried
       ON CONFLICT (endpoint_id, status, low_priority, retried, backend) DO UPDATE SET n = c.n + EXCLUDED.n`,
    );
    await c.query('DELETE FROM job_counts WHERE backend = 0 AND n = 0');
  });
}
