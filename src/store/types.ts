/**
 * The Store: the only place with state (DESIGN.md §1). Verbs are the domain's; no driver type appears here.
 * Every job transition is one atomic operation, so a crash between two calls never leaves a half-applied change.
 * Implementations: sqlite/ (embedded default) and, later, postgres/. Both pass test/store/contract.ts.
 */
import type {
  ApiKey,
  Endpoint,
  Job,
  JobPolicy,
  SubmitMode,
  Template,
  TombstoneReason,
  User,
  WorkerRecord,
  WorkerResult,
  WorkerState,
} from '../domain/index.ts';
import type { ObservabilityStore } from './types-requests.ts';
import type { ManagementStore } from './types-volumes.ts';
import type { WebhookStore } from './types-webhooks.ts';

export type * from './types-requests.ts';
export type * from './types-volumes.ts';
export type * from './types-webhooks.ts';

export interface NewJob {
  id: string;
  endpointId: string;
  inputJson: string;
  webhook: string | null;
  policy: JobPolicy;
  policyGiven: boolean;
  /** The submitted policy as JSON text, handed to the worker untouched. */
  policyJson?: string | null;
  /** Stored as given: the engine seals it (Job.s3ConfigSealed). */
  s3ConfigSealed: string | null;
  mode: SubmitMode;
  retentionMs: number;
  createdAt: number;
}

/**
 * A take waiting for work that a new job may go straight to (the hand-off, WorkerGateway): the store claims the job
 * for this worker in the same transaction as its insert, when nothing older is queued for the endpoint and the worker
 * may take work (domain mayHandJobTo, read in that transaction); otherwise the job is queued as usual.
 */
export interface HandTo {
  workerId: string;
  /** Renew the worker's lease with the claim (its take renewed it when it began waiting; throttled by the caller). */
  touchLease: boolean;
}

/** Result of an operation fenced by the worker's hold on a job. */
export type FencedOutcome =
  { ok: true; job: Job } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'stale'; job: Job };

export type CancelOutcome =
  | {
      outcome: 'cancelled';
      job: Job;
      /** the worker that must be told to stop, if it was running */ stopWorkerId: string | null;
    }
  | { outcome: 'final'; job: Job }
  /**
   * running, past its execution timeout at `now` (not marked yet): nothing changed, no webhook delivery; it is
   * TIMED_OUT (timeoutJobs), not CANCELLED
   */
  | { outcome: 'overdue' }
  /** gone at `now` (domain goneReason), the row not deleted yet: nothing changed, no webhook delivery; a 404 */
  | { outcome: 'gone'; reason: TombstoneReason }
  | { outcome: 'not_found' };

export type RetryOutcome =
  | { outcome: 'queued'; job: Job }
  | { outcome: 'not_retryable'; job: Job }
  /** gone at `now` (domain goneReason), the row not deleted yet: not queued again; a 404 */
  | { outcome: 'gone'; reason: TombstoneReason }
  | { outcome: 'not_found' };

export type SetTtlOutcome =
  | { outcome: 'set'; job: Job }
  /** gone at `now` (domain goneReason), the row not deleted yet: the ttl unchanged; a 404 */
  | { outcome: 'gone'; reason: TombstoneReason }
  | { outcome: 'not_found' };

export interface JobCounts {
  inQueue: number;
  inProgress: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  /**
   * Jobs still held whose `retries` > 0: put back in the queue at least once to run again after losing their worker
   * (domain Job.retries). A client's /retry is not counted, nor is the loss that FAILED a job.
   */
  retried: number;
}

export interface QueueSnapshot {
  inQueue: number;
  inQueueLowPriority: number;
  inProgress: number;
  /** Of inProgress, the low-priority jobs. */
  inProgressLowPriority: number;
  /** Submission (or retry) time of the oldest non-low-priority queued job. */
  oldestQueuedAt: number | null;
}

/** A job that a sweep changed, with the worker to notify when it was running. */
export interface SweptJob {
  job: Job;
  stopWorkerId: string | null;
}

export interface LeaseSweep {
  /** Workers whose lease ran out (marked unhealthy/lost). */
  workerIds: string[];
  /** Jobs put back into the queue. */
  requeued: Job[];
  /** Jobs that ran out of attempts and failed. */
  failed: Job[];
}

export interface StreamRead {
  /** Chunk bodies (`{"output": …}` JSON text) the consumer had not seen, in order. */
  chunks: string[];
  /** More chunks wait after these: the read stopped at its size bound. */
  more: boolean;
  /**
   * The attempt whose worker streamed these chunks (null when none were read). The stored chunks are always those of
   * the job's current attempt: a requeue drops them, and a reader that already passed some on sees the number change.
   */
  attempt: number | null;
}

export interface JobStore {
  /**
   * Durable before it resolves (the job survives kill -9 and power loss from then on), except for `mode: 'sync'`
   * jobs, whose id is returned only by the /runsync answer: a store may resolve those at commit, and the caller
   * awaits `whenDurable()` before it answers.
   * With `handTo`, the job may instead be claimed at once for that worker (IN_PROGRESS, attempt 1, started at
   * createdAt): the returned job's status says which.
   */
  submitJob(job: NewJob, handTo?: HandTo): Promise<Job>;
  /**
   * Hand up to `max` (at most LIMITS.takeBatch) queued jobs (FIFO) to a worker: IN_PROGRESS, attempt + 1, started
   * now.
   */
  takeJobs(endpointId: string, workerId: string, max: number, now: number): Promise<Job[]>;
  getJob(endpointId: string, jobId: string): Promise<Job | null>;
  getTombstone(endpointId: string, jobId: string): Promise<TombstoneReason | null>;
  recordProgress(
    endpointId: string,
    jobId: string,
    workerId: string,
    outputJson: string,
    now: number,
  ): Promise<FencedOutcome>;
  finishJob(
    endpointId: string,
    jobId: string,
    workerId: string,
    result: WorkerResult,
    now: number,
  ): Promise<FencedOutcome>;
  appendChunks(
    endpointId: string,
    jobId: string,
    workerId: string,
    chunksJson: string[],
    now: number,
  ): Promise<FencedOutcome>;
  /**
   * Chunks not yet returned to this consumer, in order, as many as fit in `maxChars` (at least one: a chunk is at
   * most 1 MB); advances the consumer's cursor past them in the same transaction.
   */
  readChunks(endpointId: string, jobId: string, consumer: string, maxChars: number): Promise<StreamRead>;
  /**
   * Cancel a queued or running job. Checked at `now` in the same write, whatever the caller read before: a job gone
   * (past its ttl or result retention) is refused (`gone`), and so is a running one past its execution timeout
   * (`overdue`): neither becomes CANCELLED nor gets a delivery.
   */
  cancelJob(endpointId: string, jobId: string, now: number): Promise<CancelOutcome>;
  /** Queue a FAILED or TIMED_OUT job again; one gone at `now` (past its ttl or result retention) is refused. */
  retryJob(endpointId: string, jobId: string, now: number): Promise<RetryOutcome>;
  /** Remove the endpoint's queued jobs (running ones are untouched); returns how many. */
  purgeQueue(endpointId: string, now: number): Promise<number>;
  /**
   * Set the job's ttl (counted from submission). A job gone at `now` (past its ttl or result retention), whatever the
   * caller read before, is refused: a longer ttl does not revive it.
   */
  setJobTtl(endpointId: string, jobId: string, ttlMs: number, now: number): Promise<SetTtlOutcome>;
  jobCounts(endpointId: string): Promise<JobCounts>;
  queueSnapshot(endpointId: string): Promise<QueueSnapshot>;
  /** Endpoint ids that have queued or running jobs (for the autoscaler). */
  activeEndpointIds(): Promise<string[]>;

  // Sweeps: each returns what it changed so the engine can wake waiters and stop workers.
  /** ttl ran out: delete (whatever the state) and leave a tombstone. */
  expireJobs(now: number, limit: number): Promise<SweptJob[]>;
  /** Retention after completion ran out: delete and leave a tombstone. */
  expireResults(now: number, limit: number): Promise<number>;
  /**
   * Running attempts past their execution timeout become TIMED_OUT; not a job past its ttl (gone whatever came first:
   * expireJobs deletes it, with its stop order), which a read noticing the deadline before a sweep would otherwise
   * report TIMED_OUT, with a webhook, just before it is deleted.
   */
  timeoutJobs(now: number, limit: number): Promise<SweptJob[]>;
  pruneTombstones(before: number): Promise<number>;

  // Workers and leases.
  upsertWorker(worker: WorkerRecord): Promise<void>;
  /**
   * Give a worker id held by another endpoint's abandoned outside worker to `worker`, only if the stored record is
   * still what the caller judged abandoned (`from`: its endpoint and last-seen time; not managed; holding no job).
   * Drops the earlier holder's stop orders. False: it changed meanwhile (the worker came back, another node took it).
   */
  takeOverWorker(worker: WorkerRecord, from: { endpointId: string; lastSeenAt: number }): Promise<boolean>;
  getWorker(workerId: string): Promise<WorkerRecord | null>;
  findWorkerByKeyHash(keyHash: string): Promise<WorkerRecord | null>;
  listWorkers(endpointId?: string): Promise<WorkerRecord[]>;
  /** Renew the lease (and optionally change state/reason). */
  touchWorker(
    workerId: string,
    now: number,
    patch?: { state?: WorkerState; reason?: string | null; retired?: boolean },
  ): Promise<void>;
  /**
   * Change a worker's state, reason or retired flag without renewing its lease: the server's doing (a retirement, a
   * stop), not a sign of life. A starting worker whose lease moved would count as up, and a silent one's jobs would
   * wait a lease longer to go back to the queue. `now` stamps a retirement.
   */
  markWorker(
    workerId: string,
    now: number,
    patch: { state?: WorkerState; reason?: string | null; retired?: boolean },
  ): Promise<void>;
  /** Running jobs per worker of an endpoint (workers holding none are absent). */
  runningByWorker(endpointId: string): Promise<Record<string, number>>;
  /**
   * Per worker of an endpoint, when its latest job that finished at or after `since` finished (workers without one
   * are absent): the supervisor's idle timeout counts from it, not from passes that happened to see the worker idle.
   */
  lastFinishByWorker(endpointId: string, since: number): Promise<Record<string, number>>;
  /** Jobs this worker holds (IN_PROGRESS with its id). */
  workerJobIds(workerId: string): Promise<string[]>;
  /**
   * Put the worker's running jobs back into the queue (attempt fenced out, retries + 1), or FAILED after
   * `maxAttempts` with `retries` unchanged: `retries` counts the times a job was put back to run again, and the loss
   * that fails it is not one (a job failed on its first loss has none). `maxAttempts: null`: the server's own doing
   * (its restart or shutdown stopped the worker), so the hand-out is not counted (attempt - 1); a job already requeued
   * MAX_REQUEUES times fails instead (domain releasedJob). `onlyJobIds` restricts it to those jobs
   * (a ping showed they were lost); omitted = all. A job past its ttl is left alone: it is gone, not FAILED (no
   * webhook delivery), and expireJobs deletes it with a stop order. So is a job past its execution timeout: it is
   * TIMED_OUT, not requeued or FAILED, and timeoutJobs marks it so (its delivery says TIMED_OUT) with a stop order.
   */
  releaseWorkerJobs(
    workerId: string,
    now: number,
    maxAttempts: number | null,
    reason: string,
    onlyJobIds?: string[],
  ): Promise<LeaseSweep>;
  /** Jobs a take could not deliver (the client hung up): back in the queue, attempt not used. */
  returnUndelivered(workerId: string, jobIds: string[]): Promise<Job[]>;
  /**
   * Workers silent since before `silentSince` lose their lease and their jobs (as releaseWorkerJobs), with a stop
   * order for each: a silent worker may still be running them (its pings lost, not its process), and if it comes
   * back the order ends the old run and keeps the job from it for RETAKE_AFTER_STOP_MS.
   */
  expireWorkerLeases(silentSince: number, now: number, maxAttempts: number): Promise<LeaseSweep>;
  deleteWorker(workerId: string): Promise<void>;
  /**
   * The worker's stop orders not fetched yet, now marked fetched. A fetched order stays until RETAKE_AFTER_STOP_MS
   * after it was made: takes do not hand its job back to the worker meanwhile.
   */
  takeStops(workerId: string, now: number): Promise<string[]>;
  /**
   * The worker's fetched stop orders for these jobs (those still kept), not fetched again and made anew at `now`:
   * the next takeStops returns them again. For an answer that did not reach the worker (it hung up), and for a
   * worker whose pings still list a job it was told to stop. Returns the job ids whose order was armed again.
   */
  rearmStops(workerId: string, jobIds: string[], now: number): Promise<string[]>;
}

export interface AccountStore {
  createUser(user: User): Promise<void>;
  getUser(userId: string): Promise<User | null>;
  listUsers(): Promise<User[]>;
  createApiKey(key: ApiKey): Promise<void>;
  findApiKeyByHash(hash: string): Promise<ApiKey | null>;
  listApiKeys(userId: string): Promise<ApiKey[]>;
  revokeApiKey(userId: string, keyId: string, now: number): Promise<boolean>;
}

export interface ResourceStore {
  /**
   * Run `fn` while no other `exclusively` of the same user runs, on any node: the engine's check-then-write changes
   * of templates, endpoints, volumes and registry auths (an endpoint created on a template being deleted must not
   * be left naming a template that is gone).
   */
  exclusively<T>(userId: string, fn: () => Promise<T>): Promise<T>;
  createTemplate(t: Template): Promise<void>;
  getTemplate(userId: string, id: string): Promise<Template | null>;
  listTemplates(userId: string): Promise<Template[]>;
  updateTemplate(t: Template): Promise<void>;
  deleteTemplate(userId: string, id: string): Promise<boolean>;
  createEndpoint(e: Endpoint): Promise<void>;
  /** userId null: any owner (internal use by the engine and the fleet). */
  getEndpoint(userId: string | null, id: string): Promise<Endpoint | null>;
  /**
   * The endpoint (as getEndpoint) and a worker record by id, whatever endpoint the worker belongs to (the caller
   * checks): every worker request needs both, and on PostgreSQL this is one round trip instead of two. The worker
   * is null when it does not exist or when the endpoint was not found.
   */
  getEndpointAndWorker(
    userId: string | null,
    endpointId: string,
    workerId: string,
  ): Promise<{ endpoint: Endpoint | null; worker: WorkerRecord | null }>;
  listEndpoints(userId: string | null): Promise<Endpoint[]>;
  updateEndpoint(e: Endpoint): Promise<void>;
  /** Deletes the endpoint with its jobs, workers and history. */
  deleteEndpoint(userId: string, id: string): Promise<boolean>;
  endpointsUsingTemplate(userId: string, templateId: string): Promise<string[]>;
  /**
   * One change of a template and the endpoints it comes with, in one transaction: every write lands or none does.
   * A template change that rolls workers with the version bump of each endpoint that uses it, an endpoint saved or
   * created with its inline template, an endpoint that leaves (or is deleted with) the template bound to it: a store
   * failure half way must not leave the template changed and its endpoints not rolled (a retry would see no change).
   * The template is written first, then the endpoints in order; an endpoint delete is deleteEndpoint's.
   */
  saveTemplateAndEndpoints(template: TemplateWrite | null, endpoints: readonly EndpointWrite[]): Promise<void>;
}

/** A template written by saveTemplateAndEndpoints: made, replaced or deleted. */
export type TemplateWrite = { create: Template } | { update: Template } | { delete: Template };
/** An endpoint written by saveTemplateAndEndpoints: made, replaced or deleted (with its jobs, workers and history). */
export type EndpointWrite = { create: Endpoint } | { update: Endpoint } | { delete: Endpoint };

/** Backend differences, in one table (STYLE.md habit 4). */
export interface StoreCapabilities {
  readonly name: 'sqlite' | 'postgres';
  /** Several server processes may share this store. */
  readonly multiNode: boolean;
}

export interface Store
  extends JobStore, AccountStore, ResourceStore, ManagementStore, WebhookStore, ObservabilityStore {
  readonly capabilities: StoreCapabilities;
  /** Apply pending migrations; refuse a schema newer than this code knows. */
  migrate(): Promise<void>;
  /** Cheap liveness probe for /readyz. */
  ping(): Promise<void>;
  /** Resolves once every write this process committed so far is durable (immediately where commits are). */
  whenDurable(): Promise<void>;
  close(): Promise<void>;
}
