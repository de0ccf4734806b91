// The in-process load generator: a closed loop of `concurrency` virtual clients on one undici Pool (keep-alive,
// one socket per client), each sending its next request as soon as the previous answer was read. undici's Pool is
// the lightest HTTP/1.1 client Node has (no WHATWG streams as in fetch, no per-request agent bookkeeping as in
// node:http), so it takes the least CPU from the server on a 2-core machine, and the same client measures the
// baseline and Wharf, which keeps their ratio honest.

import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { Samples, type LatencySummary } from './stats.ts';

export interface Req {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  text: string;
}

/** What the closed loop sends through: one Pool, or several behind a round robin (roundRobin below). */
export type Target = Pick<Pool, 'request'>;

export interface LoadOptions {
  pool: Target;
  concurrency: number;
  /** Stop after this long (measured part only). */
  durationMs?: number;
  /** Stop after this many requests in total. */
  total?: number;
  /** Requests sent (and not measured) before the clock starts. */
  warmupMs?: number;
  request: (i: number) => Req;
  /** Read the body and hand it here (e.g. to collect delayTime); bodies are drained unread otherwise. */
  onAnswer?: (answer: Answer, latencyMs: number) => void;
  /** Statuses counted as success (default: 200). */
  ok?: (status: number) => boolean;
}

export interface LoadResult {
  /** Answered requests in the measured window. */
  requests: number;
  /** Answered requests including the warm-up (what a server-side counter over the whole run sees). */
  answered: number;
  errors: number;
  firstError: string | null;
  elapsedMs: number;
  rps: number;
  latency: LatencySummary;
  /**
   * Little's law for a closed loop: the clients are always waiting on a request, so rps × mean latency ≈ concurrency.
   * False when the recorded latencies cannot be those of the requests counted (seen once in a full run: c=1 samples
   * of ~0 ms at 479 req/s, not reproduced since); the scenarios that report latency measure again then.
   */
  consistent: boolean;
}

export function makePool(url: string, connections: number): Pool {
  return new Pool(url, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    // Long polls (take, runsync) are legitimate here: no client-side timeout shorter than theirs.
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
}

/** Spread requests over several servers in turn, as a load balancer in front of a cluster would. */
export function roundRobin(pools: Pool[]): Target {
  let i = 0;
  return {
    request: (options: Parameters<Pool['request']>[0]) => pools[i++ % pools.length]!.request(options),
  };
}

/** One request; never throws for an HTTP status. */

export async function send(pool: Pool, req: Req, signal?: AbortSignal): Promise<Answer> {
  const res = await pool.request({
    method: req.method,
    path: req.path,
    body: req.body,
    headers: req.body === undefined ? req.headers : { 'content-type': 'application/json', ...req.headers },
    signal,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

export async function closedLoop(opts: LoadOptions): Promise<LoadResult> {
  const ok = opts.ok ?? ((s: number) => s === 200);
  const samples = new Samples();
  let next = 0;
  let errors = 0;
  let answered = 0;
  let firstError: string | null = null;
  let measuring = !opts.warmupMs;
  let warmupOver = measuring;
  let start = performance.now();
  let stopAt = measuring && opts.durationMs !== undefined ? start + opts.durationMs : Infinity;
  // The window opens once the warm-up time has passed and the server has answered at least once: on a loaded machine
  // a cold server's first answers can take longer than a short window, which then counted nothing.
  const openWindow = (): void => {
    measuring = true;
    start = performance.now();
    if (opts.durationMs !== undefined) stopAt = start + opts.durationMs;
  };
  if (opts.warmupMs) {
    setTimeout(() => {
      warmupOver = true;
      if (answered > 0) openWindow();
    }, opts.warmupMs).unref();
  }
  const total = opts.total ?? Infinity;

  const client = async (): Promise<void> => {
    while (next < total && performance.now() < stopAt) {
      const i = next++;
      const req = opts.request(i);
      const t0 = performance.now();
      const counted = measuring;
      try {
        const res = await opts.pool.request({
          method: req.method,
          path: req.path,
          body: req.body,
          headers: req.body === undefined ? req.headers : { 'content-type': 'application/json', ...req.headers },
        });
        let text = '';
        if (opts.onAnswer || !ok(res.statusCode)) text = await res.body.text();
        else await res.body.dump();
        const ms = performance.now() - t0;
        if (!ok(res.statusCode)) {
          errors++;
          firstError ??= `HTTP ${res.statusCode}: ${text.slice(0, 200)}`;
          continue;
        }
        answered++;
        if (!measuring && warmupOver) openWindow();
        if (counted && measuring) {
          samples.add(ms);
          opts.onAnswer?.({ status: res.statusCode, text }, ms);
        }
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, client));
  const elapsedMs = performance.now() - start;
  const latency = samples.summary();
  const rps = (latency.count / elapsedMs) * 1000;
  return {
    requests: latency.count,
    answered,
    errors,
    firstError,
    elapsedMs,
    rps,
    latency,
    consistent: littlesLaw(opts.concurrency, rps, latency),
  };
}

/** The same closed loop around any async operation (the BullMQ comparison adds jobs this way). */
export async function closedLoopFn(
  concurrency: number,
  durationMs: number,
  op: (i: number) => Promise<unknown>,
): Promise<LoadResult> {
  const samples = new Samples();
  let next = 0;
  let errors = 0;
  let firstError: string | null = null;
  const start = performance.now();
  const stopAt = start + durationMs;
  const client = async (): Promise<void> => {
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      try {
        await op(next++);
        samples.add(performance.now() - t0);
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsedMs = performance.now() - start;
  const latency = samples.summary();
  const requests = latency.count;
  const rps = (requests / elapsedMs) * 1000;
  return {
    requests,
    answered: requests,
    errors,
    firstError,
    elapsedMs,
    rps,
    latency,
    consistent: littlesLaw(concurrency, rps, latency),
  };
}

/** Whether rps × mean latency (the requests in flight on average) is within half of the closed loop's concurrency. */
function littlesLaw(concurrency: number, rps: number, latency: LatencySummary): boolean {
  if (latency.count === 0) return true;
  const inFlight = (rps * latency.mean) / 1000;
  return inFlight > concurrency * 0.5 && inFlight < concurrency * 1.5;
}
