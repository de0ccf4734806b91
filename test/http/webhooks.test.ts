import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { createEndpoint, protocolWorker, startTestServer, TestClock, type TestServer } from '../helpers/server.ts';

/** Webhooks (interface §6, DESIGN.md §3 "Webhooks", docs/webhooks.md) against a real receiver on loopback. */

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A webhook receiver: /ok answers 200, /fail 500, /hang never answers, /redirect 302, /switch `switchStatus`
 * (0: no answer).
 */
class Receiver {
  readonly received: Received[] = [];
  switchStatus = 500;
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0]!;
        this.received.push({ path, headers: req.headers, body, at: Date.now() });
        if (path === '/ok') res.writeHead(200).end('thanks');
        else if (path === '/fail') res.writeHead(500).end('nope');
        else if (path === '/redirect') res.writeHead(302, { location: '/ok' }).end();
        else if (path === '/switch' && this.switchStatus > 0) res.writeHead(this.switchStatus).end();
        // /hang: no answer at all.
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  forJob(jobId: string): Received[] {
    return this.received.filter((r) => r.headers['x-wharf-job-id'] === jobId);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const RETRY_MS = 300;
const TIMEOUT_MS = 700;
/** For waits on a whole delivery (claim, POST, receipt, record): generous, since a loaded machine is slow. */
const WAIT = { timeout: 5000 };

let t: TestServer;
const clock = new TestClock();
const receiver = new Receiver();
let workerSeq = 0;

beforeAll(async () => {
  await receiver.start();
  t = await startTestServer(
    { webhookRetryDelayMs: RETRY_MS, webhookTimeoutMs: TIMEOUT_MS, sweepIntervalMs: 50, takeWaitMs: 500 },
    { clock },
  );
});
afterAll(async () => {
  await t?.close();
  await receiver.close();
  await dropSchemas();
});

/** What the helpers below need: the test server, or a tenant's view of it (its own key). */
type Client = Pick<TestServer, 'api' | 'url' | 'key'>;

async function submit(s: Client, endpointId: string, webhook: string, policy?: unknown): Promise<string> {
  const res = await s.api('POST', `/v2/${endpointId}/run`, { input: { n: 1 }, webhook, ...(policy ? { policy } : {}) });
  expect(res.status, res.text).toBe(200);
  return res.json.id as string;
}

/** Submit, take and finish one job with the given worker post; returns the job id. */
async function finished(s: Client, endpointId: string, webhook: string, post: unknown): Promise<string> {
  const id = await submit(s, endpointId, webhook);
  const w = protocolWorker(s, endpointId, `w-hook-${++workerSeq}`, s.key);
  expect((await w.take()).json.id).toBe(id);
  expect((await w.done(id, post)).status).toBe(200);
  return id;
}

async function deliveries(s: Client, endpointId: string, jobId: string): Promise<any[]> {
  const res = await s.api('GET', `/v2/${endpointId}/webhooks/${jobId}`);
  expect(res.status, res.text).toBe(200);
  return res.json.deliveries;
}

/** The documented check (docs/webhooks.md): HMAC-SHA256 over "<timestamp>.<raw body>" with the secret. */
function signatureOk(secret: string, r: Received): boolean {
  const expected = `sha256=${createHmac('sha256', secret).update(`${r.headers['x-wharf-timestamp']}.${r.body}`).digest('hex')}`;
  return r.headers['x-wharf-signature'] === expected;
}

async function secretOf(s: TestServer): Promise<string> {
  const res = await s.api('GET', '/v1/webhook-secret');
  expect(res.status, res.text).toBe(200);
  return res.json.secret as string;
}

describe('delivery on every final state', () => {
  it('COMPLETED: one POST with the /status body, the headers, and a signature that verifies', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/ok'), { output: { answer: 42, text: 'hé ✓' } });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    const [r] = receiver.forJob(id);

    const status = await t.api('GET', `/v2/${ep}/status/${id}`);
    expect(r!.body).toBe(status.text);
    expect(JSON.parse(r!.body)).toMatchObject({ id, status: 'COMPLETED', output: { answer: 42, text: 'hé ✓' } });
    expect(r!.headers['content-type']).toMatch(/^application\/json/);
    expect(r!.headers['x-wharf-attempt']).toBe('1');
    expect(r!.headers['x-wharf-delivery-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(r!.headers['x-wharf-timestamp'])).toBeGreaterThan(1_600_000_000);
    expect(signatureOk(await secretOf(t), r!)).toBe(true);
    expect(signatureOk('whsec_wrong', r!)).toBe(false);

    const [d] = await deliveries(t, ep, id);
    expect(d).toMatchObject({ id: r!.headers['x-wharf-delivery-id'], state: 'delivered', jobStatus: 'COMPLETED' });
    expect(d.attempts).toEqual([
      { attempt: 1, at: expect.any(String), durationMs: expect.any(Number), statusCode: 200, error: null },
    ]);
    // Delivered once: nothing more arrives.
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS * 2));
    expect(receiver.forJob(id)).toHaveLength(1);
    // And the attempt is counted in the metrics.
    const metrics = await t.api('GET', '/metrics');
    expect(metrics.text).toContain(`wharf_webhook_attempts_total{endpoint="${ep}",outcome="delivered"} 1`);
  });

  it('a big output (8 MB, multi-byte text) arrives whole, as /status shows it, and its signature verifies', async () => {
    const ep = await createEndpoint(t);
    const text = 'é✓ '.repeat(1_000_000); // 6 MB of UTF-8
    const id = await finished(t, ep, receiver.url('/ok'), { output: { text, pad: 'x'.repeat(2_000_000) } });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    const r = receiver.forJob(id)[0]!;
    expect(r.body).toBe((await t.api('GET', `/v2/${ep}/status/${id}`)).text);
    expect(JSON.parse(r.body).output.text).toBe(text);
    expect(signatureOk(await secretOf(t), r)).toBe(true);
  });

  it('FAILED', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/ok'), { error: 'handler blew up' });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    const body = JSON.parse(receiver.forJob(id)[0]!.body);
    expect(body).toMatchObject({ id, status: 'FAILED', error: 'handler blew up' });
    expect(receiver.forJob(id)[0]!.body).toBe((await t.api('GET', `/v2/${ep}/status/${id}`)).text);
  });

  it('CANCELLED', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(t, ep, receiver.url('/ok'));
    expect((await t.api('POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('CANCELLED');
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    expect(JSON.parse(receiver.forJob(id)[0]!.body)).toEqual({ id, status: 'CANCELLED' });
  });

  it('CANCELLED while running: one delivery, as /status shows it; the late result of the worker sends nothing', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(t, ep, receiver.url('/ok'));
    const w = protocolWorker(t, ep, `w-hook-${++workerSeq}`);
    expect((await w.take()).json.id).toBe(id);
    expect((await t.api('POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('CANCELLED');
    expect((await w.done(id, { output: 'too late' })).status).not.toBe(200);
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    const r = receiver.forJob(id)[0]!;
    expect(JSON.parse(r.body)).toMatchObject({ id, status: 'CANCELLED', workerId: expect.any(String) });
    expect(r.body).toBe((await t.api('GET', `/v2/${ep}/status/${id}`)).text);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS * 2));
    expect(receiver.forJob(id)).toHaveLength(1);
  });

  it('TIMED_OUT (by the sweep)', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(t, ep, receiver.url('/ok'), { executionTimeout: 5000 });
    expect((await protocolWorker(t, ep, `w-hook-${++workerSeq}`).take()).json.id).toBe(id);
    clock.advance(6000);
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    const r = receiver.forJob(id)[0]!;
    expect(JSON.parse(r.body)).toMatchObject({ id, status: 'TIMED_OUT' });
    expect(r.body).toBe((await t.api('GET', `/v2/${ep}/status/${id}`)).text);
  });

  it('FAILED by a lost worker (a ping without the job, past maxAttempts); not when the job is past its ttl', async () => {
    // Sweeps a minute apart: the ping, not the ttl sweep, is what finds the job first.
    const lostClock = new TestClock();
    const s = await startTestServer(
      { sweepIntervalMs: 60_000, maxAttempts: 1, lostJobGraceMs: 1000, takeWaitMs: 500 },
      { clock: lostClock },
    );
    try {
      const ep = await createEndpoint(s);
      const lost = await submit(s, ep, receiver.url('/ok'), { ttl: 60_000 });
      const expired = await submit(s, ep, receiver.url('/ok'), { ttl: 10_000 });
      const w = protocolWorker(s, ep, `w-hook-${++workerSeq}`);
      expect((await w.takeBatch(2)).json.map((j: { id: string }) => j.id)).toEqual([lost, expired]);
      lostClock.advance(11_000); // past the grace, and past the second job's ttl
      expect((await w.ping([])).status).toBe(200);

      await vi.waitFor(() => expect(receiver.forJob(lost)).toHaveLength(1), WAIT);
      const r = receiver.forJob(lost)[0]!;
      expect(JSON.parse(r.body)).toMatchObject({ id: lost, status: 'FAILED', error: expect.stringMatching(/lost/) });
      expect(r.body).toBe((await s.api('GET', `/v2/${ep}/status/${lost}`)).text);
      // The job past its ttl is gone, as /status says: deleted at its ttl while unfinished, it is reported to no one.
      expect((await s.api('GET', `/v2/${ep}/status/${expired}`)).json.code).toBe('JOB_EXPIRED');
      expect(await s.server.store.listWebhookDeliveries(ep, expired)).toEqual([]);
      expect(receiver.forJob(expired)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('a job retried (/retry) that finishes again is reported again, as a new delivery; once per final state', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/ok'), { error: 'first try failed' });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    expect((await t.api('POST', `/v2/${ep}/retry/${id}`)).status).toBe(200);
    const w = protocolWorker(t, ep, `w-hook-${++workerSeq}`);
    expect((await w.take()).json.id).toBe(id);
    expect((await w.done(id, { output: 'second try' })).status).toBe(200);
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(2), WAIT);

    const [first, second] = receiver.forJob(id);
    expect(JSON.parse(first!.body)).toMatchObject({ status: 'FAILED', error: 'first try failed' });
    expect(second!.body).toBe((await t.api('GET', `/v2/${ep}/status/${id}`)).text);
    expect(JSON.parse(second!.body)).toMatchObject({ status: 'COMPLETED', output: 'second try' });
    expect(second!.headers['x-wharf-delivery-id']).not.toBe(first!.headers['x-wharf-delivery-id']);
    expect(second!.headers['x-wharf-attempt']).toBe('1');
    await vi.waitFor(
      async () =>
        expect((await deliveries(t, ep, id)).map((d) => [d.jobStatus, d.state])).toEqual([
          ['FAILED', 'delivered'],
          ['COMPLETED', 'delivered'],
        ]),
      WAIT,
    );
    // Nothing more: a cancel of the finished job changes nothing and sends nothing.
    expect((await t.api('POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('COMPLETED');
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS * 2));
    expect(receiver.forJob(id)).toHaveLength(2);
  });

  it('TIMED_OUT, not FAILED, when a lost worker is noticed after the execution timeout but before the sweep', async () => {
    // Sweeps a minute apart: the ping, not the timeout sweep, is what finds the job first.
    const lostClock = new TestClock();
    const s = await startTestServer(
      { sweepIntervalMs: 60_000, maxAttempts: 1, lostJobGraceMs: 1000, takeWaitMs: 500 },
      { clock: lostClock },
    );
    try {
      const ep = await createEndpoint(s);
      const lost = await submit(s, ep, receiver.url('/ok'));
      const overdue = await submit(s, ep, receiver.url('/ok'), { executionTimeout: 5000 });
      const w = protocolWorker(s, ep, `w-hook-${++workerSeq}`);
      expect((await w.takeBatch(2)).json.map((j: { id: string }) => j.id)).toEqual([lost, overdue]);
      lostClock.advance(6000); // past the grace, and past the second job's execution timeout
      expect((await w.ping([])).status).toBe(200);

      await vi.waitFor(() => expect(receiver.forJob(lost)).toHaveLength(1), WAIT);
      expect(JSON.parse(receiver.forJob(lost)[0]!.body)).toMatchObject({ id: lost, status: 'FAILED' });
      // The overdue attempt timed out, whichever path noticed first: /status (which times it out) and its one delivery.
      expect((await s.api('GET', `/v2/${ep}/status/${overdue}`)).json.status).toBe('TIMED_OUT');
      await vi.waitFor(() => expect(receiver.forJob(overdue)).toHaveLength(1), WAIT);
      const r = receiver.forJob(overdue)[0]!;
      expect(JSON.parse(r.body)).toMatchObject({ id: overdue, status: 'TIMED_OUT' });
      expect(r.body).toBe((await s.api('GET', `/v2/${ep}/status/${overdue}`)).text);
    } finally {
      await s.close();
    }
  });

  it('a job without a webhook has no delivery; an unknown job is 404', async () => {
    const ep = await createEndpoint(t);
    const res = await t.api('POST', `/v2/${ep}/run`, { input: {} });
    expect(await deliveries(t, ep, res.json.id)).toEqual([]);
    const missing = await t.api('GET', `/v2/${ep}/webhooks/no-such-job-e1`);
    expect(missing.status).toBe(404);
    expect(missing.json.code).toBe('JOB_NOT_FOUND');
  });
});

describe('the delivery log', () => {
  it('stays readable after the job is deleted at its ttl, and is pruned 24 hours after the delivery finished', async () => {
    const logClock = new TestClock();
    const s = await startTestServer({ webhookRetryDelayMs: RETRY_MS, takeWaitMs: 500 }, { clock: logClock });
    try {
      const ep = await createEndpoint(s);
      const id = await submit(s, ep, receiver.url('/ok'), { ttl: 10_000 });
      const w = protocolWorker(s, ep, `w-hook-${++workerSeq}`);
      expect((await w.take()).json.id).toBe(id);
      expect((await w.done(id, { output: 'kept' })).status).toBe(200);
      await vi.waitFor(async () => expect((await deliveries(s, ep, id))[0]?.state).toBe('delivered'), WAIT);

      logClock.advance(11_000); // past the job's ttl: the sweep deletes it
      await vi.waitFor(
        async () => expect((await s.api('GET', `/v2/${ep}/status/${id}`)).json.code).toBe('JOB_EXPIRED'),
        WAIT,
      );
      expect((await deliveries(s, ep, id)).map((d) => [d.jobStatus, d.state])).toEqual([['COMPLETED', 'delivered']]);

      logClock.advance(24 * 3_600_000);
      await vi.waitFor(async () => expect((await s.api('GET', `/v2/${ep}/webhooks/${id}`)).status).toBe(404), WAIT);
      expect(receiver.forJob(id)).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it('more deliveries than one prune batch (500) are all pruned when their time comes, not 500 a minute', async () => {
    const logClock = new TestClock();
    const s = await startTestServer({ webhookRetryDelayMs: RETRY_MS, takeWaitMs: 500 }, { clock: logClock });
    try {
      const ep = await createEndpoint(s);
      const endpoint = await s.server.resources.getEndpoint(null, ep);
      const ids: string[] = [];
      for (let i = 0; i < 520; i++) {
        const job = await s.server.engine.submit(endpoint, { input: { i }, webhook: receiver.url('/ok') }, 'async');
        await s.server.engine.cancel(ep, job.id);
        ids.push(job.id);
      }
      const states = async () =>
        (await Promise.all(ids.map((id) => s.server.store.listWebhookDeliveries(ep, id)))).map((d) => d[0]?.state);
      await vi.waitFor(async () => expect(new Set(await states())).toEqual(new Set(['delivered'])), {
        timeout: 30_000,
        interval: 200,
      });

      logClock.advance(25 * 3_600_000);
      await vi.waitFor(async () => expect(new Set(await states())).toEqual(new Set([undefined])), WAIT);
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe('retries and timeouts', () => {
  it('a non-200 answer is retried 2 more times, RETRY_MS apart, then given up; every attempt is listed', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/fail'), { output: 'x' });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(3), WAIT);
    const got = receiver.forJob(id);
    expect(got.map((r) => r.headers['x-wharf-attempt'])).toEqual(['1', '2', '3']);
    // One delivery: the same id on every attempt, so receivers can de-duplicate.
    expect(new Set(got.map((r) => r.headers['x-wharf-delivery-id'])).size).toBe(1);
    for (let i = 1; i < got.length; i++) expect(got[i]!.at - got[i - 1]!.at).toBeGreaterThanOrEqual(RETRY_MS - 20);

    await vi.waitFor(async () => expect((await deliveries(t, ep, id))[0].state).toBe('failed'), WAIT);
    const [d] = await deliveries(t, ep, id);
    expect(d.attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
    ]);
    expect(d.attempts[0].error).toMatch(/500/);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS * 3));
    expect(receiver.forJob(id)).toHaveLength(3);
  });

  it('another 2xx than 200 is a failed attempt, retried', async () => {
    receiver.switchStatus = 204;
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/switch'), { output: 'x' });
    await vi.waitFor(async () => expect((await deliveries(t, ep, id))[0]?.state).toBe('failed'), WAIT);
    const [d] = await deliveries(t, ep, id);
    expect(d.attempts.map((a: any) => a.statusCode)).toEqual([204, 204, 204]);
    expect(d.attempts[0].error).toMatch(/only 200 ends delivery/);
  });

  it('a refused connection is a failed attempt, retried like a non-200 answer', async () => {
    const closed = new Receiver();
    await closed.start();
    const url = closed.url('/ok');
    await closed.close(); // nothing listens on its port now
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, url, { output: 'x' });
    await vi.waitFor(async () => expect((await deliveries(t, ep, id))[0]?.state).toBe('failed'), WAIT);
    const [d] = await deliveries(t, ep, id);
    expect(d.attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([
      [1, null],
      [2, null],
      [3, null],
    ]);
    expect(d.attempts[0].error).toMatch(/ECONNREFUSED/);
  });

  it('redirects are not followed', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/redirect'), { output: 'x' });
    await vi.waitFor(
      async () => expect((await deliveries(t, ep, id))[0]?.attempts.length).toBeGreaterThanOrEqual(1),
      WAIT,
    );
    const [d] = await deliveries(t, ep, id);
    expect(d.attempts[0]).toMatchObject({ statusCode: 302, error: expect.stringMatching(/redirect/) });
    expect(receiver.forJob(id).every((r) => r.path === '/redirect')).toBe(true);
  });

  it('a hanging receiver is cut off after the timeout', async () => {
    const ep = await createEndpoint(t);
    const hung = await finished(t, ep, receiver.url('/hang'), { output: 'slow' });
    await vi.waitFor(() => expect(receiver.forJob(hung)).toHaveLength(1), WAIT);
    await vi.waitFor(
      async () => expect((await deliveries(t, ep, hung))[0].attempts.length).toBeGreaterThanOrEqual(1),
      WAIT,
    );
    const first = (await deliveries(t, ep, hung))[0].attempts[0];
    expect(first.statusCode).toBeNull();
    expect(first.error).toMatch(new RegExp(`no answer within ${TIMEOUT_MS} ms`));
    expect(first.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(first.durationMs).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it('a hanging receiver does not hold up other deliveries', async () => {
    // A server of its own whose attempts time out only long after this test: the hung attempt is certainly still
    // open when the other delivery is made and recorded, however slow the machine.
    const s = await startTestServer({ webhookTimeoutMs: 60_000, takeWaitMs: 500 });
    try {
      const ep = await createEndpoint(s);
      const hung = await finished(s, ep, receiver.url('/hang'), { output: 'slow' });
      await vi.waitFor(() => expect(receiver.forJob(hung)).toHaveLength(1), WAIT);
      const quick = await finished(s, ep, receiver.url('/ok'), { output: 'fast' });
      await vi.waitFor(async () => expect((await deliveries(s, ep, quick))[0]?.state).toBe('delivered'), WAIT);
      expect(receiver.forJob(quick)).toHaveLength(1);
      // The hanging attempt is still open while the other job was delivered.
      expect((await deliveries(s, ep, hung))[0]).toMatchObject({ state: 'pending', attempts: [] });
      expect(receiver.forJob(hung)).toHaveLength(1);
    } finally {
      await s.close(); // cuts the hung attempt off after 1 s
    }
  });
});

describe('concurrency', () => {
  it('at most webhookConcurrency attempts are in flight at once', async () => {
    // Attempts time out only long after this test: the hung ones certainly hold their slots throughout.
    const s = await startTestServer({ webhookConcurrency: 2, webhookTimeoutMs: 60_000, takeWaitMs: 500 });
    try {
      const ep = await createEndpoint(s);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await finished(s, ep, receiver.url('/hang'), { output: i }));
      const sent = () => ids.filter((id) => receiver.forJob(id).length > 0).length;
      await vi.waitFor(() => expect(sent()).toBe(2), WAIT);
      await new Promise((resolve) => setTimeout(resolve, 1500)); // more than a poll
      expect(sent()).toBe(2);
    } finally {
      await s.close(); // cuts the hung attempts off
    }
  });

  it("one user's hanging receivers do not queue other users' deliveries behind their backlog", async () => {
    // Two slots, each hung attempt holds one for 1.5 s: the admin's 20 deliveries to /hang (60 attempts) keep both
    // busy for about 45 s. Another user's delivery waits for the next slot to come free, not for that backlog.
    const s = await startTestServer({
      webhookConcurrency: 2,
      webhookTimeoutMs: 1500,
      webhookRetryDelayMs: RETRY_MS,
      webhookPrivateTargets: 'all',
      takeWaitMs: 500,
    });
    try {
      const ep = await createEndpoint(s);
      const hung: string[] = [];
      for (let i = 0; i < 20; i++) {
        const id = await submit(s, ep, receiver.url('/hang'));
        expect((await s.api('POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('CANCELLED');
        hung.push(id);
      }
      await vi.waitFor(() => expect(hung.filter((id) => receiver.forJob(id).length > 0)).toHaveLength(2), WAIT);
      const created = await s.api('POST', '/v1/users', { name: `hook-fair-${++workerSeq}` });
      const key = created.json.key as string;
      const other = { url: s.url, key, api: (m: string, p: string, b?: unknown) => s.api(m, p, b, { key }) };
      const otherEp = await createEndpoint(other);
      const quick = await submit(other, otherEp, receiver.url('/ok'));
      expect((await other.api('POST', `/v2/${otherEp}/cancel/${quick}`)).json.status).toBe('CANCELLED');
      // One hung attempt's timeout and a poll, with room for a slow machine; the backlog would take ten times that.
      await vi.waitFor(() => expect(receiver.forJob(quick)).toHaveLength(1), { timeout: 4500 });
    } finally {
      await s.close(); // cuts the hung attempts off
    }
  });
});

describe('the signing secret', () => {
  it('is read with GET and rotated with POST; later deliveries use the new one', async () => {
    const before = await secretOf(t);
    expect(before).toMatch(/^whsec_/);
    const rotated = await t.api('POST', '/v1/webhook-secret');
    expect(rotated.status).toBe(200);
    expect(rotated.json.secret).not.toBe(before);
    expect(await secretOf(t)).toBe(rotated.json.secret);

    const ep = await createEndpoint(t);
    const id = await finished(t, ep, receiver.url('/ok'), { output: 1 });
    await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    expect(signatureOk(rotated.json.secret, receiver.forJob(id)[0]!)).toBe(true);
    expect(signatureOk(before, receiver.forJob(id)[0]!)).toBe(false);
  });

  it('needs a key of scope all', async () => {
    const { key } = await t.server.accounts.createKey(t.server.adminUserId, 'reader', 'read');
    const res = await t.api('GET', '/v1/webhook-secret', undefined, { key });
    expect(res.status).toBe(401);
    expect(res.json.code).toBe('FORBIDDEN');
  });
});

describe('private targets (webhookPrivateTargets, default admins)', () => {
  async function tenant(s: TestServer) {
    const created = await s.api('POST', '/v1/users', { name: `hook-tenant-${++workerSeq}` });
    expect(created.status, created.text).toBe(200);
    const key = created.json.key as string;
    const as = { url: s.url, key, api: (m: string, p: string, b?: unknown) => s.api(m, p, b, { key }) };
    return { as, ep: await createEndpoint(as) };
  }

  it('a user who is not an admin cannot name a private address: 400 at submission, for /run and /runsync', async () => {
    const { as, ep } = await tenant(t);
    const before = receiver.received.length;
    for (const webhook of [
      receiver.url('/ok'),
      'http://localhost:9000/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]:8080/',
      'http://10.0.0.8/hook',
    ]) {
      for (const route of ['run', 'runsync']) {
        const res = await as.api('POST', `/v2/${ep}/${route}`, { input: { n: 1 }, webhook });
        expect(res.status, `${route} ${webhook}: ${res.text}`).toBe(400);
        expect(res.json.code).toBe('VALIDATION_FAILED');
        expect(res.json.message).toMatch(/private, loopback or link-local|the server itself/);
        expect(res.json.message).toContain('WHARF_WEBHOOK_PRIVATE_TARGETS');
        expect(res.json.details).toEqual([expect.objectContaining({ field: 'webhook' })]);
      }
    }
    // Nothing was queued, nothing sent; a public URL is accepted (its delivery is not awaited here).
    expect((await as.api('GET', `/v2/${ep}/health`)).json.jobs.inQueue).toBe(0);
    expect((await as.api('POST', `/v2/${ep}/run`, { input: {}, webhook: 'https://hooks.example.com/x' })).status).toBe(
      200,
    );
    expect(receiver.received.length).toBe(before);
  });

  it("an admin's restricted or read key does not carry the admin's privilege: 400, where its full key is accepted", async () => {
    const ep = await createEndpoint(t);
    const restricted = (await t.api('POST', '/v1/keys', { name: 'ci', scope: 'restricted', endpointIds: [ep] })).json
      .key as string;
    const refused = await t.api(
      'POST',
      `/v2/${ep}/run`,
      { input: {}, webhook: receiver.url('/ok') },
      { key: restricted },
    );
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.message).toMatch(/private, loopback or link-local/);
    // The same loopback receiver from the admin's full key (the job stays queued: nothing is delivered).
    const accepted = await t.api('POST', `/v2/${ep}/run`, { input: {}, webhook: receiver.url('/ok') });
    expect(accepted.status, accepted.text).toBe(200);
  });

  it("an admin's restricted key naming a host: its deliveries are held to public addresses, as the key is", async () => {
    const ep = await createEndpoint(t);
    const key = (await t.api('POST', '/v1/keys', { name: 'ci-host', scope: 'restricted', endpointIds: [ep] })).json
      .key as string;
    // A name passes the submission (its address is only known when delivered); the job remembers the key's limit.
    const hook = { input: {}, webhook: 'http://hooks.example.invalid/ok' };
    const viaCi = await t.api('POST', `/v2/${ep}/run`, hook, { key });
    const viaAdmin = await t.api('POST', `/v2/${ep}/run`, hook);
    const policyOf = async (id: string) => (await t.server.store.getJob(ep, id))!.policy;
    expect(await policyOf(viaCi.json.id as string)).toMatchObject({ webhookPublicOnly: true });
    expect(await policyOf(viaAdmin.json.id as string)).not.toHaveProperty('webhookPublicOnly');

    // Delivered, such a job's name that resolves to loopback is refused; without the limit, the admin's goes out.
    const other = await createEndpoint(t);
    const endpoint = (await t.server.store.getEndpoint(null, other))!;
    const byName = `http://localhost:${new URL(receiver.url('/')).port}/ok`;
    const deliver = async (webhookPublicOnly: boolean): Promise<string> => {
      const job = await t.server.engine.submit(endpoint, { input: {}, webhook: byName, webhookPublicOnly }, 'async');
      const w = protocolWorker(t, other, `w-hook-${++workerSeq}`);
      expect((await w.take()).json.id).toBe(job.id);
      expect((await w.done(job.id, { output: 1 })).status).toBe(200);
      return job.id;
    };
    const limited = await deliver(true);
    let d: any[] = [];
    await vi.waitFor(async () => {
      d = await deliveries(t, other, limited);
      expect(d[0]?.state).toBe('failed');
    }, WAIT);
    expect(d[0].attempts[0]).toMatchObject({ error: expect.stringMatching(/localhost resolves to a private/) });
    expect(receiver.forJob(limited)).toEqual([]);
    const open = await deliver(false);
    await vi.waitFor(() => expect(receiver.forJob(open)).toHaveLength(1), WAIT);
  });

  it("a blocked port (fetch's list: SMTP, SSH, IRC …) is refused at submission, for the admin too", async () => {
    const ep = await createEndpoint(t);
    const res = await t.api('POST', `/v2/${ep}/run`, { input: {}, webhook: 'http://127.0.0.1:25/hook' });
    expect(res.status).toBe(400);
    expect(res.json.message).toMatch(/port 25 is not a webhook receiver/);
    expect(res.json.details).toEqual([expect.objectContaining({ field: 'webhook' })]);
  });

  it('a host name that resolves to a private address is refused when delivered: failed at once, nothing sent', async () => {
    const { as, ep } = await tenant(t);
    // The route only sees names; the address is checked at the connection (a name may resolve differently later).
    const endpoint = (await t.server.store.getEndpoint(null, ep))!;
    const port = new URL(receiver.url('/')).port;
    const job = await t.server.engine.submit(
      endpoint,
      { input: { n: 1 }, webhook: `http://localhost:${port}/ok` },
      'async',
    );
    const w = protocolWorker(as, ep, `w-hook-${++workerSeq}`, as.key);
    expect((await w.take()).json.id).toBe(job.id);
    expect((await w.done(job.id, { output: 1 })).status).toBe(200);
    let d: any[] = [];
    await vi.waitFor(async () => {
      d = await deliveries(as, ep, job.id);
      expect(d[0]?.state).toBe('failed');
    }, WAIT);
    expect(d[0].attempts).toHaveLength(1);
    expect(d[0].attempts[0]).toMatchObject({
      statusCode: null,
      error: expect.stringMatching(/localhost resolves to a private/),
    });
    expect(receiver.forJob(job.id)).toEqual([]);
  });

  it('the admin may (default), and so may everyone with webhookPrivateTargets=all; with none nobody may', async () => {
    // The admin's loopback deliveries are what every test above does. With `all`, a tenant's goes out too.
    const open = await startTestServer({ webhookRetryDelayMs: RETRY_MS, webhookPrivateTargets: 'all' });
    try {
      const { as, ep } = await tenant(open);
      const id = await finished(as, ep, receiver.url('/ok'), { output: 1 });
      await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
    } finally {
      await open.close();
    }
    const closed = await startTestServer({ webhookPrivateTargets: 'none' });
    try {
      const ep = await createEndpoint(closed);
      const res = await closed.api('POST', `/v2/${ep}/run`, { input: {}, webhook: receiver.url('/ok') });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/127\.0\.0\.1 is a private/);
    } finally {
      await closed.close();
    }
  });
});

describe('restart', () => {
  it('a delivery pending between attempts survives a restart and completes on the new server', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-hooks-'));
    // Attempt 2 is due a minute after attempt 1 on a clock only the test moves: the first server cannot make it
    // before it is closed, however slow the machine, and the second makes it once the clock is moved past it.
    const retryDelayMs = 60_000;
    const restartClock = new TestClock();
    const config = { dataDir, webhookRetryDelayMs: retryDelayMs, webhookTimeoutMs: TIMEOUT_MS, takeWaitMs: 500 };
    try {
      receiver.switchStatus = 500;
      const first = await startTestServer(config, { clock: restartClock });
      const secret = await secretOf(first);
      const ep = await createEndpoint(first);
      const id = await finished(first, ep, receiver.url('/switch'), { output: 'survives' });
      await vi.waitFor(async () => expect((await deliveries(first, ep, id))[0]?.attempts).toHaveLength(1), WAIT);
      await first.close(); // mid-retry: attempt 2 is not due yet

      receiver.switchStatus = 200;
      const second = await startTestServer(config, { clock: restartClock });
      try {
        // Still waiting for its retry on the new server...
        expect((await deliveries(second, ep, id))[0]).toMatchObject({ state: 'pending', attempts: [{ attempt: 1 }] });
        // ...which it makes once the retry is due.
        restartClock.advance(retryDelayMs);
        await vi.waitFor(async () => expect((await deliveries(second, ep, id))[0].state).toBe('delivered'), WAIT);
        const [d] = await deliveries(second, ep, id);
        expect(d.attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([
          [1, 500],
          [2, 200],
        ]);
        const got = receiver.forJob(id);
        expect(got.map((r) => r.headers['x-wharf-attempt'])).toEqual(['1', '2']);
        expect(got[1]!.body).toBe(got[0]!.body);
        expect(signatureOk(secret, got[1]!)).toBe(true);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an attempt cut off by a shutdown is not counted and is made again after the restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-hooks-'));
    // Attempts time out only long after the close has cut this one off, however slow the machine.
    const config = { dataDir, webhookTimeoutMs: 60_000, takeWaitMs: 500 };
    try {
      receiver.switchStatus = 0; // hang
      const first = await startTestServer(config);
      const ep = await createEndpoint(first);
      const id = await finished(first, ep, receiver.url('/switch'), { output: 'cut' });
      await vi.waitFor(() => expect(receiver.forJob(id)).toHaveLength(1), WAIT);
      await first.close(); // waits up to 1 s for the attempt, then cuts it off and hands the delivery back

      receiver.switchStatus = 200;
      const second = await startTestServer(config);
      try {
        await vi.waitFor(async () => expect((await deliveries(second, ep, id))[0].state).toBe('delivered'), WAIT);
        const [d] = await deliveries(second, ep, id);
        expect(d.attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([[1, 200]]);
        const got = receiver.forJob(id);
        expect(got.map((r) => r.headers['x-wharf-attempt'])).toEqual(['1', '1']);
        expect(got[1]!.headers['x-wharf-delivery-id']).toBe(got[0]!.headers['x-wharf-delivery-id']);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const noPostgres = await pgUnavailable('Webhooks on two nodes sharing PostgreSQL');

describe.skipIf(noPostgres !== null)('multi-node (two nodes on one PostgreSQL)', () => {
  it('only the leader delivers, once per job whichever node finished it; the next leader takes over', async () => {
    const config = {
      store: schemaUrl(newSchema(), 4),
      secretKey: randomBytes(32).toString('base64'),
      webhookRetryDelayMs: RETRY_MS,
      takeWaitMs: 500,
    };
    const nodes = [await startTestServer(config), await startTestServer(config)];
    const isLeader = async (s: TestServer) => (await s.api('GET', '/readyz')).json.leader === true;
    try {
      await vi.waitFor(async () => expect((await Promise.all(nodes.map(isLeader))).sort()).toEqual([false, true]), {
        timeout: 10_000,
      });
      const ep = await createEndpoint(nodes[0]!);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push(await finished(nodes[i % 2]!, ep, receiver.url('/ok'), { output: i }));
      await vi.waitFor(() => expect(ids.map((id) => receiver.forJob(id).length)).toEqual(ids.map(() => 1)), WAIT);
      await new Promise((resolve) => setTimeout(resolve, 1500)); // the follower's would-be poll
      expect(ids.map((id) => receiver.forJob(id).length)).toEqual(ids.map(() => 1));
      // Attempts are counted where they are made: all on the leader.
      const leader = (await isLeader(nodes[0]!)) ? 0 : 1;
      const attempts = async (s: TestServer) =>
        (await s.api('GET', '/metrics')).text.match(
          new RegExp(`wharf_webhook_attempts_total\\{endpoint="${ep}",outcome="delivered"\\} (\\d+)`),
        )?.[1];
      expect(await attempts(nodes[leader]!)).toBe('6');
      expect(await attempts(nodes[1 - leader]!)).toBeUndefined();

      // The leader goes; the other node takes its duties over and delivers what finishes now.
      await nodes[leader]!.close();
      const survivor = nodes[1 - leader]!;
      const later = await finished(survivor, ep, receiver.url('/ok'), { output: 'after' });
      await vi.waitFor(() => expect(receiver.forJob(later)).toHaveLength(1), { timeout: 10_000 });
      expect(await isLeader(survivor)).toBe(true);
    } finally {
      for (const s of nodes) await s.close();
    }
  });
});
