import { STREAM_READ_MAX_CHARS } from '../../src/engine/engine.ts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEndpoint, protocolWorker, startTestServer, TestClock, type TestServer } from '../helpers/server.ts';

/** Job lifecycle through the queue API (interface §3.1, §4.1): status, status-sync, stream, cancel, retry, purge, health. */

let t: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  // Sweeps are not under test here; a slow sweep keeps clock jumps from expiring anything behind the tests' backs.
  // Stop polls are only ever answered by a cancel here: a long stopWaitMs leaves the cancel all the time it needs.
  t = await startTestServer(
    { sweepIntervalMs: 60_000, streamWaitMs: 2000, takeWaitMs: 500, stopWaitMs: 10_000 },
    { clock },
  );
});
afterAll(async () => {
  await t.close();
});

let workerSeq = 0;
const newWorker = (endpointId: string) => protocolWorker(t, endpointId, `w-life-${++workerSeq}`);

async function submit(endpointId: string, input: unknown = {}): Promise<string> {
  const res = await t.api('POST', `/v2/${endpointId}/run`, { input });
  expect(res.status, res.text).toBe(200);
  return res.json.id as string;
}

async function status(endpointId: string, jobId: string) {
  return t.api('GET', `/v2/${endpointId}/status/${jobId}`);
}

/** Whether a promise settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('/status', () => {
  it('reports delayTime and executionTime in milliseconds', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep, { v: 1 });

    const queued = await status(ep, id);
    expect(queued.status).toBe(200);
    expect(queued.json).toMatchObject({ id, status: 'IN_QUEUE' });
    expect(queued.json.executionTime).toBeUndefined();
    expect(queued.json.output).toBeUndefined();

    // The clock is real time plus the jumps: each number below is a jump plus up to SLACK of real time. The jumps
    // are far apart, so that a number measured from the wrong moment (e.g. delay + execution) cannot pass for another.
    const SLACK = 5000;
    clock.advance(30_000); // 30 s in the queue
    expect((await w.take()).json.id).toBe(id);
    clock.advance(50_000); // 50 s running so far

    const running = await status(ep, id);
    expect(running.json.status).toBe('IN_PROGRESS');
    expect(running.json.delayTime).toBeGreaterThanOrEqual(30_000);
    expect(running.json.delayTime).toBeLessThan(30_000 + SLACK);
    expect(running.json.executionTime).toBeGreaterThanOrEqual(50_000);
    expect(running.json.executionTime).toBeLessThan(50_000 + SLACK);

    clock.advance(20_000);
    expect((await w.done(id, { output: { ok: true } })).status).toBe(200);
    const done = await status(ep, id);
    expect(done.json).toMatchObject({ id, status: 'COMPLETED', output: { ok: true } });
    expect(done.json.delayTime).toBe(running.json.delayTime);
    expect(done.json.executionTime).toBeGreaterThanOrEqual(70_000);
    expect(done.json.executionTime).toBeLessThan(70_000 + SLACK);

    // Final times are frozen: later reads report the same numbers.
    clock.advance(10_000);
    const later = await status(ep, id);
    expect(later.json.delayTime).toBe(done.json.delayTime);
    expect(later.json.executionTime).toBe(done.json.executionTime);
  });

  it('after /retry, delayTime counts from the retry and executionTime from the new attempt only', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    const SLACK = 5000; // as above: each number is a jump plus up to SLACK of real time
    clock.advance(30_000);
    await w.take();
    clock.advance(50_000);
    await w.done(id, { error: 'first attempt failed' });
    clock.advance(100_000);
    expect((await t.api('POST', `/v2/${ep}/retry/${id}`)).json.status).toBe('IN_QUEUE');
    const queued = await status(ep, id);
    expect(queued.json.delayTime).toBeUndefined();
    expect(queued.json.executionTime).toBeUndefined();

    clock.advance(10_000); // 10 s in the queue since the retry
    expect((await w.take()).json.id).toBe(id);
    clock.advance(20_000);
    expect((await w.done(id, { output: 'second' })).status).toBe(200);
    const done = await status(ep, id);
    expect(done.json).toMatchObject({ status: 'COMPLETED', output: 'second' });
    expect(done.json.delayTime).toBeGreaterThanOrEqual(10_000);
    expect(done.json.delayTime).toBeLessThan(10_000 + SLACK);
    expect(done.json.executionTime).toBeGreaterThanOrEqual(20_000);
    expect(done.json.executionTime).toBeLessThan(20_000 + SLACK);
  });

  it('shows progress posted by the worker as output while IN_PROGRESS', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    expect((await w.done(id, { status: 'IN_PROGRESS', output: { step: 2 } })).status).toBe(200);
    expect((await status(ep, id)).json).toMatchObject({ status: 'IN_PROGRESS', output: { step: 2 } });
  });

  it('POST /status answers like GET (the Go SDK posts)', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const res = await t.api('POST', `/v2/${ep}/status/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id, status: 'IN_QUEUE' });
  });
});

describe.each(['GET', 'POST'])('%s /status-sync', (method) => {
  it('holds until the job finishes, then answers with the result', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    const waiting = t.api(method, `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(await settlesWithin(waiting, 200)).toBe(false);
    const finishedAt = Date.now();
    await w.done(id, { output: 'result' });
    const res = await waiting;
    // Woken by the result, well before the 10 s wait runs out.
    expect(Date.now() - finishedAt).toBeLessThan(3000);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id, status: 'COMPLETED', output: 'result' });
  });

  it('answers with the current state when wait runs out', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const started = Date.now();
    const res = await t.api(method, `/v2/${ep}/status-sync/${id}?wait=400`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id, status: 'IN_QUEUE' });
  });

  it('answers at once for a finished job', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    await w.done(id, { output: 1 });
    const started = Date.now();
    const res = await t.api(method, `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(res.json).toMatchObject({ id, status: 'COMPLETED', output: 1 });
  });

  it.each(['-1', '300001', '1.5', 'soon'])(
    'wait=%s → 400 naming wait (0 to 300000 ms, as /runsync at most)',
    async (wait) => {
      const ep = await createEndpoint(t);
      const id = await submit(ep);
      const res = await t.api(method, `/v2/${ep}/status-sync/${id}?wait=${wait}`);
      expect(res.status, res.text).toBe(400);
      expect(res.json.code).toBe('VALIDATION_FAILED');
      expect(res.json.details.map((d: { field: string }) => d.field)).toContain('wait');
    },
  );
});

describe('HEAD /status-sync', () => {
  it('answers at once with the headers of the current state and no body, as HEAD /status does', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const head = t.api('HEAD', `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(await settlesWithin(head, 3000)).toBe(true);
    const res = await head;
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const get = await status(ep, id);
    expect(get.json.status).toBe('IN_QUEUE');
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(get.text)));
    // An unknown job: its 404 at once too.
    const unknown = t.api('HEAD', `/v2/${ep}/status-sync/no-such-job?wait=10000`);
    expect(await settlesWithin(unknown, 3000)).toBe(true);
    expect((await unknown).status).toBe(404);
  });
});

describe('/stream', () => {
  it('returns each chunk once per caller key; another key sees every chunk; long-polls; reports the final status', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    const other = await t.server.accounts.createKey(t.server.adminUserId, 'second reader', 'all');
    const streamA = (wait = '') => t.api('GET', `/v2/${ep}/stream/${id}${wait}`);
    const streamB = (wait = '') => t.api('GET', `/v2/${ep}/stream/${id}${wait}`, undefined, { key: other.key });

    expect((await w.stream(id, { output: 'a' })).status).toBe(200);
    expect((await w.stream(id, { output: 'b', metrics: { stream_index: 1 } })).status).toBe(200);

    const first = await streamA();
    expect(first.status).toBe(200);
    expect(first.json).toEqual({
      status: 'IN_PROGRESS',
      stream: [{ output: 'a' }, { output: 'b', metrics: { stream_index: 1 } }],
    });

    // Nothing new for A: the request is parked on the bus, not re-reading the store in a loop.
    const readChunks = vi.spyOn(t.server.store, 'readChunks');
    try {
      const waitingA = streamA('?wait=10000');
      expect(await settlesWithin(waitingA, 400)).toBe(false);
      // One read when the poll began (the spy sees the engine's reads), none while it waits.
      expect(readChunks.mock.calls.length).toBeGreaterThanOrEqual(1);
      expect(readChunks.mock.calls.length).toBeLessThanOrEqual(2);
      const postedAt = Date.now();
      await w.stream(id, { output: 'c' });
      const second = await waitingA;
      expect(Date.now() - postedAt).toBeLessThan(3000);
      expect(second.json).toEqual({ status: 'IN_PROGRESS', stream: [{ output: 'c' }] });
    } finally {
      readChunks.mockRestore();
    }

    // B has its own cursor: it gets everything so far, in order.
    const b1 = await streamB();
    expect(b1.json.stream).toEqual([{ output: 'a' }, { output: 'b', metrics: { stream_index: 1 } }, { output: 'c' }]);

    await w.stream(id, { output: 'd' });
    await w.done(id, { output: 'final' });

    const a3 = await streamA();
    expect(a3.json).toEqual({ status: 'COMPLETED', stream: [{ output: 'd' }] });
    // Drained and finished: answers at once with an empty stream and the final status.
    const started = Date.now();
    const a4 = await streamA('?wait=10000');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(a4.json).toEqual({ status: 'COMPLETED', stream: [] });

    const b2 = await streamB();
    expect(b2.json).toEqual({ status: 'COMPLETED', stream: [{ output: 'd' }] });
  });

  it('a backlog past the size bound is answered in parts; the final status comes only with the last part', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    // Ten chunks of ~900 KB: more than one answer may carry (STREAM_READ_MAX_CHARS, 8 MiB).
    const big = (n: number) => String(n).repeat(900_000);
    for (let n = 0; n < 10; n++) expect((await w.stream(id, { output: big(n) })).status).toBe(200);
    expect((await w.done(id, { output: 'final' })).status).toBe(200);
    const seen: string[] = [];
    const statuses: string[] = [];
    for (let k = 0; k < 5 && statuses.at(-1) !== 'COMPLETED'; k++) {
      const res = await t.api('GET', `/v2/${ep}/stream/${id}`);
      expect(res.status).toBe(200);
      expect(res.text.length).toBeLessThan(STREAM_READ_MAX_CHARS + 1_000_000);
      statuses.push(res.json.status);
      for (const c of res.json.stream) seen.push(c.output);
    }
    // Not final while chunks are left (the JS SDK stops reading at a final status).
    expect(statuses).toEqual(['IN_PROGRESS', 'COMPLETED']);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(big));
    expect((await t.api('GET', `/v2/${ep}/stream/${id}`)).json).toEqual({ status: 'COMPLETED', stream: [] });
  });

  it('a long poll with no chunk ends with an empty stream after wait', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const started = Date.now();
    const res = await t.api('GET', `/v2/${ep}/stream/${id}?wait=300`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'IN_QUEUE', stream: [] });
  });

  it('a long poll wakes when the job finishes without a chunk', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    const waiting = t.api('POST', `/v2/${ep}/stream/${id}?wait=10000`);
    expect(await settlesWithin(waiting, 200)).toBe(false);
    await w.done(id, { error: 'broke' });
    expect((await waiting).json).toEqual({ status: 'FAILED', stream: [] });
  });
});

describe('/cancel', () => {
  it('a queued job becomes CANCELLED and is never handed out', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const res = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id, status: 'CANCELLED' });
    expect((await status(ep, id)).json).toMatchObject({ id, status: 'CANCELLED' });
    expect((await newWorker(ep).take()).status).toBe(204);
  });

  it('accepts the empty JSON object the JS SDK sends as body', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    const res = await t.api('POST', `/v2/${ep}/cancel/${id}`, {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id, status: 'CANCELLED' });
  });

  it('a running job becomes CANCELLED, its worker is told to stop and its late result is refused', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    expect((await w.take()).json.id).toBe(id);
    const stopping = w.stops();
    expect(await settlesWithin(stopping, 100)).toBe(false);

    const res = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id, status: 'CANCELLED' });

    const stop = await stopping;
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ jobsToStop: [id] });

    const late = await w.done(id, { output: 'too late' });
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: 'STALE_ATTEMPT' });
    const after = await status(ep, id);
    expect(after.json.status).toBe('CANCELLED');
    expect(after.json.output).toBeUndefined();
  });

  it.each([
    ['COMPLETED', { output: { kept: true } }],
    ['FAILED', { error: 'bad input' }],
  ])('a %s job stays as it was (200, final status unchanged)', async (final, body) => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    await w.take();
    await w.done(id, body);
    const before = await status(ep, id);
    expect(before.json.status).toBe(final);

    const res = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id, status: final });
    expect((await status(ep, id)).json).toEqual(before.json);
  });

  it('a CANCELLED job cancelled again stays as it was (200, CANCELLED)', async () => {
    const ep = await createEndpoint(t);
    const id = await submit(ep);
    expect((await t.api('POST', `/v2/${ep}/cancel/${id}`)).json).toEqual({ id, status: 'CANCELLED' });
    const before = await status(ep, id);
    const again = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ id, status: 'CANCELLED' });
    expect((await status(ep, id)).json).toEqual(before.json);
  });

  it('an unknown job → 404 JOB_NOT_FOUND', async () => {
    const ep = await createEndpoint(t);
    const res = await t.api('POST', `/v2/${ep}/cancel/no-such-job-e1`);
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ code: 'JOB_NOT_FOUND' });
  });
});

describe('/retry', () => {
  it('puts a FAILED job back with the same id and input, clearing output, error and stream', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const input = { prompt: 'again', n: [1, 2] };
    const id = await submit(ep, input);
    await w.take();
    await w.stream(id, { output: 'partial' });
    await w.done(id, { output: { half: true }, error: 'crashed' });
    const failed = await status(ep, id);
    expect(failed.json).toMatchObject({ status: 'FAILED', error: 'crashed', output: { half: true } });

    const res = await t.api('POST', `/v2/${ep}/retry/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id, status: 'IN_QUEUE' });

    const queued = await status(ep, id);
    expect(queued.json).toMatchObject({ id, status: 'IN_QUEUE' });
    expect(queued.json.output).toBeUndefined();
    expect(queued.json.error).toBeUndefined();
    expect((await t.api('GET', `/v2/${ep}/stream/${id}?wait=0`)).json).toEqual({ status: 'IN_QUEUE', stream: [] });

    const again = await w.take();
    expect(again.json).toEqual({ id, input });
    await w.stream(id, { output: 'fresh' });
    await w.done(id, { output: 'second time' });
    expect((await status(ep, id)).json).toMatchObject({ id, status: 'COMPLETED', output: 'second time' });
    // A new reader sees only the new attempt's chunks.
    const fresh = await t.server.accounts.createKey(t.server.adminUserId, 'retry reader', 'all');
    const stream = await t.api('GET', `/v2/${ep}/stream/${id}`, undefined, { key: fresh.key });
    expect(stream.json).toEqual({ status: 'COMPLETED', stream: [{ output: 'fresh' }] });
  });

  it.each(['COMPLETED', 'CANCELLED', 'IN_QUEUE', 'IN_PROGRESS'])('a %s job → 400 JOB_NOT_RETRYABLE', async (state) => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const id = await submit(ep);
    if (state === 'COMPLETED' || state === 'IN_PROGRESS') await w.take();
    if (state === 'COMPLETED') await w.done(id, { output: 'x' });
    if (state === 'CANCELLED') await t.api('POST', `/v2/${ep}/cancel/${id}`);
    const before = await status(ep, id);
    expect(before.json.status).toBe(state);

    const res = await t.api('POST', `/v2/${ep}/retry/${id}`);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'JOB_NOT_RETRYABLE', message: expect.any(String) });
    const after = await status(ep, id);
    // executionTime of a running job keeps growing; everything else is unchanged.
    expect({ ...after.json, executionTime: 0 }).toEqual({ ...before.json, executionTime: 0 });
  });

  it('an unknown job → 404 JOB_NOT_FOUND', async () => {
    const ep = await createEndpoint(t);
    const res = await t.api('POST', `/v2/${ep}/retry/nope-e1`);
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ code: 'JOB_NOT_FOUND' });
  });
});

describe('/purge-queue', () => {
  it('removes the queued jobs only; running ones go on', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const running = await submit(ep, { i: 0 });
    expect((await w.take()).json.id).toBe(running);
    const queued = [await submit(ep, { i: 1 }), await submit(ep, { i: 2 }), await submit(ep, { i: 3 })];

    const res = await t.api('POST', `/v2/${ep}/purge-queue`, {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ removed: 3, status: expect.any(String) });

    for (const id of queued) expect((await status(ep, id)).status).toBe(404);
    expect((await status(ep, running)).json.status).toBe('IN_PROGRESS');
    expect((await newWorker(ep).take()).status).toBe(204);
    expect((await w.done(running, { output: 'survived' })).status).toBe(200);
    expect((await status(ep, running)).json).toMatchObject({ status: 'COMPLETED', output: 'survived' });

    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs).toMatchObject({ inQueue: 0, inProgress: 0, completed: 1 });
    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).json.removed).toBe(0);
  });

  it('removes lowPriority jobs too, and jobs back in the queue after a /retry', async () => {
    const ep = await createEndpoint(t);
    const w = newWorker(ep);
    const retried = await submit(ep);
    await w.take();
    await w.done(retried, { error: 'once' });
    expect((await t.api('POST', `/v2/${ep}/retry/${retried}`)).json.status).toBe('IN_QUEUE');
    const low = await t.api('POST', `/v2/${ep}/run`, { input: {}, policy: { lowPriority: true } });
    expect(low.status, low.text).toBe(200);

    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).json.removed).toBe(2);
    expect((await status(ep, low.json.id as string)).status).toBe(404);
    expect((await status(ep, retried)).status).toBe(404);
    expect((await t.api('GET', `/v2/${ep}/health`)).json.jobs).toMatchObject({ inQueue: 0, failed: 0 });
    expect((await w.take()).status).toBe(204);
  });

  it('leaves other endpoints alone', async () => {
    const ep1 = await createEndpoint(t);
    const ep2 = await createEndpoint(t);
    await submit(ep1);
    const kept = await submit(ep2);
    expect((await t.api('POST', `/v2/${ep1}/purge-queue`)).json.removed).toBe(1);
    expect((await status(ep2, kept)).json.status).toBe('IN_QUEUE');
  });

  it('a /runsync waiting on a purged job answers at once instead of holding until wait', async () => {
    const ep = await createEndpoint(t);
    const runsync = t.api('POST', `/v2/${ep}/runsync?wait=20000`, { input: {} });
    await vi.waitFor(async () => {
      expect((await t.api('GET', `/v2/${ep}/health`)).json.jobs.inQueue).toBe(1);
    });
    expect((await t.api('POST', `/v2/${ep}/purge-queue`)).json.removed).toBe(1);
    // At once: well before its 20 s wait would run out.
    expect(await settlesWithin(runsync, 5000)).toBe(true);
    const res = await runsync;
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ code: 'JOB_NOT_FOUND' });
  });
});

describe('/health', () => {
  it('counts jobs by state and workers by activity', async () => {
    const ep = await createEndpoint(t);
    const health = async () => {
      const res = await t.api('GET', `/v2/${ep}/health`);
      expect(res.status).toBe(200);
      return res.json;
    };
    const empty = await health();
    expect(empty).toMatchObject({
      jobs: { completed: 0, failed: 0, inProgress: 0, inQueue: 0, retried: 0 },
      workers: { idle: 0, running: 0 },
    });

    const w1 = newWorker(ep);
    const w2 = newWorker(ep);
    const ids = [await submit(ep), await submit(ep), await submit(ep), await submit(ep), await submit(ep)];
    expect((await health()).jobs).toMatchObject({ inQueue: 5, inProgress: 0 });

    await w1.take(); // ids[0]
    await w1.done(ids[0]!, { output: 'ok' });
    await w1.take(); // ids[1]
    await w1.done(ids[1]!, { error: 'no' });
    await t.api('POST', `/v2/${ep}/cancel/${ids[4]!}`);
    let h = await health();
    expect(h.jobs).toEqual({ completed: 1, failed: 1, inProgress: 0, inQueue: 2, retried: 0 });
    expect(h.workers).toMatchObject({ idle: 1, running: 0 });

    expect((await t.api('POST', `/v2/${ep}/retry/${ids[1]!}`)).status).toBe(200);
    h = await health();
    // `retried` counts automatic retries after a lost worker (DESIGN.md), not retries the client asked for.
    expect(h.jobs).toEqual({ completed: 1, failed: 0, inProgress: 0, inQueue: 3, retried: 0 });

    expect((await w2.take()).json.id).toBe(ids[2]);
    h = await health();
    expect(h.jobs).toEqual({ completed: 1, failed: 0, inProgress: 1, inQueue: 2, retried: 0 });
    expect(h.workers).toMatchObject({ idle: 1, running: 1 });

    expect((await w1.take()).json.id).toBe(ids[3]);
    h = await health();
    expect(h.jobs).toMatchObject({ inProgress: 2, inQueue: 1 });
    expect(h.workers).toMatchObject({ idle: 0, running: 2 });
    for (const n of [...Object.values(h.jobs), ...Object.values(h.workers)]) expect(Number.isInteger(n)).toBe(true);
  });

  it('counts only its own endpoint', async () => {
    const ep1 = await createEndpoint(t);
    const ep2 = await createEndpoint(t);
    await submit(ep1);
    await submit(ep1);
    expect((await t.api('GET', `/v2/${ep1}/health`)).json.jobs.inQueue).toBe(2);
    expect((await t.api('GET', `/v2/${ep2}/health`)).json.jobs.inQueue).toBe(0);
  });
});
