// The worker SDK against a real loopback service: the exact URLs, headers and bodies it sends for each kind of
// handler result, mirroring the captured traffic of the Python SDK (spec/worker-protocol.md).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { progressUpdate, start } from '../../src/sdk/worker/index.ts';
import type { Handler, StartOptions, WorkerHandle } from '../../src/sdk/worker/index.ts';
import { FakeService } from './sdk-worker.fake-service.ts';

let fake: FakeService;
let workers: WorkerHandle[];

beforeEach(async () => {
  fake = await FakeService.start();
  workers = [];
});

afterEach(async () => {
  await Promise.all(workers.map((w) => w.stop({ timeoutMs: 0 })));
  await fake.close();
});

function run<I, O>(
  handler: Handler<I, O>,
  opts: Partial<StartOptions<I, O>> = {},
  env: Record<string, string | undefined> = {},
) {
  const w = start({ handler, installSignalHandlers: false, ...opts, env: fake.env(env) });
  workers.push(w);
  return w;
}

const doneFor = (jobId: string) => fake.waitFor((r) => r.kind === 'done' && r.url.includes(`/${jobId}?`));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('worker SDK wire protocol', () => {
  it('takes a job and posts its result with the raw key and its own User-Agent', async () => {
    fake.push({ id: 'j-1', input: { prompt: 'hello' }, webhook: 'http://x.invalid/h' });
    let seenJob: unknown;
    run((job) => {
      seenJob = job;
      return { echo: job.input };
    });
    const done = await doneFor('j-1');

    const take = fake.of('take')[0]!;
    expect(take.method).toBe('GET');
    expect(take.url).toBe('/v2/ep/job-take/w-1?gpu=T&job_in_progress=0');
    expect(take.headers.authorization).toBe('key-123');
    expect(take.headers['content-type']).toBe('application/json');
    expect(take.headers['user-agent']).toBe(`Wharf-TS-Worker/0.1.0 (node ${process.versions.node})`);

    expect(done.method).toBe('POST');
    expect(done.url).toBe('/v2/ep/job-done/w-1/j-1?gpu=T&isStream=false');
    expect(done.headers.authorization).toBe('key-123');
    expect(done.headers['x-request-id']).toBe('j-1');
    expect(done.body).toBe('{"output":{"echo":{"prompt":"hello"}}}');
    // Extra keys reach the handler untouched.
    expect(seenJob).toEqual({ id: 'j-1', input: { prompt: 'hello' }, webhook: 'http://x.invalid/h' });

    const stop = await fake.waitFor((r) => r.kind === 'stop');
    expect(stop.url).toBe('/v2/ep/job-stop/w-1?gpu=T');
    const ping = await fake.waitFor((r) => r.kind === 'ping');
    expect(ping.url).toBe('/v2/ep/ping/w-1?gpu=T&runpod_version=wharf-ts-0.1.0');
    expect(ping.headers.authorization).toBe('key-123');
  });

  it('posts every handler return shape exactly as the Python SDK does', async () => {
    const cases: [unknown, unknown][] = [
      [{ echo: 1 }, { output: { echo: 1 } }],
      [
        { error: 'bad input', refresh_worker: true },
        { error: 'bad input', stopPod: true },
      ],
      [
        { partial: 1, error: 'partial failure' },
        { output: { partial: 1 }, error: 'partial failure' },
      ],
      [{ error: '', x: 1 }, { output: { x: 1 } }],
      [{}, {}],
      ['plain string', { output: 'plain string' }],
      [[1, 2, 3], { output: [1, 2, 3] }],
      [false, { output: false }],
      [0, { output: 0 }],
      [null, { output: null }],
      [undefined, { output: null }],
    ];
    cases.forEach(([value], i) => fake.push({ id: `c-${i}`, input: { value } }));
    run<{ value?: unknown }, unknown>(async (job) => job.input.value);
    for (const [i, [, expected]] of cases.entries()) {
      const done = await doneFor(`c-${i}`);
      expect(JSON.parse(done.body), `case ${i}`).toEqual(expected);
    }
  });

  it('reports a thrown error as a JSON-encoded string and keeps taking jobs', async () => {
    fake.push({ id: 'e-1', input: {} }, { id: 'e-2', input: {} }, { id: 'ok', input: {} });
    run((job) => {
      if (job.id === 'e-1') throw new TypeError('boom');
      if (job.id === 'e-2') throw 'a string'; // eslint-disable-line @typescript-eslint/only-throw-error
      return 'fine';
    });
    const e1 = JSON.parse((await doneFor('e-1')).body) as { error: string };
    const report = JSON.parse(e1.error) as Record<string, unknown>;
    expect(Object.keys(report)).toEqual([
      'error_type',
      'error_message',
      'error_traceback',
      'hostname',
      'worker_id',
      'runpod_version',
    ]);
    expect(report).toMatchObject({
      error_type: 'TypeError',
      error_message: 'boom',
      hostname: 'host-1',
      worker_id: 'w-1',
      runpod_version: 'wharf-ts-0.1.0',
    });
    expect(report.error_traceback).toContain('TypeError: boom');
    const e2 = JSON.parse((await doneFor('e-2')).body) as { error: string };
    expect(JSON.parse(e2.error)).toMatchObject({ error_type: 'Error', error_message: 'Non-error thrown: a string' });
    expect((await doneFor('ok')).body).toBe('{"output":"fine"}');
  });

  it('glues the parameters onto the path when a template has no "?"', async () => {
    const b = `${fake.base}/v2/ep`;
    fake.push({ id: 'q-1', input: {} });
    run(
      (job) => job.input,
      {},
      {
        RUNPOD_WEBHOOK_GET_JOB: `${b}/job-take/$ID`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${b}/job-done/$RUNPOD_POD_ID/$ID`,
        RUNPOD_WEBHOOK_PING: `${b}/ping/$RUNPOD_POD_ID`,
      },
    );
    await fake.waitFor((r) => r.kind === 'done');
    expect(fake.of('take')[0]!.url).toBe('/v2/ep/job-take/w-1&job_in_progress=0');
    expect(fake.of('done')[0]!.url).toBe('/v2/ep/job-done/w-1/q-1&isStream=false');
    expect((await fake.waitFor((r) => r.kind === 'stop')).url).toBe('/v2/ep/job-stop/w-1');
    // The heartbeat merges its query like Python's `requests`, which adds the missing "?".
    expect((await fake.waitFor((r) => r.kind === 'ping')).url).toBe('/v2/ep/ping/w-1?runpod_version=wharf-ts-0.1.0');
  });

  it('substitutes only $ID in the take template', async () => {
    fake.push({ id: 'x', input: {} });
    run((job) => job.input, {}, { RUNPOD_WEBHOOK_GET_JOB: `${fake.base}/v2/ep/job-take/$RUNPOD_POD_ID/$ID?gpu=T` });
    await doneFor('x');
    expect(fake.of('take')[0]!.url).toBe('/v2/ep/job-take/$RUNPOD_POD_ID/w-1?gpu=T&job_in_progress=0');
  });

  it('drops answers that are not jobs and goes on taking', async () => {
    fake.takeReplies.push(
      { status: 400, body: '{"error":"x"}', contentType: 'application/json' },
      { status: 404, body: 'nope' },
      { status: 200, body: '{"id":"t-1","input":{}}', contentType: 'text/plain' },
      { status: 200, body: '{"id":"bad-1"}', contentType: 'application/json' },
      { status: 200, body: 'not json', contentType: 'application/json' },
      { status: 200, body: '', contentType: 'application/json' },
    );
    fake.push({ id: 'ok-1', input: { v: 1 } });
    run((job) => job.input);
    await doneFor('ok-1');
    expect(fake.of('take').length).toBeGreaterThanOrEqual(7);
    expect(fake.of('done').map((r) => r.url)).toEqual(['/v2/ep/job-done/w-1/ok-1?gpu=T&isStream=false']);
  });

  it('backs off after 5xx take answers instead of spinning', async () => {
    for (let i = 0; i < 4; i++) fake.takeReplies.push({ status: 503, body: '' });
    fake.push({ id: 'after', input: {} });
    run((job) => job.input);
    await doneFor('after');
    const takes = fake.of('take').slice(0, 5);
    const gaps = takes.slice(1).map((t, i) => t.at - takes[i]!.at);
    // 100, 200, 400, 800 ms (timer slack allowed): a dead service is not hammered.
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[3]).toBeGreaterThanOrEqual(700);
  });

  it('waits 5 s after a 429 on job-take', async () => {
    fake.takeReplies.push({ status: 429, body: '{"error":"slow down"}', contentType: 'application/json' });
    fake.push({ id: 'late', input: {} });
    run((job) => job.input);
    await fake.waitFor((r) => r.kind === 'done', 8_000);
    const [first, second] = fake.of('take');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_900);
  });

  it('retries a result post on 5xx (3 attempts) and drops it on 4xx', async () => {
    // 500s: the Python schedule (a 502/503/504 counts as the service being away: sdk-worker-http.test.ts).
    fake.doneStatuses.push(500, 500, 200, 404);
    fake.push({ id: 'r-1', input: { a: 1 } }, { id: 'r-2', input: { a: 2 } }, { id: 'r-3', input: {} });
    run((job) => job.input);
    await doneFor('r-3');
    const r1 = fake.of('done', 'r-1');
    expect(r1.map((r) => r.body)).toEqual(Array(3).fill('{"output":{"a":1}}'));
    // Waits of 2 and 3 retry bases (10 ms in tests; 2 s and 3 s by default, as in Python).
    expect(r1[1]!.at - r1[0]!.at).toBeGreaterThanOrEqual(18);
    expect(r1[2]!.at - r1[1]!.at).toBeGreaterThanOrEqual(28);
    expect(fake.of('done', 'r-2')).toHaveLength(1);
  });
});

describe('streaming handlers', () => {
  it('posts each chunk, then the aggregate with isStream=true', async () => {
    fake.push({ id: 'g-1', input: {} });
    run(
      async function* () {
        for (let i = 0; i < 3; i++) yield { chunk: i };
      },
      { returnAggregateStream: true },
    );
    const done = await doneFor('g-1');
    const streams = fake.of('stream', 'g-1');
    expect(streams.map((r) => r.url)).toEqual(Array(3).fill('/v2/ep/job-stream/w-1/g-1?gpu=T&isStream=false'));
    expect(streams.map((r) => r.body)).toEqual([
      '{"output":{"chunk":0}}',
      '{"output":{"chunk":1}}',
      '{"output":{"chunk":2}}',
    ]);
    expect(done.url).toBe('/v2/ep/job-done/w-1/g-1?gpu=T&isStream=true');
    expect(JSON.parse(done.body)).toEqual({ output: [{ chunk: 0 }, { chunk: 1 }, { chunk: 2 }] });
  });

  it('posts an empty final output without returnAggregateStream (sync generator)', async () => {
    fake.push({ id: 'g-2', input: {} });
    run(function* () {
      yield 'a';
      yield 'b';
    });
    expect((await doneFor('g-2')).body).toBe('{"output":[]}');
    expect(fake.bodies('stream', 'g-2')).toEqual([{ output: 'a' }, { output: 'b' }]);
  });

  it('ends with a plain error string when the generator throws', async () => {
    fake.push({ id: 'g-3', input: {} });
    run(async function* () {
      yield 1;
      throw new RangeError('gen failed');
    });
    const body = JSON.parse((await doneFor('g-3')).body) as { error: string };
    expect(body.error).toMatch(/^handler: gen failed \ntraceback: RangeError: gen failed/);
    expect(fake.bodies('stream', 'g-3')).toEqual([{ output: 1 }]);
  });

  it('stops at a chunk with a truthy error and does not stream it', async () => {
    fake.push({ id: 'g-4', input: {} });
    run(
      function* () {
        yield { chunk: 0 };
        yield { error: 'bad chunk' };
        yield { chunk: 2 };
      },
      { refreshWorker: false },
    );
    expect(JSON.parse((await doneFor('g-4')).body)).toEqual({ error: 'bad chunk' });
    expect(fake.bodies('stream', 'g-4')).toEqual([{ output: { chunk: 0 } }]);
  });
});

describe('progress, heartbeat and concurrency', () => {
  it('posts progress (from the context and the module function) before the final result', async () => {
    fake.push({ id: 'p-1', input: {} });
    run(async (job, ctx) => {
      await ctx.progressUpdate({ pct: 50 });
      await progressUpdate(job, 'almost');
      return { done: true };
    });
    await fake.waitFor((r) => r.kind === 'done' && r.body === '{"output":{"done":true}}');
    const posts = fake.of('done', 'p-1');
    expect(posts.map((r) => r.url)).toEqual(Array(3).fill('/v2/ep/job-done/w-1/p-1?gpu=T&isStream=false'));
    expect(posts.map((r) => r.body)).toEqual([
      '{"status":"IN_PROGRESS","output":{"pct":50}}',
      '{"status":"IN_PROGRESS","output":"almost"}',
      '{"output":{"done":true}}',
    ]);
  });

  it('takes batches when more than one slot is free and reports held jobs in pings', async () => {
    const release = new Map<string, () => void>();
    const modifierCalls: number[] = [];
    run(
      (job) =>
        job.id === 'b-3'
          ? 'quick'
          : new Promise<string>((resolve) => release.set(job.id, () => resolve(`${job.id} done`))),
      {
        concurrencyModifier: (current) => {
          modifierCalls.push(current);
          return 3;
        },
      },
    );
    const first = await fake.waitFor((r) => r.kind === 'take-batch');
    expect(first.url).toBe('/v2/ep/job-take-batch/w-1?gpu=T&batch_size=3&job_in_progress=0');
    expect(modifierCalls[0]).toBe(1);
    fake.push({ id: 'b-1', input: {} }, { id: 'b-2', input: {} }, { id: 'b-3', input: {} });
    await doneFor('b-3');
    // One slot free: the single URL, reporting the jobs still held.
    const single = await fake.waitFor((r) => r.kind === 'take');
    expect(single.url).toBe('/v2/ep/job-take/w-1?gpu=T&job_in_progress=1');
    const ping = await fake.waitFor((r) => r.kind === 'ping' && r.url.includes('job_id='), 3_000);
    expect(ping.url).toBe('/v2/ep/ping/w-1?gpu=T&job_id=b-1%2Cb-2&runpod_version=wharf-ts-0.1.0');
    release.get('b-1')!();
    await doneFor('b-1');
    const two = await fake.waitFor((r) => r.url.includes('batch_size=2'));
    expect(two.url).toBe('/v2/ep/job-take-batch/w-1?gpu=T&batch_size=2&job_in_progress=1');
    release.get('b-2')!();
    await doneFor('b-2');
  });

  it('sends no heartbeat without a key or a pod id', async () => {
    run(() => null, {}, { RUNPOD_AI_API_KEY: undefined });
    run(() => null, {}, { RUNPOD_POD_ID: undefined });
    await fake.waitFor((r) => r.kind === 'take');
    await sleep(300);
    expect(fake.of('ping')).toHaveLength(0);
    // Without RUNPOD_POD_ID the worker id is a fresh uuid.
    expect(workers[1]!.workerId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('stopping', () => {
  it('aborts a job named on the stop channel and posts nothing for it', async () => {
    fake.push({ id: 's-1', input: {} });
    let aborted = false;
    run(
      (_job, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            reject(ctx.signal.reason as Error);
          });
        }),
    );
    await fake.waitFor((r) => r.kind === 'ping' && r.url.includes('job_id=s-1'), 3_000);
    const stoppedAt = Date.now();
    fake.stopJobs(['s-1', 'unknown-job']);
    // The freed slot is used again at once, and the job is no longer reported as held.
    const next = await fake.waitFor((r) => r.kind === 'take' && r.at >= stoppedAt);
    expect(next.url).toBe('/v2/ep/job-take/w-1?gpu=T&job_in_progress=0');
    expect(aborted).toBe(true);
    await sleep(200);
    expect(fake.of('done')).toHaveLength(0);
  });

  it('does not start a job whose stop order overtook the take that hands it out', async () => {
    let started = 0;
    run(async () => {
      started++;
      return { ok: true };
    });
    // The stop channel answers first; the take that carries the job comes after it. The worker polls the stop channel
    // again right after it applied an answer with ids, so that next poll says the order was handled.
    fake.stopJobs(['early-1']);
    const first = await fake.waitFor((r) => r.kind === 'stop');
    await fake.waitFor((r) => r.kind === 'stop' && r !== first);
    fake.push({ id: 'early-1', input: {} }, { id: 'after-1', input: {} });
    await doneFor('after-1');
    expect(started).toBe(1); // after-1 only
    expect(fake.of('done', 'early-1')).toHaveLength(0);
  });

  it('stop() finishes the running job, posts it, takes nothing more and resolves', async () => {
    fake.push({ id: 'st-1', input: {} });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const w = run(async () => {
      started();
      await sleep(300);
      return 'finished';
    });
    await running;
    const stoppedAt = Date.now();
    await w.stop();
    expect(fake.of('done', 'st-1').map((r) => r.body)).toEqual(['{"output":"finished"}']);
    expect(fake.requests.filter((r) => r.kind === 'take' && r.at > stoppedAt)).toHaveLength(0);
    await w.done;
  });

  it('stop({ timeoutMs }) aborts jobs still running after the timeout, without a result', async () => {
    fake.push({ id: 'st-2', input: {} });
    let signal: AbortSignal | undefined;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const w = run((_job, ctx) => {
      signal = ctx.signal;
      started();
      return new Promise(() => {}); // never settles: only the timeout can end it
    });
    await running;
    const t0 = Date.now();
    await w.stop({ timeoutMs: 100 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(signal?.aborted).toBe(true);
    expect(fake.of('done')).toHaveLength(0);
  });

  it('refreshWorker adds stopPod and stops the worker after its first result', async () => {
    fake.push({ id: 'rf-1', input: { x: 1 } }, { id: 'rf-2', input: {} });
    const w = run((job) => ({ echo: job.input }), { refreshWorker: true });
    await w.done;
    expect(fake.of('done').map((r) => r.body)).toEqual(['{"output":{"echo":{"x":1}},"stopPod":true}']);
    expect(fake.of('take')).toHaveLength(1);
  });

  it('start() refuses to run without RUNPOD_WEBHOOK_GET_JOB', () => {
    expect(() => start({ handler: () => null, env: {}, installSignalHandlers: false })).toThrow(
      /RUNPOD_WEBHOOK_GET_JOB is not set/,
    );
  });
});
