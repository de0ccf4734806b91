// The worker: a take loop (long-poll jobs while slots are free), a stop-channel loop (abort jobs the service
// cancelled), a heartbeat, and the running jobs. Mirrors the Python SDK's job scaler (spec 1.3–1.11).

import { setTimeout as delay } from 'node:timers/promises';

import { outputUrl, stopUrl, takeUrl } from './env.ts';
import type { WorkerEnv } from './env.ts';
import { coerceError } from './errors.ts';
import { Heartbeat } from './heartbeat.ts';
import { describeHttpError, WorkerHttp } from './http.ts';
import type { HttpResponse } from './http.ts';
import type { WorkerLogger } from './log.ts';
import { progressBody, registerProgress } from './progress.ts';
import { isPlainObject } from './result.ts';
import { runJob } from './run-job.ts';
import type { RunJobDeps } from './run-job.ts';
import type { HandlerContext, Job, StartOptions, StopOptions } from './types.ts';
import { takeResponseJobs } from './take.ts';

// Client-side bound of a long poll (take and stop): a request the service never answers is re-issued.
const LONG_POLL_TIMEOUT_MS = 90_000;
const RATE_LIMITED_WAIT_MS = 5_000;
const STOP_IDLE_WAIT_MS = 1_000;
// Python re-polls at once after errors and spins against a dead service (spec 1.6); we back off 100 ms → 1 s.
const ERROR_BACKOFF_MIN_MS = 100;
const ERROR_BACKOFF_MAX_MS = 1_000;
// Python re-checks a full worker every second; we also wake as soon as a slot frees.
const FULL_RECHECK_MS = 1_000;
// A stop order can overtake the take answer that hands out its job (two connections): ids the worker does not run
// yet are kept this long, and a job taken meanwhile is not started. Bounded in time and number, because an id whose
// take never arrives (the answer was lost and the job went back to the queue) must not be held against a later take.
const EARLY_STOP_KEEP_MS = 10_000;
const EARLY_STOP_MAX = 1_000;

interface RunningJob {
  readonly id: string;
  readonly controller: AbortController;
  readonly finished: Promise<void>;
}

export class Worker<I, O> {
  readonly workerId: string;
  readonly done: Promise<void>;

  readonly #opts: StartOptions<I, O>;
  readonly #cfg: WorkerEnv;
  readonly #log: WorkerLogger;
  readonly #http: WorkerHttp;
  readonly #heartbeat: Heartbeat;
  /** What every job's runner needs; the same for all of them, so built once. */
  readonly #jobDeps: RunJobDeps;
  readonly #running = new Map<string, RunningJob>();
  /** Stop orders for jobs not (yet) running here, by id, with when they arrived. */
  readonly #earlyStops = new Map<string, number>();
  /** Ends the take loop (graceful stop). */
  readonly #stopping = new AbortController();
  /** Ends the stop-channel loop, once no job is left to stop. */
  readonly #stopChannel = new AbortController();
  /** Aborts result posts and retry waits (stop timeout expired). */
  readonly #hardStop = new AbortController();
  #concurrency = 1;
  /** Shared by everyone waiting for a free slot; replaced after each notification. */
  #slotFreed: PromiseWithResolvers<void> | undefined;
  #stopTimer: NodeJS.Timeout | undefined;
  #finished = false;

  constructor(opts: StartOptions<I, O>, cfg: WorkerEnv, log: WorkerLogger) {
    this.#opts = opts;
    this.#cfg = cfg;
    this.#log = log;
    this.workerId = cfg.workerId;
    this.#http = new WorkerHttp(cfg.apiKey);
    this.#heartbeat = new Heartbeat({ cfg, http: this.#http, log, jobIds: () => [...this.#running.keys()] });
    this.#jobDeps = {
      cfg,
      http: this.#http,
      log,
      returnAggregateStream: opts.returnAggregateStream === true,
      refreshWorker: opts.refreshWorker === true,
      hardStop: this.#hardStop.signal,
    };
    this.done = this.#run();
  }

  /** Graceful and idempotent: take nothing new, let running jobs finish and post, then resolve. */
  stop(opts: StopOptions = {}): Promise<void> {
    if (!this.#stopping.signal.aborted) {
      this.#log.log('INFO', `Stopping: waiting for ${this.#running.size} running job(s)`);
      this.#stopping.abort();
      this.#notifySlotFreed();
    }
    // No timer once finished: a ref'd timer would hold an otherwise idle process open for nothing.
    if (opts.timeoutMs !== undefined && this.#stopTimer === undefined && !this.#finished) {
      this.#stopTimer = setTimeout(() => this.#abortAll(), Math.max(0, opts.timeoutMs));
    }
    return this.done;
  }

  /** Abort every running job (no result is posted for them) and anything still waiting to post. */
  #abortAll(): void {
    for (const job of this.#running.values()) job.controller.abort(new Error('Worker stopped before the job ended'));
    this.#hardStop.abort();
    this.#notifySlotFreed();
  }

  async #run(): Promise<void> {
    this.#log.log('INFO', `Worker ${this.workerId} started (Wharf TypeScript worker SDK)`);
    this.#heartbeat.start();
    const stopLoop = this.#stopLoop();
    try {
      await this.#takeLoop();
    } catch (err) {
      // The loop catches everything itself; reaching here is a bug, but it must still end in a clean stop.
      this.#log.log('ERROR', `Take loop crashed: ${coerceError(err).message}`);
    }
    // Drain: running jobs finish (or are aborted by stop's timeout); the stop channel stays open meanwhile so the
    // service can still cancel one of them.
    while (this.#running.size > 0 && !this.#hardStop.signal.aborted) {
      await Promise.race([Promise.all([...this.#running.values()].map((j) => j.finished)), this.#whenSlotFreed()]);
    }
    this.#stopChannel.abort();
    await stopLoop;
    this.#heartbeat.stop();
    // Close the pooled keep-alive connections (after any progress post a handler left running has ended).
    this.#http.destroy();
    this.#finished = true;
    clearTimeout(this.#stopTimer);
    this.#log.log('INFO', 'Worker stopped');
  }

  async #takeLoop(): Promise<void> {
    const signal = this.#stopping.signal;
    let backoff = 0;
    while (!signal.aborted) {
      this.#concurrency = this.#nextConcurrency();
      const free = this.#concurrency - this.#running.size;
      if (free <= 0) {
        // Re-check on a timer too: concurrencyModifier may raise the concurrency while all slots are busy. stop()
        // and a finished job both wake this through the slot notification.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, FULL_RECHECK_MS);
          void this.#whenSlotFreed().then(() => {
            clearTimeout(timer);
            resolve();
          });
        });
        continue;
      }
      const url = takeUrl(this.#cfg, free, this.#running.size > 0);
      let res: HttpResponse;
      try {
        res = await this.#http.request('GET', url, { signal, timeoutMs: LONG_POLL_TIMEOUT_MS });
      } catch (err) {
        if (signal.aborted) break;
        if (isTimeout(err)) continue; // the 90 s client bound: just ask again
        backoff = nextBackoff(backoff);
        this.#log.log('ERROR', `Failed to get job: ${describe(err)}; retrying in ${backoff} ms`);
        await this.#sleep(backoff, signal);
        continue;
      }
      if (res.status === 429) {
        this.#log.log('WARN', 'Job take rate-limited (HTTP 429); waiting 5 s');
        await this.#sleep(RATE_LIMITED_WAIT_MS, signal);
        continue;
      }
      if (res.status >= 500) {
        backoff = nextBackoff(backoff);
        this.#log.log('ERROR', `Failed to get job: HTTP ${res.status}; retrying in ${backoff} ms`);
        await this.#sleep(backoff, signal);
        continue;
      }
      backoff = 0;
      // 204, 400 (FlashBoot), other 4xx, and bodies that are not jobs: no job, ask again at once (spec 1.6).
      if (res.status !== 200) {
        if (res.status !== 204 && res.status !== 400) this.#log.log('ERROR', `Failed to get job: HTTP ${res.status}`);
        continue;
      }
      const { jobs, rejected } = takeResponseJobs(res);
      for (const reason of rejected) this.#log.log('ERROR', reason);
      // Jobs that arrived are run even if a stop began meanwhile: the service already handed them to us.
      for (const job of jobs) this.#launch(job as Job<I>);
    }
  }

  #launch(job: Job<I>): void {
    if (this.#running.has(job.id)) {
      this.#log.log('WARN', 'Job is already running on this worker; duplicate ignored', job.id);
      return;
    }
    if (this.#takeEarlyStop(job.id)) {
      this.#log.log('INFO', 'Stop requested by the service before the job started; not running it', job.id);
      return;
    }
    this.#log.log('INFO', 'Job taken', job.id);
    const controller = new AbortController();
    const progressUpdate = (value: unknown): Promise<void> => this.#postProgress(job.id, value);
    const unregister = registerProgress(job.id, progressUpdate);
    const ctx: HandlerContext = {
      signal: controller.signal,
      progressUpdate,
      log: this.#log.forJob(job.id),
      workerId: this.workerId,
    };
    const finished = runJob(this.#opts.handler, job, ctx, this.#jobDeps)
      .catch((err: unknown) => this.#log.log('ERROR', `Job runner failed: ${describe(err)}`, job.id))
      .finally(() => {
        unregister();
        this.#running.delete(job.id);
        // refresh_worker: the worker is recycled after its first result (spec 1.10). Stop before waking the take
        // loop, so it sees the stop and takes nothing more.
        if (this.#opts.refreshWorker === true) void this.stop();
        this.#notifySlotFreed();
      });
    this.#running.set(job.id, { id: job.id, controller, finished });
  }

  #postProgress(jobId: string, value: unknown): Promise<void> {
    return this.#http
      .post(outputUrl(this.#cfg, jobId, false), progressBody(value), jobId, {
        waitsMs: this.#cfg.retryWaitsMs,
        log: this.#log,
        signal: this.#hardStop.signal,
        what: 'progress update',
      })
      .then(() => undefined);
  }

  async #stopLoop(): Promise<void> {
    const url = stopUrl(this.#cfg);
    if (url === undefined) {
      this.#log.log('WARN', 'RUNPOD_WEBHOOK_GET_JOB has no /job-take/ segment: the stop channel is disabled');
      return;
    }
    const signal = this.#stopChannel.signal;
    while (!signal.aborted) {
      let wait = STOP_IDLE_WAIT_MS;
      try {
        const res = await this.#http.request('GET', url, { signal, timeoutMs: LONG_POLL_TIMEOUT_MS });
        if (res.status === 429) wait = RATE_LIMITED_WAIT_MS;
        else if (res.status >= 300) this.#log.log('DEBUG', `Stop channel answered HTTP ${res.status}`);
        else if (this.#applyStops(res) > 0) wait = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (!isTimeout(err)) this.#log.log('DEBUG', `Stop channel failed: ${describe(err)}`);
      }
      if (wait > 0) await this.#sleep(wait, signal);
    }
  }

  /** Returns how many ids the service sent; ids of jobs not running here are kept a while (EARLY_STOP_KEEP_MS). */
  #applyStops(res: HttpResponse): number {
    if (res.status !== 200 || res.text === '') return 0;
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      return 0;
    }
    if (!isPlainObject(body) || !Array.isArray(body.jobsToStop)) return 0;
    const ids = body.jobsToStop.filter((id): id is string => typeof id === 'string');
    for (const id of ids) {
      const job = this.#running.get(id);
      if (job === undefined) this.#keepEarlyStop(id);
      if (job === undefined || job.controller.signal.aborted) continue;
      this.#log.log('INFO', 'Stop requested by the service; aborting the job', id);
      job.controller.abort(new Error(`Job ${id} was stopped by the service`));
    }
    return ids.length;
  }

  #keepEarlyStop(id: string): void {
    const now = Date.now();
    for (const [old, at] of this.#earlyStops) {
      // Oldest first (insertion order): stop at the first one still young enough, unless over the cap.
      if (now - at < EARLY_STOP_KEEP_MS && this.#earlyStops.size < EARLY_STOP_MAX) break;
      this.#earlyStops.delete(old);
    }
    this.#earlyStops.delete(id); // set() alone would keep a repeated id at its old place in the order
    this.#earlyStops.set(id, now);
  }

  #takeEarlyStop(id: string): boolean {
    const at = this.#earlyStops.get(id);
    if (at === undefined) return false;
    this.#earlyStops.delete(id);
    return Date.now() - at < EARLY_STOP_KEEP_MS;
  }

  #nextConcurrency(): number {
    const modifier = this.#opts.concurrencyModifier;
    if (modifier === undefined) return this.#concurrency;
    try {
      const next = modifier(this.#concurrency);
      if (Number.isInteger(next) && next >= 1) return next;
      this.#log.log('WARN', `concurrencyModifier returned ${String(next)}; keeping ${this.#concurrency}`);
    } catch (err) {
      this.#log.log('ERROR', `concurrencyModifier threw: ${describe(err)}`);
    }
    return this.#concurrency;
  }

  #whenSlotFreed(): Promise<void> {
    this.#slotFreed ??= Promise.withResolvers<void>();
    return this.#slotFreed.promise;
  }

  #notifySlotFreed(): void {
    const waiting = this.#slotFreed;
    this.#slotFreed = undefined;
    waiting?.resolve();
  }

  /** An abortable wait; resolves early (never rejects) when the signal fires. */
  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await delay(ms, undefined, { signal });
    } catch {
      /* aborted: the caller's loop condition takes it from here */
    }
  }
}

function nextBackoff(current: number): number {
  return current === 0 ? ERROR_BACKOFF_MIN_MS : Math.min(ERROR_BACKOFF_MAX_MS, current * 2);
}

function isTimeout(err: unknown): boolean {
  return err instanceof DOMException && err.name === 'TimeoutError';
}

function describe(err: unknown): string {
  return describeHttpError(coerceError(err));
}
