// The worker's HTTP calls, on Node's built-in fetch. Every request carries the raw key (no `Bearer`), JSON content
// type and our User-Agent (spec 1.5); posts retry on 5xx the way the Python SDK's aiohttp-retry does (spec 1.10).

import { setTimeout as delay } from 'node:timers/promises';

import { USER_AGENT } from './env.ts';
import type { WorkerLogger } from './log.ts';

// Python's aiohttp session allows any request 600 s; long polls get their own 90 s bound from the caller.
const SESSION_TIMEOUT_MS = 600_000;

export interface HttpResponse {
  status: number;
  contentType: string;
  text: string;
}

export interface RequestOptions {
  body?: string;
  /** Aborts the request (shutdown); the promise then rejects. */
  signal?: AbortSignal;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

export class WorkerHttp {
  readonly #apiKey: string;

  constructor(apiKey: string) {
    this.#apiKey = apiKey;
  }

  /** One request; rejects on connection errors, timeouts and aborts, resolves for every HTTP status. */
  async request(method: 'GET' | 'POST', url: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? SESSION_TIMEOUT_MS);
    const signal = opts.signal === undefined ? timeout : AbortSignal.any([opts.signal, timeout]);
    const res = await fetch(url, {
      method,
      headers: {
        Authorization: this.#apiKey,
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        ...opts.headers,
      },
      body: opts.body,
      signal,
    });
    // Always drain the body: an unread body pins the keep-alive socket.
    const text = await res.text();
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text };
  }

  /**
   * POST a result, chunk or progress body. 5xx and connection errors are retried with the given waits (Python:
   * 3 attempts, 2 s then 3 s); a 4xx is final. Resolves true when the service accepted it; never rejects.
   */
  async post(
    url: string,
    body: string,
    jobId: string,
    opts: { waitsMs: readonly number[]; log: WorkerLogger; signal?: AbortSignal; what: string },
  ): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      let failure: string;
      try {
        const res = await this.request('POST', url, {
          body,
          signal: opts.signal,
          // The Python SDK sends the job id this way too; handy in server and proxy logs.
          headers: { 'X-Request-ID': jobId },
        });
        if (res.status >= 200 && res.status < 300) return true;
        failure = `HTTP ${res.status}${res.text === '' ? '' : `: ${res.text.slice(0, 200)}`}`;
        if (res.status < 500) {
          opts.log.log('ERROR', `Failed to post ${opts.what}: ${failure} (not retried)`, jobId);
          return false;
        }
      } catch (err) {
        if (opts.signal?.aborted === true) return false;
        failure = err instanceof Error ? describeFetchError(err) : String(err);
      }
      const wait = opts.waitsMs[attempt];
      if (wait === undefined) {
        opts.log.log('ERROR', `Failed to post ${opts.what} after ${attempt + 1} attempts: ${failure}`, jobId);
        return false;
      }
      opts.log.log('WARN', `Posting ${opts.what} failed (${failure}); retrying in ${wait} ms`, jobId);
      try {
        await delay(wait, undefined, { signal: opts.signal });
      } catch {
        return false; // worker stopped hard while waiting
      }
    }
  }
}

/** fetch hides the useful part ("ECONNREFUSED") in `cause`. */
export function describeFetchError(err: Error): string {
  const cause = err.cause;
  if (cause instanceof Error) return `${err.message}: ${cause.message}`;
  return err.message;
}
