// The one place the client talks HTTP: URL and query building, auth, per-request timeouts combined with the
// caller's AbortSignal, JSON decoding, the server's error shape, and retries. Only fetch, AbortSignal, URL and
// timers are used, so this runs unchanged in Node, Deno, Bun and browsers.

import { CLIENT_ERROR_CODES, WharfApiError } from './errors.ts';

export const CLIENT_VERSION = '0.1.0';

export interface ClientOptions {
  /** Where the server is, e.g. `http://127.0.0.1:8080` (no `/v1` or `/v2`: the client adds them). */
  baseUrl: string;
  apiKey: string;
  /** Per request, in ms (default 30000). Long polls get their server-side wait on top. */
  timeoutMs?: number;
  /**
   * Retries of one request (default 3). Reads, cancel, purge and PATCH updates are retried on 429, 502, 503, 504
   * and network errors; calls that create something (run, runsync, retry, creates, deletes) only on 429, which the
   * server answers before doing anything. Exponential backoff with jitter; Retry-After wins when it is longer.
   */
  retries?: number;
  /** A fetch to use instead of the global one (tests, proxies, instrumented fetches). */
  fetch?: typeof fetch;
  /** Sent as User-Agent where the platform lets it be set (not in browsers). */
  userAgent?: string;
  /** A Retry-After longer than this (ms) is not waited for: the 429 or 503 is thrown instead. Default 60000. */
  maxRetryDelayMs?: number;
}

/**
 * How a call may be retried. `idempotent`: repeating it cannot do harm (reads, cancel, purge, PATCH), so it is
 * retried on 429, 502, 503, 504 and network errors. `once`: repeating it could do the work twice (submitting a job,
 * creating or deleting a resource), so it is retried only on 429: the rate limiter refuses before the route runs.
 */
export type RetryClass = 'idempotent' | 'once';

export type QueryValue = string | number | boolean | readonly (string | number | boolean)[] | null | undefined;
export type Query = Record<string, QueryValue>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query | undefined;
  body?: unknown;
  retry: RetryClass;
  signal?: AbortSignal | undefined;
  /** Added to the per-request timeout: the wait of a long poll. */
  waitMs?: number | undefined;
}

const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 8000;

/** Path segment encoding for ids that come from callers. */
export const seg = (s: string): string => encodeURIComponent(s);

/** Query string: arrays repeat the key, booleans are `true`/`false`, null and undefined are left out. */
export function queryString(q: Query | undefined): string {
  if (!q) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(q)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const v of value as readonly unknown[]) params.append(key, String(v));
    else params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Retry-After as ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Full-jitter exponential backoff: a random delay in [base/2, base] with base = 250 ms × 2^attempt, capped. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return Math.round(base / 2 + random() * (base / 2));
}

const RETRY_ALWAYS = new Set([429]);
const RETRY_IDEMPOTENT = new Set([429, 502, 503, 504]);

/** setTimeout that rejects with the signal's reason when the signal aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const isBrowser = (): boolean => typeof (globalThis as { document?: unknown }).document !== 'undefined';

export class Transport {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly retries: number;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof fetch;
  private readonly userAgent: string | undefined;
  private readonly maxRetryDelayMs: number;

  constructor(opts: ClientOptions) {
    if (!opts || typeof opts.baseUrl !== 'string' || opts.baseUrl === '') {
      throw new TypeError('WharfClient: baseUrl is required');
    }
    if (typeof opts.apiKey !== 'string' || opts.apiKey === '') throw new TypeError('WharfClient: apiKey is required');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.apiKey = opts.apiKey;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.retries = Math.max(0, Math.floor(opts.retries ?? 3));
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 60_000;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('WharfClient: no fetch available; pass options.fetch');
    // Bound: a browser's fetch throws "Illegal invocation" when called as a method of another object.
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.userAgent = opts.userAgent ?? (isBrowser() ? undefined : `wharf-client-js/${CLIENT_VERSION}`);
  }

  url(path: string, query?: Query): string {
    return `${this.baseUrl}${path}${queryString(query)}`;
  }

  /** One call, with retries; resolves with the decoded JSON body (undefined for 204). */
  async request<T>(spec: RequestSpec): Promise<T> {
    const url = this.url(spec.path, spec.query);
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${this.apiKey}` };
    if (this.userAgent) headers['user-agent'] = this.userAgent;
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    const timeoutMs = this.timeoutMs + (spec.waitMs ?? 0);
    const retryOn = spec.retry === 'idempotent' ? RETRY_IDEMPOTENT : RETRY_ALWAYS;

    for (let attempt = 0; ; attempt++) {
      spec.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
      let res: Response;
      let text: string;
      try {
        res = await this.fetchImpl(url, { method: spec.method, headers, body, signal });
        text = await res.text();
      } catch (error) {
        if (spec.signal?.aborted) throw spec.signal.reason;
        if (timeout.aborted) {
          throw new WharfApiError({
            status: 0,
            code: CLIENT_ERROR_CODES.timeout,
            message: `${spec.method} ${spec.path}: no answer within ${timeoutMs} ms`,
            cause: error,
          });
        }
        const failure = new WharfApiError({
          status: 0,
          code: CLIENT_ERROR_CODES.network,
          message: `${spec.method} ${spec.path}: ${(error as Error)?.message ?? String(error)}`,
          cause: error,
        });
        if (spec.retry === 'idempotent' && attempt < this.retries) {
          await sleep(backoffMs(attempt), spec.signal);
          continue;
        }
        throw failure;
      }

      if (res.ok) return decode<T>(res, text, spec);

      const error = toApiError(res, text, spec);
      if (attempt < this.retries && retryOn.has(res.status)) {
        const retryAfter = error.retryAfterMs;
        if (retryAfter === undefined || retryAfter <= this.maxRetryDelayMs) {
          // Retry-After is a floor; a little jitter on top keeps many clients from coming back in the same ms.
          const delay =
            retryAfter === undefined
              ? backoffMs(attempt)
              : retryAfter + Math.round(Math.random() * Math.min(250, retryAfter / 10));
          await sleep(Math.max(delay, retryAfter ?? 0), spec.signal);
          continue;
        }
      }
      throw error;
    }
  }
}

function decode<T>(res: Response, text: string, spec: RequestSpec): T {
  if (res.status === 204 || text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new WharfApiError({
      status: res.status,
      code: CLIENT_ERROR_CODES.invalidResponse,
      message: `${spec.method} ${spec.path}: the answer is not JSON (${text.slice(0, 120)})`,
      cause: error,
    });
  }
}

/** The server's `{code, message, details}`, or a stand-in for answers from something else (a proxy's HTML page). */
function toApiError(res: Response, text: string, spec: RequestSpec): WharfApiError {
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const b = (parsed && typeof parsed === 'object' ? parsed : {}) as {
    code?: unknown;
    message?: unknown;
    details?: unknown;
    errors?: { message?: unknown; extensions?: { code?: unknown } }[];
  };
  // GraphQL answers a bad document with HTTP 400 and `{errors: [{message, extensions: {code}}]}`.
  const gql = Array.isArray(b.errors) ? b.errors[0] : undefined;
  const code =
    typeof b.code === 'string'
      ? b.code
      : typeof gql?.extensions?.code === 'string'
        ? gql.extensions.code
        : `HTTP_${res.status}`;
  const message =
    typeof b.message === 'string'
      ? b.message
      : typeof gql?.message === 'string'
        ? gql.message
        : `${spec.method} ${spec.path} failed with HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
  return new WharfApiError({
    status: res.status,
    code,
    message,
    details: b.details ?? b.errors,
    retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
    requestId: res.headers.get('x-request-id') ?? undefined,
  });
}
