// Connection loss (docs/multinode.md): a node whose PostgreSQL goes away answers 503 STORE_UNAVAILABLE with a clear
// message, steps down as leader, and serves again — as leader if no one else is — once the database returns.

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchemas, newSchema, pgUnavailable, startPgProxy } from '../helpers/postgres.ts';
import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';

const unavailable = await pgUnavailable('PostgreSQL outage test');
afterAll(dropSchemas);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readyz(t: TestServer): Promise<{ status: number; json: any }> {
  return t.api('GET', '/readyz', undefined, { key: null });
}

async function until(pred: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

describe.skipIf(unavailable !== null)('a node that loses PostgreSQL', () => {
  it('answers 503 STORE_UNAVAILABLE, keeps nothing half-done, and recovers when the database returns', async () => {
    const proxy = await startPgProxy();
    const schema = newSchema();
    const t = await startTestServer({
      store: proxy.url(schema),
      secretKey: randomBytes(32).toString('base64'),
      rateLimits: 'on',
    });
    try {
      await until(async () => (await readyz(t)).json?.leader === true, 10_000, 'the only node leads');
      const ep = await createEndpoint(t);
      const before = await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 } });
      expect(before.status).toBe(200);

      await proxy.cut();
      const run = await t.api('POST', `/v2/${ep}/run`, { input: { n: 2 } });
      expect(run.status).toBe(503);
      expect(run.json).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(run.json.message).toMatch(/PostgreSQL is unreachable/);
      expect((await t.api('GET', `/v2/${ep}/status/${before.json.id}`)).status).toBe(503);
      const notReady = await readyz(t);
      expect(notReady.status).toBe(503);
      // Asked without a key: the store's own error (its address) stays in the log.
      expect(notReady.json).toMatchObject({ code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/server log/) });
      expect(JSON.stringify(notReady.json)).not.toMatch(/127\.0\.0\.1|ECONN|:\d{4,5}/);

      await proxy.restore();
      await until(async () => (await readyz(t)).json?.leader === true, 10_000, 'ready and leading again');
      expect((await t.api('GET', `/v2/${ep}/status/${before.json.id}`)).json.status).toBe('IN_QUEUE');
      const after = await t.api('POST', `/v2/${ep}/run`, { input: { n: 3 } });
      expect(after.status).toBe(200);
      // The refused submission left nothing behind: the queue holds exactly the two acknowledged jobs.
      expect((await t.api('GET', `/v2/${ep}/health`)).json.jobs.inQueue).toBe(2);
    } finally {
      await t.close();
      await proxy.close();
    }
  });
  it("a worker's job-take is refused 503 only after a hold: the official SDK polls again at once and would spin", async () => {
    const proxy = await startPgProxy();
    const t = await startTestServer({
      store: proxy.url(newSchema()),
      secretKey: randomBytes(32).toString('base64'),
      takeWaitMs: 2000,
    });
    try {
      const ep = await createEndpoint(t);
      const w = protocolWorker(t, ep, 'outage-worker');
      expect((await w.take()).status).toBe(204);
      await proxy.cut();
      const holdMs = t.server.workers.refusalHoldMs;
      for (const poll of [() => w.take(), () => w.takeBatch(2), () => w.stops()]) {
        const started = Date.now();
        const res = await poll();
        expect(res.status).toBe(503);
        expect(res.json).toMatchObject({ code: 'STORE_UNAVAILABLE' });
        expect(Date.now() - started).toBeGreaterThanOrEqual(holdMs - 100);
      }
      // Posts are not polls: a result is refused at once, so the SDK's own retries (2 s, then 3 s) start at once.
      const posted = Date.now();
      expect((await w.done('some-job', { output: 1 })).status).toBe(503);
      expect(Date.now() - posted).toBeLessThan(holdMs - 100);
    } finally {
      await t.close();
      await proxy.close();
    }
  });
});
