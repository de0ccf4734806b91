// Requests shaped exactly like the official clients' (facts §3–4, worker-protocol §3–4), replayed against a real
// server, asserting on the fields those clients read and on the types their decoders insist on:
//   - Go SDK (runpod/go-sdk pkg/sdk/endpoint): POST on /status, /status-sync?wait=, /stream?wait=, /runsync?wait=;
//     empty POST bodies; any non-200 is an error; `json.Unmarshal` into *int / *string fields.
//   - Python client (runpod.Endpoint / AsyncioEndpoint): json.dumps bodies, bare inputs wrapped as {"input": …},
//     `Authorization: Bearer`, X-Request-ID on job calls, Content-Length 0 POSTs with Content-Type json.
//   - runpodctl (internal/api): REST v1 with Content-Type json on every request (GET and DELETE too), bare-array
//     lists, and GraphQL documents with `$input: EndpointInput!` variables.
// Jobs are served by a protocol worker playing the official worker SDK (test/helpers/server.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SETTINGS } from '../../src/config/index.ts';
import {
  createEndpoint,
  protocolWorker,
  request,
  startTestServer,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.ts';

let t: TestServer;
let ep: string;
let seq = 0;

beforeAll(async () => {
  // Every take here expects a job: a long take poll still catches one whose submission (a /runsync) is slow to arrive.
  t = await startTestServer({ takeWaitMs: 10_000, streamWaitMs: 1000 });
  ep = await createEndpoint(t);
});
afterAll(async () => {
  await t?.close();
});

/** A fresh protocol worker (its own id) on `endpointId`. */
const worker = (endpointId = ep) => protocolWorker(t, endpointId, `replay-w-${++seq}`);

/** Take the next job and complete it with `output`; returns the job id. */
async function serve(endpointId: string, output: unknown): Promise<string> {
  const w = worker(endpointId);
  const taken = await w.take();
  expect(taken.status, taken.text).toBe(200);
  const id = taken.json.id as string;
  expect((await w.done(id, { output })).status).toBe(200);
  return id;
}

// Go's encoding/json: a JSON value of the wrong type for the struct field makes Unmarshal fail (null is fine).
type GoType = 'string' | 'int' | 'float' | 'bool' | '[]string' | 'map[string]string' | 'object' | 'array' | 'any';
function goDecodes(value: Record<string, unknown>, shape: Record<string, GoType>): void {
  expect(value, 'a JSON object').toEqual(expect.any(Object));
  for (const [field, type] of Object.entries(shape)) {
    const v = value[field];
    if (v === undefined || v === null || type === 'any') continue;
    const where = `${field} = ${JSON.stringify(v)} (Go ${type})`;
    switch (type) {
      case 'string':
        expect(typeof v, where).toBe('string');
        break;
      case 'int':
        expect(Number.isInteger(v), where).toBe(true);
        break;
      case 'float':
        expect(typeof v, where).toBe('number');
        break;
      case 'bool':
        expect(typeof v, where).toBe('boolean');
        break;
      case '[]string':
        expect(Array.isArray(v) && v.every((x) => typeof x === 'string'), where).toBe(true);
        break;
      case 'map[string]string':
        expect(typeof v === 'object' && !Array.isArray(v), where).toBe(true);
        expect(
          Object.values(v).every((x) => typeof x === 'string'),
          where,
        ).toBe(true);
        break;
      case 'object':
        expect(typeof v === 'object' && !Array.isArray(v), where).toBe(true);
        break;
      case 'array':
        expect(Array.isArray(v), where).toBe(true);
        break;
      default: {
        const unreachable: never = type;
        throw new Error(String(unreachable));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Go SDK

const GO_HEADERS = () => ({
  'content-type': 'application/json',
  authorization: `Bearer ${t.key}`,
  'user-agent': 'Go-http-client/1.1',
});
/** getApiResponse(): body is the marshalled JobInput, or empty (bytes.NewBuffer(nil) → Content-Length: 0). */
function goCall(method: 'GET' | 'POST', path: string, body?: unknown, endpointId = ep): Promise<ApiResponse> {
  return request(`${t.url}/v2/${endpointId}${path}`, method, undefined, {
    headers: GO_HEADERS(),
    ...(method === 'POST' ? { raw: body === undefined ? '' : JSON.stringify(body) } : {}),
  });
}
/** The Go SDK's status / status-sync / runsync output struct. */
const GO_STATUS = {
  delayTime: 'int',
  error: 'string',
  executionTime: 'int',
  id: 'string',
  output: 'any',
  retries: 'int',
  status: 'string',
} as const;
const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];

describe('Go SDK request shapes', () => {
  it('Run, then RunSync: POST /runsync?wait= then POST /status-sync/{id}?wait= until final', async () => {
    const run = await goCall('POST', '/run', { input: { prompt: 'go' } });
    expect(run.status).toBe(200);
    goDecodes(run.json, { id: 'string', status: 'string' });
    expect(run.json.status).toBe('IN_QUEUE');
    expect(await serve(ep, { ok: 1 })).toBe(run.json.id);

    // RunSyncInput{Timeout: 1} → wait = 1000: nobody takes the job within the wait.
    const sync = await goCall('POST', '/runsync?wait=1000', { input: { prompt: 'sync' }, policy: { ttl: 60000 } });
    expect(sync.status).toBe(200);
    goDecodes(sync.json, GO_STATUS);
    expect(TERMINAL).not.toContain(sync.json.status);
    const id = sync.json.id as string;
    // The loop's POST /status-sync long-polls; the job completes while it waits.
    const waiting = goCall('POST', `/status-sync/${id}?wait=5000`);
    await new Promise((r) => setTimeout(r, 100));
    expect(await serve(ep, { text: 'done', n: 2 })).toBe(id);
    const done = await waiting;
    expect(done.status).toBe(200);
    goDecodes(done.json, GO_STATUS);
    expect(done.json).toMatchObject({ id, status: 'COMPLETED', output: { text: 'done', n: 2 } });
    expect(Number.isInteger(done.json.delayTime) && Number.isInteger(done.json.executionTime)).toBe(true);

    // Default RunSyncInput (Timeout 120 s ≥ 90) → /runsync?wait=90000, answered as soon as the job is final.
    const long = goCall('POST', '/runsync?wait=90000', { input: { prompt: 'long' } });
    await new Promise((r) => setTimeout(r, 100));
    const longId = await serve(ep, 'short');
    const longRes = await long;
    expect(longRes.json).toMatchObject({ id: longId, status: 'COMPLETED', output: 'short' });
  });

  it('RunSync{Timeout: 0}: /runsync?wait=0 waits the 1000 ms minimum, inside the SDK own 2 s client timeout', async () => {
    // timeout 0 < 90 → wait = 0 * 1000 and an http.Client timeout of 0 + 2 s; the loop then sends status-sync?wait=0.
    const started = Date.now();
    const sync = await goCall('POST', '/runsync?wait=0', { input: { prompt: 'zero' } });
    const took = Date.now() - started;
    expect(sync.status, sync.text).toBe(200);
    goDecodes(sync.json, GO_STATUS);
    expect(TERMINAL).not.toContain(sync.json.status);
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(2000);
    const id = sync.json.id as string;
    expect(await serve(ep, 'zero done')).toBe(id);
    const done = await goCall('POST', `/status-sync/${id}?wait=0`);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({ id, status: 'COMPLETED', output: 'zero done' });

    // A job that finishes within that second comes back from the one call.
    const quick = goCall('POST', '/runsync?wait=0', { input: { prompt: 'quick' } });
    await new Promise((r) => setTimeout(r, 100));
    const quickId = await serve(ep, 'quick done');
    expect((await quick).json).toMatchObject({ id: quickId, status: 'COMPLETED', output: 'quick done' });
  });

  it('Status (POST, empty body) of a failed job: `error` is a string, as the Go struct needs', async () => {
    const run = await goCall('POST', '/run', { input: { fail: true } });
    const w = worker();
    const taken = await w.take();
    await w.done(taken.json.id, { error: JSON.stringify({ error_type: 'ValueError', error_message: 'bad' }) });
    const s = await goCall('POST', `/status/${run.json.id}`);
    expect(s.status).toBe(200);
    goDecodes(s.json, GO_STATUS);
    expect(s.json.status).toBe('FAILED');
    expect(typeof s.json.error).toBe('string');
    expect(s.json.output).toBeUndefined();
  });

  it('Stream: POST /stream/{id}?wait=90000 returns chunk objects as they come, then the final status', async () => {
    const run = await goCall('POST', '/run', { input: { stream: true } });
    const id = run.json.id as string;
    const w = worker();
    expect((await w.take()).json.id).toBe(id);
    const items: Record<string, unknown>[] = [];
    let status = '';
    const consume = (async () => {
      for (let i = 0; i < 20 && !TERMINAL.includes(status); i++) {
        const res = await goCall('POST', `/stream/${id}?wait=90000`);
        expect(res.status).toBe(200);
        goDecodes(res.json, { status: 'string', stream: 'array' });
        for (const item of res.json.stream) {
          goDecodes({ item }, { item: 'object' }); // StreamResult is map[string]interface{}
          items.push(item);
        }
        status = res.json.status;
      }
    })();
    // The worker SDK posts one {output} per chunk.
    await w.stream(id, { output: 'a' });
    await new Promise((r) => setTimeout(r, 100));
    await w.stream(id, { output: 'b' });
    await w.stream(id, { output: 'c' });
    await w.done(id, { output: ['a', 'b', 'c'] }, true);
    await consume;
    expect(status).toBe('COMPLETED');
    expect(items).toEqual([{ output: 'a' }, { output: 'b' }, { output: 'c' }]);
  });

  it('Health (GET), CancelRequest and PurgeQueue (POST, empty body)', async () => {
    const other = await createEndpoint(t);
    const a = await goCall('POST', '/run', { input: { n: 1 } }, other);
    await goCall('POST', '/run', { input: { n: 2 } }, other);
    const cancel = await goCall('POST', `/cancel/${a.json.id}`, undefined, other);
    expect(cancel.status).toBe(200);
    goDecodes(cancel.json, { delayTime: 'int', error: 'string', executionTime: 'int', id: 'string', status: 'string' });
    expect(cancel.json).toEqual({ id: a.json.id, status: 'CANCELLED' });
    const health = await goCall('GET', '/health', undefined, other);
    expect(health.status).toBe(200);
    goDecodes(health.json.workers, {
      running: 'int',
      idle: 'int',
      initializing: 'int',
      ready: 'int',
      throttled: 'int',
    });
    goDecodes(health.json.jobs, { inProgress: 'int', inQueue: 'int', completed: 'int', failed: 'int', retried: 'int' });
    expect(health.json.jobs.inQueue).toBe(1);
    const purge = await goCall('POST', '/purge-queue', undefined, other);
    expect(purge.status).toBe(200);
    goDecodes(purge.json, { status: 'string', removed: 'int' });
    expect(purge.json).toEqual({ removed: 1, status: 'completed' });
  });
});

// The Go SDK's loops, replayed as endpoint.go runs them. RunSync, StatusSync and Stream turn `Timeout` (seconds,
// default 120) into: wait = 90000 ms and a 92 s http.Client timeout from 90 s up, else wait = Timeout × 1000 and a
// Timeout + 2 s client timeout; the whole call has a context deadline of Timeout + 3 s. After the first call they
// resend the same URL, with no pause, until the job is final (RunSync: or has an `error`) or the deadline passes. So
// with `Timeout: 0` every call carries wait=0 for 3 s: each call must wait its 1000 ms minimum, or the loop spins.

type GoResult = { result: Record<string, unknown>; error: string | null; calls: number; chunks: unknown[] };

function goTimeouts(timeout: number | undefined): { wait: number; reqTimeoutS: number; ctxS: number } {
  const s = timeout ?? 120;
  return s >= 90 ? { wait: 90_000, reqTimeoutS: 92, ctxS: s + 3 } : { wait: s * 1000, reqTimeoutS: s + 2, ctxS: s + 3 };
}

/** getApiResponse() under the client timeout (and, inside the loops, the call's context): its error text, or the body. */
async function goApi(
  server: TestServer,
  url: string,
  reqTimeoutS: number,
  ctx: AbortSignal | null,
  body?: unknown,
): Promise<{ json: Record<string, unknown> } | { error: string }> {
  const signals = [AbortSignal.timeout(reqTimeoutS * 1000), ...(ctx ? [ctx] : [])];
  let res: ApiResponse;
  try {
    res = await request(url, 'POST', undefined, {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
      raw: body === undefined ? '' : JSON.stringify(body),
      signal: AbortSignal.any(signals),
    });
  } catch (err) {
    return { error: ctx?.aborted ? 'ctx timeout reached' : `sls request error: ${String(err)}` };
  }
  if (res.status !== 200) return { error: `response status ${res.status}` };
  return { json: res.json as Record<string, unknown> };
}

/** Endpoint.RunSync: POST /runsync?wait=, then POST /status-sync/{id}?wait= until final or the deadline. */
async function goRunSync(server: TestServer, endpointId: string, input: unknown, timeout?: number): Promise<GoResult> {
  const { wait, reqTimeoutS, ctxS } = goTimeouts(timeout);
  const ctx = AbortSignal.timeout(ctxS * 1000);
  const base = `${server.url}/v2/${endpointId}`;
  let calls = 1;
  const first = await goApi(server, `${base}/runsync?wait=${wait}`, reqTimeoutS, null, { input });
  if ('error' in first) return { result: {}, error: first.error, calls, chunks: [] };
  const result = first.json;
  const over = () => TERMINAL.includes(result['status'] as string) || result['error'] != null;
  if (over()) return { result, error: null, calls, chunks: [] };
  for (;;) {
    if (ctx.aborted) return { result, error: 'timeout reached', calls, chunks: [] };
    calls++;
    const res = await goApi(server, `${base}/status-sync/${result['id'] as string}?wait=${wait}`, reqTimeoutS, ctx);
    if ('error' in res) return { result, error: res.error, calls, chunks: [] };
    Object.assign(result, res.json); // json.Unmarshal into the same struct
    if (over()) return { result, error: null, calls, chunks: [] };
  }
}

/** Endpoint.Stream: POST /stream/{id}?wait= until the status is final or the deadline; the chunks it passed on. */
async function goStream(server: TestServer, endpointId: string, id: string, timeout?: number): Promise<GoResult> {
  const { wait, reqTimeoutS, ctxS } = goTimeouts(timeout);
  const ctx = AbortSignal.timeout(ctxS * 1000);
  const chunks: unknown[] = [];
  let calls = 0;
  for (;;) {
    if (ctx.aborted) return { result: {}, error: 'ctx timeout reached', calls, chunks };
    calls++;
    const res = await goApi(server, `${server.url}/v2/${endpointId}/stream/${id}?wait=${wait}`, reqTimeoutS, ctx);
    if ('error' in res) return { result: {}, error: res.error, calls, chunks };
    chunks.push(...(res.json['stream'] as unknown[]));
    if (TERMINAL.includes(res.json['status'] as string)) return { result: res.json, error: null, calls, chunks };
  }
}

describe('Go SDK loops with Timeout 0, under the default rate limits, against a slow worker', () => {
  let g: TestServer;
  let gep: string;
  beforeAll(async () => {
    g = await startTestServer({ takeWaitMs: 10_000, rateLimits: 'on' });
    gep = await createEndpoint(g);
  });
  afterAll(async () => {
    await g?.close();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('RunSync: a job done in ~2 s comes back COMPLETED from a few long polls, not a spin on status-sync?wait=0', async () => {
    const w = protocolWorker(g, gep, `go-loop-w-${++seq}`);
    const taking = w.take();
    const running = goRunSync(g, gep, { prompt: 'slow' }, 0);
    const id = (await taking).json.id as string;
    await sleep(2000);
    expect((await w.done(id, { output: 'slow done' })).status).toBe(200);
    const go = await running;
    expect(go.error).toBeNull();
    expect(go.result).toMatchObject({ id, status: 'COMPLETED', output: 'slow done' });
    // /runsync waits its second, then one status-sync is answered at completion (one more at most, on a slow box).
    expect(go.calls).toBeLessThanOrEqual(3);
  });

  it('RunSync: a job still running at the 3 s deadline ends in the SDK own timeout, not a 429, and leaves the status budget', async () => {
    const w = protocolWorker(g, gep, `go-loop-w-${++seq}`);
    const taking = w.take();
    const go = await goRunSync(g, gep, { prompt: 'slower' }, 0);
    const id = (await taking).json.id as string;
    expect(go.error).toMatch(/timeout reached/);
    expect(go.result).toMatchObject({ id, status: 'IN_PROGRESS' });
    // Every call waited at least its 1000 ms: about one a second over the 3 s.
    expect(go.calls).toBeLessThanOrEqual(5);
    // Status (the same user's reads of this endpoint share the status limit) still answers.
    expect(await goApi(g, `${g.url}/v2/${gep}/status/${id}`, 3, null)).toMatchObject({ json: { id } });
    expect((await w.done(id, { output: 'late' })).status).toBe(200);
  });

  it('Stream: chunks of a slow job come from a few long polls, not a spin on stream?wait=0', async () => {
    const w = protocolWorker(g, gep, `go-loop-w-${++seq}`);
    const run = await goApi(g, `${g.url}/v2/${gep}/run`, 3, null, { input: { stream: true } });
    if ('error' in run) throw new Error(run.error);
    const id = run.json['id'] as string;
    expect((await w.take()).json.id).toBe(id);
    const reading = goStream(g, gep, id, 0);
    await sleep(700);
    await w.stream(id, { output: 'a' });
    await sleep(700);
    await w.stream(id, { output: 'b' });
    await w.done(id, { output: ['a', 'b'] }, true);
    const go = await reading;
    expect(go.error).toBeNull();
    expect(go.chunks).toEqual([{ output: 'a' }, { output: 'b' }]);
    expect(go.result['status']).toBe('COMPLETED');
    expect(go.calls).toBeLessThanOrEqual(4);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Python client

/** runpod.Endpoint (requests): headers of every call. */
const PY_SYNC = () => ({
  'user-agent': 'python-requests/2.28.1',
  'accept-encoding': 'gzip, deflate',
  accept: '*/*',
  'content-type': 'application/json',
  authorization: `Bearer ${t.key}`,
});
/** runpod.AsyncioEndpoint (aiohttp with the SDK session); job calls add X-Request-ID. */
const PY_ASYNC = (jobId?: string) => ({
  'content-type': 'application/json',
  authorization: `Bearer ${t.key}`,
  'user-agent': 'RunPod-Python-SDK/1.12.0 (Linux 6.1; x86_64) Language/Python 3.11.2',
  'accept-encoding': 'gzip, deflate',
  accept: '*/*',
  ...(jobId ? { 'x-request-id': jobId } : {}),
});
/** json.dumps(payload): the Python client's separators (", " and ": "). */
const pyJson = (v: unknown): string => JSON.stringify(v).replaceAll('","', '", "').replaceAll('":', '": ');
function pyCall(
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  raw?: string,
  endpointId = ep,
): Promise<ApiResponse> {
  return request(`${t.url}/v2/${endpointId}${path}`, method, undefined, {
    headers,
    ...(raw !== undefined ? { raw } : {}),
  });
}
/** Endpoint.run(x): x as-is when it has a truthy `input`, else {"input": x}. */
const pyWrap = (x: Record<string, unknown>) => (x['input'] ? x : { input: x });
const PY_FINAL = ['COMPLETED', 'FAILED', 'TIMED_OUT'];

describe('Python client request shapes', () => {
  it('run(bare payload) is sent wrapped; Job.status() and output; run_sync with a pass-through webhook', async () => {
    const body = pyJson(pyWrap({ prompt: 'hi' }));
    expect(body).toBe('{"input": {"prompt": "hi"}}');
    const run = await pyCall('POST', '/run', PY_SYNC(), body);
    expect(run.status).toBe(200);
    expect(run.json).toEqual({ id: expect.any(String), status: 'IN_QUEUE' });
    await serve(ep, { echo: { prompt: 'hi' } });
    const s = await pyCall('GET', `/status/${run.json.id}`, PY_SYNC());
    expect(s.json).toMatchObject({ status: 'COMPLETED', output: { echo: { prompt: 'hi' } } });

    // run_sync(): POST /runsync without wait (the server's default applies), then polls /status every second.
    const slow = pyCall(
      'POST',
      '/runsync',
      PY_SYNC(),
      pyJson(pyWrap({ input: { slow: true }, webhook: 'http://example.invalid/hook' })),
    );
    await new Promise((r) => setTimeout(r, 100));
    const w = worker();
    const taken = await w.take();
    // The webhook passed through to the worker's job object: the payload was not wrapped a second time.
    expect(taken.json).toMatchObject({ input: { slow: true }, webhook: 'http://example.invalid/hook' });
    await w.done(taken.json.id, { output: { result: 'done' } });
    const res = await slow;
    expect(PY_FINAL).toContain(res.json.status);
    expect(res.json.output).toEqual({ result: 'done' });
  });

  it('Job.stream() with no chunk yet (a cold start): the default wait answers inside its 10 s request timeout', async () => {
    // runpod.Endpoint reads every call with requests' timeout=10; a /stream that waited 10 s would raise ReadTimeout.
    const defaults = await startTestServer({ streamWaitMs: SETTINGS.find((s) => s.key === 'streamWaitMs')!.default });
    try {
      const endpointId = await createEndpoint(defaults);
      const run = await defaults.api('POST', `/v2/${endpointId}/run`, { input: {} });
      const res = await request(`${defaults.url}/v2/${endpointId}/stream/${run.json.id}`, 'GET', undefined, {
        headers: { authorization: `Bearer ${defaults.key}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ status: 'IN_QUEUE', stream: [] });
    } finally {
      await defaults.close();
    }
  });

  it('Job.stream(): GET /stream every second yields item["output"] until final and empty', async () => {
    const run = await pyCall('POST', '/run', PY_ASYNC(), pyJson({ input: { s: 2 } }));
    const id = run.json.id as string;
    const w = worker();
    expect((await w.take()).json.id).toBe(id);
    await w.stream(id, { output: 'part-1' });
    await w.stream(id, { output: 'part-2' });
    await w.done(id, { output: [] }, true);
    const outputs: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await pyCall('GET', `/stream/${id}`, PY_ASYNC(id));
      expect(res.status).toBe(200);
      const stream = (res.json.stream ?? []) as { output: unknown }[];
      for (const item of stream) outputs.push(item.output);
      if (PY_FINAL.includes(res.json.status) && stream.length === 0) break;
    }
    expect(outputs).toEqual(['part-1', 'part-2']);
  });

  it('cancel and purge_queue: POST with Content-Length 0 and Content-Type json; health', async () => {
    const other = await createEndpoint(t);
    const run = await pyCall('POST', '/run', PY_SYNC(), pyJson({ input: { x: 1 } }), other);
    await pyCall('POST', '/run', PY_SYNC(), pyJson({ input: { x: 2 } }), other);
    const id = run.json.id as string;
    const cancel = await pyCall('POST', `/cancel/${id}`, { ...PY_ASYNC(id), 'content-length': '0' }, '', other);
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.json).toEqual({ id, status: 'CANCELLED' });
    const health = await pyCall('GET', '/health', PY_SYNC(), undefined, other);
    expect(health.json.jobs).toMatchObject({ inQueue: 1 });
    expect(health.json.workers).toMatchObject({ idle: 0, running: 0 });
    const purge = await pyCall('POST', '/purge-queue', { ...PY_SYNC(), 'content-length': '0' }, '', other);
    expect(purge.status, purge.text).toBe(200);
    expect(purge.json).toEqual({ removed: 1, status: 'completed' });
  });

  it('errors are JSON (the asyncio client parses every answer); a bad key is 401', async () => {
    const missing = await pyCall('GET', '/status/no-such-job', PY_ASYNC('no-such-job'));
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    expect(missing.json).toMatchObject({ code: 'JOB_NOT_FOUND', message: expect.any(String) });
    const bad = await pyCall('POST', '/run', { ...PY_SYNC(), authorization: 'Bearer nope' }, pyJson({ input: {} }));
    expect(bad.status).toBe(401);
    expect(bad.json).toMatchObject({ code: 'UNAUTHORIZED' });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// runpodctl

/** internal/api/client.go requestURL(): the same headers on every request, with or without a body. */
const CTL_HEADERS = () => ({
  authorization: `Bearer ${t.key}`,
  'content-type': 'application/json',
  'user-agent': 'runpod-cli/2.0.0 (linux; amd64)',
});
async function rest(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<ApiResponse> {
  const res = await request(`${t.url}/v1${path}`, method, undefined, {
    headers: CTL_HEADERS(),
    ...(body !== undefined ? { raw: JSON.stringify(body) } : {}),
  });
  return res;
}
/** runpodctl treats any 2xx as success. */
function ok(res: ApiResponse): any {
  expect(res.status >= 200 && res.status < 300, `${res.status} ${res.text}`).toBe(true);
  return res.json;
}
/** graphqlRequest(): POST {query, variables} with Bearer auth. */
async function ctlGql(query: string, variables: Record<string, unknown> | null): Promise<any> {
  const res = await request(`${t.url}/graphql`, 'POST', undefined, {
    headers: CTL_HEADERS(),
    raw: JSON.stringify({ query, variables }),
  });
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data;
}

// internal/api structs (the fields runpodctl decodes).
const CTL_ENDPOINT = {
  id: 'string',
  name: 'string',
  templateId: 'string',
  gpuIds: 'string',
  instanceIds: '[]string',
  networkVolumeId: 'string',
  networkVolumeIds: 'array',
  locations: 'string',
  idleTimeout: 'int',
  scalerType: 'string',
  scalerValue: 'int',
  workersMin: 'int',
  workersMax: 'int',
  gpuCount: 'int',
  minCudaVersion: 'string',
  flashboot: 'bool',
  flashBootType: 'string',
  computeType: 'string',
  executionTimeoutMs: 'int',
  modelReferences: '[]string',
  template: 'object',
  workers: 'array',
} as const;
const CTL_TEMPLATE = {
  id: 'string',
  name: 'string',
  imageName: 'string',
  isServerless: 'bool',
  isPublic: 'bool',
  isRunpod: 'bool',
  category: 'string',
  ports: '[]string',
  dockerEntrypoint: '[]string',
  dockerStartCmd: '[]string',
  env: 'map[string]string',
  containerDiskInGb: 'int',
  containerRegistryAuthId: 'string',
  volumeInGb: 'int',
  volumeMountPath: 'string',
  readme: 'string',
} as const;
const CTL_VOLUME = { id: 'string', name: 'string', size: 'int', dataCenterId: 'string' } as const;
const CTL_BILLING = {
  time: 'string',
  amount: 'float',
  timeBilledMs: 'int',
  diskSpaceBilledGb: 'int',
  podId: 'string',
  endpointId: 'string',
  gpuTypeId: 'string',
} as const;

describe('runpodctl calls', () => {
  it('template create / list / get / update / delete; registry list / get / create / delete', async () => {
    const reg = ok(await rest('POST', '/containerregistryauth', { name: 'ctl-reg', username: 'u', password: 'p' }));
    goDecodes(reg, { id: 'string', name: 'string', username: 'string' });
    expect(reg).toEqual({ id: expect.any(String), name: 'ctl-reg' });
    const regs = ok(await rest('GET', '/containerregistryauth'));
    expect(regs).toContainEqual(reg);
    expect(ok(await rest('GET', `/containerregistryauth/${reg.id}`))).toEqual(reg);

    // TemplateCreateRequest (omitempty: zero values are left out).
    const tpl = ok(
      await rest('POST', '/templates', {
        name: 'ctl-tpl',
        imageName: 'ghcr.io/acme/worker:1',
        isServerless: true,
        ports: ['8000/http'],
        dockerStartCmd: ['python', 'handler.py'],
        env: { MODEL: 'small' },
        containerDiskInGb: 10,
        containerRegistryAuthId: reg.id,
      }),
    );
    goDecodes(tpl, CTL_TEMPLATE);
    expect(tpl).toMatchObject({ name: 'ctl-tpl', isServerless: true, containerRegistryAuthId: reg.id });
    const list = ok(await rest('GET', '/templates'));
    expect(Array.isArray(list)).toBe(true);
    for (const x of list) goDecodes(x, CTL_TEMPLATE);
    expect(list.map((x: any) => x.id)).toContain(tpl.id);
    goDecodes(ok(await rest('GET', `/templates/${tpl.id}`)), CTL_TEMPLATE);

    // TemplateUpdateRequest: ContainerRegistryAuthID is a *string so that "" clears the auth.
    const updated = ok(
      await rest('PATCH', `/templates/${tpl.id}`, {
        readme: 'hello',
        containerDiskInGb: 20,
        containerRegistryAuthId: '',
      }),
    );
    goDecodes(updated, CTL_TEMPLATE);
    expect(updated).toMatchObject({ readme: 'hello', containerDiskInGb: 20 });
    expect(updated.containerRegistryAuthId ?? '').toBe('');
    // The auth is no longer used, so it can go.
    ok(await rest('DELETE', `/containerregistryauth/${reg.id}`));
    expect((await rest('GET', `/containerregistryauth/${reg.id}`)).status).toBe(404);

    ok(await rest('DELETE', `/templates/${tpl.id}`));
    const gone = await rest('GET', `/templates/${tpl.id}`);
    expect(gone.status).toBe(404);
    // parseAPIError reads `error`, then `message`; an explicit `code` is passed through lowercased.
    expect(gone.json).toMatchObject({ message: expect.any(String), code: 'TEMPLATE_NOT_FOUND' });
  });

  it('network-volume list / get / create / update / delete', async () => {
    const v = ok(await rest('POST', '/networkvolumes', { name: 'ctl-vol', size: 10, dataCenterId: 'US-TX-3' }));
    goDecodes(v, CTL_VOLUME);
    const all = ok(await rest('GET', '/networkvolumes'));
    for (const x of all) goDecodes(x, CTL_VOLUME);
    expect(all.map((x: any) => x.id)).toContain(v.id);
    expect(ok(await rest('GET', `/networkvolumes/${v.id}`))).toEqual(v);
    const grown = ok(await rest('PATCH', `/networkvolumes/${v.id}`, { name: 'ctl-vol-2', size: 20 }));
    expect(grown).toEqual({ ...v, name: 'ctl-vol-2', size: 20 });
    ok(await rest('DELETE', `/networkvolumes/${v.id}`));
    expect((await rest('GET', `/networkvolumes/${v.id}`)).status).toBe(404);
  });

  it('serverless create (GraphQL) / list / get / update / update --template-id / delete', async () => {
    const tplA = ok(await rest('POST', '/templates', { name: 'ctl-ep-a', imageName: 'img:a', isServerless: true }));
    const tplB = ok(await rest('POST', '/templates', { name: 'ctl-ep-b', imageName: 'img:b', isServerless: true }));

    // --gpu-id "NVIDIA GeForce RTX 4090" is translated to its pool first.
    const pools = (await ctlGql('query { serverlessGpuPools { id gpuTypeIds } }', null)).serverlessGpuPools;
    const pool = pools.find((p: any) => p.gpuTypeIds.includes('NVIDIA GeForce RTX 4090'));
    expect(pool.id).toEqual(expect.any(String));
    const SAVE = `
		mutation SaveEndpoint($input: EndpointInput!) {
			saveEndpoint(input: $input) {
				id
				name
				templateId
				gpuIds
				instanceIds
				computeType
				networkVolumeId
				networkVolumeIds {
					networkVolumeId
					dataCenterId
				}
				locations
				idleTimeout
				scalerType
				scalerValue
				workersMin
				workersMax
				gpuCount
				minCudaVersion
				executionTimeoutMs
				flashBootType
				modelReferences
			}
		}
	`;
    // EndpointCreateGQLInput marshalled with omitempty: workersMin 0 and other zero values are absent.
    const created = (
      await ctlGql(SAVE, {
        input: {
          name: 'endpoint-abcd1234',
          templateId: tplA.id,
          gpuIds: pool.id,
          gpuCount: 1,
          workersMax: 3,
          idleTimeout: 5,
          flashBootType: 'FLASHBOOT',
        },
      })
    ).saveEndpoint;
    goDecodes(created, CTL_ENDPOINT);
    expect(created).toMatchObject({ name: 'endpoint-abcd1234', templateId: tplA.id, gpuIds: pool.id, workersMin: 0 });
    const id = created.id as string;

    // serverless list --include-template --include-workers: a bare array of endpoints.
    const list = ok(await rest('GET', '/endpoints?includeTemplate=true&includeWorkers=true'));
    expect(Array.isArray(list)).toBe(true);
    for (const e of list) goDecodes(e, CTL_ENDPOINT);
    const mine = list.find((e: any) => e.id === id);
    expect(mine).toMatchObject({ name: 'endpoint-abcd1234', workersMax: 3, template: { id: tplA.id } });
    expect(mine.workers).toEqual([]);
    const one = ok(await rest('GET', `/endpoints/${id}?includeTemplate=true`));
    goDecodes(one, CTL_ENDPOINT);
    expect(one.template).toMatchObject({ id: tplA.id, imageName: 'img:a' });

    // serverless update: EndpointUpdateRequest (omitempty).
    const patched = ok(
      await rest('PATCH', `/endpoints/${id}`, {
        name: 'renamed',
        workersMax: 2,
        idleTimeout: 15,
        scalerType: 'REQUEST_COUNT',
        scalerValue: 2,
        flashboot: false,
      }),
    );
    goDecodes(patched, CTL_ENDPOINT);
    expect(patched).toMatchObject({ name: 'renamed', workersMax: 2, idleTimeout: 15, scalerType: 'REQUEST_COUNT' });

    // serverless update --template-id: the variable is declared nullable, as runpodctl declares it.
    const UPDATE_TEMPLATE = `
		mutation Mutation($input: UpdateEndpointTemplateInput) {
			updateEndpointTemplate(input: $input) {
			  id
			  templateId
			}
		  }
	`;
    const moved = await ctlGql(UPDATE_TEMPLATE, { input: { endpointId: id, templateId: tplB.id } });
    expect(moved.updateEndpointTemplate).toEqual({ id, templateId: tplB.id });
    expect(ok(await rest('GET', `/endpoints/${id}`)).templateId).toBe(tplB.id);

    ok(await rest('DELETE', `/endpoints/${id}`));
    const gone = await rest('GET', `/endpoints/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.json.message).toEqual(expect.any(String));
    ok(await rest('DELETE', `/templates/${tplA.id}`));
    ok(await rest('DELETE', `/templates/${tplB.id}`));
  });

  it('serverless update --clear-models: read the endpoint, then saveEndpoint with every field round-tripped', async () => {
    const tpl = ok(await rest('POST', '/templates', { name: 'ctl-models', imageName: 'img:m', isServerless: true }));
    const e = ok(
      await rest('POST', '/endpoints', {
        name: 'models',
        templateId: tpl.id,
        gpuTypeIds: ['NVIDIA GeForce RTX 4090'],
        workersMax: 1,
        idleTimeout: 7,
      }),
    );
    const SAVE_MODELS = `
		mutation SaveEndpoint($input: EndpointInput!) {
			saveEndpoint(input: $input) {
				id name templateId gpuIds gpuCount instanceIds workersMin workersMax locations networkVolumeId
				networkVolumeIds { networkVolumeId } idleTimeout scalerType scalerValue executionTimeoutMs
				minCudaVersion flashBootType modelReferences
			}
		}
	`;
    /** UpdateEndpointModels(): the read config, decoded into the Go struct, sent back whole (no omitempty). */
    const roundTrip = (read: any, flashBootType: string, modelReferences: string[] = []) => {
      const s = (k: string) => (typeof read[k] === 'string' ? read[k] : '');
      const n = (k: string) => (typeof read[k] === 'number' ? read[k] : 0);
      return {
        id: read.id,
        name: s('name'),
        templateId: s('templateId'),
        gpuIds: s('gpuIds'),
        gpuCount: n('gpuCount'),
        instanceIds: read.instanceIds ?? null,
        workersMin: n('workersMin'),
        workersMax: n('workersMax'),
        locations: s('locations'),
        networkVolumeId: s('networkVolumeId'),
        networkVolumeIds: (read.networkVolumeIds ?? []).map((v: any) => ({
          networkVolumeId: typeof v === 'string' ? v : v.networkVolumeId,
        })),
        idleTimeout: n('idleTimeout'),
        scalerType: s('scalerType'),
        scalerValue: n('scalerValue'),
        executionTimeoutMs: n('executionTimeoutMs'),
        minCudaVersion: s('minCudaVersion'),
        flashBootType,
        modelReferences,
      };
    };
    const save = (input: unknown) =>
      request(`${t.url}/graphql`, 'POST', undefined, {
        headers: CTL_HEADERS(),
        raw: JSON.stringify({ query: SAVE_MODELS, variables: { input } }),
      });

    // runpodctl @2e2df89 read the config over REST, which has no flashBootType: it sent "", which the
    // FlashBootType enum refuses — as RunPod does (later runpodctl: 'saveEndpoint rejects "" for its FlashBootType
    // enum'). The refusal is a GraphQL variable error that runpodctl reports as errors[0].message.
    const restRead = ok(await rest('GET', `/endpoints/${e.id}`));
    goDecodes(restRead, CTL_ENDPOINT);
    const refused = await save(roundTrip(restRead, ''));
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0].message).toContain('FlashBootType');

    // Current runpodctl reads the config over GraphQL (myself.endpoint(id:)) and sends "OFF" for an empty type.
    const CONFIG = `
		query EndpointConfig($id: String!) {
			myself {
				endpoint(id: $id) {
					id name templateId gpuIds gpuCount instanceIds workersMin workersMax locations networkVolumeId
					networkVolumeIds { networkVolumeId } idleTimeout scalerType scalerValue executionTimeoutMs
					minCudaVersion flashBootType
				}
			}
		}
	`;
    const read = (await ctlGql(CONFIG, { id: e.id })).myself.endpoint;
    goDecodes(read, CTL_ENDPOINT);
    expect(read).toMatchObject({ id: e.id, name: 'models', templateId: tpl.id, workersMax: 1, idleTimeout: 7 });
    expect(read.gpuIds).not.toBe('');
    expect((await ctlGql(CONFIG, { id: 'nosuchendpoint' })).myself.endpoint).toBeNull();
    // Another user's endpoint is as unknown as a wrong id.
    const other = await t.server.accounts.createUser('ctl-other');
    const otherKey = (await t.server.accounts.createKey(other.id, 'k', 'all')).key;
    const theirs = await request(
      `${t.url}/graphql`,
      'POST',
      { query: CONFIG, variables: { id: e.id } },
      { key: otherKey },
    );
    expect(theirs.json.data.myself.endpoint).toBeNull();
    // --clear-models (modelReferences: []) round-trips every field unchanged.
    const res = await save(roundTrip(read, read.flashBootType || 'OFF'));
    expect(res.status, res.text).toBe(200);
    expect(res.json.errors, res.text).toBeUndefined();
    const saved = res.json.data.saveEndpoint;
    goDecodes(saved, CTL_ENDPOINT);
    // Go decoded the read's null locations as "", and sent that: a saved locations reads back as sent (the same
    // to runpodctl's Go struct, where null and "" are both "").
    expect(saved).toEqual({ ...read, locations: read.locations ?? '', modelReferences: [] });
    // --model-reference: Wharf has no model cache; the refusal names the field (docs/graphql.md).
    const models = await save(roundTrip(read, 'OFF', ['org/model:main']));
    expect(models.json.errors[0]).toMatchObject({
      path: ['saveEndpoint'],
      extensions: { code: 'VALIDATION_FAILED', details: [{ field: 'modelReferences' }] },
    });

    // A CPU endpoint made over REST with computeType alone (runpod-mcp's create-endpoint sends no cpuFlavorIds) reads
    // with the instance id of the flavor it runs as, so the round trip keeps it a CPU endpoint, and unchanged.
    const cpu = ok(await rest('POST', '/endpoints', { name: 'cpu-models', templateId: tpl.id, computeType: 'CPU' }));
    expect(cpu.instanceIds).toEqual(['cpu3c-2-4']);
    const cpuRead = (await ctlGql(CONFIG, { id: cpu.id })).myself.endpoint;
    expect(cpuRead.instanceIds).toEqual(['cpu3c-2-4']);
    const cpuSaved = await save(roundTrip(cpuRead, cpuRead.flashBootType || 'OFF'));
    expect(cpuSaved.json.errors, cpuSaved.text).toBeUndefined();
    expect(ok(await rest('GET', `/endpoints/${cpu.id}`))).toMatchObject({
      computeType: 'CPU',
      instanceIds: ['cpu3c-2-4'],
      version: 1,
    });
    ok(await rest('DELETE', `/endpoints/${cpu.id}`));
    ok(await rest('DELETE', `/endpoints/${e.id}`));
    ok(await rest('DELETE', `/templates/${tpl.id}`));
  });

  it('billing: /billing/endpoints, /pods, /networkvolumes are bare arrays of BillingRecord', async () => {
    const vol = ok(await rest('POST', '/networkvolumes', { name: 'billed', size: 50, dataCenterId: 'EU-RO-1' }));
    // A worker of `ep` billed for an odd 20 min 34.567 s across an hour boundary.
    const start = Date.parse('2024-03-10T23:50:00Z');
    await t.server.store.recordUsageStart({
      workerId: 'billed-worker',
      userId: t.server.adminUserId,
      endpointId: ep,
      templateId: 'templateaa',
      imageName: 'img:a',
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      gpuCount: 1,
      cpuFlavorId: null,
      dataCenterId: 'EU-RO-1',
      startedAt: start,
    });
    await t.server.store.recordUsageEnd('billed-worker', start + 1_234_567);
    const window = 'startTime=2024-03-01T00:00:00Z&endTime=2024-04-01T00:00:00Z';
    const gpu = encodeURIComponent('NVIDIA GeForce RTX 4090');
    const queries: [string, boolean][] = [
      [`/billing/endpoints?bucketSize=day&endpointId=${ep}&grouping=endpointId&gpuTypeId=${gpu}&${window}`, true],
      [`/billing/endpoints?${window}`, true],
      [`/billing/pods?bucketSize=hour&grouping=podId&${window}`, true],
      [`/billing/pods?gpuTypeId=${gpu}&${window}`, true],
      ['/billing/networkvolumes?bucketSize=day', false],
    ];
    for (const [q, nonEmpty] of queries) {
      const records = ok(await rest('GET', q));
      expect(Array.isArray(records), q).toBe(true);
      if (nonEmpty) expect(records.length, q).toBeGreaterThan(0);
      for (const r of records) goDecodes(r, CTL_BILLING);
    }
    const hourly = ok(await rest('GET', `/billing/pods?bucketSize=hour&grouping=podId&${window}`));
    expect(hourly.map((r: any) => r.timeBilledMs).reduce((a: number, b: number) => a + b, 0)).toBe(1_234_567);
    ok(await rest('DELETE', `/networkvolumes/${vol.id}`));
  });
});
