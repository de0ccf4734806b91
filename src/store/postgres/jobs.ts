import {
  goneReason,
  pastDeadline,
  resultsExpireAt,
  RETAKE_AFTER_STOP_MS,
  takeBatchSize,
  type Job,
  type TombstoneReason,
} from '../../domain/index.ts';
import { newJobRecord } from '../new-job.ts';
import type { FencedOutcome, HandTo, JobStore, NewJob } from '../types.ts';
import type { Conn, Db } from './db.ts';
import { byQueueOrder, toJob, type JobRow } from './rows.ts';
import { enqueueWebhooks } from './webhooks.ts';

/** The job row, locked for the rest of the transaction: every read-then-write verb starts here. */
export async function lockJob(c: Conn, endpointId: string, jobId: string): Promise<Job | null> {
  const r = await c.query<JobRow>('SELECT * FROM jobs WHERE id = $1 AND endpoint_id = $2 FOR UPDATE', [
    jobId,
    endpointId,
  ]);
  return r.rows[0] ? toJob(r.rows[0]) : null;
}

/**
 * The fence: only the worker holding the current IN_PROGRESS attempt may change the job. The row lock serialises
 * it against a concurrent finish, cancel, timeout or release on any node, so a job is never completed twice.
 */
async function fenced(c: Conn, endpointId: string, jobId: string, workerId: string, now: number) {
  const job = await lockJob(c, endpointId, jobId);
  if (!job) return { ok: false, reason: 'not_found' } as const;
  // Past its ttl the job is gone even if the sweep has not deleted it yet: late posts must not revive it.
  if (job.expiresAt <= now) return { ok: false, reason: 'not_found' } as const;
  if (job.status !== 'IN_PROGRESS' || job.workerId !== workerId) return { ok: false, reason: 'stale', job } as const;
  // Past its executionTimeout the attempt is over even if the sweep has not marked it TIMED_OUT yet.
  if (pastDeadline(job, now)) return { ok: false, reason: 'stale', job } as const;
  return { ok: true, job } as const;
}

export async function addStop(c: Conn, workerId: string, jobId: string, now: number): Promise<void> {
  // A newer order for the same job (a later attempt on the same worker) restarts RETAKE_AFTER_STOP_MS. Only for a
  // worker with a record: orders go only with their worker's record (deleteWorker, deleteEndpoint), so one made for a
  // worker already gone (or never registered) would stay forever, and a later worker under the same id (pod ids are
  // reused) would be told to stop a job it never ran and be kept from taking it. FOR KEY SHARE holds the record
  // until this transaction ends, so a concurrent deleteWorker waits and then deletes this order with it; one that
  // deleted the record first leaves the subquery empty here.
  await c.query(
    `INSERT INTO job_stops (worker_id, job_id, created_at)
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM workers WHERE id = $1 FOR KEY SHARE)
     ON CONFLICT (worker_id, job_id) DO UPDATE SET created_at = excluded.created_at, fetched_at = NULL`,
    [workerId, jobId, now],
  );
}

/** A new attempt streams from scratch: drop the old chunks and every consumer's cursor with them. */
export async function clearStreams(c: Conn, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await c.query('DELETE FROM stream_chunks WHERE job_id = ANY($1)', [jobIds]);
  await c.query('DELETE FROM stream_cursors WHERE job_id = ANY($1)', [jobIds]);
}

const SUBMIT = `INSERT INTO jobs (id, endpoint_id, status, input, webhook, policy, policy_given, policy_json,
    low_priority, execution_timeout_ms, ttl_ms, s3_config, mode, retention_ms, created_at, queued_at, expires_at)
  VALUES ($1, $2, 'IN_QUEUE', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)`;

/**
 * The hand-off (store/types.ts HandTo): the worker ($16) gets the job when it may take work — domain mayHandJobTo,
 * in SQL — and nothing is queued for the endpoint; the lease renewal ($17) runs only with a claim. One statement:
 * the reads and the insert share its snapshot.
 */
const HAND_OFF = `SELECT w.id FROM workers w
  WHERE w.id = $16 AND w.endpoint_id = $2 AND NOT w.retired
    AND NOT (w.state = 'unhealthy' AND w.reason IS NOT DISTINCT FROM 'lease-expired')
    AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.endpoint_id = $2 AND q.status = 'IN_QUEUE' AND q.expires_at > $14)`;

const SUBMIT_HANDED = `WITH hand AS (${HAND_OFF}),
  touched AS (UPDATE workers SET last_seen_at = GREATEST(last_seen_at, $14) WHERE $17 AND id IN (SELECT id FROM hand))
  INSERT INTO jobs (id, endpoint_id, status, input, webhook, policy, policy_given, policy_json, low_priority,
    execution_timeout_ms, ttl_ms, s3_config, mode, retention_ms, created_at, queued_at, expires_at,
    attempt, worker_id, started_at, deadline_at)
  SELECT $1, $2, CASE WHEN h.id IS NULL THEN 'IN_QUEUE' ELSE 'IN_PROGRESS' END, $3, $4, $5, $6, $7, $8, $9, $10,
    $11, $12, $13, $14, $14, $15, CASE WHEN h.id IS NULL THEN 0 ELSE 1 END, h.id,
    CASE WHEN h.id IS NULL THEN NULL ELSE $14 END, CASE WHEN h.id IS NULL THEN NULL ELSE $14 + $9 END
  FROM (SELECT 1) AS one LEFT JOIN hand h ON TRUE
  RETURNING worker_id`;

type JobVerbs = Pick<
  JobStore,
  | 'submitJob'
  | 'takeJobs'
  | 'getJob'
  | 'getTombstone'
  | 'recordProgress'
  | 'finishJob'
  | 'appendChunks'
  | 'readChunks'
  | 'cancelJob'
  | 'retryJob'
  | 'purgeQueue'
  | 'setJobTtl'
>;

/** The most chunks one stream read looks at (each is at most 1 MB; the size bound usually stops it first). */
const STREAM_PAGE_ROWS = 4096;

export function jobVerbs(db: Db): JobVerbs {
  return {
    async submitJob(j: NewJob, handTo?: HandTo) {
      const params = [
        j.id,
        j.endpointId,
        j.inputJson,
        j.webhook,
        JSON.stringify(j.policy),
        j.policyGiven,
        j.policyJson ?? null,
        j.policy.lowPriority,
        j.policy.executionTimeoutMs,
        j.policy.ttlMs,
        j.s3ConfigSealed,
        j.mode,
        j.retentionMs,
        j.createdAt,
        j.createdAt + j.policy.ttlMs,
      ];
      // One statement, committed before it resolves: acknowledged means durable (DESIGN.md §1 principle 2).
      if (handTo === undefined) {
        await db.query(SUBMIT, params);
        return newJobRecord(j, null);
      }
      const [row] = await db.query<{ worker_id: string | null }>(SUBMIT_HANDED, [
        ...params,
        handTo.workerId,
        handTo.touchLease,
      ]);
      return newJobRecord(j, row?.worker_id ?? null);
    },

    async takeJobs(endpointId, workerId, max, now) {
      // SKIP LOCKED: takes on every node run in parallel, each getting different jobs, none waiting on another's
      // lock. Expired-but-not-yet-swept jobs are skipped: their ttl is over, they must never start. A retired
      // worker gets nothing (the supervisor retires an idle worker, then stops it only if it holds no job).
      const rows = await db.query<JobRow>(
        `WITH picked AS (
           SELECT id FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE' AND expires_at > $2
             AND NOT EXISTS (SELECT 1 FROM job_stops s WHERE s.worker_id = $4 AND s.job_id = jobs.id AND s.created_at > $5)
             AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = $4 AND w.retired)
           ORDER BY queued_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
         UPDATE jobs j SET status = 'IN_PROGRESS', attempt = j.attempt + 1, worker_id = $4, started_at = $2,
           deadline_at = $2 + j.execution_timeout_ms, output = NULL, error = NULL
         FROM picked WHERE j.id = picked.id
         RETURNING j.*`,
        [endpointId, now, takeBatchSize(max), workerId, now - RETAKE_AFTER_STOP_MS],
      );
      // RETURNING gives no order guarantee; hand jobs out in queue order.
      return byQueueOrder(rows);
    },

    async getJob(endpointId, jobId) {
      const [r] = await db.query<JobRow>('SELECT * FROM jobs WHERE id = $1 AND endpoint_id = $2', [jobId, endpointId]);
      return r ? toJob(r) : null;
    },

    async getTombstone(endpointId, jobId) {
      const [r] = await db.query<{ reason: TombstoneReason }>(
        'SELECT reason FROM tombstones WHERE id = $1 AND endpoint_id = $2',
        [jobId, endpointId],
      );
      return r?.reason ?? null;
    },

    async recordProgress(endpointId, jobId, workerId, outputJson, now) {
      // The common case in one statement (see finishJob); a refusal takes the transaction below, which says why.
      const [row] = await db.query<JobRow>(
        `UPDATE jobs SET output = $1
         WHERE id = $2 AND endpoint_id = $3 AND status = 'IN_PROGRESS' AND worker_id = $4 AND expires_at > $5
           AND deadline_at > $5
         RETURNING *`,
        [outputJson, jobId, endpointId, workerId, now],
      );
      if (row) return { ok: true, job: toJob(row) };
      return db.tx(async (c): Promise<FencedOutcome> => {
        const f = await fenced(c, endpointId, jobId, workerId, now);
        if (!f.ok) return f;
        await c.query('UPDATE jobs SET output = $1 WHERE id = $2', [outputJson, jobId]);
        return { ok: true, job: { ...f.job, outputJson } };
      });
    },

    async finishJob(endpointId, jobId, workerId, result, now) {
      // The common case in one statement, one round trip instead of four (BEGIN, the locking read, the update,
      // COMMIT). The fence is in the WHERE clause, which PostgreSQL checks again on the row once it holds its lock,
      // so a concurrent cancel, timeout or release on any node either lands first (and this updates nothing) or
      // after (and finds the job final). A job with a webhook (its delivery is enqueued in the same transaction) or
      // one the fence refuses takes the transaction below, which also tells not_found from stale.
      // results_expire_at is resultsExpireAt() of the domain, written in SQL.
      const [row] = await db.query<JobRow>(
        `UPDATE jobs SET status = $1, output = $2, error = $3, completed_at = $4,
           results_expire_at = LEAST($4 + retention_ms, expires_at), deadline_at = NULL
         WHERE id = $5 AND endpoint_id = $6 AND status = 'IN_PROGRESS' AND worker_id = $7 AND expires_at > $4
           AND deadline_at > $4 AND webhook IS NULL
         RETURNING *`,
        [result.status, result.outputJson, result.errorJson, now, jobId, endpointId, workerId],
      );
      if (row) return { ok: true, job: toJob(row) };
      return db.tx(async (c): Promise<FencedOutcome> => {
        const f = await fenced(c, endpointId, jobId, workerId, now);
        if (!f.ok) return f;
        await c.query(
          `UPDATE jobs SET status = $1, output = $2, error = $3, completed_at = $4, results_expire_at = $5,
             deadline_at = NULL WHERE id = $6`,
          [result.status, result.outputJson, result.errorJson, now, resultsExpireAt(f.job, now), jobId],
        );
        const job: Job = {
          ...f.job,
          status: result.status,
          outputJson: result.outputJson,
          errorJson: result.errorJson,
          completedAt: now,
        };
        await enqueueWebhooks(c, [job]);
        return { ok: true, job };
      });
    },

    appendChunks(endpointId, jobId, workerId, chunks, now) {
      return db.tx(async (c): Promise<FencedOutcome> => {
        // The job row lock also orders concurrent appends: sequence numbers never collide.
        const f = await fenced(c, endpointId, jobId, workerId, now);
        if (!f.ok) return f;
        const last = await c.query<{ s: number | null }>('SELECT MAX(seq) AS s FROM stream_chunks WHERE job_id = $1', [
          jobId,
        ]);
        const from = last.rows[0]?.s ?? 0;
        await c.query(
          `INSERT INTO stream_chunks (job_id, seq, attempt, body)
           SELECT $1, $2 + n, $3, body FROM unnest($4::text[]) WITH ORDINALITY AS t(body, n)`,
          [jobId, from, f.job.attempt, chunks],
        );
        return f;
      });
    },

    readChunks(endpointId, jobId, consumer, maxChars) {
      return db.tx(async (c) => {
        // Locked: two reads by one consumer at once must not both return the same chunks.
        if (!(await lockJob(c, endpointId, jobId))) return { chunks: [], more: false, attempt: null };
        const cursor = await c.query<{ seq: number }>(
          'SELECT seq FROM stream_cursors WHERE job_id = $1 AND consumer = $2',
          [jobId, consumer],
        );
        // The chunks that fit in the bound (the first always goes), from a page of the oldest: a read costs the same
        // however long the backlog is. octet_length reads a stored value's size without decompressing it.
        const rows = await c.query<{ seq: number; attempt: number; body: string }>(
          `SELECT seq, attempt, body FROM (
             SELECT seq, attempt, body, SUM(octet_length(body)) OVER (ORDER BY seq) AS upto,
               ROW_NUMBER() OVER (ORDER BY seq) AS n
             FROM (SELECT seq, attempt, body FROM stream_chunks WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $4) page
           ) sized
           WHERE upto <= $3 OR n = 1 ORDER BY seq`,
          [jobId, cursor.rows[0]?.seq ?? 0, maxChars, STREAM_PAGE_ROWS],
        );
        const last = rows.rows[rows.rows.length - 1];
        if (last) {
          await c.query(
            `INSERT INTO stream_cursors (job_id, consumer, seq) VALUES ($1, $2, $3)
             ON CONFLICT (job_id, consumer) DO UPDATE SET seq = EXCLUDED.seq`,
            [jobId, consumer, last.seq],
          );
        }
        const more =
          last !== undefined &&
          (await c.query('SELECT 1 FROM stream_chunks WHERE job_id = $1 AND seq > $2 LIMIT 1', [jobId, last.seq])).rows
            .length > 0;
        return { chunks: rows.rows.map((r) => r.body), more, attempt: last?.attempt ?? null };
      });
    },

    cancelJob(endpointId, jobId, now) {
      return db.tx(async (c) => {
        const job = await lockJob(c, endpointId, jobId);
        if (!job) return { outcome: 'not_found' } as const;
        // Checked at `now`, whatever the caller read a moment ago. A job gone is the sweep's to delete, reported to no
        // one; a running one past its deadline is the timeout's (TIMED_OUT), not CANCELLED.
        const gone = goneReason(job, now);
        if (gone) return { outcome: 'gone', reason: gone } as const;
        if (job.status !== 'IN_QUEUE' && job.status !== 'IN_PROGRESS') return { outcome: 'final', job } as const;
        if (pastDeadline(job, now)) return { outcome: 'overdue' } as const;
        const stopWorkerId = job.status === 'IN_PROGRESS' ? job.workerId : null;
        if (stopWorkerId) await addStop(c, stopWorkerId, jobId, now);
        await c.query(
          `UPDATE jobs SET status = 'CANCELLED', completed_at = $1, results_expire_at = $2, deadline_at = NULL
           WHERE id = $3`,
          [now, resultsExpireAt(job, now), jobId],
        );
        const cancelled: Job = { ...job, status: 'CANCELLED', completedAt: now };
        await enqueueWebhooks(c, [cancelled]);
        return { outcome: 'cancelled', job: cancelled, stopWorkerId } as const;
      });
    },

    retryJob(endpointId, jobId, now) {
      return db.tx(async (c) => {
        const job = await lockJob(c, endpointId, jobId);
        if (!job) return { outcome: 'not_found' } as const;
        // Results past their retention (or the ttl) cannot be retried, even in the moment before the sweep deletes them.
        const gone = goneReason(job, now);
        if (gone) return { outcome: 'gone', reason: gone } as const;
        if (job.status !== 'FAILED' && job.status !== 'TIMED_OUT') return { outcome: 'not_retryable', job } as const;
        // A new start: the lost-worker bound counts hand-outs from here. (A stop order the last attempt's worker has
        // not fetched stays: it may still run that attempt. WorkerGateway.stops leaves it out if that worker takes it.)
        const r = await c.query<JobRow>(
          `UPDATE jobs SET status = 'IN_QUEUE', queued_at = $1, started_at = NULL, completed_at = NULL,
             results_expire_at = NULL, deadline_at = NULL, worker_id = NULL, output = NULL, error = NULL, attempt = 0
           WHERE id = $2 RETURNING *`,
          [now, jobId],
        );
        await clearStreams(c, [jobId]);
        return { outcome: 'queued', job: toJob(r.rows[0]!) } as const;
      });
    },

    async purgeQueue(endpointId, now) {
      // Counted in the database: a deep queue's ids (a million of them) never travel to this process. Jobs past
      // their ttl are the sweep's (it leaves their JOB_EXPIRED tombstones): not counted as removed here.
      const [r] = await db.query<{ n: number }>(
        `WITH gone AS (DELETE FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE' AND expires_at > $2 RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [endpointId, now],
      );
      return r?.n ?? 0;
    },

    setJobTtl(endpointId, jobId, ttlMs, now) {
      return db.tx(async (c) => {
        const job = await lockJob(c, endpointId, jobId);
        if (!job) return { outcome: 'not_found' } as const;
        // A job gone at `now` is not revived by a longer ttl, whatever the caller read a moment ago.
        const gone = goneReason(job, now);
        if (gone) return { outcome: 'gone', reason: gone } as const;
        const expiresAt = job.createdAt + ttlMs;
        const policy = { ...job.policy, ttlMs };
        const resultsAt = job.completedAt === null ? null : Math.min(job.completedAt + job.retentionMs, expiresAt);
        await c.query(
          'UPDATE jobs SET expires_at = $1, ttl_ms = $2, policy = $3, results_expire_at = $4 WHERE id = $5',
          [expiresAt, ttlMs, JSON.stringify(policy), resultsAt, jobId],
        );
        return { outcome: 'set', job: { ...job, expiresAt, policy } } as const;
      });
    },
  };
}
