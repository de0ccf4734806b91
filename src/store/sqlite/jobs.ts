import type { DatabaseSync, StatementSync } from 'node:sqlite';
import {
  goneReason,
  pastDeadline,
  releasedJob,
  resultsExpireAt,
  RETAKE_AFTER_STOP_MS,
  takeBatchSize,
  type Job,
  type TombstoneReason,
  type WorkerResult,
} from '../../domain/index.ts';
import type {
  CancelOutcome,
  FencedOutcome,
  JobCounts,
  LeaseSweep,
  NewJob,
  QueueSnapshot,
  RetryOutcome,
  SetTtlOutcome,
  StreamRead,
  SweptJob,
} from '../types.ts';
import { jobCountsFrom } from '../job-counts.ts';
import { newJobRecord } from '../new-job.ts';
import { JOB_COLUMNS, toJob, type JobRow } from './rows.ts';
import { statementCache } from './statements.ts';

/**
 * The job verbs in SQL. Every method here runs inside a write transaction opened by the WriteQueue (or is a
 * plain read), so each is atomic. Statements are prepared once.
 */
export class SqliteJobs {
  private readonly q: (sql: string) => StatementSync;
  /** Statements that read jobs: they select JOB_COLUMNS and return arrays, for toJob. */
  private readonly jobsQ: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.q = statementCache(db);
    this.jobsQ = statementCache(db, { returnArrays: true });
  }

  private row(endpointId: string, jobId: string): JobRow | undefined {
    return this.jobsQ(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ? AND endpoint_id = ?`).get(jobId, endpointId) as
      JobRow | undefined;
  }

  /**
   * Insert a new job: queued, or with `handedTo` claimed at once for that worker (the hand-off; the caller checked
   * the worker and the queue in this transaction).
   */
  submit(j: NewJob, handedTo: string | null = null): Job {
    const job = newJobRecord(j, handedTo);
    this.q(
      `INSERT INTO jobs (id, endpoint_id, status, input, webhook, policy, policy_given, policy_json, low_priority,
         execution_timeout_ms, ttl_ms, s3_config, mode, retention_ms, created_at, queued_at, expires_at,
         attempt, worker_id, started_at, deadline_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      j.id,
      j.endpointId,
      job.status,
      j.inputJson,
      j.webhook,
      JSON.stringify(j.policy),
      j.policyGiven ? 1 : 0,
      j.policyJson ?? null,
      j.policy.lowPriority ? 1 : 0,
      j.policy.executionTimeoutMs,
      j.policy.ttlMs,
      j.s3ConfigSealed,
      j.mode,
      j.retentionMs,
      j.createdAt,
      j.createdAt,
      job.expiresAt,
      job.attempt,
      handedTo,
      job.startedAt,
      handedTo === null ? null : j.createdAt + j.policy.executionTimeoutMs,
    );
    return job;
  }

  /** Whether take would find a job (the same conditions, one index probe). */
  anyTakeable(endpointId: string, now: number): boolean {
    return (
      this.q(`SELECT 1 FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND expires_at > ? LIMIT 1`).get(
        endpointId,
        now,
      ) !== undefined
    );
  }

  take(endpointId: string, workerId: string, max: number, now: number): Job[] {
    // Expired-but-not-yet-swept jobs are skipped: their ttl is over, they must never start. Two statements, not
    // `UPDATE … WHERE id IN (SELECT … LIMIT ?)`: for a LIMIT above 1 SQLite builds that IN list and the UPDATE's
    // row set in ephemeral tables, which made a one-job take cost twice as much (~135 against ~70 µs, measured alone).
    // Both run in the caller's write transaction, so no other take can claim the same rows in between.
    // The LIMIT is a literal (one cached statement per batch size, at most LIMITS.takeBatch): SQLite re-prepares a
    // statement whose LIMIT is a bound parameter each time the table changed since its last run — on every take,
    // ~10 µs each.
    const limit = takeBatchSize(max);
    // Not a job this worker got a stop order for within RETAKE_AFTER_STOP_MS (its earlier attempt may still run).
    // Nothing for a retired worker, read in this transaction: the supervisor retires an idle worker before it stops
    // it, then stops it only if it holds no job, so a take cannot slip a job in between.
    const queued = this.q(
      `SELECT rowid AS r FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND expires_at > ?
         AND NOT EXISTS (SELECT 1 FROM job_stops s WHERE s.worker_id = ? AND s.job_id = jobs.id AND s.created_at > ?)
         AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = ? AND w.retired = 1)
       ORDER BY queued_at, rowid LIMIT ${limit}`,
    ).all(endpointId, now, workerId, now - RETAKE_AFTER_STOP_MS, workerId) as Array<{ r: number }>;
    if (queued.length === 0) return [];
    const claim = this.jobsQ(
      `UPDATE jobs SET status = 'IN_PROGRESS', attempt = attempt + 1, worker_id = ?, started_at = ?,
         deadline_at = ? + execution_timeout_ms, output = NULL, error = NULL
       WHERE rowid = ? RETURNING ${JOB_COLUMNS}`,
    );
    // In queue order: the SELECT's.
    return queued.map(({ r }) => toJob(claim.get(workerId, now, now, r) as unknown as JobRow));
  }

  get(endpointId: string, jobId: string): Job | null {
    const r = this.row(endpointId, jobId);
    return r ? toJob(r) : null;
  }

  tombstone(endpointId: string, jobId: string): TombstoneReason | null {
    const r = this.q('SELECT reason FROM tombstones WHERE id = ? AND endpoint_id = ?').get(jobId, endpointId) as
      { reason: TombstoneReason } | undefined;
    return r?.reason ?? null;
  }

  /** The fence: only the worker holding the current IN_PROGRESS attempt may change the job. */
  private fenced(endpointId: string, jobId: string, workerId: string, now: number): FencedOutcome {
    const r = this.row(endpointId, jobId);
    if (!r) return { ok: false, reason: 'not_found' };
    const job = toJob(r);
    // Past its ttl the job is gone even if the sweep has not deleted it yet: late posts must not revive it.
    if (job.expiresAt <= now) return { ok: false, reason: 'not_found' };
    if (job.status !== 'IN_PROGRESS' || job.workerId !== workerId) return { ok: false, reason: 'stale', job };
    // Past its executionTimeout the attempt is over even if the sweep has not marked it TIMED_OUT yet.
    if (pastDeadline(job, now)) return { ok: false, reason: 'stale', job };
    return { ok: true, job };
  }

  progress(endpointId: string, jobId: string, workerId: string, outputJson: string, now: number): FencedOutcome {
    const f = this.fenced(endpointId, jobId, workerId, now);
    if (!f.ok) return f;
    this.q('UPDATE jobs SET output = ? WHERE id = ?').run(outputJson, jobId);
    return { ok: true, job: { ...f.job, outputJson } };
  }

  finish(endpointId: string, jobId: string, workerId: string, result: WorkerResult, now: number): FencedOutcome {
    const f = this.fenced(endpointId, jobId, workerId, now);
    if (!f.ok) return f;
    const expire = resultsExpireAt(f.job, now);
    this.q(
      `UPDATE jobs SET status = ?, output = ?, error = ?, completed_at = ?, results_expire_at = ?, deadline_at = NULL
       WHERE id = ?`,
    ).run(result.status, result.outputJson, result.errorJson, now, expire, jobId);
    return {
      ok: true,
      job: {
        ...f.job,
        status: result.status,
        outputJson: result.outputJson,
        errorJson: result.errorJson,
        completedAt: now,
      },
    };
  }

  appendChunks(endpointId: string, jobId: string, workerId: string, chunks: string[], now: number): FencedOutcome {
    const f = this.fenced(endpointId, jobId, workerId, now);
    if (!f.ok) return f;
    const last = this.q('SELECT MAX(seq) AS s FROM stream_chunks WHERE job_id = ?').get(jobId) as { s: number | null };
    let seq = last.s ?? 0;
    const insert = this.q('INSERT INTO stream_chunks (job_id, seq, attempt, body) VALUES (?, ?, ?, ?)');
    for (const body of chunks) insert.run(jobId, ++seq, f.job.attempt, body);
    return f;
  }

  readChunks(endpointId: string, jobId: string, consumer: string, maxChars: number): StreamRead {
    if (!this.row(endpointId, jobId)) return { chunks: [], more: false, attempt: null };
    const cursor = this.q('SELECT seq FROM stream_cursors WHERE job_id = ? AND consumer = ?').get(jobId, consumer) as
      { seq: number } | undefined;
    const chunks: string[] = [];
    let chars = 0;
    let lastSeq = 0;
    let more = false;
    let attempt: number | null = null;
    // Row by row, so a backlog far past the bound (hundreds of 1 MB chunks) is never read into memory at once.
    const rows = this.q(
      'SELECT seq, attempt, body FROM stream_chunks WHERE job_id = ? AND seq > ? ORDER BY seq',
    ).iterate(jobId, cursor?.seq ?? 0) as Iterable<{ seq: number; attempt: number; body: string }>;
    for (const r of rows) {
      if (chunks.length > 0 && chars + r.body.length > maxChars) {
        more = true;
        break;
      }
      chunks.push(r.body);
      chars += r.body.length;
      lastSeq = r.seq;
      attempt = r.attempt;
    }
    if (chunks.length > 0) {
      this.q(
        `INSERT INTO stream_cursors (job_id, consumer, seq) VALUES (?, ?, ?)
         ON CONFLICT (job_id, consumer) DO UPDATE SET seq = excluded.seq`,
      ).run(jobId, consumer, lastSeq);
    }
    return { chunks, more, attempt };
  }

  addStop(workerId: string, jobId: string, now: number): void {
    // A newer order for the same job (a later attempt on the same worker) restarts RETAKE_AFTER_STOP_MS. Only for a
    // worker with a record: orders go only with their worker's record, so one made for a worker already gone (or
    // never registered) would stay forever, and a later worker under the same id (pod ids are reused) would be told
    // to stop a job it never ran and be kept from taking it.
    this.q(
      `INSERT INTO job_stops (worker_id, job_id, created_at)
       SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM workers WHERE id = ?)
       ON CONFLICT (worker_id, job_id) DO UPDATE SET created_at = excluded.created_at, fetched_at = NULL`,
    ).run(workerId, jobId, now, workerId);
  }

  cancel(endpointId: string, jobId: string, now: number): CancelOutcome {
    const r = this.row(endpointId, jobId);
    if (!r) return { outcome: 'not_found' };
    const job = toJob(r);
    // Checked at `now`, whatever the caller read a moment ago. A job gone is the sweep's to delete, reported to no one;
    // a running one past its deadline is the timeout's (TIMED_OUT), not CANCELLED.
    const gone = goneReason(job, now);
    if (gone) return { outcome: 'gone', reason: gone };
    if (job.status !== 'IN_QUEUE' && job.status !== 'IN_PROGRESS') return { outcome: 'final', job };
    if (pastDeadline(job, now)) return { outcome: 'overdue' };
    const stopWorkerId = job.status === 'IN_PROGRESS' ? job.workerId : null;
    if (stopWorkerId) this.addStop(stopWorkerId, jobId, now);
    const expire = resultsExpireAt(job, now);
    this.q(
      `UPDATE jobs SET status = 'CANCELLED', completed_at = ?, results_expire_at = ?, deadline_at = NULL WHERE id = ?`,
    ).run(now, expire, jobId);
    return { outcome: 'cancelled', job: { ...job, status: 'CANCELLED', completedAt: now }, stopWorkerId };
  }

  retry(endpointId: string, jobId: string, now: number): RetryOutcome {
    const r = this.row(endpointId, jobId);
    if (!r) return { outcome: 'not_found' };
    const job = toJob(r);
    // Results past their retention (or the ttl) cannot be retried, even in the moment before the sweep deletes them.
    const gone = goneReason(job, now);
    if (gone) return { outcome: 'gone', reason: gone };
    if (job.status !== 'FAILED' && job.status !== 'TIMED_OUT') return { outcome: 'not_retryable', job };
    // A new start: the lost-worker bound counts hand-outs from here. (A stop order the last attempt's worker has not
    // fetched stays: it may still run that attempt. WorkerGateway.stops leaves it out if that worker takes the job.)
    this.q(
      `UPDATE jobs SET status = 'IN_QUEUE', queued_at = ?, started_at = NULL, completed_at = NULL, results_expire_at = NULL,
         deadline_at = NULL, worker_id = NULL, output = NULL, error = NULL, attempt = 0 WHERE id = ?`,
    ).run(now, jobId);
    this.clearStream(jobId);
    const updated = this.row(endpointId, jobId)!;
    return { outcome: 'queued', job: toJob(updated) };
  }

  /** Jobs past their ttl are the sweep's (it leaves their JOB_EXPIRED tombstones): not counted as removed here. */
  purge(endpointId: string, now: number): number {
    return Number(
      this.q(`DELETE FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND expires_at > ?`).run(endpointId, now)
        .changes,
    );
  }

  setTtl(endpointId: string, jobId: string, ttlMs: number, now: number): SetTtlOutcome {
    const r = this.row(endpointId, jobId);
    if (!r) return { outcome: 'not_found' };
    const job = toJob(r);
    // A job gone at `now` is not revived by a longer ttl, whatever the caller read a moment ago.
    const gone = goneReason(job, now);
    if (gone) return { outcome: 'gone', reason: gone };
    const expiresAt = job.createdAt + ttlMs;
    const policy = { ...job.policy, ttlMs };
    const resultsAt = job.completedAt === null ? null : Math.min(job.completedAt + job.retentionMs, expiresAt);
    this.q('UPDATE jobs SET expires_at = ?, ttl_ms = ?, policy = ?, results_expire_at = ? WHERE id = ?').run(
      expiresAt,
      ttlMs,
      JSON.stringify(policy),
      resultsAt,
      jobId,
    );
    return { outcome: 'set', job: { ...job, expiresAt, policy } };
  }

  // The three reads below run every autoscaler tick and on every /health: they read the counters that the
  // triggers of migration 6 keep (a few rows per endpoint) and one index entry, never the jobs themselves. Like the
  // queries they replace, they count jobs whose ttl ran out but that the sweep has not deleted yet.
  counts(endpointId: string): JobCounts {
    const rows = this.q(
      `SELECT status, SUM(n) AS n, SUM(CASE WHEN retried THEN n ELSE 0 END) AS r FROM job_counts WHERE endpoint_id = ?
       GROUP BY status`,
    ).all(endpointId) as Array<{ status: string; n: number; r: number }>;
    return jobCountsFrom(rows);
  }

  snapshot(endpointId: string): QueueSnapshot {
    const c = this.q(
      `SELECT SUM(CASE WHEN status = 'IN_QUEUE' AND low_priority = 0 THEN n ELSE 0 END) AS normal,
              SUM(CASE WHEN status = 'IN_QUEUE' AND low_priority = 1 THEN n ELSE 0 END) AS low,
              SUM(CASE WHEN status = 'IN_PROGRESS' THEN n ELSE 0 END) AS running,
              SUM(CASE WHEN status = 'IN_PROGRESS' AND low_priority = 1 THEN n ELSE 0 END) AS running_low
       FROM job_counts WHERE endpoint_id = ? AND status IN ('IN_QUEUE', 'IN_PROGRESS')`,
    ).get(endpointId) as {
      normal: number | null;
      low: number | null;
      running: number | null;
      running_low: number | null;
    };
    // The first entry of the jobs_queue_normal index.
    const oldest = this.q(
      `SELECT queued_at FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND low_priority = 0
       ORDER BY queued_at LIMIT 1`,
    ).get(endpointId) as { queued_at: number } | undefined;
    return {
      inQueue: c.normal ?? 0,
      inQueueLowPriority: c.low ?? 0,
      inProgress: c.running ?? 0,
      inProgressLowPriority: c.running_low ?? 0,
      oldestQueuedAt: oldest?.queued_at ?? null,
    };
  }

  activeEndpoints(): string[] {
    const rows = this.q(
      `SELECT DISTINCT endpoint_id FROM job_counts WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') AND n > 0`,
    ).all() as Array<{ endpoint_id: string }>;
    return rows.map((r) => r.endpoint_id);
  }

  /** A new attempt streams from scratch: drop the old chunks and every consumer's cursor with them. */
  private clearStream(jobId: string): void {
    this.q('DELETE FROM stream_chunks WHERE job_id = ?').run(jobId);
    this.q('DELETE FROM stream_cursors WHERE job_id = ?').run(jobId);
  }

  private deleteJob(job: Job, reason: TombstoneReason, now: number): void {
    this.q('DELETE FROM jobs WHERE id = ?').run(job.id);
    this.clearStream(job.id);
    this.q(
      `INSERT INTO tombstones (id, endpoint_id, reason, deleted_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET reason = excluded.reason, deleted_at = excluded.deleted_at`,
    ).run(job.id, job.endpointId, reason, now);
  }

  expire(now: number, limit: number): SweptJob[] {
    const rows = this.jobsQ(`SELECT ${JOB_COLUMNS} FROM jobs WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`).all(
      now,
      limit,
    ) as unknown as JobRow[];
    return rows.map((r) => {
      const job = toJob(r);
      const stopWorkerId = job.status === 'IN_PROGRESS' ? job.workerId : null;
      if (stopWorkerId) this.addStop(stopWorkerId, job.id, now);
      this.deleteJob(job, 'TTL_EXPIRED', now);
      return { job, stopWorkerId };
    });
  }

  expireResults(now: number, limit: number): number {
    const rows = this.jobsQ(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE results_expire_at IS NOT NULL AND results_expire_at <= ? LIMIT ?`,
    ).all(now, limit) as unknown as JobRow[];
    for (const r of rows) this.deleteJob(toJob(r), 'RESULTS_EXPIRED', now);
    return rows.length;
  }

  /** Not a job past its ttl: it is gone, whatever came first (expire deletes it, with its own stop order). */
  timeout(now: number, limit: number): SweptJob[] {
    const rows = this.jobsQ(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE status = 'IN_PROGRESS' AND deadline_at <= ? AND expires_at > ?
       ORDER BY deadline_at LIMIT ?`,
    ).all(now, now, limit) as unknown as JobRow[];
    return rows.map((r) => {
      const job = toJob(r);
      if (job.workerId) this.addStop(job.workerId, job.id, now);
      this.q(
        `UPDATE jobs SET status = 'TIMED_OUT', completed_at = ?, results_expire_at = ?, deadline_at = NULL WHERE id = ?`,
      ).run(now, resultsExpireAt(job, now), job.id);
      return { job: { ...job, status: 'TIMED_OUT', completedAt: now }, stopWorkerId: job.workerId };
    });
  }

  pruneTombstones(before: number): number {
    return Number(this.q('DELETE FROM tombstones WHERE deleted_at < ?').run(before).changes);
  }

  runningByWorker(endpointId: string): Record<string, number> {
    // Only running jobs (few: workers × concurrency) are read. Left to itself the planner would walk every job of
    // the endpoint through jobs_endpoint_created, a million at a deep queue.
    const rows = this.q(
      `SELECT worker_id, COUNT(*) AS n FROM jobs INDEXED BY jobs_worker WHERE status = 'IN_PROGRESS' AND endpoint_id = ?
         GROUP BY worker_id`,
    ).all(endpointId) as Array<{ worker_id: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.worker_id, r.n]));
  }

  lastFinishByWorker(endpointId: string, since: number): Record<string, number> {
    // Asked only when a worker is about to be stopped as idle: a walk of the endpoint's finished jobs is fine then.
    const rows = this.q(
      `SELECT worker_id, MAX(completed_at) AS at FROM jobs
       WHERE endpoint_id = ? AND status IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT') AND completed_at >= ?
         AND worker_id IS NOT NULL
       GROUP BY worker_id`,
    ).all(endpointId, since) as Array<{ worker_id: string; at: number }>;
    return Object.fromEntries(rows.map((r) => [r.worker_id, r.at]));
  }

  workerJobIds(workerId: string): string[] {
    const rows = this.q(`SELECT id FROM jobs WHERE worker_id = ? AND status = 'IN_PROGRESS'`).all(workerId) as Array<{
      id: string;
    }>;
    return rows.map((r) => r.id);
  }

  /**
   * A worker lost its jobs (lease ran out, process exited, ping showed them gone). Each goes back to the queue with
   * the attempt fenced out (worker_id cleared, so the old holder's late posts are refused), or FAILS once it has been
   * handed out `maxAttempts` times, so a poison job cannot crash workers forever.
   */
  release(
    workerId: string,
    now: number,
    maxAttempts: number | null,
    reason: string,
    onlyJobIds?: string[],
  ): LeaseSweep {
    // Not a job past its ttl: it is gone, FAILED or not (expire deletes it, with its own stop order). Nor one past its
    // execution timeout: that attempt timed out whoever noticed first, so it is TIMED_OUT (timeout does it, with a
    // stop order), not requeued or FAILED.
    const rows = this.jobsQ(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE worker_id = ? AND status = 'IN_PROGRESS' AND expires_at > ?
         AND (deadline_at IS NULL OR deadline_at > ?)`,
    ).all(workerId, now, now) as unknown as JobRow[];
    const sweep: LeaseSweep = { workerIds: [], requeued: [], failed: [] };
    for (const r of rows) {
      const job = toJob(r);
      if (onlyJobIds && !onlyJobIds.includes(job.id)) continue;
      const next = releasedJob(job, workerId, reason, maxAttempts, now);
      if (next.status === 'FAILED') {
        this.q(
          `UPDATE jobs SET status = 'FAILED', error = ?, completed_at = ?, results_expire_at = ?, deadline_at = NULL
           WHERE id = ?`,
        ).run(next.errorJson, now, resultsExpireAt(job, now), job.id);
        sweep.failed.push(next);
      } else {
        this.q(
          `UPDATE jobs SET status = 'IN_QUEUE', queued_at = ?, started_at = NULL, deadline_at = NULL, worker_id = NULL,
             output = NULL, retries = retries + 1, attempt = ? WHERE id = ?`,
        ).run(now, next.attempt, job.id);
        // Chunks of the lost attempt would interleave with the next attempt's: drop them.
        this.clearStream(job.id);
        sweep.requeued.push(next);
      }
    }
    return sweep;
  }

  /**
   * Jobs handed to a take whose client had already hung up: they never reached a worker, so they go back to their
   * place in the queue without using up an attempt or counting as a retry.
   */
  returnUndelivered(workerId: string, jobIds: string[]): Job[] {
    const back: Job[] = [];
    for (const id of jobIds) {
      const r = this.jobsQ(
        `UPDATE jobs SET status = 'IN_QUEUE', attempt = attempt - 1, started_at = NULL, deadline_at = NULL,
           worker_id = NULL WHERE id = ? AND worker_id = ? AND status = 'IN_PROGRESS' RETURNING ${JOB_COLUMNS}`,
      ).get(id, workerId) as JobRow | undefined;
      if (r) back.push(toJob(r));
    }
    return back;
  }

  anyStops(workerId: string): boolean {
    return (
      this.q('SELECT 1 FROM job_stops WHERE worker_id = ? AND fetched_at IS NULL LIMIT 1').get(workerId) !== undefined
    );
  }

  /** The orders not fetched yet, marked fetched; fetched ones past RETAKE_AFTER_STOP_MS go. */
  takeStops(workerId: string, now: number): string[] {
    this.q('DELETE FROM job_stops WHERE worker_id = ? AND fetched_at IS NOT NULL AND created_at <= ?').run(
      workerId,
      now - RETAKE_AFTER_STOP_MS,
    );
    const rows = this.q(
      'UPDATE job_stops SET fetched_at = ? WHERE worker_id = ? AND fetched_at IS NULL RETURNING job_id',
    ).all(now, workerId) as Array<{ job_id: string }>;
    return rows.map((r) => r.job_id);
  }

  /**
   * The worker's fetched orders for these jobs still kept (made within RETAKE_AFTER_STOP_MS), unfetched again and
   * made anew at `now`; returns their job ids.
   */
  rearmStops(workerId: string, jobIds: string[], now: number): string[] {
    const rearmed: string[] = [];
    const update = this.q(
      `UPDATE job_stops SET fetched_at = NULL, created_at = ?
       WHERE worker_id = ? AND job_id = ? AND fetched_at IS NOT NULL AND created_at > ?`,
    );
    for (const jobId of new Set(jobIds)) {
      if (update.run(now, workerId, jobId, now - RETAKE_AFTER_STOP_MS).changes > 0) rearmed.push(jobId);
    }
    return rearmed;
  }
}
