import type { JobCounts, JobStore } from '../types.ts';
import type { Db } from './db.ts';

type CountVerbs = Pick<JobStore, 'jobCounts' | 'queueSnapshot' | 'activeEndpointIds'>;

/** Read-only aggregates for /health, the autoscaler and metrics: plain statements, no locks. */
export function countVerbs(db: Db): CountVerbs {
  return {
    async jobCounts(endpointId) {
      const rows = await db.query<{ status: string; n: number; r: number }>(
        `SELECT status, COUNT(*) AS n, COUNT(*) FILTER (WHERE retries > 0) AS r
         FROM jobs WHERE endpoint_id = $1 GROUP BY status`,
        [endpointId],
      );
      const c: JobCounts = {
        inQueue: 0,
        inProgress: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        timedOut: 0,
        retried: 0,
      };
      for (const row of rows) {
        c.retried += row.r;
        if (row.status === 'IN_QUEUE') c.inQueue = row.n;
        else if (row.status === 'IN_PROGRESS') c.inProgress = row.n;
        else if (row.status === 'COMPLETED') c.completed = row.n;
        else if (row.status === 'FAILED') c.failed = row.n;
        else if (row.status === 'CANCELLED') c.cancelled = row.n;
        else if (row.status === 'TIMED_OUT') c.timedOut = row.n;
      }
      return c;
    },

    async queueSnapshot(endpointId) {
      const [r] = await db.query<{ normal: number; low: number; oldest: number | null; running: number }>(
        `SELECT COUNT(*) FILTER (WHERE status = 'IN_QUEUE' AND NOT low_priority) AS normal,
                COUNT(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority) AS low,
                MIN(queued_at) FILTER (WHERE status = 'IN_QUEUE' AND NOT low_priority) AS oldest,
                COUNT(*) FILTER (WHERE status = 'IN_PROGRESS') AS running
         FROM jobs WHERE endpoint_id = $1 AND status IN ('IN_QUEUE', 'IN_PROGRESS')`,
        [endpointId],
      );
      return {
        inQueue: r?.normal ?? 0,
        inQueueLowPriority: r?.low ?? 0,
        inProgress: r?.running ?? 0,
        oldestQueuedAt: r?.oldest ?? null,
      };
    },

    async activeEndpointIds() {
      const rows = await db.query<{ endpoint_id: string }>(
        `SELECT DISTINCT endpoint_id FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS')`,
      );
      return rows.map((r) => r.endpoint_id);
    },
  };
}
