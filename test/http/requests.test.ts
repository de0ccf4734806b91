// GET /v2/{endpointId}/requests: an endpoint's recent jobs, newest first, paginated (docs/observability.md).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEndpoint, protocolWorker, startTestServer, TestClock, type TestServer } from '../helpers/server.ts';

let t: TestServer;
// Submissions a few ms apart, so "newest first" has one right answer (ties on createdAt are broken by id).
const clock = new TestClock();

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 300 }, { clock });
});
afterAll(async () => {
  await t?.close();
});

async function run(ep: string, input: unknown = {}): Promise<string> {
  const res = await t.api('POST', `/v2/${ep}/run`, { input });
  expect(res.status, res.text).toBe(200);
  clock.advance(5);
  return res.json.id as string;
}

describe('GET /v2/{endpointId}/requests', () => {
  it('lists the endpoint’s jobs newest first with status, times, worker, error and retries', async () => {
    const ep = await createEndpoint(t);
    const other = await createEndpoint(t);
    const a = await run(ep, { n: 'a' });
    const b = await run(ep, { n: 'b' });
    const c = await run(ep, { n: 'c' });
    await run(other);
    const w = protocolWorker(t, ep, 'wrequests00001');
    expect((await w.take()).json.id).toBe(a);
    expect((await w.done(a, { error: 'handler exploded' })).status).toBe(200);
    expect((await w.take()).json.id).toBe(b);
    expect((await w.done(b, { output: { ok: true } })).status).toBe(200);

    const res = await t.api('GET', `/v2/${ep}/requests`);
    expect(res.status, res.text).toBe(200);
    expect(res.json.nextCursor).toBeNull();
    expect(res.json.requests.map((r: any) => r.id)).toEqual([c, b, a]);
    const [rc, rb, ra] = res.json.requests;
    expect(rc).toEqual({
      id: c,
      status: 'IN_QUEUE',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      delayTime: null,
      executionTime: null,
      workerId: null,
      error: null,
      retries: 0,
    });
    expect(rb).toMatchObject({ status: 'COMPLETED', workerId: 'wrequests00001', error: null });
    expect(rb.delayTime).toBeGreaterThanOrEqual(0);
    expect(rb.executionTime).toBeGreaterThanOrEqual(0);
    expect(ra).toMatchObject({ status: 'FAILED', error: 'handler exploded' });
    // Never the input or output: the list stays small however large the payloads are.
    expect(rb).not.toHaveProperty('output');
    expect(rb).not.toHaveProperty('input');
  });

  it('pages with limit and an opaque cursor until nextCursor is null', async () => {
    const ep = await createEndpoint(t);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await run(ep, { i }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : '?limit=3';
      const res = await t.api('GET', `/v2/${ep}/requests${q}`);
      expect(res.status, res.text).toBe(200);
      expect(res.json.requests.length).toBeLessThanOrEqual(3);
      seen.push(...res.json.requests.map((r: any) => r.id));
      cursor = res.json.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  it('validates limit and cursor, and answers 404 for an unknown endpoint and 401 without a key', async () => {
    const ep = await createEndpoint(t);
    expect((await t.api('GET', `/v2/${ep}/requests?limit=0`)).status).toBe(400);
    expect((await t.api('GET', `/v2/${ep}/requests?limit=501`)).status).toBe(400);
    expect((await t.api('GET', `/v2/${ep}/requests?limit=500`)).status).toBe(200);
    const bad = await t.api('GET', `/v2/${ep}/requests?cursor=not-a-cursor`);
    expect(bad.status).toBe(400);
    expect(bad.json.details).toEqual([{ field: 'cursor' }]);
    expect((await t.api('GET', '/v2/nosuchendpoint1/requests')).status).toBe(404);
    expect((await t.api('GET', `/v2/${ep}/requests`, undefined, { key: null })).status).toBe(401);
  });

  it('is open to read-only keys and to restricted keys of the endpoint only', async () => {
    const ep = await createEndpoint(t);
    const other = await createEndpoint(t);
    await run(ep);
    const read = await t.api('POST', '/v1/keys', { name: 'reader', scope: 'read' });
    expect((await t.api('GET', `/v2/${ep}/requests`, undefined, { key: read.json.key })).status).toBe(200);
    const restricted = await t.api('POST', '/v1/keys', { name: 'one', scope: 'restricted', endpointIds: [ep] });
    const key = restricted.json.key as string;
    expect((await t.api('GET', `/v2/${ep}/requests`, undefined, { key })).status).toBe(200);
    expect((await t.api('GET', `/v2/${other}/requests`, undefined, { key })).status).toBe(401);
    // Another user's endpoint is reported as missing.
    const user = await t.api('POST', '/v1/users', { name: 'someone' });
    expect((await t.api('GET', `/v2/${ep}/requests`, undefined, { key: user.json.key })).status).toBe(404);
  });

  it('falls under the /requests rate limit: 2 in flight, 10 per 10 s', async () => {
    const limited = await startTestServer({ rateLimits: 'on' });
    try {
      const ep = await createEndpoint(limited);
      const codes: number[] = [];
      for (let i = 0; i < 11; i++) codes.push((await limited.api('GET', `/v2/${ep}/requests`)).status);
      expect(codes.slice(0, 10).every((c) => c === 200)).toBe(true);
      expect(codes[10]).toBe(429);
    } finally {
      await limited.close();
    }
  });
});
