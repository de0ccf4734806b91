import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { JOB_STATUSES, jobTimes, type Job, type WorkerState } from '../domain/index.ts';
import { workerCounts, type JobEngine, type JobEvent } from '../engine/index.ts';
import { COUNT_OF_STATE, type Store } from '../store/index.ts';

/**
 * What the scrape reads: the store for counts, the fleet status (the supervisor's, or the leader's shared one) for
 * throttled workers and those a crash loop holds back.
 */
export interface MetricsSources {
  store: Store;
  engine: JobEngine;
  fleetStatus?: (endpointId: string) => { throttled: number; unhealthy: number };
}

/** How a webhook attempt ended: delivered (200), pending (another attempt follows), failed (no attempt left). */
export type WebhookOutcome = 'delivered' | 'pending' | 'failed';

const WORKER_STATES: readonly WorkerState[] = ['initializing', 'idle', 'running', 'throttled', 'unhealthy', 'standby'];

/** Process metrics (CPU, memory, event loop, GC) exist once per process, however many servers a test starts. */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * Wharf's Prometheus metrics (docs/observability.md). Labels are bounded: endpoint ids, route patterns, states;
 * never job ids, worker ids or raw URLs. Counters and histograms are fed by events (engine, supervisor, HTTP hooks);
 * gauges are read from the store at scrape time, so a scrape shows the store's truth, shared by every node.
 */
export class WharfMetrics {
  readonly registry = new Registry();
  private readonly src: MetricsSources;
  private readonly unsubscribe: Array<() => void> = [];

  private readonly jobs: Gauge<'endpoint' | 'state'>;
  private readonly queueDepth: Gauge<'endpoint' | 'priority'>;
  private readonly oldestQueued: Gauge<'endpoint'>;
  private readonly workers: Gauge<'endpoint' | 'state'>;
  private readonly submitted: Counter<'endpoint'>;
  private readonly finished: Counter<'endpoint' | 'status'>;
  private readonly retried: Counter<'endpoint' | 'cause'>;
  private readonly delay: Histogram<'endpoint'>;
  private readonly execution: Histogram<'endpoint' | 'status'>;
  private readonly coldStarts: Histogram<'endpoint'>;
  private readonly webhookAttempts: Counter<'endpoint' | 'outcome'>;
  private readonly webhookFailures: Counter<'endpoint'>;
  private readonly rateLimited: Counter<'route' | 'method'>;
  private readonly http: Histogram<'route' | 'method' | 'status_class'>;

  constructor(src: MetricsSources) {
    this.src = src;
    const registers = [this.registry];
    this.jobs = new Gauge({
      name: 'wharf_jobs',
      help: 'Jobs held by the store per endpoint and state (finished ones until their results expire).',
      labelNames: ['endpoint', 'state'],
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'wharf_queue_depth',
      help: 'Queued jobs per endpoint, by priority (normal, low).',
      labelNames: ['endpoint', 'priority'],
      registers,
    });
    this.oldestQueued = new Gauge({
      name: 'wharf_queue_oldest_age_seconds',
      help: 'Age of the oldest queued (non-lowPriority) job per endpoint; 0 when none waits.',
      labelNames: ['endpoint'],
      registers,
    });
    this.workers = new Gauge({
      name: 'wharf_workers',
      help: 'Workers per endpoint and state (running = holding a job; throttled = wanted but no capacity).',
      labelNames: ['endpoint', 'state'],
      registers,
    });
    this.submitted = new Counter({
      name: 'wharf_jobs_submitted_total',
      help: 'Jobs submitted on this node (/run, /runsync, the OpenAI route).',
      labelNames: ['endpoint'],
      registers,
    });
    this.finished = new Counter({
      name: 'wharf_jobs_finished_total',
      help: 'Jobs that reached a final state on this node, by status (COMPLETED, FAILED, CANCELLED, TIMED_OUT).',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.retried = new Counter({
      name: 'wharf_jobs_retried_total',
      help: 'Jobs put back into the queue: after a lost worker (lost-worker) or by /retry (retry).',
      labelNames: ['endpoint', 'cause'],
      registers,
    });
    this.delay = new Histogram({
      name: 'wharf_job_delay_seconds',
      help: 'delayTime of finished jobs: submission (or retry) to the start of the last attempt.',
      labelNames: ['endpoint'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.execution = new Histogram({
      name: 'wharf_job_execution_seconds',
      help: 'executionTime of finished jobs: run time of the last attempt.',
      labelNames: ['endpoint', 'status'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
      registers,
    });
    this.coldStarts = new Histogram({
      name: 'wharf_worker_cold_start_seconds',
      help: 'Cold starts of managed workers: time from start to the first request (its _count counts cold starts).',
      labelNames: ['endpoint'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: 'wharf_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome (delivered; pending = failed, retried later; failed = gave up).',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });
    this.webhookFailures = new Counter({
      name: 'wharf_webhook_failures_total',
      help: 'Webhook deliveries that failed for good (every attempt failed).',
      labelNames: ['endpoint'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'wharf_http_rate_limited_total',
      help: 'Requests answered 429 (rate or concurrency limit), by route pattern.',
      labelNames: ['route', 'method'],
      registers,
    });
    this.http = new Histogram({
      name: 'wharf_http_request_duration_seconds',
      help: 'HTTP request duration by route pattern, method and status class (long polls included).',
      labelNames: ['route', 'method', 'status_class'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
  }

  /** Subscribe to the engine's events. Idempotent with stop(). */
  start(): void {
    if (this.unsubscribe.length > 0) return;
    this.unsubscribe.push(
      this.src.engine.onEvent((e) => this.onJobEvent(e)),
      this.src.engine.onTerminal((job) => this.onTerminal(job)),
    );
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private onJobEvent(e: JobEvent): void {
    const endpoint = e.job.endpointId;
    switch (e.type) {
      case 'submitted':
        this.submitted.inc({ endpoint });
        return;
      case 'requeued':
        this.retried.inc({ endpoint, cause: e.cause });
        return;
      default: {
        const unreachable: never = e;
        return unreachable;
      }
    }
  }

  private onTerminal(job: Job): void {
    const endpoint = job.endpointId;
    this.finished.inc({ endpoint, status: job.status });
    // A job cancelled before any worker took it has neither time.
    const times = jobTimes(job, job.completedAt ?? this.src.engine.clock.now());
    if (times.delayTime !== undefined) this.delay.observe({ endpoint }, times.delayTime / 1000);
    if (times.executionTime !== undefined) {
      this.execution.observe({ endpoint, status: job.status }, times.executionTime / 1000);
    }
  }

  /** The supervisor saw a worker's first request `ms` after starting it. */
  coldStart(endpointId: string, ms: number): void {
    this.coldStarts.observe({ endpoint: endpointId }, Math.max(0, ms) / 1000);
  }

  /** One webhook attempt ended (for the webhook deliverer to call). */
  webhookAttempt(endpointId: string, outcome: WebhookOutcome): void {
    this.webhookAttempts.inc({ endpoint: endpointId, outcome });
    if (outcome === 'failed') this.webhookFailures.inc({ endpoint: endpointId });
  }

  /** One HTTP response: `route` is the route pattern (never the raw URL), `seconds` its duration. */
  observeHttp(route: string, method: string, statusCode: number, seconds: number): void {
    this.http.observe({ route, method, status_class: `${Math.floor(statusCode / 100)}xx` }, seconds);
    if (statusCode === 429) this.rateLimited.inc({ route, method });
  }

  /** The exposition text: gauges read from the store now, then everything this server and process counted. */
  async scrape(): Promise<string> {
    await this.collectGauges();
    const [own, proc] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${proc}`;
  }

  /**
   * Per endpoint: job counts, queue snapshot and running jobs per worker (three indexed reads), plus one listing of
   * all workers. Values are gathered first and written in one synchronous step, so overlapping scrapes never see a
   * half-filled gauge, and endpoints deleted since the last scrape disappear.
   */
  private async collectGauges(): Promise<void> {
    const { store } = this.src;
    const [endpoints, allWorkers] = await Promise.all([store.listEndpoints(null), store.listWorkers()]);
    const now = this.src.engine.clock.now();
    const byEndpoint = new Map<string, typeof allWorkers>();
    for (const w of allWorkers) {
      const list = byEndpoint.get(w.endpointId) ?? [];
      list.push(w);
      byEndpoint.set(w.endpointId, list);
    }
    const rows = await Promise.all(
      endpoints.map(async (e) => {
        const [counts, snapshot, load] = await Promise.all([
          store.jobCounts(e.id),
          store.queueSnapshot(e.id),
          store.runningByWorker(e.id),
        ]);
        // As /health counts them.
        const workers: Record<WorkerState, number> = workerCounts(
          byEndpoint.get(e.id) ?? [],
          load,
          this.src.fleetStatus?.(e.id),
        );
        return { id: e.id, counts, snapshot, workers };
      }),
    );
    this.jobs.reset();
    this.queueDepth.reset();
    this.oldestQueued.reset();
    this.workers.reset();
    for (const r of rows) {
      const endpoint = r.id;
      for (const state of JOB_STATUSES) this.jobs.set({ endpoint, state }, r.counts[COUNT_OF_STATE[state]]);
      this.queueDepth.set({ endpoint, priority: 'normal' }, r.snapshot.inQueue);
      this.queueDepth.set({ endpoint, priority: 'low' }, r.snapshot.inQueueLowPriority);
      const oldest = r.snapshot.oldestQueuedAt;
      this.oldestQueued.set({ endpoint }, oldest === null ? 0 : Math.max(0, now - oldest) / 1000);
      for (const state of WORKER_STATES) this.workers.set({ endpoint, state }, r.workers[state]);
    }
  }
}
