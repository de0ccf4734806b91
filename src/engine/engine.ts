import {
  goneReason,
  isTerminal,
  newJobId,
  pastDeadline,
  POLICY,
  RETAKE_AFTER_STOP_MS,
  RETENTION,
  type Endpoint,
  type Job,
  type JobPolicy,
  type JobStatus,
  type SubmitMode,
  type TerminalStatus,
  type TombstoneReason,
} from '../domain/index.ts';
import { WharfError } from '../errors/index.ts';
import type { HandTo, JobCounts, Store, StreamRead, SweptJob } from '../store/index.ts';
import { topics, type Bus, type Waiter } from './bus.ts';
import type { Clock } from './clock.ts';
import type { SecretBox } from './secrets.ts';

export interface EngineOptions {
  nodeId: string;
  streamWaitMs: number;
  statusSyncWaitMs: number;
}

export interface Submission {
  input: unknown;
  /** `input` as the client wrote it (domain/json.ts memberText), stored instead of `input` serialised again. */
  inputJson?: string | undefined;
  webhook?: string;
  policy?: { executionTimeout?: number; lowPriority?: boolean; ttl?: number };
  s3Config?: unknown;
  /** The submitting key may not have deliveries reach private addresses (JobPolicy.webhookPublicOnly). */
  webhookPublicOnly?: boolean;
}

/** Called once for every job that reaches a final state (webhooks, metrics). Must not throw. */
export type TerminalListener = (job: Job) => void;

/** Lifecycle moments other than final states, for metrics: a submission, and a job back in the queue. */
export type JobEvent = { type: 'submitted'; job: Job } | { type: 'requeued'; job: Job; cause: 'lost-worker' | 'retry' };
export type JobEventListener = (event: JobEvent) => void;

/**
 * Takes waiting for work that a new job may be handed to straight away (the WorkerGateway registers itself): one
 * store write, the submit's, both queues and hands out the job, instead of a submit, a wake-up and a take.
 */
export interface TakeHandOff {
  /**
   * Reserve a waiting take of this endpoint for one job (in turn, the longest-waiting first; a batch take may be
   * reserved by several submissions of one event-loop turn); null when none is on offer.
   */
  reserve(endpointId: string): TakeReservation | null;
}

export interface TakeReservation {
  readonly handTo: HandTo;
  /** The job the submit claimed for the take's worker, or null when the store queued it instead (or failed). */
  settle(handed: Job | null): void;
}

/**
 * The job lifecycle seen from clients: submit, wait, status, stream, cancel, retry, purge, health.
 * Every change is one store operation; after it the engine wakes the long polls that care.
 */
export class JobEngine {
  readonly store: Store;
  readonly bus: Bus;
  readonly clock: Clock;
  /** The server's key for secrets at rest: jobs' s3Config here, and webhook secrets (webhooks/secrets.ts). */
  readonly secrets: SecretBox;
  private readonly opts: EngineOptions;
  private readonly terminalListeners = new Set<TerminalListener>();
  private readonly eventListeners = new Set<JobEventListener>();
  private handOff: TakeHandOff | null = null;

  constructor(store: Store, bus: Bus, clock: Clock, secrets: SecretBox, opts: EngineOptions) {
    this.store = store;
    this.bus = bus;
    this.clock = clock;
    this.secrets = secrets;
    this.opts = opts;
  }

  /** Where new jobs may go straight to a waiting take (see TakeHandOff). */
  handOffTo(handOff: TakeHandOff): void {
    this.handOff = handOff;
  }

  onTerminal(listener: TerminalListener): () => void {
    this.terminalListeners.add(listener);
    return () => this.terminalListeners.delete(listener);
  }

  onEvent(listener: JobEventListener): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  emit(event: JobEvent): void {
    for (const l of this.eventListeners) {
      try {
        l(event);
      } catch {
        // As for terminal listeners: observers never break the job engine.
      }
    }
  }

  /** Tell waiters (and listeners, for final states) that a job changed. */
  jobChanged(job: Job): void {
    this.bus.publish(topics.job(job.id));
    if (isTerminal(job.status)) {
      for (const l of this.terminalListeners) {
        try {
          l(job);
        } catch {
          // A listener's bug must never break the job engine (STYLE.md habit 8).
        }
      }
    }
  }

  /** Apply a timeout sweep's results (jobs now TIMED_OUT): wake status waiters and listeners, order workers to stop. */
  announceSwept(swept: SweptJob[]): void {
    for (const s of swept) {
      this.jobChanged(s.job);
      if (s.stopWorkerId) this.bus.publish(topics.stop(s.stopWorkerId));
    }
  }

  /**
   * Apply a ttl sweep's results (jobs deleted, as they were before): wake their waiters, order workers to stop. Not
   * a final state reached now: terminal listeners (metrics, webhooks) heard of a finished one when it finished.
   */
  announceExpired(swept: SweptJob[]): void {
    for (const s of swept) {
      this.bus.publish(topics.job(s.job.id));
      if (s.stopWorkerId) this.bus.publish(topics.stop(s.stopWorkerId));
    }
  }

  resolvePolicy(endpointExecutionTimeoutMs: number, given: Submission['policy']): JobPolicy {
    // An endpoint's 0 is "no per-request limit" (runpodctl's --execution-timeout 0): the longest a job may run,
    // which its ttl (at most as long) bounds anyway.
    const fallbackTimeout = clamp(
      endpointExecutionTimeoutMs > 0 ? endpointExecutionTimeoutMs : POLICY.executionTimeoutMs.max,
      POLICY.executionTimeoutMs.min,
      POLICY.executionTimeoutMs.max,
    );
    return {
      executionTimeoutMs: given?.executionTimeout ?? fallbackTimeout,
      lowPriority: given?.lowPriority ?? false,
      ttlMs: given?.ttl ?? POLICY.ttlMs.default,
    };
  }

  async submit(
    endpoint: Pick<Endpoint, 'id' | 'executionTimeoutMs' | 'version'>,
    sub: Submission,
    mode: SubmitMode,
    waitGiven = false,
  ): Promise<Job> {
    const now = this.clock.now();
    const reservation = this.handOff?.reserve(endpoint.id) ?? null;
    const id = newJobId(this.opts.nodeId, mode === 'sync');
    let job: Job;
    try {
      job = await this.store.submitJob(
        {
          id,
          endpointId: endpoint.id,
          inputJson: sub.inputJson ?? JSON.stringify(sub.input),
          webhook: sub.webhook ?? null,
          policy: {
            ...this.resolvePolicy(endpoint.executionTimeoutMs, sub.policy),
            ...(sub.webhook !== undefined && sub.webhookPublicOnly === true
              ? { webhookPublicOnly: true as const }
              : {}),
          },
          policyGiven: sub.policy !== undefined,
          policyJson: sub.policy === undefined ? null : JSON.stringify(sub.policy),
          // S3 access keys: sealed before they reach the store (a job without them costs nothing more).
          s3ConfigSealed:
            sub.s3Config === undefined ? null : this.secrets.sealText(JSON.stringify(sub.s3Config), s3ConfigAad(id)),
          mode,
          retentionMs: mode === 'async' ? RETENTION.async : waitGiven ? RETENTION.syncWithWait : RETENTION.sync,
          createdAt: now,
        },
        reservation?.handTo,
      );
    } catch (error) {
      reservation?.settle(null);
      throw error;
    }
    const handed = job.status === 'IN_PROGRESS';
    reservation?.settle(handed ? job : null);
    // A queued job: one waiting take is enough (Bus.publishOne; the take hands the wake-up on if it cannot use it).
    if (!handed) this.bus.publishOne(topics.queue(endpoint.id));
    this.emit({ type: 'submitted', job });
    return job;
  }

  /**
   * The job's s3Config as its submitter gave it (JSON text), for the worker that takes it; a row of an earlier version
   * holds it in plain text, read as it is (jobs are short-lived: such rows are gone with their retention). Throws a
   * SecretUnreadableError when it was sealed with another secret key.
   */
  openS3Config(jobId: string, sealed: string): string {
    return this.secrets.openText(sealed, s3ConfigAad(jobId), `the s3Config of job ${jobId}`);
  }

  /** Resolves once everything committed so far is durable: before an answer that hands out a /runsync job's id. */
  whenDurable(): Promise<void> {
    return this.store.whenDurable();
  }

  /**
   * Before showing a job: wait until what is committed is on disk. Unlike whenDurable it never fails: when the disk
   * itself fails (read-only, I/O errors) reads keep answering with what is committed, while writes report 503.
   */
  async settledView(): Promise<void> {
    try {
      await this.store.whenDurable();
    } catch {
      // The failing fsync was reported to the writes it covered.
    }
  }

  /**
   * The job, or the right 404: expired (ttl), results expired (retention), or never existed. What it returns is on
   * disk: a state committed but not yet fsynced (store/sqlite/write-queue.ts) is shown only once its sync is done, so
   * no client sees a result that a power cut could take back.
   */
  async getJob(endpointId: string, jobId: string): Promise<Job> {
    const job = await this.peekJob(endpointId, jobId);
    await this.settledView();
    return job;
  }

  /** getJob without waiting for the disk: for looks whose result is not shown to anyone (a wait loop's checks). */
  private async peekJob(endpointId: string, jobId: string): Promise<Job> {
    let job = await this.store.getJob(endpointId, jobId);
    if (!job) throw await this.missingJobError(endpointId, jobId);
    const now = this.clock.now();
    // Past its executionTimeout the attempt is over, even in the moment before a sweep marks it: time it out now,
    // so that nobody sees it IN_PROGRESS and a cancel cannot turn a timeout into CANCELLED. Overdue jobs time out
    // oldest deadline first, a batch at a time, so behind a backlog (after downtime) this takes more than one batch.
    // Not past its ttl: that job is gone (below), and timeoutJobs leaves it to the ttl sweep.
    while (job.status === 'IN_PROGRESS' && pastDeadline(job, now) && job.expiresAt > now) {
      const swept = await this.store.timeoutJobs(now, OVERDUE_BATCH);
      this.announceSwept(swept);
      job = await this.store.getJob(endpointId, jobId);
      if (!job) throw await this.missingJobError(endpointId, jobId);
      if (swept.length < OVERDUE_BATCH) break;
    }
    // Past its ttl, or its result retention, the job is gone (not shown, not retried), even in the moment before a
    // sweep deletes it: the store's cancel, retry and ttl writes check the same (domain goneReason).
    const gone = goneReason(job, now);
    if (gone) throw goneError(gone, jobId);
    return job;
  }

  async missingJobError(endpointId: string, jobId: string): Promise<WharfError> {
    const tomb = await this.store.getTombstone(endpointId, jobId);
    return tomb ? goneError(tomb, jobId) : new WharfError('JOB_NOT_FOUND', { jobId });
  }

  /**
   * Arm a wake-up for changes of one job. A purge deletes queued jobs in bulk without naming them, so waiters also
   * listen to their endpoint's purge topic (and then find their job gone, or not, on the next read).
   */
  private armJob(endpointId: string, jobId: string, timeoutMs: number, signal?: AbortSignal): Waiter {
    const own = this.bus.arm(topics.job(jobId), timeoutMs, signal);
    const purge = this.bus.arm(purgeTopic(endpointId), timeoutMs, signal);
    return {
      promise: Promise.race([own.promise, purge.promise]),
      get woken() {
        return own.woken || purge.woken;
      },
      dispose: () => {
        own.dispose();
        purge.dispose();
      },
    };
  }

  /** Wait until the job is final or `waitMs` passed; returns the job as it is then. */
  async waitForFinal(endpointId: string, jobId: string, waitMs: number, signal?: AbortSignal): Promise<Job> {
    const deadline = this.clock.now() + waitMs;
    for (;;) {
      const waiter = this.armJob(endpointId, jobId, deadline - this.clock.now(), signal);
      try {
        const job = await this.peekJob(endpointId, jobId);
        if (isTerminal(job.status) || this.clock.now() >= deadline || signal?.aborted) {
          await this.settledView();
          return job;
        }
        if (!(await waiter.promise)) return await this.getJob(endpointId, jobId);
      } finally {
        waiter.dispose();
      }
    }
  }

  async statusSync(endpointId: string, jobId: string, waitMs: number | undefined, signal?: AbortSignal): Promise<Job> {
    return this.waitForFinal(endpointId, jobId, waitMs ?? this.opts.statusSyncWaitMs, signal);
  }

  /**
   * Chunks this consumer has not seen; long-polls while there are none and the job is still running. `attempt` is the
   * attempt that streamed them (null without chunks): a lost worker's job is run again from its start.
   */
  async stream(endpointId: string, jobId: string, consumer: string, waitMs: number | undefined, signal?: AbortSignal) {
    const deadline = this.clock.now() + (waitMs ?? this.opts.streamWaitMs);
    for (;;) {
      const waiter = this.armJob(endpointId, jobId, deadline - this.clock.now(), signal);
      try {
        const job = await this.peekJob(endpointId, jobId);
        const read = await this.store.readChunks(endpointId, jobId, consumer, STREAM_READ_MAX_CHARS);
        if (read.chunks.length > 0 || isTerminal(job.status) || this.clock.now() >= deadline || signal?.aborted) {
          // Re-read the status after the chunks: a job that finished in between reports its final state.
          const latest = read.chunks.length > 0 ? ((await this.store.getJob(endpointId, jobId)) ?? job) : job;
          const answer = await this.finishStreamRead(endpointId, jobId, consumer, latest, read);
          await this.settledView();
          return answer;
        }
        if (!(await waiter.promise)) {
          const again = await this.store.readChunks(endpointId, jobId, consumer, STREAM_READ_MAX_CHARS);
          return await this.finishStreamRead(endpointId, jobId, consumer, await this.getJob(endpointId, jobId), again);
        }
      } finally {
        waiter.dispose();
      }
    }
  }

  /**
   * A stream read's answer. A final status tells every client to stop reading (the JS SDK stops after that batch),
   * so it is given only with the last chunk: chunks the job appended between the read and its finish are read now
   * (none can follow a final state: posts are fenced), and while chunks are left beyond the size bound the status
   * says IN_PROGRESS — the stream, as its reader sees it, is not over.
   */
  private async finishStreamRead(
    endpointId: string,
    jobId: string,
    consumer: string,
    job: Job,
    read: StreamRead,
  ): Promise<{ status: JobStatus; chunks: string[]; attempt: number | null }> {
    let { chunks, more } = read;
    if (isTerminal(job.status) && chunks.length > 0 && !more) {
      const used = chunks.reduce((n, c) => n + c.length, 0);
      const rest = await this.store.readChunks(endpointId, jobId, consumer, Math.max(1, STREAM_READ_MAX_CHARS - used));
      chunks = chunks.concat(rest.chunks);
      more = rest.more;
    }
    return { status: more && isTerminal(job.status) ? 'IN_PROGRESS' : job.status, chunks, attempt: read.attempt };
  }

  async cancel(endpointId: string, jobId: string): Promise<Job> {
    await this.getJob(endpointId, jobId); // a job past its ttl is gone, even before the sweep deletes it
    // The store checks the limits again in its own write: a job gone, or timed out, since the look above is not
    // CANCELLED either.
    const res = await this.store.cancelJob(endpointId, jobId, this.clock.now());
    switch (res.outcome) {
      case 'not_found':
        throw await this.missingJobError(endpointId, jobId);
      case 'gone':
        throw goneError(res.reason, jobId);
      case 'overdue':
        // Its deadline passed a moment ago: the look times it out, as it would have had it come a moment later.
        return this.getJob(endpointId, jobId);
      case 'final':
        // Cancelling a finished job changes nothing; report its state (the SDKs expect 200 with a status).
        return res.job;
      case 'cancelled':
        this.jobChanged(res.job);
        if (res.stopWorkerId) this.bus.publish(topics.stop(res.stopWorkerId));
        return res.job;
      default: {
        const unreachable: never = res;
        return unreachable;
      }
    }
  }

  async retry(endpointId: string, jobId: string): Promise<Job> {
    const before = await this.getJob(endpointId, jobId); // a job past its ttl is gone, even before the sweep deletes it
    const res = await this.store.retryJob(endpointId, jobId, this.clock.now());
    switch (res.outcome) {
      case 'not_found':
        throw await this.missingJobError(endpointId, jobId);
      case 'gone':
        throw goneError(res.reason, jobId);
      case 'not_retryable':
        throw new WharfError('JOB_NOT_RETRYABLE', { jobId, status: res.job.status });
      case 'queued':
        this.jobChanged(res.job);
        this.bus.publish(topics.queue(endpointId));
        this.emit({ type: 'requeued', job: res.job, cause: 'retry' });
        this.wakeWhenRetakeable(before);
        return res.job;
      default: {
        const unreachable: never = res;
        return unreachable;
      }
    }
  }

  /**
   * A timed-out attempt left its worker a stop order, and takes do not hand the job back to that worker until
   * RETAKE_AFTER_STOP_MS after it (domain/jobs.ts). That worker may be the endpoint's only one, waiting in a long
   * poll nothing else would wake: wake the endpoint's takes again when the job becomes its to take.
   */
  private wakeWhenRetakeable(before: Job): void {
    if (before.status !== 'TIMED_OUT' || before.completedAt === null) return;
    this.wakeTakesAfterStop(before.endpointId, before.completedAt);
  }

  /**
   * Wake the endpoint's takes once a stop order made at `stoppedAt` no longer holds a job back from its worker
   * (RETAKE_AFTER_STOP_MS): that worker may be the endpoint's only one, waiting in a long poll nothing else would wake.
   * Also for an order sent again (WorkerGateway.undeliveredStops), which is made anew and starts the wait again.
   */
  wakeTakesAfterStop(endpointId: string, stoppedAt: number): void {
    const delay = stoppedAt + RETAKE_AFTER_STOP_MS - this.clock.now();
    if (delay <= 0) return;
    const topic = topics.queue(endpointId);
    setTimeout(() => this.bus.publish(topic), delay + RETAKE_WAKE_SLACK_MS).unref();
  }

  async purge(endpointId: string): Promise<number> {
    const removed = await this.store.purgeQueue(endpointId, this.clock.now());
    if (removed > 0) this.bus.publish(purgeTopic(endpointId));
    return removed;
  }

  async setTtl(endpointId: string, jobId: string, ttlMs: number): Promise<Job> {
    await this.getJob(endpointId, jobId); // an expired job cannot be revived by a longer ttl
    // Nor one that expired since that look: the store checks again in its own write.
    const res = await this.store.setJobTtl(endpointId, jobId, ttlMs, this.clock.now());
    switch (res.outcome) {
      case 'not_found':
        throw await this.missingJobError(endpointId, jobId);
      case 'gone':
        throw goneError(res.reason, jobId);
      case 'set':
        return res.job;
      default: {
        const unreachable: never = res;
        return unreachable;
      }
    }
  }

  async counts(endpointId: string): Promise<JobCounts> {
    return this.store.jobCounts(endpointId);
  }
}

export function isFinalStatus(status: string): status is TerminalStatus {
  return status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED' || status === 'TIMED_OUT';
}

/** After the retake window: the timeout's stop order may be written a moment after the job's completedAt. */
const RETAKE_WAKE_SLACK_MS = 50;

/** How many overdue attempts a read that finds one times out at once (the sweep does the rest on its next pass). */
const OVERDUE_BATCH = 100;

/** Binds a sealed s3Config to its job: copied onto another job's row, it does not open. */
const s3ConfigAad = (jobId: string): string => `s3Config/${jobId}`;

/** Woken when an endpoint's queue is purged (see JobEngine.armJob). */
const purgeTopic = (endpointId: string): string => `purge:${endpointId}`;

/**
 * The most chunk text one /stream answer carries (at least one chunk, each at most 1 MB): a backlog of hundreds of
 * chunks left unread is answered in parts, never built into one string that could outgrow what V8 can hold.
 */
export const STREAM_READ_MAX_CHARS = 8 * 1024 * 1024;

/** The 404 of a job gone for `reason`, deleted or about to be. */
function goneError(reason: TombstoneReason, jobId: string): WharfError {
  return new WharfError(reason === 'TTL_EXPIRED' ? 'JOB_EXPIRED' : 'JOB_RESULTS_EXPIRED', { jobId });
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}
