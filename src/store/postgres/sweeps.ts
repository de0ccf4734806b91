import {
  releasedJob,
  resultsExpireAt,
  RETAKE_AFTER_STOP_MS,
  type Job,
  type TombstoneReason,
} from '../../domain/index.ts';
import type { JobStore, LeaseSweep, SweptJob } from '../types.ts';
import type { Conn, Db } from './db.ts';
import { addStop, clearStreams } from './jobs.ts';
import { toJob, type JobRow } from './rows.ts';
import { enqueueWebhooks } from './webhooks.ts';

/**
 * Sweeps and lost workers. Sweeps lock their batch with SKIP LOCKED, so a sweep never waits behind (or undoes) a
 * worker's post that holds the row; the job is simply looked at again on the next pass.
 */
async function deleteJobs(c: Conn, jobs: Job[], reason: TombstoneReason, now: number): Promise<void> {
  if (jobs.length === 0) return;
  const ids = jobs.map((j) => j.id);
  await c.query('DELETE FROM jobs WHERE id = ANY($1)', [ids]);
  await clearStreams(c, ids);
  await c.query(
    `INSERT INTO tombstones (id, endpoint_id, reason, deleted_at)
     SELECT id, endpoint_id, $3, $4 FROM unnest($1::text[], $2::text[]) AS t(id, endpoint_id)
     ON CONFLICT (id) DO UPDATE SET reason = EXCLUDED.reason, deleted_at = EXCLUDED.deleted_at`,
    [ids, jobs.map((j) => j.endpointId), reason, now],
  );
}

/**
 * A worker lost its jobs (lease ran out, process exited, ping showed them gone). Each goes back to the queue with
 * the attempt fenced out (worker_id cleared, so the old holder's late posts are refused), or FAILS once it has been
 * handed out `maxAttempts` times, so a poison job cannot crash workers forever.
 */
async function release(
  c: Conn,
  workerId: string,
  now: number,
  maxAttempts: number | null,
  reason: string,
  onlyJobIds?: string[],
): Promise<LeaseSweep> {
  // Not a job past its ttl: it is gone, FAILED or not (expireJobs deletes it, with its own stop order). Nor one past
  // its execution timeout: that attempt timed out whoever noticed first, so it is TIMED_OUT (timeoutJobs does it, with
  // a stop order), not requeued or FAILED.
  const rows = await c.query<JobRow>(
    `SELECT * FROM jobs WHERE worker_id = $1 AND status = 'IN_PROGRESS' AND expires_at > $2
       AND (deadline_at IS NULL OR deadline_at > $2)
     ORDER BY queued_at, seq FOR UPDATE`,
    [workerId, now],
  );
  const sweep: LeaseSweep = { workerIds: [], requeued: [], failed: [] };
  for (const r of rows.rows) {
    if (onlyJobIds && !onlyJobIds.includes(r.id)) continue;
    const job = toJob(r);
    const next = releasedJob(job, workerId, reason, maxAttempts, now);
    if (next.status === 'FAILED') {
      await c.query(
        `UPDATE jobs SET status = 'FAILED', error = $1, completed_at = $2, results_expire_at = $3, deadline_at = NULL
         WHERE id = $4`,
        [next.errorJson, now, resultsExpireAt(job, now), job.id],
      );
      sweep.failed.push(next);
    } else {
      await c.query(
        `UPDATE jobs SET status = 'IN_QUEUE', queued_at = $1, started_at = NULL, deadline_at = NULL, worker_id = NULL,
           output = NULL, retries = retries + 1, attempt = $3 WHERE id = $2`,
        [now, job.id, next.attempt],
      );
      sweep.requeued.push(next);
    }
  }
  // Chunks of the lost attempt would interleave with the next attempt's: drop them.
  await clearStreams(
    c,
    sweep.requeued.map((j) => j.id),
  );
  await enqueueWebhooks(c, sweep.failed);
  return sweep;
}

type SweepVerbs = Pick<
  JobStore,
  | 'expireJobs'
  | 'expireResults'
  | 'timeoutJobs'
  | 'pruneTombstones'
  | 'runningByWorker'
  | 'lastFinishByWorker'
  | 'workerJobIds'
  | 'releaseWorkerJobs'
  | 'returnUndelivered'
  | 'expireWorkerLeases'
  | 'takeStops'
  | 'rearmStops'
>;

export function sweepVerbs(db: Db): SweepVerbs {
  return {
    expireJobs(now, limit) {
      return db.tx(async (c) => {
        const rows = await c.query<JobRow>(
          'SELECT * FROM jobs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED',
          [now, limit],
        );
        const swept: SweptJob[] = [];
        for (const r of rows.rows) {
          const job = toJob(r);
          const stopWorkerId = job.status === 'IN_PROGRESS' ? job.workerId : null;
          if (stopWorkerId) await addStop(c, stopWorkerId, job.id, now);
          swept.push({ job, stopWorkerId });
        }
        await deleteJobs(
          c,
          swept.map((s) => s.job),
          'TTL_EXPIRED',
          now,
        );
        return swept;
      });
    },

    expireResults(now, limit) {
      return db.tx(async (c) => {
        const rows = await c.query<JobRow>(
          `SELECT * FROM jobs WHERE results_expire_at IS NOT NULL AND results_expire_at <= $1
           LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [now, limit],
        );
        await deleteJobs(c, rows.rows.map(toJob), 'RESULTS_EXPIRED', now);
        return rows.rows.length;
      });
    },

    timeoutJobs(now, limit) {
      return db.tx(async (c) => {
        const rows = await c.query<JobRow>(
          `SELECT * FROM jobs WHERE status = 'IN_PROGRESS' AND deadline_at <= $1 AND expires_at > $1
           ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [now, limit],
        );
        const swept: SweptJob[] = [];
        for (const r of rows.rows) {
          const job = toJob(r);
          if (job.workerId) await addStop(c, job.workerId, job.id, now);
          await c.query(
            `UPDATE jobs SET status = 'TIMED_OUT', completed_at = $1, results_expire_at = $2, deadline_at = NULL
             WHERE id = $3`,
            [now, resultsExpireAt(job, now), job.id],
          );
          swept.push({ job: { ...job, status: 'TIMED_OUT', completedAt: now }, stopWorkerId: job.workerId });
        }
        await enqueueWebhooks(
          c,
          swept.map((s) => s.job),
        );
        return swept;
      });
    },

    async pruneTombstones(before) {
      const rows = await db.query<{ id: string }>('DELETE FROM tombstones WHERE deleted_at < $1 RETURNING id', [
        before,
      ]);
      return rows.length;
    },

    async runningByWorker(endpointId) {
      const rows = await db.query<{ worker_id: string; n: number }>(
        `SELECT worker_id, COUNT(*) AS n FROM jobs WHERE endpoint_id = $1 AND status = 'IN_PROGRESS'
         GROUP BY worker_id`,
        [endpointId],
      );
      return Object.fromEntries(rows.map((r) => [r.worker_id, r.n]));
    },

    async lastFinishByWorker(endpointId, since) {
      // Asked only when a worker is about to be stopped as idle: a walk of the endpoint's finished jobs is fine then.
      const rows = await db.query<{ worker_id: string; at: string }>(
        `SELECT worker_id, MAX(completed_at) AS at FROM jobs
         WHERE endpoint_id = $1 AND status IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT') AND completed_at >= $2
           AND worker_id IS NOT NULL
         GROUP BY worker_id`,
        [endpointId, since],
      );
      return Object.fromEntries(rows.map((r) => [r.worker_id, Number(r.at)]));
    },

    async workerJobIds(workerId) {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM jobs WHERE worker_id = $1 AND status = 'IN_PROGRESS' ORDER BY queued_at, seq`,
        [workerId],
      );
      return rows.map((r) => r.id);
    },

    releaseWorkerJobs(workerId, now, maxAttempts, reason, onlyJobIds) {
      return db.tx((c) => release(c, workerId, now, maxAttempts, reason, onlyJobIds));
    },

    /**
     * Jobs handed to a take whose client had already hung up: they never reached a worker, so they go back to their
     * place in the queue without using up an attempt or counting as a retry.
     */
    async returnUndelivered(workerId, jobIds) {
      if (jobIds.length === 0) return [];
      const rows = await db.query<JobRow>(
        `UPDATE jobs SET status = 'IN_QUEUE', attempt = attempt - 1, started_at = NULL, deadline_at = NULL,
           worker_id = NULL WHERE id = ANY($1) AND worker_id = $2 AND status = 'IN_PROGRESS' RETURNING *`,
        [jobIds, workerId],
      );
      const order = new Map(jobIds.map((id, i) => [id, i]));
      return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!).map(toJob);
    },

    expireWorkerLeases(silentSince, now, maxAttempts) {
      return db.tx(async (c) => {
        // Workers whose lease ran out and that still count as alive, or that were already marked lease-expired but
        // have since been handed a job (a take long poll that outlived the lease). The lock re-checks last_seen_at
        // against a ping that committed meanwhile on another node: a worker that just pinged keeps its lease. Not a
        // managed worker still starting: it has no lease yet; the supervisor's init timeout is its limit. FOR NO KEY
        // UPDATE, not FOR UPDATE: a stop order (addStop) holds its worker FOR KEY SHARE after its caller locked the job
        // (cancelJob, timeoutJobs, expireJobs), while this locks the worker and then its jobs; FOR UPDATE made them
        // wait for each other (a deadlock, broken by PostgreSQL after deadlock_timeout). Pings, takeovers and
        // deletions of the worker still wait for this lock, as it updates the row.
        const silent = await c.query<{ id: string }>(
          `SELECT id FROM workers w WHERE last_seen_at < $1 AND NOT (managed AND state = 'initializing')
             AND (state <> 'unhealthy'
               OR EXISTS (SELECT 1 FROM jobs j WHERE j.worker_id = w.id AND j.status = 'IN_PROGRESS'))
           ORDER BY seq FOR NO KEY UPDATE OF w SKIP LOCKED`,
          [silentSince],
        );
        const total: LeaseSweep = { workerIds: [], requeued: [], failed: [] };
        for (const { id } of silent.rows) {
          const sweep = await release(c, id, now, maxAttempts, 'lease expired');
          for (const job of [...sweep.requeued, ...sweep.failed]) await addStop(c, id, job.id, now);
          // A worker already known dead keeps the reason it died with (e.g. its exit code and last line).
          await c.query(
            `UPDATE workers SET reason = CASE WHEN state = 'unhealthy' THEN reason ELSE 'lease-expired' END,
               state = 'unhealthy' WHERE id = $1`,
            [id],
          );
          total.workerIds.push(id);
          total.requeued.push(...sweep.requeued);
          total.failed.push(...sweep.failed);
        }
        return total;
      });
    },

    async takeStops(workerId, now) {
      // The orders not fetched yet, marked fetched; fetched ones past RETAKE_AFTER_STOP_MS go.
      const rows = await db.query<{ job_id: string }>(
        `WITH gone AS (
           DELETE FROM job_stops WHERE worker_id = $1 AND fetched_at IS NOT NULL AND created_at <= $3)
         UPDATE job_stops SET fetched_at = $2 WHERE worker_id = $1 AND fetched_at IS NULL RETURNING job_id`,
        [workerId, now, now - RETAKE_AFTER_STOP_MS],
      );
      return rows.map((r) => r.job_id);
    },

    async rearmStops(workerId, jobIds, now) {
      if (jobIds.length === 0) return [];
      const rows = await db.query<{ job_id: string }>(
        `UPDATE job_stops SET fetched_at = NULL, created_at = $3
         WHERE worker_id = $1 AND job_id = ANY($2) AND fetched_at IS NOT NULL AND created_at > $4
         RETURNING job_id`,
        [workerId, [...new Set(jobIds)], now, now - RETAKE_AFTER_STOP_MS],
      );
      return rows.map((r) => r.job_id);
    },
  };
}
