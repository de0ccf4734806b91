// The queue API of one endpoint (/v2/{endpointId}/…): submit, wait, stream, cancel, retry, purge, health.

import { CLIENT_ERROR_CODES, WharfApiError } from './errors.ts';
import { seg, type Transport } from './http.ts';
import {
  isFinalStatus,
  type CancelResult,
  type EndpointHealth,
  type JobStatus,
  type JobStatusName,
  type PurgeResult,
  type RequestsPage,
  type RetryResult,
  type RunResult,
  type SubmitRequest,
  type WebhookDelivery,
} from './types.ts';

export interface CallOptions {
  signal?: AbortSignal;
}

export interface RunSyncOptions extends CallOptions {
  /** How long each server-side wait may last, in ms (default: min(90000, timeoutMs); the server allows 1000–300000). */
  wait?: number;
  /**
   * How long runSync keeps waiting in all, in ms (default 90000; `Infinity` waits for the final state). When it runs
   * out, the last non-final status is returned (IN_QUEUE or IN_PROGRESS, with the job id), as /runsync does. A
   * last wait shorter than 1000 ms waits 1000 ms (the server's minimum), so the answer may come up to 1 s later.
   */
  timeoutMs?: number;
}

export interface StatusSyncOptions extends CallOptions {
  /** How long the server may wait for the job to finish, in ms (default 90000; 1000–300000, less waits 1000). */
  wait?: number;
}

export interface StatusOptions extends CallOptions {
  /** Reset the job's time to live to this many ms from now (needs a key that may write). */
  ttl?: number;
}

export interface StreamOptions extends CallOptions {
  /**
   * Give up after this many ms in all: the iteration throws a WharfApiError with code CLIENT_TIMEOUT (a last poll
   * waits at least 1000 ms, the server's minimum, so up to 1 s later).
   */
  timeoutMs?: number;
  /** How long each poll may wait for new chunks on the server, in ms (default 10000; 1000–300000, less waits 1000). */
  wait?: number;
}

/** What a finished stream iteration returns (`for await` ignores it; `next()` shows it once `done`). */
export interface StreamEnd {
  status: JobStatusName;
}

export interface RequestsQuery {
  /** Jobs per page, 1–500 (default 50). */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

const MAX_WAIT_MS = 300_000;
const DEFAULT_SYNC_WAIT_MS = 90_000;
const DEFAULT_STREAM_WAIT_MS = 10_000;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A submission body. An object whose `input` member is itself an object is taken as a full request (so `webhook`,
 * `policy` and `s3Config` pass through); anything else is the input and is wrapped as `{input}` — the rule of the
 * official Python client.
 */
export function toSubmission<I>(request: I | SubmitRequest<I>): SubmitRequest<I> {
  if (isPlainObject(request) && isPlainObject(request['input'])) return request as unknown as SubmitRequest<I>;
  return { input: request as I };
}

const clampWait = (ms: number, min: number): number => Math.max(min, Math.min(MAX_WAIT_MS, Math.round(ms)));

export class EndpointClient {
  readonly endpointId: string;
  private readonly http: Transport;
  private readonly base: string;

  constructor(http: Transport, endpointId: string) {
    if (typeof endpointId !== 'string' || endpointId === '') throw new TypeError('endpoint(): endpointId is required');
    this.http = http;
    this.endpointId = endpointId;
    this.base = `/v2/${seg(endpointId)}`;
  }

  /** POST /run: queue a job; resolves at once with its id. Not retried except on 429 (the job would run twice). */
  run<I>(request: I | SubmitRequest<I>, opts: CallOptions = {}): Promise<RunResult> {
    return this.http.request<RunResult>({
      method: 'POST',
      path: `${this.base}/run`,
      body: toSubmission(request),
      retry: 'once',
      signal: opts.signal,
    });
  }

  /**
   * POST /runsync, then /status-sync until the job is final or `timeoutMs` runs out (then the last status is
   * returned, not thrown). A FAILED job resolves too: look at `status` and `error`.
   */
  async runSync<I, O = unknown>(request: I | SubmitRequest<I>, opts: RunSyncOptions = {}): Promise<JobStatus<O>> {
    const total = opts.timeoutMs ?? DEFAULT_SYNC_WAIT_MS;
    const deadline = Date.now() + total;
    const wait = opts.wait ?? Math.min(DEFAULT_SYNC_WAIT_MS, total);
    const remaining = (): number => deadline - Date.now();
    const first = clampWait(Math.min(wait, remaining()), 1000);
    let job = await this.http.request<JobStatus<O>>({
      method: 'POST',
      path: `${this.base}/runsync`,
      query: { wait: first },
      body: toSubmission(request),
      retry: 'once',
      signal: opts.signal,
      waitMs: first,
    });
    while (!isFinalStatus(job.status) && remaining() > 0) {
      job = await this.statusSync<O>(job.id, { wait: Math.min(wait, remaining()), signal: opts.signal });
    }
    return job;
  }

  /** GET /status/{id}. */
  status<O = unknown>(id: string, opts: StatusOptions = {}): Promise<JobStatus<O>> {
    return this.http.request<JobStatus<O>>({
      method: 'GET',
      path: `${this.base}/status/${seg(id)}`,
      query: { ttl: opts.ttl },
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** GET /status-sync/{id}?wait=: the status once the job is final, or when `wait` ms have passed. */
  statusSync<O = unknown>(id: string, opts: StatusSyncOptions = {}): Promise<JobStatus<O>> {
    const wait = clampWait(opts.wait ?? DEFAULT_SYNC_WAIT_MS, 1000);
    return this.http.request<JobStatus<O>>({
      method: 'GET',
      path: `${this.base}/status-sync/${seg(id)}`,
      query: { wait },
      retry: 'idempotent',
      signal: opts.signal,
      waitMs: wait,
    });
  }

  /**
   * The job's stream: yields the `output` of every chunk, in order, as the worker produces them (GET /stream long
   * polls), and ends once the job is final and every chunk has been read. Breaking out of the loop stops polling.
   */
  async *stream<C = unknown>(id: string, opts: StreamOptions = {}): AsyncGenerator<C, StreamEnd, undefined> {
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    const pollWait = opts.wait ?? DEFAULT_STREAM_WAIT_MS;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new WharfApiError({
          status: 0,
          code: CLIENT_ERROR_CODES.jobTimeout,
          message: `stream of job ${id} did not end within ${opts.timeoutMs} ms`,
        });
      }
      const wait = clampWait(Math.min(pollWait, left), 1000);
      const res = await this.http.request<{ status: JobStatusName; stream?: { output?: C }[] }>({
        method: 'GET',
        path: `${this.base}/stream/${seg(id)}`,
        query: { wait },
        retry: 'idempotent',
        signal: opts.signal,
        waitMs: wait,
      });
      const chunks = Array.isArray(res.stream) ? res.stream : [];
      for (const chunk of chunks) yield chunk?.output as C;
      // A final job's chunks may come in more than one batch: stop on the first empty one.
      if (isFinalStatus(res.status) && chunks.length === 0) return { status: res.status };
    }
  }

  /** POST /cancel/{id}: CANCELLED, or the state the job had already reached. */
  cancel(id: string, opts: CallOptions = {}): Promise<CancelResult> {
    return this.http.request<CancelResult>({
      method: 'POST',
      path: `${this.base}/cancel/${seg(id)}`,
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** POST /retry/{id}: requeue a FAILED or TIMED_OUT job under the same id. */
  retry(id: string, opts: CallOptions = {}): Promise<RetryResult> {
    return this.http.request<RetryResult>({
      method: 'POST',
      path: `${this.base}/retry/${seg(id)}`,
      retry: 'once',
      signal: opts.signal,
    });
  }

  /** POST /purge-queue: remove every queued (not running) job. Retried: a second purge empties the same queue. */
  purgeQueue(opts: CallOptions = {}): Promise<PurgeResult> {
    return this.http.request<PurgeResult>({
      method: 'POST',
      path: `${this.base}/purge-queue`,
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** GET /health: job counts and worker states. */
  health(opts: CallOptions = {}): Promise<EndpointHealth> {
    return this.http.request<EndpointHealth>({
      method: 'GET',
      path: `${this.base}/health`,
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** GET /requests: recent jobs, newest first, a page at a time. */
  requests(q: RequestsQuery = {}, opts: CallOptions = {}): Promise<RequestsPage> {
    return this.http.request<RequestsPage>({
      method: 'GET',
      path: `${this.base}/requests`,
      query: { limit: q.limit, cursor: q.cursor },
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** GET /webhooks/{id}: the webhook deliveries of a job and their attempts. */
  webhookDeliveries(id: string, opts: CallOptions = {}): Promise<{ jobId: string; deliveries: WebhookDelivery[] }> {
    return this.http.request({
      method: 'GET',
      path: `${this.base}/webhooks/${seg(id)}`,
      retry: 'idempotent',
      signal: opts.signal,
    });
  }
}
