// A step of the system clock (NTP correction, manual change) while the server runs. The server's clock is
// monotonicWallClock(): anchored to the wall clock once at start, then advanced by the monotonic clock. Date.now is
// patched here to jump, exactly as a system clock step looks to the process, and the real clock is handed to
// startServer through its clock seam: queued jobs (ttl 60 s), running jobs (execution timeout 60 s), worker leases
// and kept results must all survive a jump of hours, forwards or backwards.
//
// Across a restart the clock is anchored again to the wall clock, whatever it says then: a server restarted after
// a forward step of 6 h sees a 60 s ttl long past and expires the job (the last test pins this down). Jobs store
// wall-clock timestamps, so only a running server can bridge a step.

import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach, beforeEach, expect, it } from 'vitest';

import { monotonicWallClock } from '../../src/engine/index.ts';
import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';

const HOUR = 3_600_000;
const realNow = Date.now.bind(Date);
let step = 0;
const servers: TestServer[] = [];

beforeEach(() => {
  step = 0;
  Date.now = () => realNow() + step;
});
afterEach(async () => {
  Date.now = realNow;
  for (const t of servers.splice(0)) await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(dataDir?: string): Promise<TestServer> {
  const t = await startTestServer(
    { sweepIntervalMs: 50, leaseMs: 5000, ...(dataDir ? { dataDir } : {}) },
    { clock: monotonicWallClock() },
  );
  servers.push(t);
  return t;
}

/** A queued job (ttl 60 s), a running one (execution timeout 60 s, its worker pinging), a completed one. */
async function jobs(t: TestServer) {
  const ep = await createEndpoint(t);
  const w = protocolWorker(t, ep, 'clock-w1');
  const running = (await t.api('POST', `/v2/${ep}/run`, { input: { r: 1 }, policy: { executionTimeout: 60_000 } })).json
    .id as string;
  expect((await w.take()).json.id).toBe(running);
  const completed = (await t.api('POST', `/v2/${ep}/run`, { input: { c: 1 } })).json.id as string;
  expect((await w.take()).json.id).toBe(completed);
  expect((await w.done(completed, { output: { ok: true } })).status).toBe(200);
  const queued = (await t.api('POST', `/v2/${ep}/run`, { input: { q: 1 }, policy: { ttl: 60_000 } })).json.id as string;
  return { ep, w, running, completed, queued };
}

async function expectUntouched(t: TestServer, j: Awaited<ReturnType<typeof jobs>>): Promise<void> {
  const status = async (id: string) => (await t.api('GET', `/v2/${j.ep}/status/${id}`)).json;
  expect(await status(j.queued)).toMatchObject({ status: 'IN_QUEUE' });
  expect(await status(j.running)).toMatchObject({ status: 'IN_PROGRESS', workerId: 'clock-w1' });
  expect(await status(j.completed)).toMatchObject({ status: 'COMPLETED', output: { ok: true } });
  // The running job's worker still holds it: its result is accepted.
  const health = (await t.api('GET', `/v2/${j.ep}/health`)).json;
  expect(health.jobs).toMatchObject({ inQueue: 1, inProgress: 1, completed: 1, failed: 0 });
}

it('a forward jump of 6 h expires nothing: ttl, execution timeout, lease and results keep their time', async () => {
  const t = await start();
  const j = await jobs(t);
  step = 6 * HOUR;
  await j.w.ping([j.running]);
  await sleep(500); // ten sweeps
  await expectUntouched(t, j);
  expect(t.server.engine.clock.now() - realNow()).toBeLessThan(1000);
  // The worker posts the result after the jump: accepted.
  expect((await j.w.done(j.running, { output: { late: true } })).status).toBe(200);
});

it('a backward jump of 6 h changes nothing: jobs stay as they were, new jobs get the server time', async () => {
  const t = await start();
  const j = await jobs(t);
  step = -6 * HOUR;
  await j.w.ping([j.running]);
  await sleep(500);
  await expectUntouched(t, j);
  // New jobs submitted after the step are stamped with the server's clock, not the stepped one.
  const fresh = await t.api('POST', `/v2/${j.ep}/run`, { input: { after: 1 } });
  const listed = await t.api('GET', `/v2/${j.ep}/requests?limit=500`);
  const row = (listed.json.requests as Array<{ id: string; createdAt: string }>).find((r) => r.id === fresh.json.id);
  expect(Math.abs(Date.parse(row!.createdAt) - realNow())).toBeLessThan(5000);
});

it('across a restart the clock is anchored again: after a forward step the 60 s ttl has run out', async () => {
  let t = await start();
  const j = await jobs(t);
  step = 6 * HOUR;
  await t.server.close();
  servers.pop();
  t = await start(t.dataDir);
  const res = await t.api('GET', `/v2/${j.ep}/status/${j.queued}`);
  expect(res.status).toBe(404);
  expect(res.json.code).toBe('JOB_EXPIRED');
  await t.close();
  servers.pop();
  rmSync(t.dataDir, { recursive: true, force: true });
});

it("a webhook's X-Wharf-Timestamp is the system clock's, stepped or not: receivers check it against theirs", async () => {
  // The server's clock keeps its time across a step (above), but a receiver checks the timestamp against its own
  // clock, which follows the step (docs/webhooks.md: reject one more than 5 minutes off). A server started before its
  // clock was set right (a machine booting before NTP) would otherwise sign every delivery with a stale time.
  const got: Array<{ timestamp: number; at: number }> = [];
  const receiver = createServer((req, res) => {
    got.push({ timestamp: Number(req.headers['x-wharf-timestamp']), at: Date.now() / 1000 });
    res.end('ok');
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  try {
    const t = await start();
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, 'clock-hook');
    step = 2 * HOUR;
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const id = (await t.api('POST', `/v2/${ep}/run`, { input: { h: 1 }, webhook: url })).json.id as string;
    expect((await w.take()).json.id).toBe(id);
    expect((await w.done(id, { output: { ok: true } })).status).toBe(200);
    for (let i = 0; i < 100 && got.length === 0; i++) await sleep(50);
    expect(got).toHaveLength(1);
    expect(Math.abs(got[0]!.timestamp - got[0]!.at)).toBeLessThan(10);
  } finally {
    receiver.close();
  }
});
