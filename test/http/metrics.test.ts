// GET /metrics (Prometheus), the HTTP hooks behind it, and the structured request logs (docs/observability.md).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startServer } from '../../src/cli/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { closeFleet, startFleet, waitUntil } from '../helpers/fleet.ts';
import { sample } from '../helpers/prometheus.ts';
import {
  ADMIN_KEY,
  createEndpoint,
  FAST,
  protocolWorker,
  request,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

/** A test server whose log lines (JSON, level info) are kept in `lines`. */
async function startLoggedServer(overrides: Record<string, unknown>): Promise<TestServer & { lines: string[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-metrics-'));
  const config = loadConfig({ argv: [], env: {}, overrides: { ...FAST, dataDir, logLevel: 'info', ...overrides } });
  const lines: string[] = [];
  const server = await startServer(config, { logStream: { write: (line) => void lines.push(line) } });
  return {
    server,
    url: server.url,
    key: ADMIN_KEY,
    dataDir,
    lines,
    api: (method, path, body, opts = {}) =>
      request(`${server.url}${path}`, method, body, { ...opts, key: opts.key === undefined ? ADMIN_KEY : opts.key }),
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let t: TestServer & { lines: string[] };

beforeAll(async () => {
  // Rate limits on, with purge-queue at 1 per 10 s so that a 429 is easy to provoke.
  t = await startLoggedServer({ rateLimits: 'on', rateLimitOverrides: 'purge-queue=1/0', takeWaitMs: 300 });
});
afterAll(async () => {
  await t?.close();
});

const scrape = async (key: string | null = ADMIN_KEY) => t.api('GET', '/metrics', undefined, { key });

describe('GET /metrics', () => {
  it('needs an admin key: none or a non-admin user’s key gets 401, a read-only admin key is enough', async () => {
    expect((await scrape(null)).status).toBe(401);
    const user = await t.api('POST', '/v1/users', { name: 'tenant' });
    expect(user.status, user.text).toBe(200);
    const other = await scrape(user.json.key as string);
    expect(other.status).toBe(401);
    expect(other.json.code).toBe('FORBIDDEN');
    const readKey = await t.api('POST', '/v1/keys', { name: 'scraper', scope: 'read' });
    expect(readKey.status, readKey.text).toBe(200);
    const ok = await scrape(readKey.json.key as string);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('counts jobs, retries, delays and HTTP requests per endpoint, and reads queue and worker gauges from the store', async () => {
    const ep = await createEndpoint(t);
    const run = async (input: unknown, policy?: unknown) => {
      const res = await t.api('POST', `/v2/${ep}/run`, policy ? { input, policy } : { input });
      expect(res.status, res.text).toBe(200);
      return res.json.id as string;
    };
    const j1 = await run({ n: 1 });
    const j2 = await run({ n: 2 });
    const j3 = await run({ n: 3 });
    const j4 = await run({ n: 4 }, { lowPriority: true });

    const w = protocolWorker(t, ep, 'wmetrics000001');
    expect((await w.take()).json.id).toBe(j1);
    expect((await w.done(j1, { output: { ok: 1 } })).status).toBe(200);
    expect((await w.take()).json.id).toBe(j2);
    expect((await w.done(j2, { error: 'boom' })).status).toBe(200);
    expect((await t.api('POST', `/v2/${ep}/retry/${j2}`)).json.status).toBe('IN_QUEUE');
    expect((await t.api('POST', `/v2/${ep}/cancel/${j3}`)).json.status).toBe('CANCELLED');

    const res = await scrape();
    expect(res.status).toBe(200);
    const m = (name: string, labels: Record<string, string> = {}) =>
      sample(res.text, name, { endpoint: ep, ...labels });
    expect(m('wharf_jobs_submitted_total')).toBe(4);
    expect(m('wharf_jobs_finished_total', { status: 'COMPLETED' })).toBe(1);
    expect(m('wharf_jobs_finished_total', { status: 'FAILED' })).toBe(1);
    expect(m('wharf_jobs_finished_total', { status: 'CANCELLED' })).toBe(1);
    expect(m('wharf_jobs_retried_total', { cause: 'retry' })).toBe(1);
    // Only jobs a worker took have a delay and an execution time.
    expect(m('wharf_job_delay_seconds_count')).toBe(2);
    expect(m('wharf_job_execution_seconds_count', { status: 'COMPLETED' })).toBe(1);
    expect(m('wharf_job_execution_seconds_count', { status: 'FAILED' })).toBe(1);
    // Gauges: j2 (retried) and j4 (lowPriority) wait; j1 completed and j3 cancelled are still held.
    expect(m('wharf_jobs', { state: 'IN_QUEUE' })).toBe(2);
    expect(m('wharf_jobs', { state: 'COMPLETED' })).toBe(1);
    expect(m('wharf_jobs', { state: 'CANCELLED' })).toBe(1);
    expect(m('wharf_jobs', { state: 'FAILED' })).toBe(0);
    expect(m('wharf_queue_depth', { priority: 'normal' })).toBe(1);
    expect(m('wharf_queue_depth', { priority: 'low' })).toBe(1);
    expect(m('wharf_queue_oldest_age_seconds')).toBeGreaterThan(0);
    expect(m('wharf_workers', { state: 'idle' })).toBe(1);
    expect(m('wharf_workers', { state: 'running' })).toBe(0);
    // HTTP: route patterns, never ids.
    const runs = sample(res.text, 'wharf_http_request_duration_seconds_count', {
      route: '/v2/:endpointId/run',
      method: 'POST',
      status_class: '2xx',
    });
    expect(runs).toBeGreaterThanOrEqual(4);
    for (const id of [j1, j2, j3, j4]) expect(res.text).not.toContain(id);
    expect(res.text).not.toContain('wmetrics000001');
    // Process metrics and the webhook counters (fed by the deliverer) are declared.
    expect(res.text).toContain('process_cpu_user_seconds_total');
    expect(res.text).toContain('nodejs_eventloop_lag_seconds');
    expect(res.text).toContain('# TYPE wharf_webhook_attempts_total counter');
    expect(res.text).toContain('# TYPE wharf_worker_cold_start_seconds histogram');
  });

  it('counts 429 answers by route', async () => {
    const ep = await createEndpoint(t);
    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).status).toBe(200);
    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).status).toBe(429);
    const res = await scrape();
    const labels = { route: '/v2/:endpointId/purge-queue', method: 'POST' };
    expect(sample(res.text, 'wharf_http_rate_limited_total', labels)).toBe(1);
    expect(sample(res.text, 'wharf_http_request_duration_seconds_count', { ...labels, status_class: '4xx' })).toBe(1);
  });

  it('is open without a key when metricsAuth is false', async () => {
    const open = await startTestServer({ metricsAuth: false });
    try {
      const res = await request(`${open.url}/metrics`, 'GET');
      expect(res.status).toBe(200);
      expect(res.text).toContain('# TYPE wharf_jobs gauge');
    } finally {
      await open.close();
    }
  });
});

describe('probes', () => {
  it('/healthz and /readyz need no key; /readyz is 503 while the schema is not the one this code knows', async () => {
    expect((await t.api('GET', '/healthz', undefined, { key: null })).json).toEqual({ status: 'ok' });
    expect((await t.api('GET', '/readyz', undefined, { key: null })).json).toEqual({ status: 'ready' });
    // Another node migrated the shared database further than this server knows (a rolling upgrade half done).
    const db = new DatabaseSync(join(t.dataDir, 'wharf.db'));
    try {
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, ?, 0)').run('future');
      const res = await t.api('GET', '/readyz', undefined, { key: null });
      expect(res.status).toBe(503);
      expect(res.json.code).toBe('STORE_UNAVAILABLE');
      expect(res.json.message).toMatch(/schema is at version 9999/);
    } finally {
      db.prepare('DELETE FROM schema_migrations WHERE version = 9999').run();
      db.close();
    }
    expect((await t.api('GET', '/readyz', undefined, { key: null })).status).toBe(200);
  });
});

describe('structured logs', () => {
  it('one JSON line per request with reqId, endpoint and job ids; keys never appear', async () => {
    const ep = await createEndpoint(t);
    const before = t.lines.length;
    const sub = await t.api('POST', `/v2/${ep}/run`, { input: { x: 1 } });
    const id = sub.json.id as string;
    expect(sub.headers.get('x-request-id')).toBeTruthy();
    await t.api('GET', `/v2/${ep}/status/${id}?api_key=${ADMIN_KEY}`);
    const lines = t.lines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    const runLine = lines.find((l) => l.route === '/v2/:endpointId/run');
    expect(runLine).toMatchObject({
      msg: 'request completed',
      reqId: sub.headers.get('x-request-id'),
      endpointId: ep,
      jobId: id,
      method: 'POST',
      statusCode: 200,
    });
    const statusLine = lines.find((l) => l.route === '/v2/:endpointId/status/:jobId');
    expect(statusLine).toMatchObject({ endpointId: ep, jobId: id, path: `/v2/${ep}/status/${id}` });
    expect(t.lines.join('')).not.toContain(ADMIN_KEY);
  });
});

describe('requests the client abandons', () => {
  it('a /runsync the client hangs up on is logged and counted once, as 499', async () => {
    const ep = await createEndpoint(t);
    const route = '/v2/:endpointId/runsync';
    const count499 = async () => {
      const text = (await scrape()).text;
      return (
        sample(text, 'wharf_http_request_duration_seconds_count', { route, method: 'POST', status_class: '4xx' }) ?? 0
      );
    };
    const before = await count499();
    const lines = t.lines.length;
    const abort = new AbortController();
    const waiting = t.api('POST', `/v2/${ep}/runsync?wait=30000`, { input: {} }, { signal: abort.signal });
    // No worker: the request waits until the client gives up.
    await new Promise((r) => setTimeout(r, 300));
    abort.abort();
    await waiting.catch(() => null);
    await waitUntil(
      async () => (await count499()) === before + 1,
      5000,
      () => 'the 499 to be counted',
    );
    const logged = t.lines
      .slice(lines)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.route === route);
    expect(logged).toEqual([
      expect.objectContaining({ msg: 'request closed by the client', statusCode: 499, endpointId: ep }),
    ]);
    // Once only, even after the server's own wait ends and it tries to answer.
    await new Promise((r) => setTimeout(r, 300));
    expect(await count499()).toBe(before + 1);
  });
});

describe('cold starts', () => {
  it('observes the time from a managed worker’s start to its first request', async () => {
    const fleet = await startFleet({ metricsAuth: false });
    try {
      const ep = await fleet.endpoint();
      const id = await fleet.run(ep, { hello: 1 });
      expect((await fleet.waitJob(ep, id)).status).toBe('COMPLETED');
      // The supervisor records a cold start on the tick that first sees the worker's lease renewed, which can come
      // just after the job's result: wait for that tick rather than race it.
      let text = '';
      await waitUntil(
        async () => {
          text = (await request(`${fleet.url}/metrics`, 'GET')).text;
          return sample(text, 'wharf_worker_cold_start_seconds_count', { endpoint: ep }) !== undefined;
        },
        5000,
        () => 'a cold start in /metrics',
      );
      expect(sample(text, 'wharf_worker_cold_start_seconds_count', { endpoint: ep })).toBe(1);
      expect(sample(text, 'wharf_worker_cold_start_seconds_sum', { endpoint: ep })).toBeGreaterThan(0);
    } finally {
      await closeFleet(fleet);
    }
  });

  it('does not count a worker retired while it was still starting (a rolling update) as started', async () => {
    const fleet = await startFleet({ metricsAuth: false });
    try {
      // The worker never calls in: it stays initializing until the endpoint changes and retires it.
      const hanging = ['node', '-e', 'setInterval(() => {}, 1000)'];
      const ep = await fleet.endpoint({ workersMin: 1, idleTimeout: 60 }, { dockerStartCmd: hanging });
      await waitUntil(
        () => fleet.pids().length === 1,
        10_000,
        () => 'the first worker to start',
      );
      const [first] = fleet.pids();
      expect((await fleet.api('PATCH', `/v1/endpoints/${ep}`, { env: { MODEL: 'v2' } })).status).toBe(200);
      await waitUntil(
        () => fleet.pids().length === 1 && !fleet.pids().includes(first!),
        10_000,
        () => `the outdated starting worker to be replaced (pids ${fleet.pids().join(', ')})`,
      );
      await new Promise((r) => setTimeout(r, 300)); // a few more passes
      const text = (await request(`${fleet.url}/metrics`, 'GET')).text;
      expect(sample(text, 'wharf_worker_cold_start_seconds_count', { endpoint: ep })).toBeUndefined();
      // Nor does /health call either worker up.
      expect((await fleet.health(ep)).workers).toMatchObject({ idle: 0, ready: 0, initializing: 1 });
    } finally {
      await closeFleet(fleet);
    }
  });
});
