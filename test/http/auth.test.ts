import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_KEY,
  createEndpoint,
  request,
  startTestServer,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.ts';

/** Keys, scopes and tenancy on the queue API (interface §5, §7; DESIGN.md §3 "Accounts and keys", "Errors"). */

let t: TestServer;
/** The admin's endpoint, with one queued job. */
let ep: string;
let jobId: string;
/** A second user with a key and an endpoint of their own. */
let other: { key: string; ep: string; jobId: string };

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 500 });
  ep = await createEndpoint(t);
  jobId = (await t.api('POST', `/v2/${ep}/run`, { input: { owner: 'admin' } })).json.id;

  const user = await t.server.accounts.createUser('bob');
  const { key } = await t.server.accounts.createKey(user.id, 'bob key', 'all');
  const asBob = { api: (m: string, p: string, b?: unknown) => t.api(m, p, b, { key }) };
  const bobEp = await createEndpoint(asBob);
  const bobJob = (await asBob.api('POST', `/v2/${bobEp}/run`, { input: { owner: 'bob' } })).json.id;
  other = { key, ep: bobEp, jobId: bobJob };
});
afterAll(async () => {
  await t.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json).toMatchObject({ code, message: expect.any(String) });
  expect(res.json.message.length).toBeGreaterThan(0);
}

/** Every queue operation a client may call, as [method, path, body]. */
const operations = (e: string, j: string): Array<[string, string, unknown]> => [
  ['POST', `/v2/${e}/run`, { input: {} }],
  ['POST', `/v2/${e}/runsync?wait=1000`, { input: {} }],
  ['GET', `/v2/${e}/status/${j}`, undefined],
  ['GET', `/v2/${e}/status-sync/${j}?wait=0`, undefined],
  ['GET', `/v2/${e}/stream/${j}?wait=0`, undefined],
  ['POST', `/v2/${e}/cancel/${j}`, undefined],
  ['POST', `/v2/${e}/retry/${j}`, undefined],
  ['POST', `/v2/${e}/purge-queue`, undefined],
  ['GET', `/v2/${e}/health`, undefined],
];

describe('key forms', () => {
  it.each([
    ['Bearer <key>', () => `Bearer ${t.key}`],
    ['bearer <key> (any case)', () => `bearer ${t.key}`],
    ['the bare key', () => t.key],
  ])('%s is accepted', async (_name, header) => {
    const res = await request(`${t.url}/v2/${ep}/status/${jobId}`, 'GET', undefined, {
      headers: { authorization: header() },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id: jobId, status: 'IN_QUEUE' });
  });

  it('a bare key works for submissions too', async () => {
    const res = await request(`${t.url}/v2/${ep}/run`, 'POST', { input: {} }, { headers: { authorization: t.key } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('IN_QUEUE');
  });
});

describe('missing or wrong key → 401 UNAUTHORIZED on every operation', () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['no Authorization header', {}],
    ['an empty header', { authorization: '' }],
    ['Bearer with nothing after it', { authorization: 'Bearer ' }],
    ['a wrong key', { authorization: 'Bearer wharf_not_a_real_key_000000000000' }],
    ['a wrong bare key', { authorization: 'wharf_not_a_real_key_000000000000' }],
    ['the right key with its last character changed', { authorization: `Bearer ${ADMIN_KEY.slice(0, -1)}x` }],
    ['the right key with a suffix', { authorization: `Bearer ${ADMIN_KEY}0` }],
  ];

  it.each(cases)('%s', async (_name, headers) => {
    for (const [method, path, body] of operations(ep, jobId)) {
      const res = await request(`${t.url}${path}`, method, body, { headers });
      expectError(res, 401, 'UNAUTHORIZED');
    }
  });

  it.each([
    ['an invalid submission', { input: 'not an object' }, undefined],
    ['malformed JSON', undefined, '{"input": '],
    ['a body over the size limit', undefined, `{"input":{"b":"${'x'.repeat(21 * 1024 * 1024)}"}}`],
  ])('is checked before the body: %s without a key → 401', async (_name, body, raw) => {
    for (const route of ['run', 'runsync?wait=1000']) {
      const res = await request(`${t.url}/v2/${ep}/${route}`, 'POST', body, raw === undefined ? {} : { raw });
      expectError(res, 401, 'UNAUTHORIZED');
    }
  });

  it('is checked before query parameters: an invalid wait without a key → 401', async () => {
    expectError(await request(`${t.url}/v2/${ep}/runsync?wait=5`, 'POST', { input: {} }), 401, 'UNAUTHORIZED');
    expectError(await request(`${t.url}/v2/${ep}/status/${jobId}?ttl=1`, 'GET'), 401, 'UNAUTHORIZED');
  });

  it('is checked first on /v1 and the worker routes too: an invalid body or query without a valid key → 401', async () => {
    const wrong = { authorization: 'Bearer wharf_not_a_real_key_000000000000' };
    for (const headers of [{}, wrong]) {
      const cases: Array<[string, string, unknown, string | undefined]> = [
        ['POST', '/v1/endpoints', { bad: 1 }, undefined],
        ['PATCH', `/v1/endpoints/${ep}`, { workersMax: 'a' }, undefined],
        ['GET', `/v1/endpoints/${ep}?includeTemplate=zzz`, undefined, undefined],
        ['POST', '/v1/templates', undefined, '{"name": '],
        ['POST', `/v2/${ep}/job-done/w1/${jobId}`, undefined, '{"output": '],
        ['POST', `/v2/${ep}/job-stream/w1/${jobId}`, [1], undefined],
      ];
      for (const [method, path, body, raw] of cases) {
        const res = await request(`${t.url}${path}`, method, body, raw === undefined ? { headers } : { headers, raw });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(401);
        expect(res.json.code).toBe('UNAUTHORIZED');
      }
    }
    // What describes the API stays open.
    expect((await request(`${t.url}/v1/openapi.json`, 'GET')).status).toBe(200);
  });

  it('is checked before the endpoint is looked up (an unknown endpoint does not leak 404)', async () => {
    expectError(await request(`${t.url}/v2/nosuchendpoint1/health`, 'GET'), 401, 'UNAUTHORIZED');
  });

  it('nothing happened: no job was submitted, cancelled or purged', async () => {
    const status = await t.api('GET', `/v2/${ep}/status/${jobId}`);
    expect(status.json.status).toBe('IN_QUEUE');
  });
});

describe('not found', () => {
  it.each(operations('nosuchendpoint1', 'some-job-e1'))(
    '%s %s on an unknown endpoint → 404 ENDPOINT_NOT_FOUND',
    async (method, path, body) => {
      expectError(await t.api(method, path, body), 404, 'ENDPOINT_NOT_FOUND');
    },
  );

  it.each(operations('EP', 'no-such-job-e1').filter(([, path]) => path.includes('no-such-job')))(
    '%s %s with an unknown job → 404 JOB_NOT_FOUND',
    async (method, path, body) => {
      expectError(await t.api(method, path.replace('/EP/', `/${ep}/`), body), 404, 'JOB_NOT_FOUND');
    },
  );

  it("another user's endpoint is reported as not found, on every operation", async () => {
    for (const [method, path, body] of operations(other.ep, other.jobId)) {
      expectError(await t.api(method, path, body), 404, 'ENDPOINT_NOT_FOUND');
    }
    for (const [method, path, body] of operations(ep, jobId)) {
      expectError(await t.api(method, path, body, { key: other.key }), 404, 'ENDPOINT_NOT_FOUND');
    }
    // Bob's job is untouched and the admin's job is still queued.
    expect(
      (await t.api('GET', `/v2/${other.ep}/status/${other.jobId}`, undefined, { key: other.key })).json,
    ).toMatchObject({ id: other.jobId, status: 'IN_QUEUE' });
    expect((await t.api('GET', `/v2/${ep}/status/${jobId}`)).json.status).toBe('IN_QUEUE');
  });

  it("another endpoint's job id is not found on one's own endpoint", async () => {
    const res = await t.api('GET', `/v2/${other.ep}/status/${jobId}`, undefined, { key: other.key });
    expectError(res, 404, 'JOB_NOT_FOUND');
  });

  it('the error is JSON with code and message', async () => {
    const res = await t.api('GET', `/v2/${ep}/status/missing-e1`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.json).sort()).toEqual(expect.arrayContaining(['code', 'message']));
  });
});

describe('scopes', () => {
  it('a read key cannot change anything but can read status, stream and health', async () => {
    const { key } = await t.server.accounts.createKey(t.server.adminUserId, 'reader', 'read');
    const as = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key });
    const running = await t.api('POST', `/v2/${ep}/run`, { input: {} });

    for (const [method, path, body] of [
      ['POST', `/v2/${ep}/run`, { input: {} }],
      ['POST', `/v2/${ep}/runsync?wait=1000`, { input: {} }],
      ['POST', `/v2/${ep}/cancel/${running.json.id}`, undefined],
      ['POST', `/v2/${ep}/retry/${running.json.id}`, undefined],
      ['POST', `/v2/${ep}/purge-queue`, undefined],
      ['GET', `/v2/${ep}/status/${running.json.id}?ttl=20000`, undefined],
    ] as const) {
      expectError(await as(method, path, body), 401, 'FORBIDDEN');
    }
    expect((await t.api('GET', `/v2/${ep}/status/${running.json.id}`)).json.status).toBe('IN_QUEUE');

    const status = await as('GET', `/v2/${ep}/status/${jobId}`);
    expect(status.status).toBe(200);
    expect(status.json).toMatchObject({ id: jobId, status: 'IN_QUEUE' });
    expect((await as('POST', `/v2/${ep}/status/${jobId}`)).status).toBe(200);
    expect((await as('GET', `/v2/${ep}/status-sync/${jobId}?wait=0`)).status).toBe(200);
    expect((await as('GET', `/v2/${ep}/stream/${jobId}?wait=0`)).json).toEqual({ status: 'IN_QUEUE', stream: [] });
    const health = await as('GET', `/v2/${ep}/health`);
    expect(health.status).toBe(200);
    expect(health.json.jobs.inQueue).toBeGreaterThanOrEqual(2);
  });

  it('a restricted key works only on its listed endpoints', async () => {
    const second = await createEndpoint(t);
    const { key } = await t.server.accounts.createKey(t.server.adminUserId, 'ci', 'restricted', [second]);
    const as = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key });

    const run = await as('POST', `/v2/${second}/run`, { input: { via: 'restricted' } });
    expect(run.status).toBe(200);
    expect((await as('GET', `/v2/${second}/status/${run.json.id}`)).json.status).toBe('IN_QUEUE');
    expect((await as('GET', `/v2/${second}/health`)).json.jobs.inQueue).toBe(1);
    expect((await as('POST', `/v2/${second}/cancel/${run.json.id}`)).json).toEqual({
      id: run.json.id,
      status: 'CANCELLED',
    });

    for (const [method, path, body] of operations(ep, jobId)) {
      expectError(await as(method, path, body), 401, 'FORBIDDEN');
    }
    expect((await t.api('GET', `/v2/${ep}/status/${jobId}`)).json.status).toBe('IN_QUEUE');
    // Not the management API either.
    expect((await as('GET', '/v1/endpoints')).status).toBe(401);
  });

  it('a revoked key stops working at once', async () => {
    const { key, record } = await t.server.accounts.createKey(t.server.adminUserId, 'short-lived', 'all');
    expect((await t.api('GET', `/v2/${ep}/health`, undefined, { key })).status).toBe(200);
    expect(await t.server.accounts.revokeKey(t.server.adminUserId, record.id)).toBe(true);
    expectError(await t.api('GET', `/v2/${ep}/health`, undefined, { key }), 401, 'UNAUTHORIZED');
  });
});

describe('the key cache', () => {
  it('a flood of made-up keys neither reaches the store twice per key nor pushes the keys in use out', async () => {
    const accounts = t.server.accounts;
    const store = t.server.store;
    const original = store.findApiKeyByHash.bind(store);
    let lookups = 0;
    store.findApiKeyByHash = (hash) => {
      lookups++;
      return original(hash);
    };
    try {
      expect(await accounts.resolve(t.key)).not.toBeNull(); // cached now
      const before = lookups;
      const made = Array.from({ length: 10_050 }, (_, i) => `wharf_madeup${String(i).padStart(30, '0')}`);
      for (const key of made) expect(await accounts.resolve(key)).toBeNull();
      const afterFlood = lookups;
      expect(afterFlood - before).toBe(10_050); // each unknown key looked up once
      // The admin key is still answered from the cache; a made-up key seen just now is not looked up again.
      expect(await accounts.resolve(t.key)).not.toBeNull();
      expect(await accounts.resolve(made[made.length - 1]!)).toBeNull();
      expect(lookups).toBe(afterFlood);
    } finally {
      store.findApiKeyByHash = original;
    }
  });
});
