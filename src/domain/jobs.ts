/**
 * Jobs: states, policy bounds and the pure rules of the job lifecycle (DESIGN.md §3 "Job lifecycle").
 * Storage is elsewhere; this file decides, it never does I/O.
 */

export const JOB_STATUSES = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export type TerminalStatus = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT';

export function isTerminal(status: JobStatus): status is TerminalStatus {
  return status !== 'IN_QUEUE' && status !== 'IN_PROGRESS';
}

/** Only FAILED and TIMED_OUT jobs go back to the queue through /retry (interface §3.1). */
export function isRetryable(status: JobStatus): boolean {
  return status === 'FAILED' || status === 'TIMED_OUT';
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;

/** Bounds and defaults of interface §2.3 and §8.1. */
export const POLICY = {
  executionTimeoutMs: { default: 10 * MINUTE, min: 5 * SECOND, max: 7 * DAY },
  ttlMs: { default: DAY, min: 10 * SECOND, max: 7 * DAY },
  runsyncWaitMs: { default: 90 * SECOND, min: 1 * SECOND, max: 300 * SECOND },
} as const;

/** How long results are kept after a job reaches a final state (interface §8.1), separate from ttl. */
export const RETENTION = {
  async: 30 * MINUTE,
  sync: 1 * MINUTE,
  syncWithWait: 5 * MINUTE,
} as const;

export const LIMITS = {
  runBodyBytes: 10 * 1024 * 1024,
  runsyncBodyBytes: 20 * 1024 * 1024,
  streamChunkBytes: 1024 * 1024,
  /** The most jobs one take hands out (job-take-batch's batch_size is clamped to it): see takeBatchSize. */
  takeBatch: 256,
} as const;

/**
 * A requeue that is the server's own doing (its restart, its shutdown) uses up no attempt, but a job requeued this
 * often in all (its `retries`, whatever their causes) fails at its next such release: a job whose handling brings the
 * server down (an output too large for it, say) must not loop until its ttl.
 */
export const MAX_REQUEUES = 10;

/**
 * A running job taken from its worker `workerId` (lost, stopped): FAILED after `maxAttempts` hand-outs, else back in
 * the queue with `retries + 1`. A FAILED job keeps its `retries`: the loss that failed it put it back in no queue, so
 * it is no retry. For a release that is the server's own doing (`maxAttempts` null) the hand-out is not counted
 * (attempt - 1) and the job fails only once already requeued MAX_REQUEUES times. Both stores write what this returns.
 */
export function releasedJob(job: Job, workerId: string, reason: string, maxAttempts: number | null, now: number): Job {
  if (maxAttempts === null ? job.retries >= MAX_REQUEUES : job.attempt >= maxAttempts) {
    const errorJson = JSON.stringify(
      maxAttempts === null
        ? `worker ${workerId} was lost (${reason}) and the job was requeued ${job.retries} times`
        : `worker ${workerId} was lost (${reason}) on attempt ${job.attempt} of ${maxAttempts}`,
    );
    return { ...job, status: 'FAILED', errorJson, completedAt: now };
  }
  const attempt = maxAttempts === null ? Math.max(0, job.attempt - 1) : job.attempt;
  return {
    ...job,
    status: 'IN_QUEUE',
    queuedAt: now,
    startedAt: null,
    workerId: null,
    retries: job.retries + 1,
    attempt,
  };
}

/**
 * A worker does not get a job back for this long after the stop order of its earlier attempt of that job (a /retry
 * after a timeout or cancel, the worker running several jobs at once), fetched or not: the protocol names jobs by id
 * only, so the old attempt's late result would be taken for the new one's, a stop order not yet fetched could no
 * longer be told apart from one for the new attempt, and an SDK still winding the old attempt down drops the new one
 * as a duplicate (the TypeScript SDK remembers stopped ids for 10 s). Other workers take the job at once.
 */
export const RETAKE_AFTER_STOP_MS = 30_000;

/** How many jobs a take asking for `requested` may hand out: a whole number from 1 to LIMITS.takeBatch. */
export function takeBatchSize(requested: number): number {
  return Number.isFinite(requested) ? Math.min(LIMITS.takeBatch, Math.max(1, Math.floor(requested))) : 1;
}

export interface JobPolicy {
  executionTimeoutMs: number;
  lowPriority: boolean;
  ttlMs: number;
  /**
   * Its webhook may reach public addresses only, whoever owns the endpoint: it was submitted with a key that lacks
   * the owner's private-target privilege (an admin's restricted or read key). A host name is resolved at delivery,
   * so the submission alone cannot tell.
   */
  webhookPublicOnly?: true;
}

export type SubmitMode = 'async' | 'sync';

/** The job as stored. JSON payloads stay serialised text: they are passed through, rarely inspected. */
export interface Job {
  id: string;
  endpointId: string;
  status: JobStatus;
  /** The submission's `input` as JSON text. */
  inputJson: string;
  webhook: string | null;
  policy: JobPolicy;
  /** Whether `policy` was given by the submitter (it is then passed to the worker as given). */
  policyGiven: boolean;
  /** The submitted `policy` as JSON text, exactly as given (what the worker receives); null when none was given. */
  policyJson?: string | null;
  /**
   * The submitted `s3Config` (S3 access keys) as stored: sealed with the server's secret key, bound to the job's id
   * (engine/engine.ts submit); rows of earlier versions hold its JSON text in plain. Opened only for the worker that
   * takes the job (engine/workers.ts). Null when none was given.
   */
  s3ConfigSealed: string | null;
  mode: SubmitMode;
  /** Retention after completion, decided at submission. */
  retentionMs: number;
  createdAt: number;
  /** Submission or retry time: the start of the current `delayTime`. */
  queuedAt: number;
  /** When the current attempt was handed to a worker. */
  startedAt: number | null;
  completedAt: number | null;
  /** createdAt + ttl: the job is deleted at this moment whatever its state. */
  expiresAt: number;
  /** Number of hand-outs so far; the current attempt's number while IN_PROGRESS. */
  attempt: number;
  /**
   * Times the job was put back in the queue to run again after its running attempt was taken from its worker (lease
   * ran out, a ping without it, the worker's process gone, the server's own restart or shutdown): shown as
   * `retries`, and a job with any is counted in /health's `jobs.retried`. Not counted: the loss that FAILED the job
   * (it ran no more), a client's /retry (the field keeps its count across one), a hand-out that never reached its
   * worker (returned undelivered).
   */
  retries: number;
  workerId: string | null;
  /** Final output, or the latest progress value while IN_PROGRESS. JSON text. */
  outputJson: string | null;
  /** The worker's `error` (any JSON) as JSON text. */
  errorJson: string | null;
}

/** delayTime and executionTime in ms, as /status and /runsync report them. */
export function jobTimes(job: Job, now: number): { delayTime?: number; executionTime?: number } {
  if (job.startedAt === null) return {};
  const delayTime = Math.max(0, job.startedAt - job.queuedAt);
  // An attempt ends at its deadline at the latest, though the sweep may notice later (after a restart, say).
  const end = Math.min(job.completedAt ?? now, job.startedAt + job.policy.executionTimeoutMs);
  return { delayTime, executionTime: Math.max(0, end - job.startedAt) };
}

/**
 * A running job past its executionTimeout: timed out, even in the moment before the sweep marks it TIMED_OUT. Its
 * worker's posts are refused from then on (the deadline is the take's time plus the timeout, as `deadline_at`).
 */
export function pastDeadline(job: Pick<Job, 'status' | 'startedAt' | 'policy'>, now: number): boolean {
  return job.status === 'IN_PROGRESS' && job.startedAt !== null && job.startedAt + job.policy.executionTimeoutMs <= now;
}

/** A finished job whose results are past their retention: gone, even in the moment before the sweep deletes it. */
export function resultsExpired(job: Pick<Job, 'completedAt' | 'retentionMs' | 'expiresAt'>, now: number): boolean {
  return job.completedAt !== null && resultsExpireAt(job, job.completedAt) <= now;
}

/**
 * Why a job is gone at `now` though a sweep has not deleted it yet (past its ttl, or a finished one past its result
 * retention), as the sweep's tombstone will say; null while it is still there. The ttl is checked first, as the sweep
 * deletes by ttl first.
 */
export function goneReason(
  job: Pick<Job, 'completedAt' | 'retentionMs' | 'expiresAt'>,
  now: number,
): TombstoneReason | null {
  if (job.expiresAt <= now) return 'TTL_EXPIRED';
  return resultsExpired(job, now) ? 'RESULTS_EXPIRED' : null;
}

/** When results of a finished job are deleted: never later than the job's ttl. */
export function resultsExpireAt(job: Pick<Job, 'retentionMs' | 'expiresAt'>, completedAt: number): number {
  return Math.min(completedAt + job.retentionMs, job.expiresAt);
}

/** Why a job disappeared, so /status can tell an expired job from a wrong id. */
export type TombstoneReason = 'TTL_EXPIRED' | 'RESULTS_EXPIRED';

/** What the worker posted as its final result, already classified. */
export interface WorkerResult {
  status: 'COMPLETED' | 'FAILED';
  outputJson: string | null;
  errorJson: string | null;
  stopPod: boolean;
}
