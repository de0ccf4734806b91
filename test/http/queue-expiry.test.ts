import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RETAKE_AFTER_STOP_MS } from '../../src/domain/index.ts';
import { SILENT_WORKER_KEEP_MS } from '../../src/engine/sweeper.ts';
import {
  createEndpoint,
  protocolWorker,
  startTestServer,
  TestClock,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.ts';
import { sample } from '../helpers/prometheus.ts';

/**
 * Time limits of a job (interface §2.3, §3.1, §8.1; DESIGN.md §3 "Job lifecycle"): ttl, executionTimeout and result
 * retention. A hand-moved clock reaches minutes and days at once; the server's sweeps run on it every 50 ms.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;

let t: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  // Worker leases far longer than any jump below, so that only the limit under test acts on a running job.
  // Stop polls are answered by the expiry or timeout under test: a long stopWaitMs leaves the sweeper time for it.
  t = await startTestServer(
    { sweepIntervalMs: 50, leaseMs: 3_600_000, takeWaitMs: 500, stopWaitMs: 10_000 },
    { clock },
  );
});
afterAll(async () => {
  await t.close();
});

let workerSeq = 0;
const newWorker = (endpointId: string) => protocolWorker(t, endpointId, `w-exp-${++workerSeq}`);

async function submit(endpointId: string, body: Record<string, unknown> = {}, route = 'run'): Promise<string> {
  const res = await t.api('POST', `/v2/${endpointId}/${route}`, { input: {}, ...body });
  expect(res.status, res.text).toBe(200);
  return res.json.id as string;
}

const status = (endpointId: string, jobId: string, query = '') =>
  t.api('GET', `/v2/${endpointId}/status/${jobId}${query}`);

function expectGone(res: ApiResponse, code: 'JOB_EXPIRED' | 'JOB_RESULTS_EXPIRED'): void {
  expect(res.status, res.text).toBe(404);
  expect(res.json).toMatchObject({ code, message: expect.any(String) });
}

/**
 * Run `fn` against a server of its own whose sweeper makes no pass after its start (one a minute), on a clock of its
 * own: what a request sees of a limit before any sweep acts on it.
 */
async function withoutSweeps(fn: (slow: TestServer, slowClock: TestClock) => Promise<void>): Promise<void> {
  const slowClock = new TestClock();
  const slow = await startTestServer({ sweepIntervalMs: 60_000, takeWaitMs: 500 }, { clock: slowClock });
  try {
    await fn(slow, slowClock);
  } finally {
    await slow.close();
  }
}

/**
 * How far before a limit the "not yet" checks move the clock. The clock runs on in real time, and the requests between
 * the start of the limit and the check must take less than this: so it is seconds, for a busy machine.
 */
const MARGIN = 10 * SECOND;

/** Let the sweeper (every 50 ms) make a few passes at the current clock. */
const afterSweeps = () => new Promise((resolve) => setTimeout(resolve, 200));

/** Poll /status until it answers 404 with `code` (the sweep deletes the job within a pass or two). */
async function gone(endpointId: string, jobId: string, code: 'JOB_EXPIRED' | 'JOB_RESULTS_EXPIRED') {
  await vi.waitFor(async () => expectGone(await status(endpointId, jobId), code), { timeout: 10_000, interval: 25 });
}

/** A job taken by a fresh worker and finished with `body`. */
async function finished(endpointId: string, body: unknown, route = 'run', extra: Record<string, unknown> = {}) {
  const w = newWorker(endpointId);
  if (route === 'run') {
    const id = await submit(endpointId, extra);
    await w.take();
    expect((await w.done(id, body)).status).toBe(200);
    return id;
  }
  const runsync = t.api('POST', `/v2/${endpointId}/${route}`, { input: {}, ...extra });
  // Taken once it is queued: a take poll (500 ms) started before might end before a slow submission arrives.
  await vi.waitFor(async () => expect((await t.api('GET', `/v2/${endpointId}/health`)).json.jobs.inQueue).toBe(1), {
    timeout: 10_000,
    interval: 25,
  });
  const id = (await w.take()).json.id as string;
  await w.done(id, body);
  expect((await runsync).json.status).not.toBe('IN_QUEUE');
  return id;
}

describe('ttl', () => {
  it('a queued job is deleted when its ttl runs out: 404 JOB_EXPIRED, never handed out', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep, { policy: { ttl: 20_000 } });
    clock.advance(20_000 - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');

    clock.advance(MARGIN + 1);
    // A status-sync waiter is woken by the expiry itself.
    const waited = await t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    expectGone(waited, 'JOB_EXPIRED');
    expectGone(await status(ep, id), 'JOB_EXPIRED');
    expect((await newWorker(ep).take()).status).toBe(204);
    expectGone(await t.api('POST', `/v2/${ep}/cancel/${id}`), 'JOB_EXPIRED');
    expectGone(await t.api('POST', `/v2/${ep}/retry/${id}`), 'JOB_EXPIRED');
    expectGone(await t.api('GET', `/v2/${ep}/stream/${id}`), 'JOB_EXPIRED');
  });

  it('a running job is deleted at ttl: 404 JOB_EXPIRED, its worker gets job-stop, its late result is refused', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { policy: { ttl: 10_000, executionTimeout: 60_000 } });
    clock.advance(4_000);
    expect((await w.take()).json.id).toBe(id);
    // ttl counts from submission, not from the start: 6 s more is the end, although executionTimeout is 60 s.
    const stopping = w.stops();
    clock.advance(6_001);
    const stop = await stopping;
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ jobsToStop: [id] });
    expectGone(await status(ep, id), 'JOB_EXPIRED');

    const late = await w.done(id, { output: 'would have succeeded' });
    expect(late.status).toBeGreaterThanOrEqual(400);
    expect(late.json).toMatchObject({ code: 'JOB_EXPIRED' });
    const lateChunk = await w.stream(id, { output: 'x' });
    expect(lateChunk.status).toBeGreaterThanOrEqual(400);
    expectGone(await status(ep, id), 'JOB_EXPIRED');
  });

  it('a finished job is deleted at its ttl even inside the result retention', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 1 }, 'run', { policy: { ttl: 20_000 } });
    expect((await status(ep, id)).json.status).toBe('COMPLETED');
    clock.advance(20_001);
    await gone(ep, id, 'JOB_EXPIRED');
  });

  it('a finished job deleted at its ttl is not reported as finishing again (metrics count it once)', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 1 }, 'run', { policy: { ttl: 20_000 } });
    const finishedCount = async () =>
      sample((await t.api('GET', '/metrics')).text, 'wharf_jobs_finished_total', { endpoint: ep, status: 'COMPLETED' });
    expect(await finishedCount()).toBe(1);
    clock.advance(20_001);
    await gone(ep, id, 'JOB_EXPIRED');
    await afterSweeps(); // /status reports the expiry before the sweep deletes the job
    expect(await finishedCount()).toBe(1);
  });

  it('an expired job is refused and reported 404 even before a sweep has deleted it', async () => {
    // Sweeps every minute (one ran at start): only the request path itself can notice the expiry.
    await withoutSweeps(async (slow, slowClock) => {
      const ep = await createEndpoint(slow);
      const run = await slow.api('POST', `/v2/${ep}/run`, { input: {}, policy: { ttl: 10_000 } });
      slowClock.advance(10_001);
      expect((await protocolWorker(slow, ep, 'w-slow').take()).status).toBe(204);
      const res = await slow.api('GET', `/v2/${ep}/status/${run.json.id}`);
      expectGone(res, 'JOB_EXPIRED');
    });
  });

  it("a running job's late posts past its ttl, before any sweep, are refused as after it: JOB_EXPIRED", async () => {
    await withoutSweeps(async (slow, slowClock) => {
      const ep = await createEndpoint(slow);
      const w = protocolWorker(slow, ep, 'w-slow');
      const id = (await slow.api('POST', `/v2/${ep}/run`, { input: {}, policy: { ttl: 10_000 } })).json.id;
      expect((await w.take()).json.id).toBe(id);
      slowClock.advance(10_001);
      for (const late of [
        await w.done(id, { status: 'IN_PROGRESS', output: 'progress' }),
        await w.stream(id, { output: 'chunk' }),
        await w.done(id, { output: 'result' }),
      ]) {
        expectGone(late, 'JOB_EXPIRED');
      }
    });
  });

  it('a running job past its ttl and then its deadline, before any sweep: expired, never TIMED_OUT', async () => {
    await withoutSweeps(async (slow, slowClock) => {
      const ep = await createEndpoint(slow);
      const w = protocolWorker(slow, ep, 'w-slow');
      const id = (
        await slow.api('POST', `/v2/${ep}/run`, { input: {}, policy: { ttl: 10_000, executionTimeout: 5_000 } })
      ).json.id;
      slowClock.advance(6_000);
      expect((await w.take()).json.id).toBe(id);
      slowClock.advance(5_001); // the ttl ran out at 10 s, the deadline at 11 s
      expectGone(await slow.api('GET', `/v2/${ep}/status/${id}`), 'JOB_EXPIRED');
      const metrics = (await slow.api('GET', '/metrics')).text;
      expect(sample(metrics, 'wharf_jobs_finished_total', { endpoint: ep, status: 'TIMED_OUT' })).toBeUndefined();
    });
  });

  it('before any sweep: results past retention are gone (no status, no retry), a result past the timeout is refused', async () => {
    await withoutSweeps(async (slow, slowClock) => {
      const ep = await createEndpoint(slow);
      const w = protocolWorker(slow, ep, 'w-slow');
      // A /run job: results kept 30 minutes after it finished.
      const failed = (await slow.api('POST', `/v2/${ep}/run`, { input: {} })).json.id;
      expect((await w.take()).json.id).toBe(failed);
      expect((await w.done(failed, { error: 'boom' })).status).toBe(200);
      slowClock.advance(30 * 60_000 + 1);
      expectGone(await slow.api('GET', `/v2/${ep}/status/${failed}`), 'JOB_RESULTS_EXPIRED');
      expectGone(await slow.api('POST', `/v2/${ep}/retry/${failed}`), 'JOB_RESULTS_EXPIRED');

      const late = (await slow.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } })).json
        .id;
      expect((await w.take()).json.id).toBe(late);
      slowClock.advance(5_001);
      const res = await w.done(late, { output: 'late' });
      expect(res.status, res.text).toBe(409);
      expect(res.json.code).toBe('STALE_ATTEMPT');
      expect((await slow.api('GET', `/v2/${ep}/status/${late}`)).json.output).toBeUndefined();
    });
  });

  it('before any sweep: a read times its job out behind more overdue jobs than one timeout batch', async () => {
    await withoutSweeps(async (slow, slowClock) => {
      const ep = await createEndpoint(slow);
      const w = protocolWorker(slow, ep, 'w-slow');
      const run = async () =>
        (await slow.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } })).json.id;
      for (let i = 0; i < 150; i++) await run();
      expect((await w.takeBatch(200)).json).toHaveLength(150);
      slowClock.advance(1_000);
      const last = await run();
      const cancelled = await run();
      expect((await w.takeBatch(2)).json.map((j: { id: string }) => j.id)).toEqual([last, cancelled]);
      slowClock.advance(5_001); // every deadline has passed; these two passed last
      const res = await slow.api('GET', `/v2/${ep}/status/${last}`);
      expect(res.json).toMatchObject({ status: 'TIMED_OUT' });
      // A cancel cannot turn the timeout into CANCELLED either.
      expect((await slow.api('POST', `/v2/${ep}/cancel/${cancelled}`)).json).toMatchObject({ status: 'TIMED_OUT' });
    });
  });

  it('/status?ttl= shortens the lifespan (counted from submission)', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep); // default ttl: 24 h
    clock.advance(5_000);
    const set = await status(ep, id, '?ttl=20000');
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ id, status: 'IN_QUEUE' });
    clock.advance(20_000 - 5_000 - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');
    clock.advance(MARGIN + 1);
    await gone(ep, id, 'JOB_EXPIRED');
  });

  it('/status?ttl= lengthens the lifespan', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep, { policy: { ttl: 10_000 } });
    expect((await status(ep, id, '?ttl=60000')).status).toBe(200);
    clock.advance(30_000);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');
    const w = newWorker(ep);
    expect((await w.take()).json.id).toBe(id);
    await w.done(id, { output: 'in time' });
    expect((await status(ep, id)).json).toMatchObject({ status: 'COMPLETED', output: 'in time' });
    clock.advance(30_001);
    await gone(ep, id, 'JOB_EXPIRED');
  });

  it('/status?ttl= shorter than the job has lived answers with the result, then the job is gone', async () => {
    // The hosted service's documented use: fetch a result and have it removed sooner than its retention.
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 'fetched once' });
    clock.advance(30_000);
    const res = await status(ep, id, '?ttl=10000');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id, status: 'COMPLETED', output: 'fetched once' });
    await gone(ep, id, 'JOB_EXPIRED');
  });

  it('HEAD /status?ttl= changes nothing (HEAD is a safe method)', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    clock.advance(30_000);
    const head = await t.api('HEAD', `/v2/${ep}/status/${id}?ttl=10000`);
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');
  });

  it('/status?ttl= is not held to the 10 s floor of policy.ttl: the hosted docs example ?ttl=6000 is accepted', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const res = await status(ep, id, '?ttl=6000');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id, status: 'IN_QUEUE' });
    clock.advance(6_000 - MARGIN / 2);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');
    clock.advance(MARGIN / 2 + 1);
    await gone(ep, id, 'JOB_EXPIRED');
  });

  it.each(['-1', '1.5', '604800001', 'soon'])('/status?ttl=%s → 400 naming ttl, the job unchanged', async (ttl) => {
    const ep = await createEndpoint(t);
    const id = await submit(ep, { policy: { ttl: 10_000 } });
    const res = await status(ep, id, `?ttl=${ttl}`);
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('VALIDATION_FAILED');
    expect(res.json.details.map((d: { field: string }) => d.field)).toContain('ttl');
    clock.advance(10_001);
    await gone(ep, id, 'JOB_EXPIRED');
  });
});

describe('executionTimeout', () => {
  it('a job running longer becomes TIMED_OUT, its worker gets job-stop, its late result is refused', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { policy: { executionTimeout: 15_000 } });
    // Time in the queue does not count.
    clock.advance(30_000);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_QUEUE');
    expect((await w.take()).json.id).toBe(id);
    clock.advance(15_000 - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_PROGRESS');

    const stopping = w.stops();
    clock.advance(MARGIN + 1);
    const waited = await t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(waited.json).toMatchObject({ id, status: 'TIMED_OUT' });
    expect((await stopping).json).toEqual({ jobsToStop: [id] });

    const late = await w.done(id, { output: 'late' });
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: 'STALE_ATTEMPT' });
    const after = await status(ep, id);
    expect(after.json.status).toBe('TIMED_OUT');
    expect(after.json.output).toBeUndefined();
  });

  it('past the deadline, before any sweep: /status says TIMED_OUT and a cancel cannot make it CANCELLED', async () => {
    // Sweeps a minute apart (the longest allowed), on their own clock: only the reads below can see the deadline.
    const quiet = new TestClock();
    const q = await startTestServer({ sweepIntervalMs: 60_000, leaseMs: 3_600_000, stopWaitMs: 500 }, { clock: quiet });
    try {
      const ep = await createEndpoint(q);
      const w = protocolWorker(q, ep, 'w-overdue');
      const sub = await q.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } });
      const id = sub.json.id as string;
      expect((await w.take()).json.id).toBe(id);
      quiet.advance(5_001);
      expect((await q.api('GET', `/v2/${ep}/status/${id}`)).json).toMatchObject({ id, status: 'TIMED_OUT' });
      expect((await q.api('POST', `/v2/${ep}/cancel/${id}`)).json).toMatchObject({ id, status: 'TIMED_OUT' });
      expect((await w.stops()).json).toEqual({ jobsToStop: [id] });
      expect((await w.done(id, { output: 'late' })).status).toBe(409);

      // Cancel first, the deadline passed: the cancel finds the timeout, as /status would have.
      const other = (await q.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } })).json.id;
      expect((await w.take()).json.id).toBe(other);
      quiet.advance(5_001);
      expect((await q.api('POST', `/v2/${ep}/cancel/${other}`)).json).toMatchObject({ id: other, status: 'TIMED_OUT' });
      expect((await q.api('POST', `/v2/${ep}/retry/${other}`)).json).toEqual({ id: other, status: 'IN_QUEUE' });
    } finally {
      await q.close();
    }
  });

  it('a timeout noticed late (the server was down) reports the attempt as ending at its deadline', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { policy: { executionTimeout: 15_000 } });
    await w.take();
    clock.advance(600_000); // as if no sweep had run for ten minutes
    await vi.waitFor(async () => expect((await status(ep, id)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    expect((await status(ep, id)).json.executionTime).toBe(15_000);
  });

  it("the policy overrides the endpoint's execution timeout for that job only", async () => {
    const ep = await createEndpoint(t, { executionTimeoutMs: 60_000 });
    const w = newWorker(ep);
    const short = await submit(ep, { policy: { executionTimeout: 5_000 } });
    const plain = await submit(ep);
    await w.take();
    await w.take();
    clock.advance(5_001);
    await vi.waitFor(async () => expect((await status(ep, short)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    expect((await status(ep, plain)).json.status).toBe('IN_PROGRESS');
    clock.advance(55_000);
    await vi.waitFor(async () => expect((await status(ep, plain)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
  });

  it("an endpoint's executionTimeoutMs 0 is no per-request limit: the job runs until its ttl", async () => {
    const ep = await createEndpoint(t, { executionTimeoutMs: 0 });
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    // Past the 10 min default, and past an hour (the worker's lease here: it pings in between, as a live one does).
    for (let hour = 0; hour < 3; hour++) {
      clock.advance(3_000_000);
      expect((await w.ping([id])).status).toBe(200);
    }
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_PROGRESS');
    expect((await w.done(id, { output: 'hours later' })).status).toBe(200);
    expect((await status(ep, id)).json).toMatchObject({ status: 'COMPLETED', output: 'hours later' });
  });

  it('a TIMED_OUT job can be retried; the new attempt gets a fresh timeout', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { input: { again: 1 }, policy: { executionTimeout: 15_000 } });
    await w.take();
    clock.advance(15_001);
    await vi.waitFor(async () => expect((await status(ep, id)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    await w.stops();

    const retry = await t.api('POST', `/v2/${ep}/retry/${id}`);
    expect(retry.json).toEqual({ id, status: 'IN_QUEUE' });
    // Its worker gets it back once its old attempt has had time to stop (RETAKE_AFTER_STOP_MS).
    clock.advance(RETAKE_AFTER_STOP_MS);
    const again = await w.take();
    expect(again.json).toMatchObject({ id, input: { again: 1 } });
    clock.advance(15_000 - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('IN_PROGRESS');
    expect((await w.done(id, { output: 'made it' })).status).toBe(200);
    expect((await status(ep, id)).json).toMatchObject({ status: 'COMPLETED', output: 'made it' });
  });

  it('a stop order: the job is not handed back to its worker for RETAKE_AFTER_STOP_MS, nor the order sent against a new attempt', async () => {
    const ep = await createEndpoint(t);
    const [w1, w2] = [newWorker(ep), newWorker(ep)];
    const id = await submit(ep, { input: { n: 1 }, policy: { executionTimeout: 15_000 } });
    expect((await w1.take()).json.id).toBe(id);
    clock.advance(15_001);
    await vi.waitFor(async () => expect((await status(ep, id)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    // Retried before w1 fetched its order: w1 (still running the old attempt, as far as anyone knows) does not get
    // the job, or the old attempt's late result would complete the new one; nor just after fetching it.
    expect((await t.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
    expect((await w1.take()).status).toBe(204);
    expect((await w1.stops()).json).toEqual({ jobsToStop: [id] });
    expect((await w1.take()).status).toBe(204);
    clock.advance(RETAKE_AFTER_STOP_MS);
    expect((await w1.take()).json).toMatchObject({ id, input: { n: 1 } });
    expect((await status(ep, id)).json.status).toBe('IN_PROGRESS');

    // Timed out again, retried, and taken by another worker: w1 still learns to stop its old attempt.
    clock.advance(15_001);
    await vi.waitFor(async () => expect((await status(ep, id)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    expect((await t.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
    expect((await w2.take()).json.id).toBe(id);
    expect((await w1.stops()).json).toEqual({ jobsToStop: [id] });
  });

  it('a worker that never polls job-stop gets the job back once RETAKE_AFTER_STOP_MS has passed', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { policy: { executionTimeout: 15_000 } });
    expect((await w.take()).json.id).toBe(id);
    clock.advance(15_001);
    await vi.waitFor(async () => expect((await status(ep, id)).json.status).toBe('TIMED_OUT'), { timeout: 10_000 });
    expect((await t.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
    expect((await w.take()).status).toBe(204);
    clock.advance(RETAKE_AFTER_STOP_MS);
    expect((await w.take()).json.id).toBe(id);
    // The old order is not sent against the attempt it now runs.
    expect((await w.stops()).status).toBe(204);
  });

  it('the only worker, in a long take when the wait ends, gets the job then, not at its next poll', async () => {
    const own = new TestClock();
    const q = await startTestServer({ sweepIntervalMs: 50, leaseMs: 3_600_000, takeWaitMs: 20_000 }, { clock: own });
    try {
      const ep = await createEndpoint(q);
      const w = protocolWorker(q, ep, 'w-retake-wake');
      const sub = await q.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } });
      const id = sub.json.id as string;
      expect((await w.take()).json.id).toBe(id);
      own.advance(5_001);
      await vi.waitFor(async () =>
        expect((await q.api('GET', `/v2/${ep}/status/${id}`)).json.status).toBe('TIMED_OUT'),
      );
      // Retried about a second before the worker may have the job again; its take begins at once and would wait 20 s.
      own.advance(RETAKE_AFTER_STOP_MS - 1_000);
      expect((await q.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
      const began = performance.now();
      expect((await w.take()).json.id).toBe(id);
      expect(performance.now() - began).toBeLessThan(10_000);
    } finally {
      await q.close();
    }
  });

  it('the only worker, in a long take, gets the job when the wait of a stop order sent again ends', async () => {
    // Sending an order again (its answer lost) makes it anew, and the worker's wait with it: ~30 s of real time here,
    // as the server's wake-up timer runs on real time whatever the clock says.
    const own = new TestClock();
    const q = await startTestServer({ sweepIntervalMs: 50, leaseMs: 3_600_000, takeWaitMs: 50_000 }, { clock: own });
    try {
      const ep = await createEndpoint(q);
      const w = protocolWorker(q, ep, 'w-rearm-wake');
      const sub = await q.api('POST', `/v2/${ep}/run`, { input: {}, policy: { executionTimeout: 5_000 } });
      const id = sub.json.id as string;
      expect((await w.take()).json.id).toBe(id);
      own.advance(5_001);
      await vi.waitFor(async () =>
        expect((await q.api('GET', `/v2/${ep}/status/${id}`)).json.status).toBe('TIMED_OUT'),
      );
      expect((await w.stops()).json).toEqual({ jobsToStop: [id] });
      // Retried five seconds before the first order's wait ends (the retry's own wake-up comes then, and finds the
      // job still held back); the worker's ping still lists the job, so the order is sent again, and made anew.
      own.advance(RETAKE_AFTER_STOP_MS - 5_000);
      expect((await q.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
      expect((await w.ping([id])).status).toBe(200);
      // One poll of 50 s: without a wake-up when the new order's wait ends it answers 204 at its end (no last look).
      const taken = await w.take();
      expect(taken.status).toBe(200);
      expect(taken.json.id).toBe(id);
    } finally {
      await q.close();
    }
  }, 90_000);
});

describe('result retention', () => {
  it('/run results are kept 30 minutes after completion, then 404 JOB_RESULTS_EXPIRED', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 'kept' });
    clock.advance(30 * MINUTE - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json).toMatchObject({ status: 'COMPLETED', output: 'kept' });
    clock.advance(MARGIN + 1);
    await gone(ep, id, 'JOB_RESULTS_EXPIRED');
    expectGone(await t.api('GET', `/v2/${ep}/status-sync/${id}`), 'JOB_RESULTS_EXPIRED');
    expectGone(await t.api('POST', `/v2/${ep}/cancel/${id}`), 'JOB_RESULTS_EXPIRED');
  });

  it('retention counts from completion, not submission', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { policy: { executionTimeout: 30 * MINUTE } });
    await w.take();
    clock.advance(20 * MINUTE); // running for 20 minutes (within its timeout)
    await w.done(id, { output: 'slow' });
    clock.advance(29 * MINUTE);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('COMPLETED');
    clock.advance(MINUTE + 1);
    await gone(ep, id, 'JOB_RESULTS_EXPIRED');
  });

  it('a FAILED job cannot be retried once its results expired: 404', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { error: 'boom' });
    clock.advance(30 * MINUTE + 1);
    await gone(ep, id, 'JOB_RESULTS_EXPIRED');
    const retry = await t.api('POST', `/v2/${ep}/retry/${id}`);
    expectGone(retry, 'JOB_RESULTS_EXPIRED');
    expect((await newWorker(ep).take()).status).toBe(204);
  });

  it('/runsync results are kept 1 minute', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 's' }, 'runsync');
    expect(id).toMatch(/^sync-/);
    clock.advance(MINUTE - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('COMPLETED');
    clock.advance(MARGIN + 1);
    await gone(ep, id, 'JOB_RESULTS_EXPIRED');
  });

  it('/runsync?wait= results are kept 5 minutes', async () => {
    const ep = await createEndpoint(t);
    const id = await finished(ep, { output: 's' }, 'runsync?wait=5000');
    clock.advance(5 * MINUTE - MARGIN);
    await afterSweeps();
    expect((await status(ep, id)).json.status).toBe('COMPLETED');
    clock.advance(MARGIN + 1);
    await gone(ep, id, 'JOB_RESULTS_EXPIRED');
  });

  it('cancelled and timed-out jobs are kept for the retention too', async () => {
    const ep = await createEndpoint(t);
    const cancelled = await submit(ep);
    await t.api('POST', `/v2/${ep}/cancel/${cancelled}`);
    clock.advance(30 * MINUTE - MARGIN);
    await afterSweeps();
    expect((await status(ep, cancelled)).json.status).toBe('CANCELLED');
    clock.advance(MARGIN + 1);
    await gone(ep, cancelled, 'JOB_RESULTS_EXPIRED');

    const w = newWorker(ep);
    const timedOut = await submit(ep, { policy: { executionTimeout: 5_000 } });
    await w.take();
    clock.advance(5_001);
    await vi.waitFor(async () => expect((await status(ep, timedOut)).json.status).toBe('TIMED_OUT'), {
      timeout: 10_000,
    });
    clock.advance(30 * MINUTE - MARGIN);
    await afterSweeps();
    expect((await status(ep, timedOut)).json.status).toBe('TIMED_OUT');
    clock.advance(MARGIN + 1);
    await gone(ep, timedOut, 'JOB_RESULTS_EXPIRED');
  });

  it('an unknown id stays JOB_NOT_FOUND (tombstones are per job)', async () => {
    const ep = await createEndpoint(t);
    const res = await status(ep, 'never-existed-e1');
    expect(res.status).toBe(404);
    expect(res.json.code).toBe('JOB_NOT_FOUND');
  });
});

describe('silent workers joined from outside', () => {
  it('are forgotten SILENT_WORKER_KEEP_MS after their lease ran out, and may come back', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    expect((await w.ping()).status).toBe(200);
    const id = (await t.server.store.listWorkers(ep))[0]!.id;
    clock.advance(3_600_001); // the lease (leaseMs here)
    await vi.waitFor(async () => expect((await t.server.store.getWorker(id))?.state).toBe('unhealthy'), {
      timeout: 10_000,
    });
    clock.advance(SILENT_WORKER_KEEP_MS - MARGIN);
    await afterSweeps();
    expect(await t.server.store.getWorker(id)).not.toBeNull();
    clock.advance(MARGIN + 60_001); // past the keep, and a prune pass (once a minute) due
    await vi.waitFor(async () => expect(await t.server.store.getWorker(id)).toBeNull(), { timeout: 10_000 });
    expect((await w.ping()).status).toBe(200);
    expect((await t.server.store.getWorker(id))?.state).not.toBe('unhealthy');
  });
});
