// The example TypeScript worker as a real process against a real server on loopback, driven through the queue API:
// what a user sees when Wharf runs their handler.

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { createEndpoint, startTestServer, type TestServer } from '../helpers/server.ts';
import { killAll, spawnExampleWorker, workerLog, type Proc } from '../helpers/processes.ts';

const LEASE_MS = 3000;

let t: TestServer;
let ep: string;
let seq = 0;

/** Every job-done call the server handled: what the worker posted and whether it was accepted. */
interface DonePost {
  workerId: string;
  jobId: string;
  body: any;
  ok: boolean;
}
let posts: DonePost[] = [];

beforeAll(async () => {
  t = await startTestServer({
    takeWaitMs: 1000,
    stopWaitMs: 1000,
    streamWaitMs: 1000,
    leaseMs: LEASE_MS,
    lostJobGraceMs: 2000,
    maxAttempts: 3,
  });
  // Record (not replace) what the gateway does with every result post.
  const gateway = t.server.workers;
  const done = gateway.done.bind(gateway);
  gateway.done = async (worker, jobId, raw) => {
    const entry: DonePost = { workerId: worker.id, jobId, body: JSON.parse(raw), ok: false };
    posts.push(entry);
    await done(worker, jobId, raw);
    entry.ok = true;
  };
});
afterAll(async () => {
  await t.close();
});
beforeEach(async () => {
  posts = [];
  ep = await createEndpoint(t);
});
afterEach(async () => {
  await killAll();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function worker(): { proc: Proc; podId: string } {
  const podId = `pod-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
  const proc = spawnExampleWorker({
    url: t.url,
    endpointId: ep,
    podId,
    apiKey: t.key,
    env: { WHARF_WORKER_RETRY_BASE_MS: '100' },
  });
  return { proc, podId };
}

async function run(input: unknown): Promise<string> {
  const res = await t.api('POST', `/v2/${ep}/run`, { input });
  expect(res.status).toBe(200);
  expect(res.json.status).toBe('IN_QUEUE');
  return res.json.id as string;
}

async function status(id: string): Promise<any> {
  const res = await t.api('GET', `/v2/${ep}/status/${id}`);
  expect(res.status).toBe(200);
  return res.json;
}

async function until(id: string, pred: (s: any) => boolean, ms = 15_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = await status(id);
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`job ${id}: still ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

const finalOf = (id: string) => posts.filter((p) => p.jobId === id && p.body.status !== 'IN_PROGRESS');

describe('the example worker process', () => {
  it('/runsync completes with the handler output, and /run + /status report the same', async () => {
    const { podId } = worker();
    const sync = await t.api('POST', `/v2/${ep}/runsync?wait=20000`, { input: { a: 1, text: 'héllo ✓' } });
    expect(sync.status).toBe(200);
    expect(sync.json).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { a: 1, text: 'héllo ✓' } },
      workerId: podId,
    });
    expect(sync.json.id).toMatch(/^sync-/);

    const id = await run({ b: [1, 2, 3] });
    const res = await t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(res.json).toMatchObject({ id, status: 'COMPLETED', output: { echo: { b: [1, 2, 3] } }, workerId: podId });
    expect(typeof res.json.executionTime).toBe('number');
    expect(typeof res.json.delayTime).toBe('number');
    expect(await status(id)).toMatchObject({ status: 'COMPLETED', output: { echo: { b: [1, 2, 3] } } });
    expect(finalOf(id)).toEqual([
      { workerId: podId, jobId: id, body: { output: { echo: { b: [1, 2, 3] } } }, ok: true },
    ]);
  });

  it('streams chunks to /stream in order; the final output is the (non-aggregated) empty list', async () => {
    worker();
    const id = await run({ stream: 4 });
    const seen: unknown[] = [];
    let last = '';
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const res = await t.api('GET', `/v2/${ep}/stream/${id}?wait=1000`);
      expect(res.status).toBe(200);
      seen.push(...(res.json.stream as unknown[]));
      last = res.json.status as string;
      if (last === 'COMPLETED' || last === 'FAILED') break;
    }
    expect(last).toBe('COMPLETED');
    expect(seen).toEqual([0, 1, 2, 3].map((chunk) => ({ output: { chunk } })));
    expect(await status(id)).toMatchObject({ status: 'COMPLETED', output: [] });
    // The final post of a generator handler goes with isStream=true and is the one accepted final.
    expect(finalOf(id).map((p) => [p.body, p.ok])).toEqual([[{ output: [] }, true]]);
  });

  it('progress updates are accepted as non-final, then the result completes the job', async () => {
    worker();
    const id = await run({ progress: true });
    const s = await t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    expect(s.json).toMatchObject({ status: 'COMPLETED', output: { echo: { progress: true } } });
    expect(posts.filter((p) => p.jobId === id).map((p) => [p.body, p.ok])).toEqual([
      [{ status: 'IN_PROGRESS', output: { pct: 50 } }, true],
      [{ status: 'IN_PROGRESS', output: 'almost' }, true],
      [{ output: { echo: { progress: true } } }, true],
    ]);
  });

  it('a failing handler makes the job FAILED with a useful error', async () => {
    const { podId } = worker();
    const id = await run({ fail: 'the model refused' });
    const s = (await t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`)).json;
    expect(s.status).toBe('FAILED');
    expect(s.output).toBeUndefined();
    expect(typeof s.error).toBe('string');
    const report = JSON.parse(s.error as string);
    expect(report).toMatchObject({ error_type: 'Error', error_message: 'the model refused', worker_id: podId });
    expect(report.error_traceback).toContain('the model refused');
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs).toMatchObject({ failed: 1, completed: 0 });
  });

  it('cancelling a running job stops its handler through the stop channel', async () => {
    const { proc, podId } = worker();
    const id = await run({ sleepMs: 30_000 });
    await until(id, (s) => s.status === 'IN_PROGRESS');
    // The handler runs (a stop that overtakes the take answer would keep the job from starting at all instead).
    await proc.waitFor(new RegExp(`"requestId":"${id}","message":"Job taken"`));
    const cancel = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(cancel.json).toEqual({ id, status: 'CANCELLED' });
    await proc.waitFor(new RegExp(`"requestId":"${id}","message":"Job stopped; no result posted"`), 10_000);
    expect((await status(id)).status).toBe('CANCELLED');
    expect(posts.filter((p) => p.jobId === id)).toEqual([]);
    // The worker (concurrency 1) is free again long before the cancelled handler's 30 s were up.
    const started = Date.now();
    const next = await t.api('POST', `/v2/${ep}/runsync?wait=10000`, { input: { after: 'cancel' } });
    expect(next.json).toMatchObject({ status: 'COMPLETED', output: { echo: { after: 'cancel' } }, workerId: podId });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(proc.alive()).toBe(true);
  });

  it('a worker killed with SIGKILL mid-job: the job is retried on a second worker and completes exactly once', async () => {
    const first = worker();
    const id = await run({ sleepMs: 4000, n: 7 }); // still running when the kill lands, even on a slow machine
    await until(id, (s) => s.status === 'IN_PROGRESS' && s.workerId === first.podId);
    await first.proc.waitFor(new RegExp(`"requestId":"${id}","message":"Job taken"`));
    await first.proc.kill('SIGKILL');
    expect((await first.proc.exit).signal).toBe('SIGKILL');

    const second = worker();
    const done = await until(id, (s) => s.status !== 'IN_PROGRESS' && s.status !== 'IN_QUEUE', LEASE_MS + 12_000);
    expect(done).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { sleepMs: 4000, n: 7 } },
      workerId: second.podId,
    });
    expect(done.retries).toBe(1);
    expect((await t.server.store.getJob(ep, id))?.attempt).toBe(2);
    // Exactly one result was posted and accepted, by the second worker; the killed one never posted.
    expect(finalOf(id).map((p) => [p.workerId, p.ok])).toEqual([[second.podId, true]]);
    const taken = workerLog(second.proc).filter((l) => l.requestId === id && l.message === 'Job taken');
    expect(taken).toHaveLength(1);
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs).toMatchObject({ completed: 1, failed: 0, inProgress: 0, inQueue: 0, retried: 1 });
    // It stays completed: no late post or sweep changes it.
    await sleep(LEASE_MS);
    expect(await status(id)).toMatchObject({ status: 'COMPLETED', workerId: second.podId });
  });

  it('a handler that exits the process mid-job sends its job back to the queue', async () => {
    const first = worker();
    const id = await run({ crash: 3 });
    expect((await first.proc.exit).code).toBe(3);
    const requeued = await until(id, (s) => s.status === 'IN_QUEUE', LEASE_MS + 3000);
    expect(requeued.retries).toBe(1);
    expect(finalOf(id)).toEqual([]);
  });
});
