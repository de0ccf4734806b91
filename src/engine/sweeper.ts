import type { Store } from '../store/index.ts';
import type { Clock } from './clock.ts';
import type { JobEngine } from './engine.ts';
import type { WorkerGateway } from './workers.ts';

export interface SweeperOptions {
  intervalMs: number;
  leaseMs: number;
  maxAttempts: number;
  tombstoneKeepMs: number;
}

/** Rows handled per sweep step: bounds each write transaction so a backlog never stalls the server. */
const BATCH = 500;

/**
 * How long the record of a worker joined from outside stays once it went silent (its lease expired) and holds no
 * job: visible meanwhile (`/v1/pods`, /health) to whoever looks why it left, then deleted, so that ids made up in
 * pings do not pile up for ever. One that comes back later registers again.
 */
export const SILENT_WORKER_KEEP_MS = 10 * 60_000;

/**
 * The timers of the job lifecycle: ttl expiry, result retention, execution timeouts, lost leases, old tombstones.
 * Runs one pass at a time (never overlapping), every `intervalMs`; a pass that hit a full batch runs again at once.
 */
export class Sweeper {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly engine: JobEngine;
  private readonly workers: WorkerGateway;
  private readonly opts: SweeperOptions;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private lastPrune = 0;
  /** When this sweeper last started (clock time): leases count only from then (see sweepOnce). */
  private startedAt = 0;
  /** Errors are reported here, never thrown into the timer. */
  onError: (error: unknown) => void = () => {};

  constructor(engine: JobEngine, workers: WorkerGateway, opts: SweeperOptions) {
    this.engine = engine;
    this.store = engine.store;
    this.clock = engine.clock;
    this.workers = workers;
    this.opts = opts;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.startedAt = this.clock.now();
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweepOnce()
        .then((more) => this.schedule(more ? 0 : this.opts.intervalMs))
        .catch((error: unknown) => {
          this.onError(error);
          this.schedule(this.opts.intervalMs);
        });
    }, delay);
  }

  /** Managed workers' records are the supervisor's (fleet/supervisor.ts pruneDeadRecords). */
  private async pruneSilentWorkers(now: number): Promise<void> {
    for (const w of await this.store.listWorkers()) {
      const silentFor = now - w.lastSeenAt - this.opts.leaseMs;
      if (w.managed || w.state !== 'unhealthy' || silentFor <= SILENT_WORKER_KEEP_MS) continue;
      if ((await this.store.workerJobIds(w.id)).length > 0) continue;
      await this.store.deleteWorker(w.id);
      this.workers.forget(w.id);
    }
  }

  /** One pass. Returns true when a step filled its batch (more work is waiting). */
  async sweepOnce(): Promise<boolean> {
    const now = this.clock.now();
    const expired = await this.store.expireJobs(now, BATCH);
    this.engine.announceExpired(expired);
    const timedOut = await this.store.timeoutJobs(now, BATCH);
    this.engine.announceSwept(timedOut);
    const results = await this.store.expireResults(now, BATCH);
    // No worker can renew its lease while the server is down or starting: the leases run again from this start, so a
    // restart (a crash loop, or a new leader) does not requeue the jobs of live workers — nor, after maxAttempts,
    // fail them. A worker that died meanwhile is noticed one lease after the start.
    if (now - this.startedAt >= this.opts.leaseMs) {
      const lease = await this.store.expireWorkerLeases(now - this.opts.leaseMs, now, this.opts.maxAttempts);
      this.workers.announce(lease);
    }
    if (now - this.lastPrune > 60_000) {
      this.lastPrune = now;
      await this.store.pruneTombstones(now - this.opts.tombstoneKeepMs);
      await this.pruneSilentWorkers(now);
    }
    return expired.length === BATCH || timedOut.length === BATCH || results === BATCH;
  }
}
