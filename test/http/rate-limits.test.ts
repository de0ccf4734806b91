import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEndpoint,
  protocolWorker,
  request,
  startTestServer,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.ts';
import { waitUntil } from '../helpers/fleet.ts';

/** Rate limits (interface §8.2, DESIGN.md §3 "Rate limits"), with small bases configured so tests reach them. */

const MANAGEMENT_PER_10S = 30;
const REQUESTS_PER_WORKER = 5;

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    rateLimits: 'on',
    // stream: 2 in flight at once; status: 3 per 10 s and no concurrency cap; the rest as in the table.
    rateLimitOverrides: 'stream=1000/2,status=3/0',
    requestsPerWorker: REQUESTS_PER_WORKER,
    managementRatePer10s: MANAGEMENT_PER_10S,
    takeWaitMs: 300,
  });
});
afterAll(async () => {
  await t?.close();
});

function expectLimited(res: ApiResponse): void {
  expect(res.status, res.text).toBe(429);
  expect(res.json).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/retry after \d+ s/) });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(10);
}

async function submit(endpointId: string): Promise<string> {
  const res = await t.api('POST', `/v2/${endpointId}/run`, { input: {} });
  expect(res.status, res.text).toBe(200);
  return res.json.id as string;
}

describe('rates per user per endpoint', () => {
  it('purge-queue allows 2 per 10 s: the third gets 429 with Retry-After and the error body', async () => {
    const ep = await createEndpoint(t);
    const other = await createEndpoint(t);
    // Requests without a valid key are refused before anything is counted.
    for (let i = 0; i < 3; i++) {
      expect((await request(`${t.url}/v2/${ep}/purge-queue`, 'POST')).status).toBe(401);
    }
    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).status).toBe(200);
    const second = await t.api('POST', `/v2/${ep}/purge-queue`);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('0');
    expectLimited(await t.api('POST', `/v2/${ep}/purge-queue`));
    // Per endpoint: another endpoint's budget is untouched.
    expect((await t.api('POST', `/v2/${other}/purge-queue`)).status).toBe(200);
  });

  it('the dynamic rule: running workers × requestsPerWorker raises the limit above the base', async () => {
    const idle = await createEndpoint(t);
    const busy = await createEndpoint(t);
    const idleJob = await submit(idle);
    const busyJob = await submit(busy);
    expect((await protocolWorker(t, busy, 'w-rl-busy').take()).json.id).toBe(busyJob);
    // The running-worker count is cached for a second (the /run above read it as 0).
    await new Promise((resolve) => setTimeout(resolve, 1100));

    // No running worker: the base (3 per 10 s) applies.
    for (let i = 0; i < 3; i++) expect((await t.api('GET', `/v2/${idle}/status/${idleJob}`)).status).toBe(200);
    expectLimited(await t.api('GET', `/v2/${idle}/status/${idleJob}`));

    // One running worker: max(3, 1 × 5) = 5.
    for (let i = 0; i < REQUESTS_PER_WORKER; i++) {
      const res = await t.api('GET', `/v2/${busy}/status/${busyJob}`);
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(REQUESTS_PER_WORKER));
    }
    expectLimited(await t.api('GET', `/v2/${busy}/status/${busyJob}`));

    // Another user's requests to the busy endpoint get 404 under the base limit, as for an id that does not exist:
    // the header does not say that the endpoint exists or how many workers it runs.
    const carol = await t.server.accounts.createUser(`carol-rl-${Date.now()}`);
    const { key } = await t.server.accounts.createKey(carol.id, 'carol', 'all');
    for (const target of [busy, 'no-such-endpoint']) {
      const res = await t.api('POST', `/v2/${target}/purge-queue`, undefined, { key });
      expect(res.status).toBe(404);
      expect(res.headers.get('x-ratelimit-limit')).toBe('2');
    }
  });
});

describe('concurrency', () => {
  it('stream long polls beyond the cap get 429; a closed one frees its slot', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const stream = (wait: number, signal?: AbortSignal) =>
      t.api('GET', `/v2/${ep}/stream/${id}?wait=${wait}`, undefined, signal ? { signal } : {});
    // Two long polls that hold both slots until aborted (their wait runs out only long after this test). One that
    // met the probe below in the other slot was refused: it is sent again.
    const held = [new AbortController(), new AbortController()];
    const polls = held.map(async (c) => {
      while (!c.signal.aborted) {
        const res = await stream(30_000, c.signal).catch(() => null);
        if (res?.status !== 429) return res;
      }
      return null;
    });
    // Both are waiting server-side once a probe that holds no slot for long (wait=0) is refused.
    await waitUntil(
      async () => (await stream(0)).status === 429,
      5000,
      () => 'both long polls to hold their slots',
    );

    const started = Date.now();
    const third = await stream(5000);
    expectLimited(third);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(Date.now() - started).toBeLessThan(1000); // refused at once, not held

    for (const c of held) c.abort();
    expect(await Promise.all(polls)).toEqual([null, null]); // aborted, not answered
    // The server frees a slot when it sees the connection close, long before the polls' own wait would run out.
    await waitUntil(
      async () => (await stream(0)).status === 200,
      5000,
      () => 'the aborted polls to free their slots',
    );
  });
});

describe('what is never limited', () => {
  it('worker-protocol routes, /healthz and /readyz', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, 'w-rl-free');
    const ids = await Promise.all(Array.from({ length: 4 }, () => submit(ep)));
    const seen: number[] = [];
    for (const id of ids) {
      const take = await w.take();
      seen.push(take.status);
      seen.push((await w.ping([take.json.id])).status);
      seen.push((await w.done(id === take.json.id ? id : take.json.id, { output: 'ok' })).status);
    }
    for (let i = 0; i < 40; i++) seen.push((await w.ping()).status);
    seen.push((await w.take()).status); // empty queue: 204 after the long poll
    for (let i = 0; i < 20; i++) {
      seen.push((await request(`${t.url}/healthz`, 'GET')).status);
      seen.push((await request(`${t.url}/readyz`, 'GET')).status);
    }
    expect(seen).not.toContain(429);
    expect(new Set(seen)).toEqual(new Set([200, 204]));
  });
});

describe('management API', () => {
  it('is limited per API key', async () => {
    const { key } = await t.server.accounts.createKey(t.server.adminUserId, 'limited', 'all');
    for (let i = 0; i < MANAGEMENT_PER_10S; i++) {
      const res = await t.api('GET', '/v1/templates', undefined, { key });
      expect(res.status, `request ${i + 1}: ${res.text}`).toBe(200);
    }
    expectLimited(await t.api('GET', '/v1/templates', undefined, { key }));
    // Another key of the same user has its own budget.
    expect((await t.api('GET', '/v1/templates')).status).toBe(200);
  });
});
