import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/index.ts';
import { startServer, type WharfServer } from '../../src/cli/index.ts';
import type { Clock } from '../../src/engine/index.ts';

export const ADMIN_KEY = 'wharf_test_admin_key_0123456789';

export interface TestServer {
  server: WharfServer;
  url: string;
  key: string;
  dataDir: string;
  /** JSON request with the admin key (or `key`). Never throws on HTTP errors. */
  api(method: string, path: string, body?: unknown, opts?: RequestOpts): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface RequestOpts {
  key?: string | null;
  headers?: Record<string, string>;
  /** Send this text as the body instead of JSON-encoding `body`. */
  raw?: string;
  signal?: AbortSignal;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  json: any;
}

export async function request(
  url: string,
  method: string,
  body?: unknown,
  opts: RequestOpts = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers['authorization'] ??= `Bearer ${opts.key}`;
  let payload: string | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(url, { method, headers, body: payload, signal: opts.signal });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Fast timers so lifecycle tests run in seconds; each test file may override. */
export const FAST: Partial<Record<keyof Config, unknown>> = {
  port: 0,
  host: '127.0.0.1',
  adminKey: ADMIN_KEY,
  sweepIntervalMs: 50,
  takeWaitMs: 2000,
  stopWaitMs: 2000,
  streamWaitMs: 2000,
  executor: 'none',
  // Tests fire many requests per second from one key; test/http/rate-limits.test.ts turns the limits on.
  rateLimits: 'off',
};

/**
 * A clock the test moves by hand: real time plus an offset that only `advance()` changes, so ttl, retention and
 * execution timeouts of minutes or days are reached at once while short waits still pass in real time.
 */
export class TestClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

export interface TestServerOptions {
  /** The server's clock (default: the real one). */
  clock?: Clock;
}

export async function startTestServer(
  overrides: Partial<Record<keyof Config, unknown>> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const dataDir = (overrides['dataDir'] as string | undefined) ?? mkdtempSync(join(tmpdir(), 'wharf-test-'));
  const config = loadConfig({ argv: [], env: {}, overrides: { ...FAST, dataDir, ...overrides } });
  const server = await startServer(config, opts.clock ? { silent: true, clock: opts.clock } : { silent: true });
  return {
    server,
    url: server.url,
    key: ADMIN_KEY,
    dataDir,
    api: (method, path, body, opts = {}) =>
      request(`${server.url}${path}`, method, body, { ...opts, key: opts.key === undefined ? ADMIN_KEY : opts.key }),
    close: async () => {
      await server.close();
      if (!overrides['dataDir']) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Create a template and an endpoint through REST; returns the endpoint id. */
export async function createEndpoint(
  t: Pick<TestServer, 'api'>,
  endpoint: Record<string, unknown> = {},
  template: Record<string, unknown> = {},
): Promise<string> {
  const tpl = await t.api('POST', '/v1/templates', {
    name: `tpl-${Math.random().toString(36).slice(2)}`,
    imageName: 'file://./examples/echo-ts',
    dockerStartCmd: ['node', 'worker.ts'],
    ...template,
  });
  if (tpl.status !== 200) throw new Error(`template create failed: ${tpl.status} ${tpl.text}`);
  const ep = await t.api('POST', '/v1/endpoints', {
    name: 'test',
    templateId: tpl.json.id,
    workersMax: 0,
    ...endpoint,
  });
  if (ep.status !== 200) throw new Error(`endpoint create failed: ${ep.status} ${ep.text}`);
  return ep.json.id as string;
}

/**
 * A minimal protocol client playing the worker (the official SDK's exact requests), for protocol tests. As the SDK's
 * session does (spec §1.5), every request but the ping carries `Content-Type: application/json`, GETs included.
 */
export function protocolWorker(t: Pick<TestServer, 'url' | 'key'>, endpointId: string, workerId: string, key = t.key) {
  const base = `${t.url}/v2/${endpointId}`;
  const auth = { authorization: key };
  const session = { ...auth, 'content-type': 'application/json' };
  return {
    take: (query = 'job_in_progress=0', signal?: AbortSignal) =>
      request(`${base}/job-take/${workerId}?gpu=TEST&${query}`, 'GET', undefined, { headers: session, signal }),
    takeBatch: (n: number) =>
      request(`${base}/job-take-batch/${workerId}?gpu=TEST&batch_size=${n}&job_in_progress=0`, 'GET', undefined, {
        headers: session,
      }),
    stops: () => request(`${base}/job-stop/${workerId}?gpu=TEST`, 'GET', undefined, { headers: session }),
    done: (jobId: string, body: unknown, isStream = false) =>
      request(`${base}/job-done/${workerId}/${jobId}?gpu=TEST&isStream=${isStream}`, 'POST', undefined, {
        raw: typeof body === 'string' ? body : JSON.stringify(body),
        headers: {
          ...auth,
          'content-type': 'application/x-www-form-urlencoded',
          charset: 'utf-8',
          'x-request-id': jobId,
        },
      }),
    stream: (jobId: string, body: unknown) =>
      request(`${base}/job-stream/${workerId}/${jobId}?gpu=TEST&isStream=false`, 'POST', undefined, {
        raw: typeof body === 'string' ? body : JSON.stringify(body),
        headers: {
          ...auth,
          'content-type': 'application/x-www-form-urlencoded',
          charset: 'utf-8',
          'x-request-id': jobId,
        },
      }),
    ping: (jobIds: string[] = [], extra = '') =>
      request(
        `${base}/ping/${workerId}?gpu=TEST${jobIds.length ? `&job_id=${encodeURIComponent(jobIds.join(','))}` : ''}&runpod_version=1.12.0${extra}`,
        'GET',
        undefined,
        { headers: auth },
      ),
  };
}
