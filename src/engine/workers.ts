import { createHash } from 'node:crypto';
import { takeBatchSize, type Endpoint, type Job, type WorkerRecord, type WorkerResult } from '../domain/index.ts';
import { WharfError } from '../errors/index.ts';
import type { LeaseSweep, Store } from '../store/index.ts';
import { addToSetOf, releasedWorkerOf, removeFromSetOf, topics, type Bus, type Waiter } from './bus.ts';
import type { Clock } from './clock.ts';
import type { JobEngine, TakeHandOff, TakeReservation } from './engine.ts';
import { SecretUnreadableError } from './secrets.ts';
import type { TakenJob } from './views.ts';
import { classifyDone, streamChunks } from './worker-posts.ts';

export interface WorkerGatewayOptions {
  takeWaitMs: number;
  stopWaitMs: number;
  leaseMs: number;
  lostJobGraceMs: number;
  maxAttempts: number;
}

/** Lease renewals are written at most this often per worker: leases are seconds long, requests can be many. */
const TOUCH_EVERY_MS = 1000;

/** A take poll waiting for work, offered to new jobs of its endpoint (WorkerGateway.reserve). */
interface WaitingTake {
  workerId: string;
  signal: AbortSignal | undefined;
  /** Its wake-up waiter: disposed when first reserved, so that no single wake-up goes to a take that will not look. */
  waiter: Waiter;
  /** How many more submissions may reserve it: its batch size, less the reservations so far. */
  slots: number;
  /** One per submission that reserved it: the job claimed for it, or null (queued instead). */
  handed: Array<Promise<Job | null>>;
  /** Resolves at the first reservation: ends the take's wait. */
  reserved: Promise<void>;
  onReserved: () => void;
  /** Resolves once it takes no more reservations (slots used up, or the event-loop turn of its first one over). */
  closed: Promise<void>;
  onClosed: () => void;
}

export interface PingReport {
  jobIds: string[] | null;
  unhealthy?: { check: string; reason: string } | undefined;
}

/**
 * The server side of the worker protocol (spec/worker-protocol.md §1): take, stop, done, stream, ping.
 * Fencing: a post for a job is accepted only from the worker holding its current attempt.
 */
export class WorkerGateway implements TakeHandOff {
  private readonly store: Store;
  private readonly bus: Bus;
  private readonly clock: Clock;
  private readonly engine: JobEngine;
  private readonly opts: WorkerGatewayOptions;
  private readonly lastTouch = new Map<string, number>();
  /** Workers that asked to be recycled (stopPod) or were retired by the supervisor. */
  readonly onRetire = new Set<(worker: WorkerRecord) => void>();
  /** Takes waiting for work, per endpoint, in the order they began waiting (a Set keeps insertion order). */
  private readonly waitingTakes = new Map<string, Set<WaitingTake>>();
  /** What ends the wait of each waiting take and stop poll, per worker (release). */
  private readonly releasers = new Map<string, Set<() => void>>();

  constructor(engine: JobEngine, opts: WorkerGatewayOptions) {
    this.engine = engine;
    this.store = engine.store;
    this.bus = engine.bus;
    this.clock = engine.clock;
    this.opts = opts;
    engine.handOffTo(this);
    // A release published here or on another node (not a bridge's wakeAll: a missed one only leaves polls held).
    this.bus.onWake((topic) => {
      const workerId = releasedWorkerOf(topic);
      if (workerId !== null) for (const release of [...(this.releasers.get(workerId) ?? [])]) release();
    });
  }

  /**
   * Answer the worker's waiting take and stop polls now, with what they have (a take: nothing; 204), on every node.
   * For a worker just retired: one that is going away (the official SDK after a `stopPod` result with refresh_worker,
   * or told to stop with SIGTERM) exits only once its in-flight long polls have returned (spec §1.3, §1.10), which
   * held to their end is takeWaitMs later. Its later polls are held as before, so it cannot spin on them.
   */
  release(workerId: string): void {
    this.bus.publish(topics.released(workerId));
  }

  /** Call `release` when the worker's polls are released (release()), until the returned function is called. */
  private onRelease(workerId: string, release: () => void): () => void {
    addToSetOf(this.releasers, workerId, release);
    return () => removeFromSetOf(this.releasers, workerId, release);
  }

  /** How long a refused take/stop poll is held before the answer (see the worker routes): at most 5 s. */
  get refusalHoldMs(): number {
    return Math.min(5000, this.opts.takeWaitMs);
  }

  static hashKey(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  /**
   * Find (or, for a worker joining with its owner's API key, register) the worker behind a request.
   * `viaWorkerKey` is the worker record a worker key resolved to; it must be this worker on this endpoint.
   * `stored` is the worker's record as the store has it now, when the caller already read it with the endpoint
   * (Resources.getEndpointAndWorker; null = no such worker); left out, it is read here.
   */
  async resolveWorker(
    endpoint: Endpoint,
    workerId: string,
    viaWorkerKey: WorkerRecord | null,
    stored?: WorkerRecord | null,
  ): Promise<WorkerRecord> {
    const current = async (): Promise<WorkerRecord | null> =>
      stored !== undefined ? stored : await this.store.getWorker(workerId);
    if (viaWorkerKey) {
      if (viaWorkerKey.id !== workerId || viaWorkerKey.endpointId !== endpoint.id) {
        throw new WharfError('FORBIDDEN', { action: `act as worker ${workerId} on endpoint ${endpoint.id}` });
      }
      // The key's record may come from the auth cache: use the worker as stored now (retired, state, version).
      return (await current()) ?? viaWorkerKey;
    }
    const existing = await current();
    const now = this.clock.now();
    if (existing && existing.endpointId === endpoint.id) {
      if (this.outsideRetirementOver(existing, now)) {
        await this.store.touchWorker(workerId, now, { state: 'idle', reason: null, retired: false });
        return { ...existing, state: 'idle', reason: null, retired: false, retiredAt: null, lastSeenAt: now };
      }
      // A managed worker's id with the owner's key: allowed (the owner may debug it); fenced as usual.
      return existing;
    }
    const worker: WorkerRecord = {
      id: workerId,
      endpointId: endpoint.id,
      keyHash: null,
      version: endpoint.version,
      managed: false,
      state: 'idle',
      reason: null,
      gpuTypeId: null,
      gpuCount: 0,
      createdAt: now,
      lastSeenAt: now,
      retired: false,
      retiredAt: null,
    };
    if (!existing) {
      await this.store.upsertWorker(worker);
    } else if (!(await this.abandoned(existing, now)) || !(await this.store.takeOverWorker(worker, existing))) {
      // Taken over only if the store still holds the record judged abandoned: the worker may have come back, or
      // another node may have taken the id, since it was read.
      throw new WharfError('FORBIDDEN', {
        action: `use worker id ${workerId}: a live worker of another endpoint has it (give each worker a RUNPOD_POD_ID of its own)`,
      });
    }
    this.lastTouch.set(workerId, now);
    return worker;
  }

  /**
   * A worker joined from outside that was retired (stopPod, a failed fitness check) cannot be recycled by Wharf:
   * that is its operator's to do (the official SDK exits after a failed check, and after its results when
   * `refresh_worker` is configured). It gets no job for a lease's time after its retirement, long enough for its
   * process to be replaced, and is then taken back: it must not stay refused for good. The retirement time is
   * stored, so the pause holds across nodes and restarts; one retired before the time was kept is over at once.
   */
  private outsideRetirementOver(worker: WorkerRecord, now: number): boolean {
    if (worker.managed || !worker.retired) return false;
    return worker.retiredAt === null || now - worker.retiredAt > this.opts.leaseMs;
  }

  /**
   * Whether a worker id held by another endpoint may be taken over: a worker joined from outside that has been
   * silent for longer than a lease and holds no job (a machine that moved to another endpoint, an id reused).
   */
  private async abandoned(worker: WorkerRecord, now: number): Promise<boolean> {
    if (worker.managed || now - worker.lastSeenAt <= this.opts.leaseMs) return false;
    // A take still waiting here is a live worker, however long ago it last renewed its lease.
    if ([...(this.waitingTakes.get(worker.endpointId) ?? [])].some((w) => w.workerId === worker.id)) return false;
    return (await this.store.workerJobIds(worker.id)).length === 0;
  }

  /** Renew the worker's lease. A worker that had lost its lease is alive again (its old jobs stay requeued). */
  async touch(worker: WorkerRecord): Promise<void> {
    const now = this.clock.now();
    const revived = worker.state === 'unhealthy' && worker.reason === 'lease-expired';
    // A started worker's first request: it is up. /health says so at once, not at the supervisor's next pass.
    const arrived = worker.state === 'initializing';
    if (!revived && !arrived && now - (this.lastTouch.get(worker.id) ?? 0) < TOUCH_EVERY_MS) return;
    this.lastTouch.set(worker.id, now);
    await this.store.touchWorker(worker.id, now, revived || arrived ? { state: 'idle', reason: null } : undefined);
  }

  /**
   * Long-poll for up to `max` jobs. Returns [] when none arrived in time. `worker` is the record resolveWorker just
   * read, so the first look uses it as is; later looks (after a wait) read it afresh.
   *
   * A new job goes straight to the take that has waited longest, when it can (reserve): the submission's own store
   * write claims it for that take's worker, so no wake-up, queue read or second write is needed. A job that was
   * queued instead wakes one waiting take (Bus.publishOne), not all of them, so the take that gets the wake-up must
   * answer it with a look at the queue. One that leaves or stops looking instead — its worker retired or outdated
   * meanwhile, the client gone, the poll over, the store failing, or jobs found by a look that read the queue before
   * the wake-up's job was committed — hands the wake-up on to the next waiting take.
   *
   * The jobs come with their s3Config opened (opened()); one that cannot be opened fails instead, and the take goes
   * on as if it had not found it.
   */
  async take(worker: WorkerRecord, max: number, signal?: AbortSignal): Promise<TakenJob[]> {
    const topic = topics.queue(worker.endpointId);
    const deadline = this.clock.now() + this.opts.takeWaitMs;
    let waiter: Waiter | undefined;
    // Woken, and no look at the queue since.
    let owed = false;
    // Its worker was retired meanwhile (release): it answers with nothing, at once.
    let released = false;
    const unrelease = this.onRelease(worker.id, () => {
      released = true;
      waiter?.dispose();
    });
    try {
      for (let look = 0; !released; look++) {
        // A retired worker (it asked to be recycled) gets nothing, but is held for the full poll so it cannot spin.
        // Read again at every look after the first: a worker may be retired, or taken back (Supervisor.reinstate,
        // which wakes the endpoint's waiting takes), while its poll waits.
        const current = look === 0 ? worker : ((await this.store.getWorker(worker.id)) ?? worker);
        // Renewed at every look at the queue, not only when the poll began: a poll may outlive the lease, and a job
        // must not go to a worker whose lease the sweeper already gave up on.
        await this.touch(current);
        // A worker of an older endpoint version (rolling update) takes jobs until its supervisor retires it, once
        // its replacement is ready (fleet/autoscaler.ts): the retired flag is the one rule, read at every look.
        const eligible = !current.retired;
        // Armed before the queue is read (a job committed in between still wakes it); only a take that will look at
        // the queue may receive a single wake-up.
        waiter = this.bus.arm(topic, deadline - this.clock.now(), signal, eligible);
        if (eligible && !signal?.aborted) {
          const jobs = await this.store.takeJobs(worker.endpointId, worker.id, max, this.clock.now());
          owed = waiter.woken;
          if (jobs.length > 0) {
            const taken = await this.opened(worker, jobs);
            if (taken.length > 0) return taken;
            // Each failed: the queue may hold more.
            waiter.dispose();
            continue;
          }
        }
        if (this.clock.now() >= deadline || signal?.aborted || released) return [];
        if (owed && !eligible) {
          this.bus.wakeOne(topic);
          owed = false;
        }
        const woke = eligible ? await this.waitOffered(worker, max, waiter, signal) : await waiter.promise;
        if (typeof woke !== 'boolean') {
          // Submissions reserved this take. Claimed: the jobs are this worker's already. Queued instead (the worker
          // may not take them, or an older job waits): look at the queue again, after this wait's wake-up, if any.
          if (woke.handed.length > 0) {
            const taken = await this.opened(worker, woke.handed);
            if (taken.length > 0) return taken;
          }
          owed ||= waiter.woken;
          waiter.dispose();
          continue;
        }
        if (!woke) return [];
        owed = true;
      }
      return [];
    } finally {
      unrelease();
      waiter?.dispose();
      if (owed || waiter?.woken === true) this.bus.wakeOne(topic);
    }
  }

  /**
   * Jobs as the worker that took them gets them: each s3Config opened (TakenJob). One that does not open (sealed with
   * another secret key) cannot run as submitted: its attempt fails, saying why, and it is left out.
   */
  private async opened(worker: WorkerRecord, jobs: Job[]): Promise<TakenJob[]> {
    // The usual take: nothing to open, and the jobs are handed out as the store returned them.
    if (jobs.every((job) => job.s3ConfigSealed === null)) return jobs;
    const taken: TakenJob[] = [];
    for (const job of jobs) {
      if (job.s3ConfigSealed === null) {
        taken.push(job);
        continue;
      }
      try {
        taken.push({ ...job, s3ConfigJson: this.engine.openS3Config(job.id, job.s3ConfigSealed) });
      } catch (error) {
        if (!(error instanceof SecretUnreadableError)) throw error;
        await this.fail(worker, job.id, error.message);
      }
    }
    return taken;
  }

  /**
   * Wait for the waiter, offered meanwhile to new jobs of the endpoint (reserve). Resolves like the waiter, or with
   * the outcome of the reservations: once reserved, the take waits for the submissions' store writes whatever happens
   * to the waiter (a job claimed for this worker must reach it, or go back to the queue through the route's
   * undeliverable()).
   */
  private async waitOffered(
    worker: WorkerRecord,
    max: number,
    waiter: Waiter,
    signal: AbortSignal | undefined,
  ): Promise<boolean | { handed: Job[] }> {
    let onReserved!: () => void;
    const reserved = new Promise<void>((resolve) => (onReserved = resolve));
    let onClosed!: () => void;
    const closed = new Promise<void>((resolve) => (onClosed = resolve));
    const take: WaitingTake = {
      workerId: worker.id,
      signal,
      waiter,
      slots: takeBatchSize(max),
      handed: [],
      reserved,
      onReserved,
      closed,
      onClosed,
    };
    addToSetOf(this.waitingTakes, worker.endpointId, take);
    try {
      await Promise.race([waiter.promise, reserved]);
    } finally {
      // Reserved: it stays on offer until closed (reserve). Otherwise it is done waiting.
      if (take.handed.length === 0) removeFromSetOf(this.waitingTakes, worker.endpointId, take);
    }
    if (take.handed.length === 0) return waiter.promise;
    await take.closed;
    const jobs = await Promise.all(take.handed);
    return { handed: jobs.filter((job): job is Job => job !== null) };
  }

  /**
   * TakeHandOff: reserve a waiting take of the endpoint (one whose client is still there) for one new job. The store
   * then checks, in the submit's transaction, that the worker may take it and that nothing older is queued.
   *
   * A batch take may be reserved by several submissions, up to its batch size, but only within the event-loop turn
   * of its first reservation: those submissions' writes join the same group commit, so the take answers with all of
   * them at once, no later than it would have with the first alone. The takes are reserved in turn (the one that has
   * waited longest first, then the next), so a burst is spread over the idle workers before any gets a second job.
   */
  reserve(endpointId: string): TakeReservation | null {
    const waiting = this.waitingTakes.get(endpointId);
    if (!waiting) return null;
    for (const take of waiting) {
      if (take.signal?.aborted === true) {
        this.closeOffer(endpointId, take);
        continue;
      }
      const first = take.handed.length === 0;
      // To the back of the line: the next submission goes to the next waiting take.
      removeFromSetOf(this.waitingTakes, endpointId, take);
      if (--take.slots > 0) addToSetOf(this.waitingTakes, endpointId, take);
      else take.onClosed();
      if (first) {
        take.waiter.dispose();
        take.onReserved();
        if (take.slots > 0) setImmediate(() => this.closeOffer(endpointId, take));
      }
      let settle!: (job: Job | null) => void;
      take.handed.push(new Promise<Job | null>((resolve) => (settle = resolve)));
      const now = this.clock.now();
      // As touch(): a lease renewal at most once a second per worker, with the first job a take is handed.
      const touchLease = first && now - (this.lastTouch.get(take.workerId) ?? 0) >= TOUCH_EVERY_MS;
      return {
        handTo: { workerId: take.workerId, touchLease },
        settle: (job) => {
          if (job && touchLease) this.lastTouch.set(take.workerId, now);
          settle(job);
        },
      };
    }
    return null;
  }

  /** A take no longer on offer: it answers with the jobs it was handed (or, aborted unreserved, with nothing). */
  private closeOffer(endpointId: string, take: WaitingTake): void {
    removeFromSetOf(this.waitingTakes, endpointId, take);
    take.onClosed();
  }

  /** Jobs a take handed out that could not be delivered (the worker hung up): back to the queue. */
  async undeliverable(worker: WorkerRecord, jobs: Job[]): Promise<void> {
    const back = await this.store.returnUndelivered(
      worker.id,
      jobs.map((j) => j.id),
    );
    this.announce({ workerIds: [], requeued: back, failed: [] }, false);
  }

  /**
   * Long-poll for stop orders (cancel, ttl expiry, execution timeout of jobs this worker runs). A poll whose client
   * is gone fetches nothing, and gives back what it fetched as its client left: an order is not spent on an answer
   * no one reads. (One lost after it was written is sent again on the worker's next ping that still lists its job.)
   */
  async stops(worker: WorkerRecord, signal?: AbortSignal): Promise<string[]> {
    await this.touch(worker);
    const deadline = this.clock.now() + this.opts.stopWaitMs;
    // Its worker retired meanwhile (release): the wait ends as if it had run out.
    let released = false;
    let waiter: Waiter | undefined;
    const unrelease = this.onRelease(worker.id, () => {
      released = true;
      waiter?.dispose();
    });
    try {
      // The wait ran out (woken by nothing): one last look, then the answer. Its client gone, no look at all (above).
      for (let last = false; ;) {
        if (signal?.aborted) return [];
        waiter = this.bus.arm(topics.stop(worker.id), deadline - this.clock.now(), signal);
        try {
          const ids = await this.currentStops(worker.id);
          if (signal?.aborted) {
            await this.undeliveredStops(worker, ids);
            return [];
          }
          if (ids.length > 0 || last || released || this.clock.now() >= deadline) return ids;
          last = !(await waiter.promise);
        } finally {
          waiter.dispose();
        }
      }
    } finally {
      unrelease();
    }
  }

  /**
   * Stop orders fetched for an answer that did not reach the worker: fetched again by its next poll. Made anew, they
   * hold their jobs back from this worker's takes for RETAKE_AFTER_STOP_MS from now, so its takes are woken then.
   */
  async undeliveredStops(worker: WorkerRecord, jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    const now = this.clock.now();
    const back = await this.store.rearmStops(worker.id, jobIds, now);
    if (back.length === 0) return;
    this.bus.publish(topics.stop(worker.id));
    this.engine.wakeTakesAfterStop(worker.endpointId, now);
  }

  /**
   * The worker's stop orders, less those for a job it runs now: every order comes with the job leaving IN_PROGRESS
   * (cancel, timeout, ttl), so one for a job this worker holds again was for an earlier attempt and must not stop
   * this one. Takes do not hand a job back to a worker for RETAKE_AFTER_STOP_MS after its order, so this happens
   * only with a worker that does not poll job-stop. Orders stay until their worker fetches them, so a retry
   * taken by another worker still lets the first one stop its old attempt.
   */
  private async currentStops(workerId: string): Promise<string[]> {
    const ids = await this.store.takeStops(workerId, this.clock.now());
    if (ids.length === 0) return ids;
    const held = new Set(await this.store.workerJobIds(workerId));
    return ids.filter((id) => !held.has(id));
  }

  /** job-done: progress (not final) or the final result. */
  async done(worker: WorkerRecord, jobId: string, rawBody: string): Promise<void> {
    await this.touch(worker);
    const post = classifyDone(rawBody);
    if (post.kind === 'progress') {
      const res = await this.store.recordProgress(
        worker.endpointId,
        jobId,
        worker.id,
        post.outputJson,
        this.clock.now(),
      );
      if (!res.ok) throw await this.refusal(worker, jobId, res.reason);
      this.bus.publish(topics.job(jobId));
      return;
    }
    const res = await this.store.finishJob(worker.endpointId, jobId, worker.id, post.result, this.clock.now());
    // Announced before the retirement, which may fail: the worker's retry is then acknowledged as already recorded
    // below, without announcing it again, and the job's waiters would sleep until their waits ran out.
    if (res.ok) this.engine.jobChanged(res.job);
    if (post.result.stopPod) await this.retire(worker, 'stopPod');
    if (!res.ok) {
      // A retry of a result this worker already got accepted (its acknowledgement was lost: a dropped connection,
      // a node restarting) is acknowledged again rather than refused, so the worker does not report a failure.
      if (res.reason === 'stale' && alreadyRecorded(res.job, worker.id, post.result)) return;
      throw await this.refusal(worker, jobId, res.reason);
    }
  }

  /**
   * A job-done post refused unread for its size: the job fails with `reason`. The official SDK does not retry a 4xx
   * and drops the job (spec §1.10); left IN_PROGRESS, it would be found missing from the worker's pings and run
   * again, to the same refusal, up to maxAttempts times. (A progress update that large fails the job too: unread,
   * the body cannot tell which it was.) Fenced like every post: only the worker holding the attempt fails it.
   */
  async resultTooLarge(worker: WorkerRecord, jobId: string, reason: string): Promise<void> {
    await this.touch(worker);
    await this.fail(worker, jobId, reason);
  }

  /** The worker's attempt at the job fails with `reason` (fenced: only while the worker holds it). */
  private async fail(worker: WorkerRecord, jobId: string, reason: string): Promise<void> {
    const result: WorkerResult = {
      status: 'FAILED',
      outputJson: null,
      errorJson: JSON.stringify(reason),
      stopPod: false,
    };
    const res = await this.store.finishJob(worker.endpointId, jobId, worker.id, result, this.clock.now());
    if (res.ok) this.engine.jobChanged(res.job);
  }

  async streamChunk(worker: WorkerRecord, jobId: string, rawBody: string): Promise<void> {
    await this.touch(worker);
    const chunks = streamChunks(rawBody);
    const res = await this.store.appendChunks(worker.endpointId, jobId, worker.id, chunks, this.clock.now());
    if (!res.ok) throw await this.refusal(worker, jobId, res.reason);
    this.bus.publish(topics.job(jobId));
  }

  /**
   * Heartbeat. Renews the lease; a fitness-check failure marks the worker unhealthy and hands its jobs back;
   * a held job missing from the ping's job list (after a grace period) was lost by the worker and is requeued.
   */
  async ping(worker: WorkerRecord, report: PingReport): Promise<void> {
    const now = this.clock.now();
    if (report.unhealthy) {
      const reason = `fitness check ${report.unhealthy.check} failed: ${report.unhealthy.reason}`.slice(0, 500);
      await this.store.touchWorker(worker.id, now, { state: 'unhealthy', reason, retired: true });
      this.release(worker.id);
      this.announce(await this.store.releaseWorkerJobs(worker.id, now, this.opts.maxAttempts, reason));
      return;
    }
    await this.touch(worker);
    const held = await this.store.workerJobIds(worker.id);
    const reported = new Set(report.jobIds ?? []);
    // A job the worker still runs that is no longer its own (cancelled, timed out, taken back): if it was told to
    // stop it, the order did not get through (its answer lost with a dropped connection). It is sent again.
    const stopped = [...reported].filter((id) => !held.includes(id));
    if (stopped.length > 0) await this.undeliveredStops(worker, stopped);
    if (held.length === 0) return;
    const missing: string[] = [];
    for (const id of held) {
      if (reported.has(id)) continue;
      const job = await this.store.getJob(worker.endpointId, id);
      if (job?.startedAt !== null && job?.startedAt !== undefined && now - job.startedAt > this.opts.lostJobGraceMs) {
        missing.push(id);
      }
    }
    if (missing.length > 0) {
      this.announce(
        await this.store.releaseWorkerJobs(worker.id, now, this.opts.maxAttempts, 'job missing from pings', missing),
      );
    }
  }

  async retire(worker: WorkerRecord, reason: string): Promise<void> {
    const now = this.clock.now();
    // Not a sign of life: an operator's stop of a silent worker must not renew its lease.
    await this.store.markWorker(worker.id, now, { retired: true, reason });
    this.release(worker.id);
    const updated = { ...worker, retired: true, retiredAt: now, reason };
    for (const l of this.onRetire) {
      try {
        l(updated);
      } catch {
        // Listener bugs never break the protocol path.
      }
    }
  }

  /**
   * Wake whoever cares about a lease sweep: takers of requeued jobs, waiters of failed ones, and the stop polls of
   * workers whose lease ran out (they got stop orders for their jobs). `retried` is false for jobs that never reached
   * their worker (their attempt is not used, so they are not retries).
   */
  announce(sweep: LeaseSweep, retried = true): void {
    for (const id of sweep.workerIds) this.bus.publish(topics.stop(id));
    const endpoints = new Set<string>();
    for (const job of sweep.requeued) {
      endpoints.add(job.endpointId);
      this.bus.publish(topics.job(job.id));
      if (retried) this.engine.emit({ type: 'requeued', job, cause: 'lost-worker' });
    }
    for (const job of sweep.failed) this.engine.jobChanged(job);
    for (const id of endpoints) this.bus.publish(topics.queue(id));
  }

  private async refusal(worker: WorkerRecord, jobId: string, reason: 'not_found' | 'stale'): Promise<WharfError> {
    if (reason === 'stale') return new WharfError('STALE_ATTEMPT', { workerId: worker.id, jobId });
    // A job past its ttl that no sweep has deleted yet is refused as not found: expired, as after the sweep.
    const job = await this.store.getJob(worker.endpointId, jobId);
    if (job !== null && job.expiresAt <= this.clock.now()) return new WharfError('JOB_EXPIRED', { jobId });
    return this.engine.missingJobError(worker.endpointId, jobId);
  }

  forget(workerId: string): void {
    this.lastTouch.delete(workerId);
  }
}

/** Whether the job already ended with exactly this result from this worker. */
function alreadyRecorded(job: Job, workerId: string, result: WorkerResult): boolean {
  return (
    job.workerId === workerId &&
    job.status === result.status &&
    job.completedAt !== null &&
    job.outputJson === result.outputJson &&
    job.errorJson === result.errorJson
  );
}
