// Fenced attempts and worker identity (DESIGN.md §1 principle 3, §3 "Job lifecycle") against a real server on
// loopback and real SQLite, with short leases so lost workers are noticed in a second or two.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { WorkerRecord } from '../../src/domain/index.ts';
import { generateKey, hashKey } from '../../src/engine/accounts.ts';
import { createEndpoint, protocolWorker, request, startTestServer, type TestServer } from '../helpers/server.ts';

const LEASE_MS = 1500;
const GRACE_MS = 1000;
const MAX_ATTEMPTS = 2;

let t: TestServer;
let seq = 0;

beforeAll(async () => {
  t = await startTestServer({
    takeWaitMs: 1000,
    stopWaitMs: 1000,
    leaseMs: LEASE_MS,
    lostJobGraceMs: GRACE_MS,
    maxAttempts: MAX_ATTEMPTS,
    sweepIntervalMs: 50,
  });
});
afterAll(async () => {
  await t.close();
});

const wid = (name: string): string => `${name}-${++seq}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function submit(srv: TestServer, ep: string, input: unknown): Promise<string> {
  const res = await srv.api('POST', `/v2/${ep}/run`, { input });
  expect(res.status).toBe(200);
  return res.json.id as string;
}

async function status(srv: TestServer, ep: string, id: string): Promise<any> {
  const res = await srv.api('GET', `/v2/${ep}/status/${id}`);
  expect(res.status).toBe(200);
  return res.json;
}

/** Poll /status until `pred` holds (the sweeper works on its own clock); fails after `ms`. */
async function until(srv: TestServer, ep: string, id: string, pred: (s: any) => boolean, ms: number): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = await status(srv, ep, id);
    if (pred(s)) return s;
    if (Date.now() > deadline)
      throw new Error(`job ${id} never reached the expected state; last: ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

/**
 * A job taken by `workerId` on a server that is then closed; after `downMs` a server starts on the same data
 * directory and `check` runs against it.
 */
async function acrossRestart(
  workerId: string,
  downMs: number,
  check: (after: TestServer, ep: string, id: string) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-lease-restart-'));
  const opts = { dataDir, leaseMs: LEASE_MS, sweepIntervalMs: 50 };
  try {
    const before = await startTestServer(opts);
    const ep = await createEndpoint(before);
    const id = await submit(before, ep, { worker: workerId });
    expect((await protocolWorker(before, ep, workerId).take()).json.id).toBe(id);
    await before.close();
    await sleep(downMs);
    const after = await startTestServer(opts);
    try {
      await check(after, ep, id);
    } finally {
      await after.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function attemptOf(srv: TestServer, ep: string, id: string): Promise<number> {
  const job = await srv.server.store.getJob(ep, id);
  if (!job) throw new Error(`job ${id} missing from the store`);
  return job.attempt;
}

/** A managed worker with its own key, as the fleet issues them: the key is bound to one worker id and endpoint. */
async function issueWorkerKey(srv: TestServer, endpointId: string, workerId: string): Promise<string> {
  const key = generateKey('wharfw');
  const now = Date.now();
  const worker: WorkerRecord = {
    id: workerId,
    endpointId,
    keyHash: hashKey(key),
    version: 1,
    managed: true,
    state: 'initializing',
    reason: null,
    gpuTypeId: null,
    gpuCount: 0,
    createdAt: now,
    lastSeenAt: now,
    retired: false,
    retiredAt: null,
  };
  await srv.server.store.upsertWorker(worker);
  return key;
}

describe('a superseded attempt', () => {
  it('is fenced out: the lost worker’s late posts are refused and the new holder completes the job', async () => {
    const ep = await createEndpoint(t);
    const a = protocolWorker(t, ep, wid('A'));
    const b = protocolWorker(t, ep, wid('B'));
    const id = await submit(t, ep, { work: 1 });
    expect((await a.take()).json.id).toBe(id);
    expect(await attemptOf(t, ep, id)).toBe(1);
    await a.stream(id, { output: 'from A' });

    // A goes silent; its lease runs out and the job goes back to the queue.
    const requeued = await until(t, ep, id, (s) => s.status === 'IN_QUEUE', LEASE_MS + 5000);
    expect(requeued.retries).toBe(1);
    expect(requeued.workerId).toBeUndefined();
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs).toMatchObject({ retried: 1, inQueue: 1, inProgress: 0 });
    // The lost attempt's chunks are gone: the next attempt streams from scratch.
    expect((await t.api('GET', `/v2/${ep}/stream/${id}?wait=0`)).json.stream).toEqual([]);

    const took = await b.take();
    expect(took.json).toEqual({ id, input: { work: 1 } });
    expect(await attemptOf(t, ep, id)).toBe(2);
    expect(await status(t, ep, id)).toMatchObject({ status: 'IN_PROGRESS', workerId: expect.stringMatching(/^B-/) });

    // A wakes up and posts everything it had: every post is refused and nothing changes.
    for (const late of [
      await a.done(id, { output: 'A result' }),
      await a.done(id, { status: 'IN_PROGRESS', output: 'A progress' }),
      await a.stream(id, { output: 'A chunk' }),
      await a.done(id, { error: 'A failed' }),
    ]) {
      expect(late.status).toBe(409);
      expect(late.json.code).toBe('STALE_ATTEMPT');
    }
    const during = await status(t, ep, id);
    expect(during.status).toBe('IN_PROGRESS');
    expect(during.output).toBeUndefined();
    expect(during.error).toBeUndefined();
    expect((await t.api('GET', `/v2/${ep}/stream/${id}?wait=0`)).json.stream).toEqual([]);

    expect((await b.stream(id, { output: 'from B' })).status).toBe(200);
    expect((await b.done(id, { output: 'B result' })).status).toBe(200);
    const final = await status(t, ep, id);
    expect(final).toMatchObject({ status: 'COMPLETED', output: 'B result', retries: 1 });
    expect((await t.api('GET', `/v2/${ep}/stream/${id}`)).json.stream).toEqual([{ output: 'from B' }]);

    // A job is never completed twice: neither by A nor by B again.
    const twiceA = await a.done(id, { output: 'A again' });
    const twiceB = await b.done(id, { output: 'B again' });
    expect([twiceA.status, twiceB.status]).toEqual([409, 409]);
    const completed = await status(t, ep, id);
    expect(completed).toMatchObject({ status: 'COMPLETED', output: 'B result' });
    // B's retry of the very result it got accepted (its acknowledgement lost) is acknowledged again and changes
    // nothing; the same body from A, which did not post it, is still refused.
    const retried = await b.done(id, { output: 'B result' });
    expect(retried.status).toBe(200);
    expect((await a.done(id, { output: 'B result' })).status).toBe(409);
    expect(await status(t, ep, id)).toEqual(completed);
    const after = await t.api('GET', `/v2/${ep}/health`);
    expect(after.json.jobs).toMatchObject({ completed: 1, failed: 0, retried: 1 });
  });

  it('a worker back after losing its lease is told to stop the job it lost, and is not handed it again', async () => {
    // A's pings stopped reaching the server (a partition, a stalled process) while its handler kept running the job.
    const ep = await createEndpoint(t);
    const a = protocolWorker(t, ep, wid('A'));
    const id = await submit(t, ep, { work: 2 });
    expect((await a.take()).json.id).toBe(id);
    await until(t, ep, id, (s) => s.status === 'IN_QUEUE', LEASE_MS + 5000);

    // A is back. Its stop poll names the job, so the run the server gave up on ends; and its takes pass over the
    // job (the protocol names jobs by id only: the old run's result would be taken for the new attempt's).
    expect((await a.ping([id])).status).toBe(200);
    const stops = await a.stops();
    expect(stops.status, stops.text).toBe(200);
    expect(stops.json).toEqual({ jobsToStop: [id] });
    expect((await a.take()).status).toBe(204);
    expect((await status(t, ep, id)).status).toBe('IN_QUEUE');
    // Another worker takes it at once, and completes it.
    const b = protocolWorker(t, ep, wid('B'));
    expect((await b.take()).json).toEqual({ id, input: { work: 2 } });
    expect((await b.done(id, { output: 'B result' })).status).toBe(200);
    expect(await status(t, ep, id)).toMatchObject({ status: 'COMPLETED', output: 'B result', retries: 1 });
  });

  it('a worker that keeps pinging keeps its lease', async () => {
    const ep = await createEndpoint(t);
    const a = protocolWorker(t, ep, wid('A'));
    const id = await submit(t, ep, {});
    await a.take();
    const until = Date.now() + LEASE_MS * 2;
    // The server writes a renewal at most once a second (TOUCH_EVERY_MS): frequent pings keep the gap between two
    // renewals near 1 s, well inside the 1.5 s lease even when a ping comes late.
    while (Date.now() < until) {
      expect((await a.ping([id])).status).toBe(200);
      await sleep(100);
    }
    expect(await status(t, ep, id)).toMatchObject({ status: 'IN_PROGRESS' });
    expect((await a.done(id, { output: 'kept' })).status).toBe(200);
    expect((await status(t, ep, id)).retries).toBeUndefined();
  });

  it("a server restart does not count its downtime against a live worker's lease", () =>
    // Down for longer than a lease: the worker cannot renew meanwhile.
    acrossRestart('restart-w1', LEASE_MS + 500, async (after, ep, id) => {
      await sleep(LEASE_MS / 2); // many sweeps, all within a lease of the start
      expect(await status(after, ep, id)).toMatchObject({ status: 'IN_PROGRESS', workerId: 'restart-w1' });
      // The worker is back: its result is accepted, on the first attempt.
      expect((await protocolWorker(after, ep, 'restart-w1').done(id, { output: 'kept' })).status).toBe(200);
      expect(await status(after, ep, id)).toMatchObject({ status: 'COMPLETED', output: 'kept' });
      expect(await attemptOf(after, ep, id)).toBe(1);
    }));

  it('a worker that died while the server was down still loses its jobs after the restart', () =>
    acrossRestart('gone-w1', 0, async (after, ep, id) => {
      const back = await until(after, ep, id, (s) => s.status === 'IN_QUEUE', LEASE_MS + 5000);
      expect(back.retries).toBe(1);
    }));

  it(`after ${MAX_ATTEMPTS} lost leases the job is FAILED with an error naming the lost worker`, async () => {
    const ep = await createEndpoint(t);
    const first = wid('lost');
    const second = wid('lost');
    const id = await submit(t, ep, { poison: true });
    expect((await protocolWorker(t, ep, first).take()).json.id).toBe(id);
    await until(t, ep, id, (s) => s.status === 'IN_QUEUE', LEASE_MS + 5000);
    expect((await protocolWorker(t, ep, second).take()).json.id).toBe(id);
    const failed = await until(t, ep, id, (s) => s.status !== 'IN_PROGRESS', LEASE_MS + 5000);
    expect(failed.status).toBe('FAILED');
    expect(typeof failed.error).toBe('string');
    expect(failed.error).toContain(second);
    expect(failed.error).toMatch(/lost/i);
    // Run again once: one retry. The loss that failed it put it back in no queue, so it is not a retry.
    expect(failed.retries).toBe(MAX_ATTEMPTS - 1);
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs).toMatchObject({ failed: 1, inQueue: 0, inProgress: 0, retried: 1 });
    // A failed job is final: a late result from the last holder changes nothing.
    expect((await protocolWorker(t, ep, second).done(id, { output: 'too late' })).status).toBe(409);
    expect((await status(t, ep, id)).status).toBe('FAILED');
  });
});

describe('lost jobs', () => {
  it(`a job missing from the worker's pings for longer than lostJobGraceMs is requeued`, async () => {
    const ep = await createEndpoint(t);
    const a = protocolWorker(t, ep, wid('forgetful'));
    const [lost, kept] = [await submit(t, ep, { n: 1 }), await submit(t, ep, { n: 2 })];
    const batch = await a.takeBatch(2);
    expect(batch.json.map((j: any) => j.id)).toEqual([lost, kept]);
    // Within the grace period a job missing from a ping is not yet lost (the ping may predate the take).
    expect((await a.ping([kept])).status).toBe(200);
    expect((await status(t, ep, lost)).status).toBe('IN_PROGRESS');
    // The worker keeps pinging (its lease stays fresh) but lists only one of its two jobs.
    const deadline = Date.now() + GRACE_MS + 5000;
    while ((await status(t, ep, lost)).status === 'IN_PROGRESS' && Date.now() < deadline) {
      await a.ping([kept]);
      await sleep(200);
    }
    const s = await status(t, ep, lost);
    expect(s.status).toBe('IN_QUEUE');
    expect(s.retries).toBe(1);
    expect(await status(t, ep, kept)).toMatchObject({ status: 'IN_PROGRESS' });
    expect((await a.done(lost, { output: 'late' })).status).toBe(409);
    expect((await a.done(kept, { output: 'fine' })).status).toBe(200);
    const b = protocolWorker(t, ep, wid('B'));
    expect((await b.take()).json.id).toBe(lost);
  });

  it('a batch worker pings all its jobs in one job_id, comma-joined (%2C): none of them is lost', async () => {
    // The SDK's heartbeat lists every job it holds (spec §1.14, scenario `batch`: job_id=b-1%2Cb-2%2Cb-3).
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('batcher'));
    const ids = [await submit(t, ep, { n: 1 }), await submit(t, ep, { n: 2 }), await submit(t, ep, { n: 3 })];
    expect((await w.takeBatch(3)).json.map((j: any) => j.id)).toEqual(ids);
    const until = Date.now() + GRACE_MS + 1000;
    while (Date.now() < until) {
      expect((await w.ping(ids)).status).toBe(200);
      await sleep(200);
    }
    for (const id of ids) {
      const s = await status(t, ep, id);
      expect(s.status).toBe('IN_PROGRESS');
      expect(s.retries).toBeUndefined();
    }
    for (const id of ids) expect((await w.done(id, { output: id })).status).toBe(200);
  });

  it('a take whose client disconnects before the job arrives does not lose the job', async () => {
    // Take polls of 10 s: the next worker's take must find the job at once, not at the end of a poll.
    const srv = await startTestServer({ takeWaitMs: 10_000 });
    try {
      const ep = await createEndpoint(srv);
      const goneId = wid('gone');
      const gone = protocolWorker(srv, ep, goneId);
      const abort = new AbortController();
      const pending = gone.take('job_in_progress=0', abort.signal).catch((e: unknown) => e);
      await sleep(200);
      abort.abort();
      await pending;
      await sleep(100);
      const id = await submit(srv, ep, { hello: 'anyone' });
      await sleep(200);
      expect(await status(srv, ep, id)).toMatchObject({ status: 'IN_QUEUE' });
      expect(await srv.server.store.workerJobIds(goneId)).toEqual([]);
      const started = Date.now();
      const took = await protocolWorker(srv, ep, wid('present')).take();
      expect(took.json.id).toBe(id);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await attemptOf(srv, ep, id)).toBe(1);
    } finally {
      await srv.close();
    }
  });

  it('a job handed to a worker whose lease had already run out is still recovered when that worker dies', async () => {
    // A long take poll (longer than the lease): the worker is marked lease-expired while it waits, then receives a
    // job, then dies. The job must not stay IN_PROGRESS forever.
    // The poll lasts 10 s, so it is still waiting when the job comes, however slowly the lease runs out before.
    const srv = await startTestServer({ takeWaitMs: 10_000, leaseMs: LEASE_MS, maxAttempts: 3, sweepIntervalMs: 50 });
    try {
      const ep = await createEndpoint(srv);
      const workerId = wid('sleepy');
      const w = protocolWorker(srv, ep, workerId);
      const pending = w.take();
      await sleep(LEASE_MS + 500);
      const id = await submit(srv, ep, { late: true });
      expect((await pending).json.id).toBe(id);
      // The worker now dies without a word.
      const s = await until(srv, ep, id, (x) => x.status !== 'IN_PROGRESS', LEASE_MS + 5000);
      expect(s).toMatchObject({ status: 'IN_QUEUE', retries: 1 });
    } finally {
      await srv.close();
    }
  });
});

describe('the stop channel', () => {
  it('a job past its executionTimeout is TIMED_OUT, its worker is told to stop it, and a late result is refused', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('slow'));
    const sub = await t.api('POST', `/v2/${ep}/run`, { input: { slow: true }, policy: { executionTimeout: 5000 } });
    const id = sub.json.id as string;
    // Before the take: the server starts the attempt's clock after this moment, whatever the take's round trip.
    const beforeTake = Date.now();
    expect((await w.take()).json.id).toBe(id);
    // The worker polls its stop channel (as the SDK does) and pings with the job it holds.
    let stop: Awaited<ReturnType<typeof w.stops>> | undefined;
    while (Date.now() - beforeTake < 15_000) {
      await w.ping([id]);
      const res = await w.stops();
      if (res.status === 200) {
        stop = res;
        break;
      }
      expect(res.status).toBe(204);
    }
    expect(stop?.json).toEqual({ jobsToStop: [id] });
    // Not before the 5 s timeout (10 ms for timer and clock rounding).
    expect(Date.now() - beforeTake).toBeGreaterThanOrEqual(4990);
    expect(await status(t, ep, id)).toMatchObject({ status: 'TIMED_OUT' });
    const late = await w.done(id, { output: 'finally' });
    expect(late.status).toBe(409);
    const s = await status(t, ep, id);
    expect(s.status).toBe('TIMED_OUT');
    expect(s.output).toBeUndefined();
  });
});

describe('worker identity', () => {
  it('a worker key works only for its own worker id and endpoint (else 401)', async () => {
    const ep1 = await createEndpoint(t);
    const ep2 = await createEndpoint(t);
    const me = wid('managed');
    const key = await issueWorkerKey(t, ep1, me);
    const id = await submit(t, ep1, { managed: true });
    const self = protocolWorker(t, ep1, me, key);
    expect((await self.ping()).status).toBe(200);
    expect((await self.take()).json.id).toBe(id);

    const impostor = protocolWorker(t, ep1, wid('impostor'), key);
    const elsewhere = protocolWorker(t, ep2, me, key);
    // Refused polls are held for a moment (anti-spin); meanwhile the real worker pings as the SDK does, so its lease
    // (renewed at most once a second) never lapses however slow the machine.
    const pings: Array<Promise<{ status: number }>> = [];
    const pinger = setInterval(() => pings.push(self.ping([id])), 250);
    try {
      for (const w of [impostor, elsewhere]) {
        const answers = await Promise.all([
          w.take(),
          w.takeBatch(2),
          w.stops(),
          w.ping(),
          w.done(id, { output: 'stolen' }),
          w.stream(id, { output: 'stolen' }),
        ]);
        for (const res of answers) {
          expect(res.status).toBe(401);
          expect(typeof res.json.code).toBe('string');
        }
      }
    } finally {
      clearInterval(pinger);
    }
    expect((await Promise.all(pings)).map((p) => p.status)).toEqual(pings.map(() => 200));
    // The same key on the worker's own URLs still works, and the job is untouched by the refused posts.
    expect(await status(t, ep1, id)).toMatchObject({ status: 'IN_PROGRESS', workerId: me });
    expect((await self.done(id, { output: 'mine' })).status).toBe(200);
    expect(await status(t, ep1, id)).toMatchObject({ status: 'COMPLETED', output: 'mine' });
    // A worker key is no API key: the queue API refuses it.
    const run = await t.api('POST', `/v2/${ep1}/run`, { input: {} }, { key });
    expect(run.status).toBe(401);
  });

  it('a refused take is held before it is answered, so the official SDK does not spin on it', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('revoked'), 'wharfw_not_a_real_key');
    const started = Date.now();
    expect((await w.take()).status).toBe(401);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    // Result posts are not polls: they are refused at once. Checked where refused polls are held 5 s (the most; its
    // takeWaitMs is longer), so that a held post would stand out from a slow one.
    const srv = await startTestServer({ takeWaitMs: 10_000 });
    try {
      const ep2 = await createEndpoint(srv);
      const w2 = protocolWorker(srv, ep2, wid('revoked'), 'wharfw_not_a_real_key');
      expect(srv.server.workers.refusalHoldMs).toBe(5000);
      const posted = Date.now();
      expect((await w2.done('x', { output: 1 })).status).toBe(401);
      expect(Date.now() - posted).toBeLessThan(3000);
    } finally {
      await srv.close();
    }
  });

  it('a poll whose URL names no worker (RUNPOD_POD_ID set but empty) is refused and held; no worker is made', async () => {
    // The SDK pastes the id in as it is (spec §1.4): an empty one leaves `job-take/?gpu=…`, or without the template's
    // `?`, `job-take/&job_in_progress=0`. Nothing it takes could be posted back (`job-done//<job>` names no worker).
    const ep = await createEndpoint(t);
    const id = await submit(t, ep, { nobody: true });
    const base = `${t.url}/v2/${ep}`;
    const headers = { authorization: t.key, 'content-type': 'application/json' };
    const polls = [
      `${base}/job-take/?gpu=x&job_in_progress=0`,
      `${base}/job-take/&job_in_progress=0`,
      `${base}/job-take-batch/?gpu=x&batch_size=2&job_in_progress=0`,
      `${base}/job-take-batch/&batch_size=2&job_in_progress=0`,
      `${base}/job-stop/?gpu=x`,
    ];
    const answers = await Promise.all(
      polls.map(async (url) => {
        const started = Date.now();
        const res = await request(url, 'GET', undefined, { headers });
        return { url, status: res.status, code: res.json?.code, message: res.json?.message, ms: Date.now() - started };
      }),
    );
    for (const a of answers) {
      expect(a).toMatchObject({ url: a.url, status: 400, code: 'VALIDATION_FAILED' });
      expect(a.message).toContain('RUNPOD_POD_ID');
      // Held as other refused polls are (the SDK polls again at once after a 400).
      expect(a.ms).toBeGreaterThanOrEqual(900);
    }
    expect(await t.server.store.getWorker('')).toBeNull();
    expect((await status(t, ep, id)).status).toBe('IN_QUEUE');
  });

  it('unknown or missing keys are refused 401', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(t, ep, {});
    for (const w of [protocolWorker(t, ep, wid('x'), 'wharfw_not_a_real_key'), protocolWorker(t, ep, wid('x'), '')]) {
      expect((await w.take()).status).toBe(401);
      expect((await w.ping()).status).toBe(401);
    }
    expect((await status(t, ep, id)).status).toBe('IN_QUEUE');
  });

  it("external workers join with the owner's key, or a restricted key that lists the endpoint — not another's", async () => {
    const ep1 = await createEndpoint(t);
    const ep2 = await createEndpoint(t);
    const owner = t.server.adminUserId;
    const forEp1 = (await t.server.accounts.createKey(owner, 'ep1 only', 'restricted', [ep1])).key;
    const forEp2 = (await t.server.accounts.createKey(owner, 'ep2 only', 'restricted', [ep2])).key;
    const readOnly = (await t.server.accounts.createKey(owner, 'read', 'read')).key;

    const jobs = [await submit(t, ep1, { k: 'owner' }), await submit(t, ep1, { k: 'restricted' })];
    const viaOwner = protocolWorker(t, ep1, wid('ext'), t.key);
    const viaRestricted = protocolWorker(t, ep1, wid('ext'), forEp1);
    expect((await viaOwner.take()).json.id).toBe(jobs[0]);
    expect((await viaRestricted.take()).json.id).toBe(jobs[1]);
    expect((await viaOwner.done(jobs[0]!, { output: 1 })).status).toBe(200);
    expect((await viaRestricted.done(jobs[1]!, { output: 2 })).status).toBe(200);

    const third = await submit(t, ep1, { k: 'refused' });
    for (const key of [forEp2, readOnly]) {
      const w = protocolWorker(t, ep1, wid('ext'), key);
      for (const res of [await w.take(), await w.ping(), await w.stops()]) expect(res.status).toBe(401);
    }
    expect((await status(t, ep1, third)).status).toBe('IN_QUEUE');
  });

  it("another tenant's live external worker holds its id; once silent for a lease, the id may be taken over", async () => {
    const mine = await createEndpoint(t);
    const bob = await t.server.accounts.createUser(`bob-${++seq}`);
    const { key: bobKey } = await t.server.accounts.createKey(bob.id, 'bob', 'all');
    const bobEp = await createEndpoint({ api: (m: string, p: string, b?: unknown) => t.api(m, p, b, { key: bobKey }) });
    const shared = wid('my-gpu-box');
    expect((await protocolWorker(t, bobEp, shared, bobKey).ping()).status).toBe(200);
    const id = await submit(t, mine, {});
    const refused = await protocolWorker(t, mine, shared).ping();
    expect(refused.status).toBe(401);
    expect(refused.json.message).toContain('RUNPOD_POD_ID');
    expect(refused.json.message).not.toContain(bobEp);
    // Bob's worker goes quiet for longer than a lease, holding nothing: the id is free again.
    await sleep(LEASE_MS + 300);
    const w = protocolWorker(t, mine, shared);
    expect((await w.take()).json.id).toBe(id);
    expect((await w.done(id, { output: 'mine' })).status).toBe(200);
    // And it is now this endpoint's: bob's worker is the one refused.
    expect((await protocolWorker(t, bobEp, shared, bobKey).ping()).status).toBe(401);
  });

  it('an external worker retired by stopPod or a failed fitness check takes jobs again a lease later', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('box'));
    const first = await submit(t, ep, {});
    expect((await w.take()).json.id).toBe(first);
    expect((await w.done(first, { error: 'bad input', stopPod: true })).status).toBe(200);
    const second = await submit(t, ep, {});
    expect((await w.take()).status).toBe(204);
    await sleep(LEASE_MS + 100);
    expect((await w.take()).json.id).toBe(second);
    expect((await w.done(second, { output: 2 })).status).toBe(200);

    const unfit = await w.ping([], '&status=unhealthy&check=check_model&reason=RuntimeError%3A+missing');
    expect(unfit.status).toBe(200);
    const third = await submit(t, ep, {});
    expect((await w.take()).status).toBe(204);
    await sleep(LEASE_MS + 100);
    expect((await w.take()).json.id).toBe(third);
    expect((await t.api('GET', `/v2/${ep}/health`)).json.workers.unhealthy).toBe(0);
  });

  it('an external worker retired on another node or before a restart waits out the same lease, then takes jobs', async () => {
    const ep = await createEndpoint(t);
    const workerId = wid('box');
    const w = protocolWorker(t, ep, workerId);
    expect((await w.ping()).status).toBe(200);
    // Written to the store as another node (or an earlier run of this server) would: nothing in this node's memory.
    await t.server.store.touchWorker(workerId, Date.now(), { retired: true, reason: 'stopPod' });
    const id = await submit(t, ep, {});
    expect((await w.take()).status).toBe(204);
    await sleep(LEASE_MS + 100);
    expect((await w.take()).json.id).toBe(id);
    expect((await t.server.store.getWorker(workerId))?.retiredAt).toBeNull();
    // Retired before the time was kept (an older database): taken back at once, never refused for good.
    const stored = await t.server.store.getWorker(workerId);
    await t.server.store.upsertWorker({ ...stored!, retired: true, retiredAt: null });
    const next = await submit(t, ep, {});
    expect((await w.take()).json.id).toBe(next);
  });

  it("an external worker cannot use the id of another endpoint's worker", async () => {
    const ep1 = await createEndpoint(t);
    const ep2 = await createEndpoint(t);
    const shared = wid('shared');
    expect((await protocolWorker(t, ep1, shared).ping()).status).toBe(200);
    const id = await submit(t, ep2, {});
    const res = await protocolWorker(t, ep2, shared).take();
    expect(res.status).toBe(401);
    expect((await status(t, ep2, id)).status).toBe('IN_QUEUE');
  });
});
