import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEndpoint,
  protocolWorker,
  startTestServer,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.ts';

/** Submissions to /run and /runsync (interface §2.2, §2.3, §4.1, §8.1) against a real server and SQLite. */

let t: TestServer;
/** An endpoint no worker ever takes from: what is queued here stays visible in its health. */
let idle: string;

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 1000 });
  idle = await createEndpoint(t);
});
afterAll(async () => {
  await t.close();
});

const MB = 1024 * 1024;
const DAY = 24 * 3600 * 1000;
let workerSeq = 0;
const newWorker = (endpointId: string) => protocolWorker(t, endpointId, `w-submit-${++workerSeq}`);

function expectInvalid(res: ApiResponse, field: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.json).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.any(String) });
  expect(Array.isArray(res.json.details)).toBe(true);
  expect(res.json.details.map((d: { field: string }) => d.field)).toContain(field);
}

async function queued(endpointId: string): Promise<number> {
  const res = await t.api('GET', `/v2/${endpointId}/health`);
  expect(res.status).toBe(200);
  return res.json.jobs.inQueue as number;
}

describe.each(['run', 'runsync'])('POST /%s validation', (route) => {
  // /runsync with wait=1000 so an accidentally accepted submission cannot hold the test for 90 s.
  const path = () => `/v2/${idle}/${route}${route === 'runsync' ? '?wait=1000' : ''}`;

  const cases: Array<[string, unknown, string]> = [
    ['missing input', {}, 'input'],
    ['missing input (other members present)', { webhook: 'http://127.0.0.1:9/h' }, 'input'],
    ['input is a string', { input: 'hello' }, 'input'],
    ['input is an array', { input: [1, 2] }, 'input'],
    ['input is null', { input: null }, 'input'],
    ['input is a number', { input: 5 }, 'input'],
    ['policy is not an object', { input: {}, policy: 'fast' }, 'policy'],
    ['policy.ttl below 10 s', { input: {}, policy: { ttl: 9999 } }, 'policy.ttl'],
    ['policy.ttl above 7 days', { input: {}, policy: { ttl: 7 * DAY + 1 } }, 'policy.ttl'],
    ['policy.ttl as a numeric string', { input: {}, policy: { ttl: '20000' } }, 'policy.ttl'],
    ['policy.ttl not an integer', { input: {}, policy: { ttl: 20000.5 } }, 'policy.ttl'],
    ['policy.executionTimeout below 5 s', { input: {}, policy: { executionTimeout: 4999 } }, 'policy.executionTimeout'],
    [
      'policy.executionTimeout above 7 days',
      { input: {}, policy: { executionTimeout: 7 * DAY + 1 } },
      'policy.executionTimeout',
    ],
    [
      'policy.executionTimeout as a numeric string',
      { input: {}, policy: { executionTimeout: '60000' } },
      'policy.executionTimeout',
    ],
    ['policy.executionTimeout boolean', { input: {}, policy: { executionTimeout: true } }, 'policy.executionTimeout'],
    ['policy.lowPriority as a string', { input: {}, policy: { lowPriority: 'true' } }, 'policy.lowPriority'],
    ['unknown policy key', { input: {}, policy: { ttl: 20000, priority: 1 } }, 'policy.priority'],
    ['webhook with ftp scheme', { input: {}, webhook: 'ftp://example.com/hook' }, 'webhook'],
    ['webhook with javascript scheme', { input: {}, webhook: 'javascript:alert(1)' }, 'webhook'],
    ['webhook not a URL', { input: {}, webhook: 'not a url' }, 'webhook'],
    ['webhook not a string', { input: {}, webhook: 42 }, 'webhook'],
    ['webhook with a user name and password', { input: {}, webhook: 'http://user:pw@127.0.0.1:9/h' }, 'webhook'],
    [
      's3Config member of the wrong type',
      { input: {}, s3Config: { accessId: 1, accessSecret: 's', bucketName: 'b', endpointUrl: 'https://s3' } },
      's3Config.accessId',
    ],
    [
      's3Config member missing',
      { input: {}, s3Config: { accessId: 'a', accessSecret: 's', endpointUrl: 'https://s3' } },
      's3Config.bucketName',
    ],
    ['body is an array', [{ input: {} }], 'body'],
  ];

  it.each(cases)('%s → 400 naming the field', async (_name, body, field) => {
    expectInvalid(await t.api('POST', path(), body), field);
  });

  it('queues nothing for a rejected submission', async () => {
    const before = await queued(idle);
    for (const [, body] of cases) await t.api('POST', path(), body);
    expect(await queued(idle)).toBe(before);
  });

  it('malformed JSON → 400 INVALID_JSON', async () => {
    const res = await t.api('POST', path(), undefined, { raw: '{"input": {"a": 1}' });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'INVALID_JSON', message: expect.any(String) });
  });

  it('a body starting with a UTF-8 byte order mark (PowerShell, Windows editors) is read without it', async () => {
    // fetch sends U+FEFF as the bytes EF BB BF.
    const res = await t.api('POST', path(), undefined, { raw: '\uFEFF{"input": {"a": 1}}' });
    expect(res.status, res.text).toBe(200);
    expect(res.json.id).toEqual(expect.any(String));
    const malformed = await t.api('POST', path(), undefined, { raw: '\uFEFF{"input": {"a": 1}' });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ code: 'INVALID_JSON', message: expect.any(String) });
  });

  it('a body not labelled JSON → 415 UNSUPPORTED_MEDIA_TYPE naming its content type', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/vnd.api+json']) {
      const res = await t.api('POST', path(), undefined, {
        raw: '{"input": {"a": 1}}',
        headers: { 'content-type': contentType },
      });
      expect(res.status, res.text).toBe(415);
      expect(res.json).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringContaining(contentType) });
    }
  });

  it('a compressed body (Content-Encoding) → 415 UNSUPPORTED_CONTENT_ENCODING naming it, nothing queued', async () => {
    const before = await queued(idle);
    const json = '{"input": {"a": 1}}';
    for (const [encoding, body] of [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['br', brotliCompressSync(json)],
    ] as const) {
      const res = await fetch(`${t.url}${path()}`, {
        method: 'POST',
        headers: { authorization: t.key, 'content-type': 'application/json', 'content-encoding': encoding },
        body: new Uint8Array(body),
      });
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({
        code: 'UNSUPPORTED_CONTENT_ENCODING',
        message: expect.stringContaining(encoding),
      });
    }
    expect(await queued(idle)).toBe(before);
    // `identity` is no encoding at all.
    const plain = await t.api('POST', path(), undefined, { raw: json, headers: { 'content-encoding': 'identity' } });
    expect(plain.status, plain.text).toBe(200);
  });

  it('accepts the policy bounds themselves', async () => {
    for (const policy of [
      { ttl: 10_000, executionTimeout: 5000 },
      { ttl: 7 * DAY, executionTimeout: 7 * DAY, lowPriority: true },
    ]) {
      const res = await t.api('POST', path(), { input: {}, policy });
      expect(res.status, res.text).toBe(200);
      expect(res.json.id).toEqual(expect.any(String));
    }
  });

  it('an explicit null for an optional member is taken as absent (generated clients send unset members as null)', async () => {
    const s3 = { accessId: 'a', accessSecret: 's', bucketName: 'b', endpointUrl: 'https://s3' };
    for (const body of [
      { input: {}, webhook: null },
      { input: {}, policy: null },
      { input: {}, s3Config: null },
      { input: {}, webhook: null, policy: null, s3Config: null },
      { input: {}, policy: { ttl: null, executionTimeout: null, lowPriority: null } },
      { input: {}, s3Config: { ...s3, objectPath: null } },
    ]) {
      const res = await t.api('POST', path(), body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(200);
    }
  });

  it('null is still refused where a value is required', async () => {
    const s3 = { accessId: 'a', accessSecret: 's', bucketName: 'b', endpointUrl: 'https://s3' };
    expectInvalid(await t.api('POST', path(), { input: null, webhook: null }), 'input');
    expectInvalid(
      await t.api('POST', path(), { input: {}, s3Config: { ...s3, bucketName: null } }),
      's3Config.bucketName',
    );
    // Nor is any other type loosened.
    expectInvalid(
      await t.api('POST', path(), { input: {}, policy: { ttl: null, executionTimeout: '60000' } }),
      'policy.executionTimeout',
    );
  });

  it('ignores unknown top-level members (clients send extras such as webhookV2)', async () => {
    const res = await t.api('POST', path(), { input: { a: 1 }, webhookV2: { url: 'http://x' } });
    expect(res.status, res.text).toBe(200);
  });
});

describe('payload limits', () => {
  /** A submission of exactly `bytes` bytes. */
  const bodyOf = (bytes: number) => `{"input":{"blob":"${'x'.repeat(bytes - 21)}"}}`;

  it('/run: over 10 MB → 413 PAYLOAD_TOO_LARGE; just under is accepted', async () => {
    const over = await t.api('POST', `/v2/${idle}/run`, undefined, { raw: bodyOf(10 * MB + 1) });
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('10 MB') });

    const under = await t.api('POST', `/v2/${idle}/run`, undefined, { raw: bodyOf(10 * MB - 1024) });
    expect(under.status, under.text.slice(0, 200)).toBe(200);
  });

  it('/runsync: over 20 MB → 413; 15 MB (too big for /run) is accepted', async () => {
    const over = await t.api('POST', `/v2/${idle}/runsync?wait=1000`, undefined, { raw: bodyOf(20 * MB + 1) });
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('20 MB') });

    const mid = await t.api('POST', `/v2/${idle}/runsync?wait=1000`, undefined, { raw: bodyOf(15 * MB) });
    expect(mid.status, mid.text.slice(0, 200)).toBe(200);
    expect(mid.json.status).toBe('IN_QUEUE');
  });
});

describe('what is submitted reaches the worker', () => {
  it('/run answers {id, status: IN_QUEUE}; the worker takes input, webhook, policy and s3Config untouched', async () => {
    const ep = await createEndpoint(t);
    const submission = {
      input: { prompt: 'héllo ✓', nested: { list: [1, 'two', null, { three: 3.5 }], empty: {} }, flag: false },
      webhook: 'https://hooks.example.com/done?x=1',
      policy: { executionTimeout: 120_000, lowPriority: true, ttl: 3_600_000 },
      s3Config: {
        accessId: 'AKIA',
        accessSecret: 's3cr3t',
        bucketName: 'bucket',
        endpointUrl: 'https://s3.example.com',
        objectPath: 'out/',
      },
    };
    const run = await t.api('POST', `/v2/${ep}/run`, submission);
    expect(run.status).toBe(200);
    expect(Object.keys(run.json).sort()).toEqual(['id', 'status']);
    expect(run.json.status).toBe('IN_QUEUE');
    expect(run.json.id).not.toMatch(/^sync-/);
    expect(run.json.id).toMatch(/^[A-Za-z0-9_-]+$/);

    const take = await newWorker(ep).take();
    expect(take.status).toBe(200);
    expect(take.json).toEqual({ id: run.json.id, ...submission });
  });

  it('a partial policy reaches the worker as given', async () => {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 }, policy: { ttl: 20_000 } });
    expect(run.status).toBe(200);
    const take = await newWorker(ep).take();
    expect(take.json).toEqual({ id: run.json.id, input: { n: 1 }, policy: { ttl: 20_000 } });
  });

  it('optional members sent as null reach the worker as absent; nulls inside input are kept', async () => {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, {
      input: { n: null },
      webhook: null,
      policy: { ttl: null, executionTimeout: 60_000, lowPriority: null },
      s3Config: null,
    });
    expect(run.status, run.text).toBe(200);
    const take = await newWorker(ep).take();
    expect(take.json).toEqual({ id: run.json.id, input: { n: null }, policy: { executionTimeout: 60_000 } });
  });

  it('what was not submitted is not invented', async () => {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, { input: {} });
    const take = await newWorker(ep).take();
    expect(take.json).toEqual({ id: run.json.id, input: {} });
  });

  it('a submission and a worker result starting with a byte order mark arrive as if sent without it', async () => {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, undefined, {
      raw: '\uFEFF{"input": {"big": 12345678901234567890}}',
    });
    expect(run.status, run.text).toBe(200);
    const worker = newWorker(ep);
    const take = await worker.take();
    // The input as the client wrote it (its 64-bit integer untouched), with no mark in front.
    expect(take.text).toBe(`{"id":${JSON.stringify(run.json.id)},"input":{"big": 12345678901234567890}}`);
    // Worker results are JSON labelled form-urlencoded (their own parser): the mark is dropped there too.
    expect((await worker.done(run.json.id, '\uFEFF{"output": "ok"}')).status).toBe(200);
    const status = await t.api('GET', `/v2/${ep}/status/${run.json.id}`);
    expect(status.json).toMatchObject({ status: 'COMPLETED', output: 'ok' });
  });

  it('two submissions get different ids', async () => {
    const a = await t.api('POST', `/v2/${idle}/run`, { input: {} });
    const b = await t.api('POST', `/v2/${idle}/run`, { input: {} });
    expect(a.json.id).not.toBe(b.json.id);
  });
});

describe('/runsync', () => {
  it('returns the finished job: sync- id, COMPLETED, output, delayTime and executionTime', async () => {
    const ep = await createEndpoint(t);
    const worker = newWorker(ep);
    const taking = worker.take();
    const runsync = t.api('POST', `/v2/${ep}/runsync`, { input: { x: 2 } });
    const take = await taking;
    expect(take.status).toBe(200);
    expect(take.json.id).toMatch(/^sync-/);
    expect(take.json.input).toEqual({ x: 2 });
    expect((await worker.done(take.json.id, { output: { y: 4 } })).status).toBe(200);

    const res = await runsync;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: take.json.id, status: 'COMPLETED', output: { y: 4 } });
    expect(Number.isInteger(res.json.delayTime)).toBe(true);
    expect(Number.isInteger(res.json.executionTime)).toBe(true);
    expect(res.json.delayTime).toBeGreaterThanOrEqual(0);
    expect(res.json.executionTime).toBeGreaterThanOrEqual(0);
  });

  it('returns a failed job with its error', async () => {
    const ep = await createEndpoint(t);
    const worker = newWorker(ep);
    const taking = worker.take();
    const runsync = t.api('POST', `/v2/${ep}/runsync?wait=5000`, { input: {} });
    const take = await taking;
    await worker.done(take.json.id, { error: 'handler exploded' });
    const res = await runsync;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: take.json.id, status: 'FAILED', error: 'handler exploded' });
  });

  it.each([
    ['-1', 'negative'],
    ['300001', 'above 300000'],
    ['soon', 'not a number'],
    ['1500.5', 'not an integer'],
  ])('wait=%s (%s) → 400 naming wait', async (wait) => {
    const before = await queued(idle);
    expectInvalid(await t.api('POST', `/v2/${idle}/runsync?wait=${wait}`, { input: {} }), 'wait');
    expect(await queued(idle)).toBe(before);
  });

  it('wait under the 1000 ms minimum (the Go SDK sends 0) waits 1000 ms, not refused', async () => {
    for (const wait of ['0', '999']) {
      const started = Date.now();
      const res = await t.api('POST', `/v2/${idle}/runsync?wait=${wait}`, { input: {} });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: 'IN_QUEUE' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    }
  });

  it('outliving wait (nobody takes the job) answers 200 {id, IN_QUEUE}; the job completes later', async () => {
    const ep = await createEndpoint(t);
    const started = Date.now();
    const res = await t.api('POST', `/v2/${ep}/runsync?wait=1000`, { input: { late: true } });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'IN_QUEUE' });
    expect(res.json.id).toMatch(/^sync-/);
    expect(res.json.output).toBeUndefined();
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(3000);

    const worker = newWorker(ep);
    const take = await worker.take();
    expect(take.json).toEqual({ id: res.json.id, input: { late: true } });
    expect((await worker.done(res.json.id, { output: 'finally' })).status).toBe(200);
    const status = await t.api('GET', `/v2/${ep}/status/${res.json.id}`);
    expect(status.json).toMatchObject({ id: res.json.id, status: 'COMPLETED', output: 'finally' });
  });

  it('outliving wait while running answers 200 {id, IN_PROGRESS}; the job completes later', async () => {
    const ep = await createEndpoint(t);
    const worker = newWorker(ep);
    const taking = worker.take();
    const res = await t.api('POST', `/v2/${ep}/runsync?wait=1000`, { input: {} });
    const take = await taking;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: take.json.id, status: 'IN_PROGRESS' });

    const waiting = t.api('GET', `/v2/${ep}/status-sync/${res.json.id}?wait=5000`);
    await worker.done(take.json.id, { output: [1, 2, 3] });
    const done = await waiting;
    expect(done.json).toMatchObject({ id: res.json.id, status: 'COMPLETED', output: [1, 2, 3] });
  });
});
