// The worker's HTTP calls, on node:http / node:https with one keep-alive agent per worker. Every request carries the
// raw key (no `Bearer`), JSON content type and our User-Agent (spec 1.5); posts retry on 5xx the way the Python SDK's
// aiohttp-retry does (spec 1.10).
//
// Not fetch: undici's WHATWG streams, Request/Headers objects and a composite AbortSignal per call cost about as
// much CPU per job as the server spends on it. This module keeps fetch's observable behaviour: the same request
// headers, redirects followed (as fetch and aiohttp do), gzip/deflate/br bodies decoded, rejection with a
// `TimeoutError` DOMException on timeout and with the signal's reason on abort.

import * as http from 'node:http';
import * as https from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';

import { USER_AGENT } from './env.ts';
import { coerceError } from './errors.ts';
import type { WorkerLogger } from './log.ts';

// Python's aiohttp session allows any request 600 s; long polls get their own 90 s bound from the caller.
const SESSION_TIMEOUT_MS = 600_000;
// A worker holds a take and a stop long poll, a ping, and one result post per running job at once; fetch's pool had
// no per-origin cap, so this one only guards against runaway growth.
const MAX_SOCKETS_PER_ORIGIN = 1024;
// As fetch: at most 20 redirects.
const MAX_REDIRECTS = 20;

// The headers fetch added on its own, kept so the service sees exactly what it saw before (spec 1.5 captures
// `Accept: */*` and `Accept-Encoding: gzip, deflate` from the Python SDK too).
const FETCH_DEFAULT_HEADERS = [
  'accept',
  '*/*',
  'accept-language',
  '*',
  'sec-fetch-mode',
  'cors',
  'accept-encoding',
  'gzip, deflate',
] as const;

export interface HttpResponse {
  status: number;
  contentType: string;
  text: string;
}

export interface RequestOptions {
  body?: string;
  /** Aborts the request (shutdown); the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/**
 * Callbacks per signal, behind a single 'abort' listener: many requests share a signal (the take loop's, the hard
 * stop of every result post), and one EventTarget listener each would trip Node's listener-leak warning.
 */
const abortWatchers = new WeakMap<AbortSignal, Set<() => void>>();

function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let set = abortWatchers.get(signal);
  if (set === undefined) {
    const callbacks = new Set<() => void>();
    set = callbacks;
    abortWatchers.set(signal, callbacks);
    signal.addEventListener(
      'abort',
      () => {
        for (const cb of callbacks) cb();
        callbacks.clear();
      },
      { once: true },
    );
  }
  const callbacks = set;
  callbacks.add(callback);
  return () => callbacks.delete(callback);
}

export class WorkerHttp {
  readonly #apiKey: string;
  #httpAgent: http.Agent | undefined;
  #httpsAgent: https.Agent | undefined;
  #inFlight = 0;
  #closing = false;

  constructor(apiKey: string) {
    this.#apiKey = apiKey;
  }

  /**
   * Close the pooled keep-alive connections (worker stopped), at once or, when a request is still in flight (a
   * progress post a handler did not await), as soon as none is. A later request still works, on a fresh connection.
   */
  destroy(): void {
    this.#closing = true;
    if (this.#inFlight === 0) this.#destroyAgents();
  }

  #destroyAgents(): void {
    this.#httpAgent?.destroy();
    this.#httpsAgent?.destroy();
    this.#httpAgent = undefined;
    this.#httpsAgent = undefined;
  }

  /** One request; rejects on connection errors, timeouts and aborts, resolves for every HTTP status. */
  request(method: 'GET' | 'POST', url: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      const { signal } = opts;
      if (signal?.aborted === true) {
        reject(abortReason(signal));
        return;
      }
      let req: ClientRequest | undefined;
      let settled = false;
      let redirects = 0;
      let currentMethod: string = method;
      let body = opts.body;
      let withAuthorization = true;
      // Cleared when a redirect turns a POST into a GET: fetch then drops the body's headers too.
      let withContentType = true;
      let unwatch: (() => void) | undefined;
      this.#inFlight++;
      const settle = (): void => {
        settled = true;
        clearTimeout(timer);
        unwatch?.();
        if (--this.#inFlight === 0 && this.#closing) this.#destroyAgents();
      };
      const fail = (err: Error): void => {
        if (settled) return;
        settle();
        req?.destroy();
        reject(err);
      };
      // One timer for the whole request, redirects included (fetch's AbortSignal.timeout was unref'd too).
      const timer = setTimeout(
        () => fail(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
        opts.timeoutMs ?? SESSION_TIMEOUT_MS,
      ).unref();
      if (signal !== undefined) unwatch = onAbort(signal, () => fail(abortReason(signal)));

      const send = (target: URL): void => {
        let headers: string[];
        let r: ClientRequest;
        try {
          headers = this.#headers(target, body, opts.headers, withAuthorization, withContentType);
          const secure = target.protocol === 'https:';
          if (!secure && target.protocol !== 'http:') throw new TypeError(`Unsupported protocol in ${target.href}`);
          const options: http.RequestOptions = {
            method: currentMethod,
            hostname: target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname,
            port: target.port === '' ? (secure ? 443 : 80) : Number(target.port),
            path: target.pathname + target.search,
            headers,
            agent: secure ? this.#agentHttps() : this.#agentHttp(),
          };
          r = secure ? https.request(options) : http.request(options);
        } catch (err) {
          fail(coerceError(err));
          return;
        }
        req = r;
        // A redirected-from request still draining must not fail the one that replaced it.
        r.on('error', (err) => {
          if (req === r) fail(err);
        });
        r.on('response', (res: IncomingMessage) => {
          const status = res.statusCode ?? 0;
          const location = res.headers.location;
          if (location !== undefined && isRedirect(status)) {
            // Drain and follow, as fetch does: 303 (and 301/302 after a POST) becomes a GET without a body, and
            // the key is not sent to another origin.
            res.resume();
            let next: URL;
            try {
              next = new URL(location, target);
            } catch {
              fail(new TypeError(`Invalid redirect location from ${target.href}: ${location}`));
              return;
            }
            if (++redirects > MAX_REDIRECTS) {
              fail(new TypeError(`Too many redirects (last: ${next.href})`));
              return;
            }
            if (status === 303 ? currentMethod !== 'GET' : status <= 302 && currentMethod === 'POST') {
              currentMethod = 'GET';
              body = undefined;
              withContentType = false;
            }
            if (next.origin !== target.origin) withAuthorization = false;
            send(next);
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', fail);
          res.on('close', () => {
            // Normally after 'end' (settled by then): no error object is built for nothing, its stack is not cheap.
            if (!settled) fail(new Error(`Connection closed before the response from ${target.href} ended`));
          });
          res.on('end', () => {
            if (settled) return;
            let text: string;
            try {
              text = decodeBody(chunks, res.headers['content-encoding']);
            } catch (err) {
              fail(coerceError(err));
              return;
            }
            settle();
            resolve({ status, contentType: res.headers['content-type'] ?? '', text });
          });
        });
        r.end(body);
      };

      let target: URL;
      try {
        target = new URL(url);
      } catch {
        fail(new TypeError(`Invalid URL: ${url}`));
        return;
      }
      send(target);
    });
  }

  /** The header list fetch sent: ours first, then its defaults, then Content-Length for a body. */
  #headers(
    target: URL,
    body: string | undefined,
    extra: Record<string, string> | undefined,
    withAuthorization: boolean,
    withContentType: boolean,
  ): string[] {
    const headers = ['Host', target.host, 'Connection', 'keep-alive'];
    if (withAuthorization) headers.push('Authorization', this.#apiKey);
    if (withContentType) headers.push('Content-Type', 'application/json');
    headers.push('User-Agent', USER_AGENT);
    if (extra !== undefined) for (const key of Object.keys(extra)) headers.push(key, extra[key]!);
    headers.push(...FETCH_DEFAULT_HEADERS);
    if (body !== undefined) headers.push('Content-Length', String(Buffer.byteLength(body)));
    return headers;
  }

  #agentHttp(): http.Agent {
    return (this.#httpAgent ??= new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN }));
  }

  #agentHttps(): https.Agent {
    return (this.#httpsAgent ??= new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN }));
  }

  /**
   * POST a result, chunk or progress body. 5xx and connection errors are retried with the given waits (Python:
   * 3 attempts, 2 s then 3 s); connection errors and 502/503/504 with `unreachableWaitsMs` when given, counted
   * apart; a 4xx is final. Resolves true when the service accepted it; never rejects.
   */
  async post(
    url: string,
    body: string,
    jobId: string,
    opts: {
      waitsMs: readonly number[];
      unreachableWaitsMs?: readonly number[];
      log: WorkerLogger;
      signal?: AbortSignal;
      what: string;
    },
  ): Promise<boolean> {
    // The Python SDK sends the job id this way too; handy in server and proxy logs.
    const reqOpts: RequestOptions = { body, signal: opts.signal, headers: { 'X-Request-ID': jobId } };
    // Failures of each kind count on their own schedule: answered 5xx, and an unreachable service.
    let answered = 0;
    let unreachable = 0;
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      let wait: number | undefined;
      try {
        const res = await this.request('POST', url, reqOpts);
        if (res.status >= 200 && res.status < 300) return true;
        failure = `HTTP ${res.status}${res.text === '' ? '' : `: ${res.text.slice(0, 200)}`}`;
        if (res.status < 500) {
          opts.log.log('ERROR', `Failed to post ${opts.what}: ${failure} (not retried)`, jobId);
          return false;
        }
        // A proxy in front of a server that is restarting, or the store away (503 STORE_UNAVAILABLE).
        const away = opts.unreachableWaitsMs !== undefined && UNREACHABLE_STATUSES.has(res.status);
        wait = away ? opts.unreachableWaitsMs![unreachable++] : opts.waitsMs[answered++];
      } catch (err) {
        if (opts.signal?.aborted === true) return false;
        failure = err instanceof Error ? describeHttpError(err) : String(err);
        // Without a schedule of its own, one count for every failure, as Python's retry keeps.
        wait = opts.unreachableWaitsMs ? opts.unreachableWaitsMs[unreachable++] : opts.waitsMs[answered++];
      }
      if (wait === undefined) {
        opts.log.log('ERROR', `Failed to post ${opts.what} after ${attempt} attempts: ${failure}`, jobId);
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

/** Answers that say the service is unreachable behind them (a gateway), or its store is: retried as unreachable. */
const UNREACHABLE_STATUSES = new Set([502, 503, 504]);

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** What fetch rejected with: the signal's reason (an AbortError DOMException unless the caller gave one). */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}

/** UTF-8 text of a body, decompressed if the service compressed it; a BOM is dropped, as fetch's text() does. */
function decodeBody(chunks: Buffer[], encoding: string | undefined): string {
  let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  if (encoding !== undefined && buf.length > 0) {
    for (const coding of encoding.toLowerCase().split(',').reverse()) {
      const c = coding.trim();
      if (c === 'gzip' || c === 'x-gzip') buf = gunzipSync(buf);
      else if (c === 'deflate') buf = (buf[0]! & 0x0f) === 0x08 ? inflateSync(buf) : inflateRawSync(buf);
      else if (c === 'br') buf = brotliDecompressSync(buf);
      else if (c !== 'identity' && c !== '') break; // unknown coding: fetch hands the bytes over as they came
    }
  }
  const text = buf.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Node's network errors name the useful part ("ECONNREFUSED") in the message or `code`; wrapped ones in `cause`. */
export function describeHttpError(err: Error): string {
  let message = err.message;
  // A host name with several addresses (localhost: ::1 and 127.0.0.1) fails as an AggregateError with no message.
  if (message === '' && err instanceof AggregateError) {
    message = (err.errors as unknown[]).map((e) => (e instanceof Error ? e.message : String(e))).join('; ');
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && !message.includes(code)) message = message === '' ? code : `${message} (${code})`;
  const cause = err.cause;
  if (cause instanceof Error) return `${message}: ${describeHttpError(cause)}`;
  return message;
}
