// A loopback stand-in for the service side of the worker protocol, used by the worker SDK tests. It records every
// request exactly as received (raw URL, headers, body) and long-polls job-take and job-stop like a real server, so
// an idle worker does not spin.

import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  /** Raw request target: path plus query, exactly as sent. */
  url: string;
  kind: 'take' | 'take-batch' | 'stop' | 'done' | 'stream' | 'ping' | 'other';
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  body?: string;
  contentType?: string;
}

const HOLD_MS = 150;

export class FakeService {
  readonly requests: Recorded[] = [];
  /** Jobs handed out in order; a batch take gets up to batch_size of them. */
  readonly jobs: unknown[] = [];
  /** Raw replies to the next takes, served before any job. */
  readonly takeReplies: Reply[] = [];
  /** Statuses for the next job-done posts (200 once empty). */
  readonly doneStatuses: number[] = [];
  readonly #server: Server;
  readonly #waiters = new Set<() => void>();
  readonly #listeners = new Set<(r: Recorded) => void>();
  #stops: string[] = [];

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeService> {
    const server = createServer();
    const fake = new FakeService(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = req.url ?? '';
        const rec: Recorded = {
          method: req.method ?? '',
          url,
          kind: kindOf(url),
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        fake.requests.push(rec);
        for (const l of fake.#listeners) l(rec);
        fake.#answer(rec, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get base(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The environment a Wharf server injects, with `?gpu=T` templates like RunPod's. */
  env(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    const b = `${this.base}/v2/ep`;
    return {
      RUNPOD_WEBHOOK_GET_JOB: `${b}/job-take/$ID?gpu=T`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${b}/job-done/$RUNPOD_POD_ID/$ID?gpu=T`,
      RUNPOD_WEBHOOK_POST_STREAM: `${b}/job-stream/$RUNPOD_POD_ID/$ID?gpu=T`,
      RUNPOD_WEBHOOK_PING: `${b}/ping/$RUNPOD_POD_ID?gpu=T`,
      RUNPOD_AI_API_KEY: 'key-123',
      RUNPOD_POD_ID: 'w-1',
      RUNPOD_PING_INTERVAL: '1000',
      RUNPOD_POD_HOSTNAME: 'host-1',
      RUNPOD_LOG_LEVEL: 'ERROR',
      WHARF_WORKER_RETRY_BASE_MS: '10',
      ...overrides,
    };
  }

  push(...jobs: unknown[]): void {
    this.jobs.push(...jobs);
    this.#wake();
  }

  stopJobs(ids: string[]): void {
    this.#stops.push(...ids);
    this.#wake();
  }

  of(kind: Recorded['kind'], jobId?: string): Recorded[] {
    return this.requests.filter((r) => r.kind === kind && (jobId === undefined || r.url.includes(`/${jobId}`)));
  }

  /** Parsed bodies of the posts of one kind for one job. */
  bodies(kind: 'done' | 'stream', jobId: string): unknown[] {
    return this.of(kind, jobId).map((r) => JSON.parse(r.body) as unknown);
  }

  /** Resolves with the first recorded request (past or future) matching `pred`. */
  waitFor(pred: (r: Recorded) => boolean, timeoutMs = 5_000): Promise<Recorded> {
    const seen = this.requests.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`no matching request within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (r: Recorded): void => {
        if (!pred(r)) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve(r);
      };
      this.#listeners.add(listener);
    });
  }

  async close(): Promise<void> {
    this.#wake();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(rec: Recorded, res: ServerResponse): void {
    switch (rec.kind) {
      case 'take':
      case 'take-batch':
        return this.#hold(res, () => this.#take(rec, res));
      case 'stop':
        return this.#hold(res, () => {
          if (this.#stops.length === 0) return false;
          json(res, 200, { jobsToStop: this.#stops.splice(0) });
          return true;
        });
      case 'done':
        return json(res, this.doneStatuses.shift() ?? 200, { ok: true });
      case 'stream':
        return json(res, 200, { ok: true });
      case 'ping':
        return json(res, 200, { status: 'pong' });
      case 'other':
        return json(res, 404, { error: 'not found' });
    }
  }

  #take(rec: Recorded, res: ServerResponse): boolean {
    const reply = this.takeReplies.shift();
    if (reply !== undefined) {
      res.writeHead(reply.status, reply.contentType === undefined ? {} : { 'content-type': reply.contentType });
      res.end(reply.body ?? '');
      return true;
    }
    if (this.jobs.length === 0) return false;
    if (rec.kind === 'take') {
      json(res, 200, this.jobs.shift());
    } else {
      const size = Number(/batch_size=(\d+)/.exec(rec.url)?.[1] ?? '1');
      json(res, 200, this.jobs.splice(0, size));
    }
    return true;
  }

  /** Long poll: answer now if `tryAnswer` can, else when woken, else 204 after a short hold. */
  #hold(res: ServerResponse, tryAnswer: () => boolean): void {
    if (tryAnswer()) return;
    const waiter = (): void => {
      if (res.writableEnded || res.destroyed) return finish();
      if (tryAnswer()) finish();
    };
    const finish = (): void => {
      clearTimeout(timer);
      this.#waiters.delete(waiter);
    };
    const timer = setTimeout(() => {
      finish();
      if (!res.writableEnded && !res.destroyed) res.writeHead(204).end();
    }, HOLD_MS);
    res.on('close', finish);
    this.#waiters.add(waiter);
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }
}

function kindOf(url: string): Recorded['kind'] {
  if (url.includes('/job-take-batch/')) return 'take-batch';
  if (url.includes('/job-take/')) return 'take';
  if (url.includes('/job-stop/')) return 'stop';
  if (url.includes('/job-done/')) return 'done';
  if (url.includes('/job-stream/')) return 'stream';
  if (url.includes('/ping/')) return 'ping';
  return 'other';
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
