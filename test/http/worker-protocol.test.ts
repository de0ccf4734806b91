// The worker side of the protocol (spec/worker-protocol.md §1) against a real server on loopback and real SQLite.
// Every request here is what the official Python SDK sends (raw key, form-urlencoded JSON, `charset`, X-Request-ID).

import { get as httpGet } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { workerEnv } from '../../src/fleet/worker-env.ts';
import { waitUntil } from '../helpers/fleet.ts';
import { createEndpoint, protocolWorker, request, startTestServer, type TestServer } from '../helpers/server.ts';

const TAKE_WAIT_MS = 1000;
/**
 * Take and stop polls on `long` last this long: a wake-up that failed would show as a wait of this length, far beyond
 * the few seconds the wake-up tests allow for a busy machine.
 */
const LONG_WAIT_MS = 10_000;
const ONE_MB = 1024 * 1024;

let t: TestServer;
let long: TestServer;
let seq = 0;

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: TAKE_WAIT_MS, stopWaitMs: TAKE_WAIT_MS, streamWaitMs: 500 });
  long = await startTestServer({ takeWaitMs: LONG_WAIT_MS, stopWaitMs: LONG_WAIT_MS });
});
afterAll(async () => {
  await t.close();
  await long.close();
});

const wid = (name: string): string => `${name}-${++seq}`;

async function submit(ep: string, input: unknown, srv: TestServer = t): Promise<string> {
  const res = await srv.api('POST', `/v2/${ep}/run`, { input });
  expect(res.status).toBe(200);
  return res.json.id as string;
}

async function status(ep: string, id: string): Promise<any> {
  const res = await t.api('GET', `/v2/${ep}/status/${id}`);
  expect(res.status).toBe(200);
  return res.json;
}

/** Counts the store's takeJobs calls for one endpoint: each is one look at its queue by a take poll. */
function countTakes(srv: TestServer, ep: string) {
  const store = srv.server.store;
  const original = store.takeJobs.bind(store);
  let calls = 0;
  store.takeJobs = (...args) => {
    if (args[0] === ep) calls++;
    return original(...args);
  };
  return {
    get calls() {
      return calls;
    },
    restore: () => {
      store.takeJobs = original;
    },
  };
}

/** An endpoint with one job taken by a fresh worker: the starting point of most result-post tests. */
async function takenJob(input: unknown = { prompt: 'hello' }) {
  const ep = await createEndpoint(t);
  const w = protocolWorker(t, ep, wid('w'));
  const id = await submit(ep, input);
  const took = await w.take();
  expect(took.status).toBe(200);
  expect(took.json.id).toBe(id);
  return { ep, w, id };
}

function expectErrorShape(res: { status: number; json: any }, status: number): void {
  expect(res.status).toBe(status);
  expect(typeof res.json?.code).toBe('string');
  expect(typeof res.json?.message).toBe('string');
}

describe('job-take', () => {
  it('is a long poll: 204 only once takeWaitMs has passed', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('idle'));
    const started = Date.now();
    const res = await w.take();
    const elapsed = Date.now() - started;
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(elapsed).toBeGreaterThanOrEqual(TAKE_WAIT_MS - 50);
    expect(elapsed).toBeLessThan(TAKE_WAIT_MS + 1000);
  });

  it('wakes within milliseconds of a submission, without polling the store meanwhile', async () => {
    const ep = await createEndpoint(long);
    const w = protocolWorker(long, ep, wid('waker'));
    const takes = countTakes(long, ep);
    try {
      const pending = w.take();
      await new Promise((r) => setTimeout(r, 400));
      const callsWhileIdle = takes.calls;
      const submittedAt = Date.now();
      const id = await submit(ep, { n: 1 }, long);
      const res = await pending;
      const answeredAfter = Date.now() - submittedAt;
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ id, input: { n: 1 } });
      // Woken by the submission, not by a timer: well before the 10 s deadline.
      expect(answeredAfter).toBeLessThan(3000);
      // One look at the queue when the poll began; nothing while it waited.
      expect(callsWhileIdle).toBeLessThanOrEqual(1);
    } finally {
      takes.restore();
    }
  });

  /** Take polls of fresh workers started one after the other, each once its first look at the queue is done. */
  async function waitingPolls(ep: string, takes: { calls: number }, names: string[], signal: AbortSignal) {
    const polls: Array<{ id: string; res: Promise<Awaited<ReturnType<ReturnType<typeof protocolWorker>['take']>>> }> =
      [];
    for (const name of names) {
      const before = takes.calls;
      const id = wid(name);
      polls.push({ id, res: protocolWorker(long, ep, id).take(undefined, signal) });
      await waitUntil(() => takes.calls > before, 5000);
    }
    return polls;
  }

  const answeredWithin = (p: Promise<unknown>, ms: number) =>
    Promise.race([p.then(() => 'answered'), new Promise((r) => setTimeout(() => r('held'), ms))]);

  it('a submission goes straight to the take that has waited longest: no queue read, no other take woken', async () => {
    const ep = await createEndpoint(long);
    const takes = countTakes(long, ep);
    const stop = new AbortController();
    try {
      const polls = await waitingPolls(ep, takes, ['a', 'b', 'c', 'd'], stop.signal);
      expect(takes.calls).toBe(4);
      const submittedAt = Date.now();
      const id = await submit(ep, { n: 1 }, long);
      const res = await polls[0]!.res;
      expect(Date.now() - submittedAt).toBeLessThan(3000);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ id, input: { n: 1 } });
      // Claimed by the submit's own write: no take read the queue, and the others still wait.
      await new Promise((r) => setTimeout(r, 300));
      expect(takes.calls).toBe(4);
      for (const p of polls.slice(1)) expect(await answeredWithin(p.res, 0)).toBe('held');
      const job = await long.api('GET', `/v2/${ep}/status/${id}`);
      expect(job.json).toMatchObject({ status: 'IN_PROGRESS', delayTime: 0 });
      expect((await long.api('GET', `/v2/${ep}/health`)).json.jobs).toMatchObject({ inQueue: 0, inProgress: 1 });
      // The worker it went to holds the job: its result is accepted.
      const done = await protocolWorker(long, ep, polls[0]!.id).done(id, { output: { ok: true } });
      expect(done.status).toBe(200);
      expect((await long.api('GET', `/v2/${ep}/status/${id}`)).json).toMatchObject({ status: 'COMPLETED' });
    } finally {
      stop.abort();
      takes.restore();
    }
  });

  it('a job that cannot be handed over wakes one other waiting take; the rest go on waiting without reading the queue', async () => {
    const ep = await createEndpoint(long);
    const takes = countTakes(long, ep);
    const stop = new AbortController();
    try {
      const polls = await waitingPolls(ep, takes, ['retiring', 'a', 'b', 'c', 'd', 'e'], stop.signal);
      // The longest-waiting take is reserved for the job, but its worker was retired meanwhile: the store queues it.
      await long.server.store.touchWorker(polls[0]!.id, Date.now(), { retired: true, reason: 'test' });
      const id = await submit(ep, { n: 1 }, long);
      const first = await Promise.race(polls.slice(1).map((p) => p.res.then((res) => ({ res, p }))));
      expect(first.res.status).toBe(200);
      expect(first.res.json.id).toBe(id);
      expect(first.p).toBe(polls[1]);
      // Give wrongly woken polls time to look: with a wake-up for all, each of the other four would have read the
      // queue once more.
      await new Promise((r) => setTimeout(r, 300));
      expect(takes.calls).toBe(7);
      expect((await long.api('GET', `/v2/${ep}/health`)).json.jobs).toMatchObject({ inQueue: 0, inProgress: 1 });
      // The retired worker's poll is held (not answered) and took nothing.
      expect(await answeredWithin(polls[0]!.res, 0)).toBe('held');
    } finally {
      stop.abort();
      takes.restore();
    }
  });

  it('a woken take whose worker was retired meanwhile hands the wake-up on to the next waiting take', async () => {
    const ep = await createEndpoint(long);
    const takes = countTakes(long, ep);
    const stop = new AbortController();
    try {
      // The job is reserved for the first poll and queued (its worker is retired); its single wake-up goes to the
      // second, whose worker is retired too: it must hand the wake-up on to the third.
      const polls = await waitingPolls(ep, takes, ['retired1', 'retired2', 'next'], stop.signal);
      for (const p of polls.slice(0, 2)) {
        await long.server.store.touchWorker(p.id, Date.now(), { retired: true, reason: 'test' });
      }
      const submittedAt = Date.now();
      const id = await submit(ep, { n: 1 }, long);
      const res = await polls[2]!.res;
      // Handed on at once, not found by the third poll's timer (10 s).
      expect(Date.now() - submittedAt).toBeLessThan(3000);
      expect(res.status).toBe(200);
      expect(res.json.id).toBe(id);
      // The retired workers' polls are held (not answered) and took nothing.
      for (const p of polls.slice(0, 2)) expect(await answeredWithin(p.res, 200)).toBe('held');
    } finally {
      stop.abort();
      takes.restore();
    }
  });

  it('a reserved take answers with its job even if its client hangs up meanwhile; the route then gives it back', async () => {
    const ep = await createEndpoint(long);
    const takes = countTakes(long, ep);
    const srv = long.server;
    try {
      const endpoint = (await srv.store.getEndpoint(null, ep))!;
      const worker = await srv.workers.resolveWorker(endpoint, wid('reserved'), null);
      const client = new AbortController();
      const take = srv.workers.take(worker, 1, client.signal);
      await waitUntil(() => takes.calls >= 1, 5000);
      // submit() reserves the waiting take before its first await; the client hangs up while the write is in flight.
      const submitting = srv.engine.submit(endpoint, { input: { n: 2 } }, 'async');
      client.abort();
      const job = await submitting;
      expect(job.status).toBe('IN_PROGRESS');
      expect(job.workerId).toBe(worker.id);
      // The claimed job is not dropped: the take answers with it, and the route (seeing its client gone) gives it back.
      const got = await take;
      expect(got.map((j) => j.id)).toEqual([job.id]);
      await srv.workers.undeliverable(worker, got);
      expect((await srv.store.getJob(ep, job.id))?.status).toBe('IN_QUEUE');
    } finally {
      takes.restore();
    }
  });

  /** A fresh worker's take of up to `max` jobs, called directly, once its first look at the queue is done. */
  async function waitingTake(srv: TestServer, ep: string, takes: { calls: number }, name: string, max: number) {
    const endpoint = (await srv.server.store.getEndpoint(null, ep))!;
    const worker = await srv.server.workers.resolveWorker(endpoint, wid(name), null);
    const before = takes.calls;
    const jobs = srv.server.workers.take(worker, max);
    await waitUntil(() => takes.calls > before, 5000);
    return { worker, jobs };
  }

  /** Runs `fn` on a new endpoint of `long`, with the store's looks at its queue counted meanwhile. */
  async function withCountedTakes(fn: (ep: string, takes: ReturnType<typeof countTakes>) => Promise<void>) {
    const ep = await createEndpoint(long);
    const takes = countTakes(long, ep);
    try {
      await fn(ep, takes);
    } finally {
      takes.restore();
    }
  }

  /** Submissions made in one event-loop turn: each reserves a take before its first await, as a burst of /run does. */
  async function burst(srv: TestServer, ep: string, n: number) {
    const endpoint = (await srv.server.store.getEndpoint(null, ep))!;
    return Promise.all(
      Array.from({ length: n }, (_, k) => srv.server.engine.submit(endpoint, { input: { k } }, 'async')),
    );
  }

  it('a burst fills a waiting batch take up to its size in one answer; the rest of the burst is queued', () =>
    withCountedTakes(async (ep, takes) => {
      const take = await waitingTake(long, ep, takes, 'batch', 3);
      const jobs = await burst(long, ep, 4);
      expect((await take.jobs).map((j) => j.id)).toEqual(jobs.slice(0, 3).map((j) => j.id));
      expect(jobs.map((j) => j.status)).toEqual(['IN_PROGRESS', 'IN_PROGRESS', 'IN_PROGRESS', 'IN_QUEUE']);
      expect(jobs.slice(0, 3).every((j) => j.workerId === take.worker.id)).toBe(true);
      // Claimed by the submissions' own writes: the take never looked at the queue again.
      expect(takes.calls).toBe(1);
      expect((await long.api('GET', `/v2/${ep}/health`)).json.jobs).toMatchObject({ inQueue: 1, inProgress: 3 });
    }));

  it('a burst is dealt over the waiting batch takes in turn, the longest-waiting first', () =>
    withCountedTakes(async (ep, takes) => {
      const first = await waitingTake(long, ep, takes, 'first', 4);
      const second = await waitingTake(long, ep, takes, 'second', 4);
      const jobs = await burst(long, ep, 3);
      expect((await first.jobs).map((j) => j.id)).toEqual([jobs[0]!.id, jobs[2]!.id]);
      expect((await second.jobs).map((j) => j.id)).toEqual([jobs[1]!.id]);
      expect(takes.calls).toBe(2);
    }));

  it('a batch take answers with what the turn of its first job brought, not waiting for more', () =>
    withCountedTakes(async (ep, takes) => {
      const take = await waitingTake(long, ep, takes, 'prompt', 4);
      const [one] = await burst(long, ep, 1);
      // A submission after that turn (the first one's write is on disk by now) finds the take no longer on offer: it
      // is queued for the worker's next take, and the take answers with the first job alone.
      const [two] = await burst(long, ep, 1);
      expect(two!.status).toBe('IN_QUEUE');
      expect((await take.jobs).map((j) => j.id)).toEqual([one!.id]);
    }));

  it('over HTTP: one job-take-batch answer carries the whole burst', () =>
    withCountedTakes(async (ep, takes) => {
      const w = protocolWorker(long, ep, wid('http-batch'));
      const pending = w.takeBatch(8);
      await waitUntil(() => takes.calls >= 1, 5000);
      const jobs = await burst(long, ep, 5);
      const res = await pending;
      expect(res.status).toBe(200);
      expect((res.json as Array<{ id: string }>).map((j) => j.id)).toEqual(jobs.map((j) => j.id));
    }));

  it('under churn — takes coming and going, clients hanging up — every job completes once, none is lost', async () => {
    const ep = await createEndpoint(long);
    const srv = long.server;
    const endpoint = (await srv.store.getEndpoint(null, ep))!;
    const deliveries = new Map<string, number>();
    const polls = new Set<AbortController>();
    let stopping = false;
    // Six workers, each polling again as soon as a poll ends; a third of the polls' clients hang up within 5 ms, as
    // the take route sees it (it gives back what it could not deliver, as the route does).
    const takers = Array.from({ length: 6 }, async (_, i) => {
      const worker = await srv.workers.resolveWorker(endpoint, wid(`churn${i}`), null);
      while (!stopping) {
        const client = new AbortController();
        polls.add(client);
        const hangUp = i % 3 === 0 ? setTimeout(() => client.abort(), Math.random() * 5) : undefined;
        const jobs = await srv.workers.take(worker, 1 + (i % 3), client.signal);
        clearTimeout(hangUp);
        polls.delete(client);
        if (client.signal.aborted) {
          if (jobs.length > 0) await srv.workers.undeliverable(worker, jobs);
          continue;
        }
        for (const job of jobs) {
          deliveries.set(job.id, (deliveries.get(job.id) ?? 0) + 1);
          await srv.workers.done(worker, job.id, JSON.stringify({ output: job.id }));
        }
      }
    });
    const ids: string[] = [];
    // One at a time and in bursts (submissions of one event-loop turn, which may fill a batch take together).
    for (let k = 0; k < 300;) {
      const n = k % 2 === 0 ? 1 : Math.min(300 - k, 1 + Math.floor(Math.random() * 6));
      const jobs = await Promise.all(
        Array.from({ length: n }, (_, i) => srv.engine.submit(endpoint, { input: { k: k + i } }, 'async')),
      );
      ids.push(...jobs.map((j) => j.id));
      k += n;
      if (k % 5 === 0) await new Promise((r) => setTimeout(r, Math.random() * 3));
    }
    await waitUntil(async () => (await srv.store.jobCounts(ep)).completed === ids.length, 20_000);
    stopping = true;
    for (const client of polls) client.abort();
    await Promise.all(takers);
    for (const id of ids) {
      expect(await srv.store.getJob(ep, id)).toMatchObject({ status: 'COMPLETED', outputJson: JSON.stringify(id) });
      expect(deliveries.get(id)).toBe(1);
    }
  });

  it('answers the job object with Content-Type application/json and the extras the submitter gave', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('w'));
    const res0 = await t.api('POST', `/v2/${ep}/run`, {
      input: { prompt: 'hé ✓' },
      webhook: 'http://127.0.0.1:9999/hook',
      policy: { ttl: 600_000 },
    });
    const id = res0.json.id as string;
    const res = await w.take();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')?.split(';')[0]).toBe('application/json');
    expect(res.json).toMatchObject({ id, input: { prompt: 'hé ✓' }, webhook: 'http://127.0.0.1:9999/hook' });
    expect(res.json.policy.ttl).toBe(600_000);
    expect((await status(ep, id)).status).toBe('IN_PROGRESS');
  });

  it('batch take returns an array of up to batch_size jobs, in queue order', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('batch'));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await submit(ep, { i }));
    const first = await w.takeBatch(3);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')?.split(';')[0]).toBe('application/json');
    expect(Array.isArray(first.json)).toBe(true);
    expect(first.json.map((j: any) => j.id)).toEqual(ids.slice(0, 3));
    expect(first.json.map((j: any) => j.input)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    const second = await w.takeBatch(3);
    expect(second.json.map((j: any) => j.id)).toEqual(ids.slice(3));
    for (const id of ids) expect((await status(ep, id)).status).toBe('IN_PROGRESS');
    const empty = await w.takeBatch(3);
    expect(empty.status).toBe(204);
  });

  it('ignores a stale X-Request-ID on take and stop requests', async () => {
    const { ep, w, id: old } = await takenJob();
    expect((await w.done(old, { output: 1 })).status).toBe(200);
    const next = await submit(ep, { next: true });
    const workerId = (await status(ep, old)).workerId as string;
    const headers = { authorization: t.key, 'content-type': 'application/json', 'x-request-id': old };
    const take = await request(`${t.url}/v2/${ep}/job-take/${workerId}?gpu=TEST&job_in_progress=0`, 'GET', undefined, {
      headers,
    });
    expect(take.status).toBe(200);
    expect(take.json.id).toBe(next);
    await t.api('POST', `/v2/${ep}/cancel/${next}`);
    const stop = await request(`${t.url}/v2/${ep}/job-stop/${workerId}?gpu=TEST`, 'GET', undefined, { headers });
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({ jobsToStop: [next] });
    expect((await status(ep, old)).status).toBe('COMPLETED');
  });

  it('accepts the query glued onto the path when a template lacked `?`', async () => {
    const ep = await createEndpoint(t);
    const workerId = wid('noq');
    const id = await submit(ep, { q: 1 });
    const auth = { authorization: t.key, 'content-type': 'application/json' };
    const take = await request(`${t.url}/v2/${ep}/job-take/${workerId}&job_in_progress=0`, 'GET', undefined, {
      headers: auth,
    });
    expect(take.status).toBe(200);
    expect(take.json.id).toBe(id);
    const post = (kind: string, body: unknown, isStream: boolean) =>
      request(`${t.url}/v2/${ep}/${kind}/${workerId}/${id}&isStream=${isStream}`, 'POST', undefined, {
        raw: JSON.stringify(body),
        headers: { authorization: t.key, 'content-type': 'application/x-www-form-urlencoded', charset: 'utf-8' },
      });
    expect((await post('job-stream', { output: { chunk: 0 } }, false)).status).toBe(200);
    expect((await post('job-done', { output: [{ chunk: 0 }] }, true)).status).toBe(200);
    const s = await status(ep, id);
    expect(s).toMatchObject({ status: 'COMPLETED', output: [{ chunk: 0 }], workerId });
    const stream = await t.api('GET', `/v2/${ep}/stream/${id}`);
    expect(stream.json.stream).toEqual([{ output: { chunk: 0 } }]);
    // A batch take with the query glued on still reads batch_size.
    const ids = [await submit(ep, { b: 1 }), await submit(ep, { b: 2 }), await submit(ep, { b: 3 })];
    const batch = await request(
      `${t.url}/v2/${ep}/job-take-batch/${workerId}&batch_size=2&job_in_progress=0`,
      'GET',
      undefined,
      { headers: auth },
    );
    expect(batch.json.map((j: any) => j.id)).toEqual(ids.slice(0, 2));
  });
  it('a worker with a long id (any RUNPOD_POD_ID) that can take jobs can also post their results', async () => {
    const ep = await createEndpoint(t);
    const workerId = `pod-${'x'.repeat(200)}`;
    const w = protocolWorker(t, ep, workerId);
    const id = await submit(ep, { long: true });
    expect((await w.take()).json.id).toBe(id);
    expect((await w.stream(id, { output: 'c' })).status).toBe(200);
    expect((await w.done(id, { output: 'ok' })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: 'ok', workerId });
  });
});

/**
 * The URLs the official Python SDK builds from a worker's environment (spec §1.4): plain string replacement, its
 * parameters appended with a literal `&`; the heartbeat's merged into the query as `requests` does.
 */
function pythonSdkUrls(env: Record<string, string>) {
  const pod = env['RUNPOD_POD_ID']!;
  const take = env['RUNPOD_WEBHOOK_GET_JOB']!.replaceAll('$ID', pod);
  const output = env['RUNPOD_WEBHOOK_POST_OUTPUT']!.replaceAll('$RUNPOD_POD_ID', pod);
  const stream = env['RUNPOD_WEBHOOK_POST_STREAM']!.replaceAll('$RUNPOD_POD_ID', pod);
  const ping = env['RUNPOD_WEBHOOK_PING']!.replaceAll('$RUNPOD_POD_ID', pod);
  return {
    take: (inProgress: 0 | 1) => `${take}&job_in_progress=${inProgress}`,
    batch: (n: number) => `${take.replaceAll('/job-take/', '/job-take-batch/')}&batch_size=${n}&job_in_progress=0`,
    stop: take.replaceAll('/job-take/', '/job-stop/'),
    done: (jobId: string, isStream: boolean) => `${output.replaceAll('$ID', jobId)}&isStream=${isStream}`,
    stream: (jobId: string) => `${stream.replaceAll('$ID', jobId)}&isStream=false`,
    ping: (jobIds: string[]) => {
      const params = new URLSearchParams(jobIds.length > 0 ? { job_id: jobIds.join(',') } : {});
      params.set('runpod_version', '1.12.0');
      return `${ping}${ping.includes('?') ? '&' : '?'}${params}`;
    },
  };
}

describe("the fleet's worker environment, as the official Python SDK reads it", () => {
  it('every URL the SDK builds from it reaches its route: a whole job cycle', async () => {
    const ep = await createEndpoint(t);
    const endpoint = (await t.server.store.getEndpoint(null, ep))!;
    const template = (await t.server.store.getTemplate(endpoint.userId, endpoint.templateId))!;
    const pod = wid('fleet');
    const env = workerEnv({
      publicUrl: `${t.url}/`,
      endpoint,
      template,
      workerId: pod,
      workerKey: t.key,
      pingIntervalMs: 500,
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      gpuIndices: ['0'],
      dataCenterId: 'EU-RO-1',
    });
    // Checklist §1.16 item 1: templates with a `?`, `$ID` (never `$RUNPOD_POD_ID`) in the take template, an interval
    // the SDK's heartbeat survives, no fitness check that dials the internet.
    for (const name of ['GET_JOB', 'POST_OUTPUT', 'POST_STREAM', 'PING']) {
      expect(env[`RUNPOD_WEBHOOK_${name}`]).toContain('?');
    }
    expect(env['RUNPOD_WEBHOOK_GET_JOB']).toContain('/job-take/$ID?');
    expect(env['RUNPOD_WEBHOOK_GET_JOB']).not.toContain('$RUNPOD_POD_ID');
    expect(env).toMatchObject({
      RUNPOD_POD_ID: pod,
      RUNPOD_AI_API_KEY: t.key,
      RUNPOD_ENDPOINT_ID: ep,
      RUNPOD_PING_INTERVAL: '1000',
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    });
    expect(env['RUNPOD_POD_HOSTNAME']).toBeTruthy();

    const urls = pythonSdkUrls(env);
    const session = { authorization: env['RUNPOD_AI_API_KEY']!, 'content-type': 'application/json' };
    const get = (url: string) => request(url, 'GET', undefined, { headers: session });
    const post = (url: string, jobId: string, body: unknown) =>
      request(url, 'POST', undefined, {
        raw: JSON.stringify(body),
        headers: {
          authorization: env['RUNPOD_AI_API_KEY']!,
          'content-type': 'application/x-www-form-urlencoded',
          charset: 'utf-8',
          'x-request-id': jobId,
        },
      });
    const ping = (ids: string[]) => request(urls.ping(ids), 'GET', undefined, { headers: { authorization: t.key } });

    expect((await ping([])).json).toEqual({ status: 'pong' });
    const [a, b, c] = [await submit(ep, { n: 1 }), await submit(ep, { n: 2 }), await submit(ep, { n: 3 })];
    expect((await get(urls.batch(2))).json.map((j: any) => j.id)).toEqual([a, b]);
    expect((await get(urls.take(1))).json.id).toBe(c);
    expect((await ping([a, b, c])).status).toBe(200);
    expect((await post(urls.stream(a), a, { output: { chunk: 0 } })).status).toBe(200);
    expect((await post(urls.done(a, true), a, { output: [{ chunk: 0 }] })).status).toBe(200);
    expect((await post(urls.done(b, false), b, { status: 'IN_PROGRESS', output: { pct: 50 } })).status).toBe(200);
    expect((await post(urls.done(b, false), b, { error: 'bad input' })).status).toBe(200);
    await t.api('POST', `/v2/${ep}/cancel/${c}`);
    expect((await get(urls.stop)).json).toEqual({ jobsToStop: [c] });

    expect(await status(ep, a)).toMatchObject({ status: 'COMPLETED', output: [{ chunk: 0 }], workerId: pod });
    expect((await t.api('GET', `/v2/${ep}/stream/${a}`)).json.stream).toEqual([{ output: { chunk: 0 } }]);
    expect(await status(ep, b)).toMatchObject({ status: 'FAILED', error: 'bad input', workerId: pod });
    expect((await status(ep, c)).status).toBe('CANCELLED');
  });
});

describe('HEAD changes nothing', () => {
  it('no HEAD on job-take, job-take-batch, job-stop or /stream: the job, the stop order and the chunks stay', async () => {
    const ep = await createEndpoint(t);
    const workerId = wid('head');
    const base = `${t.url}/v2/${ep}`;
    const head = (path: string, key = t.key) =>
      request(`${base}/${path}`, 'HEAD', undefined, { headers: { authorization: key } });
    const id = await submit(ep, { head: 1 });
    for (const path of [`job-take/${workerId}?gpu=x`, `job-take-batch/${workerId}?gpu=x&batch_size=2`]) {
      expect((await head(path)).status).toBe(404);
    }
    expect(await status(ep, id)).toMatchObject({ status: 'IN_QUEUE' });
    const w = protocolWorker(t, ep, workerId);
    expect((await w.take()).json.id).toBe(id);
    expect((await w.stream(id, { output: 'c0' })).status).toBe(200);
    expect((await head(`stream/${id}`)).status).toBe(404);
    expect((await t.api('GET', `/v2/${ep}/stream/${id}`)).json.stream).toEqual([{ output: 'c0' }]);
    await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect((await head(`job-stop/${workerId}?gpu=x`)).status).toBe(404);
    expect((await head(`ping/${workerId}?gpu=x`)).status).toBe(404);
    expect((await w.stops()).json).toEqual({ jobsToStop: [id] });
  });
});

describe('job-stop', () => {
  it('returns {"jobsToStop":[...]} for cancelled jobs, once', async () => {
    const { ep, w, id } = await takenJob();
    const cancel = await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect(cancel.json).toEqual({ id, status: 'CANCELLED' });
    const res = await w.stops();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')?.split(';')[0]).toBe('application/json');
    expect(res.json).toEqual({ jobsToStop: [id] });
    // Delivered once; the next poll waits and answers 204.
    expect((await w.stops()).status).toBe(204);
    // A result that arrives anyway changes nothing.
    const late = await w.done(id, { output: 'late' });
    expect(late.status).toBe(409);
    expect(await status(ep, id)).toMatchObject({ status: 'CANCELLED' });
    expect((await status(ep, id)).output).toBeUndefined();
  });

  it('a cancel wakes a waiting poll at once, not at the end of the poll', async () => {
    // On `long`: a poll the cancel failed to wake would answer the same list, but only when its 10 s are up.
    const ep = await createEndpoint(long);
    const w = protocolWorker(long, ep, wid('stopper'));
    const id = await submit(ep, { stop: 'me' }, long);
    expect((await w.take()).json.id).toBe(id);
    const pending = w.stops();
    await new Promise((r) => setTimeout(r, 200));
    const cancelledAt = Date.now();
    expect((await long.api('POST', `/v2/${ep}/cancel/${id}`)).json).toEqual({ id, status: 'CANCELLED' });
    const res = await pending;
    expect(Date.now() - cancelledAt).toBeLessThan(3000);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')?.split(';')[0]).toBe('application/json');
    expect(res.json).toEqual({ jobsToStop: [id] });
  });

  it('an order read for a poll whose worker hung up is kept: the next poll gets it', async () => {
    // On `long`: the hung-up poll waits 10 s for orders, and the next poll must not wait for one.
    const ep = await createEndpoint(long);
    const workerId = wid('hang-up');
    const w = protocolWorker(long, ep, workerId);
    const id = await submit(ep, { stop: 'me' }, long);
    expect((await w.take()).json.id).toBe(id);
    const store = long.server.store;
    const original = store.takeStops.bind(store);
    let looks = 0;
    store.takeStops = (...args) => {
      if (args[0] === workerId) looks++;
      return original(...args);
    };
    const bus = long.server.engine.bus;
    try {
      const before = bus.waiterCount();
      const poll = httpGet(`${long.url}/v2/${ep}/job-stop/${workerId}?gpu=TEST`, {
        headers: { authorization: long.key, 'content-type': 'application/json' },
      });
      poll.on('error', () => {});
      await waitUntil(() => looks >= 1 && bus.waiterCount() > before, 5000);
      // The order is written but its wake-up is not here yet (a cancel on another node, its notification on the
      // way), and the worker hangs up: the poll ends with its client gone, and must not take the order with it.
      expect(await store.cancelJob(ep, id, Date.now())).toMatchObject({ outcome: 'cancelled', stopWorkerId: workerId });
      poll.destroy();
      await waitUntil(() => bus.waiterCount() === before, 5000);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      store.takeStops = original;
    }
    const started = Date.now();
    const res = await w.stops();
    expect(res.json).toEqual({ jobsToStop: [id] });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('an order whose answer never reached the worker is sent again while its pings still list the job', async () => {
    const { ep, w, id } = await takenJob();
    await t.api('POST', `/v2/${ep}/cancel/${id}`);
    // Answered, but lost on the way (the worker's socket closed as it was written): the worker still runs the job.
    expect((await w.stops()).json).toEqual({ jobsToStop: [id] });
    expect((await w.ping([id])).status).toBe(200);
    const again = await w.stops();
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ jobsToStop: [id] });
    // Once a ping no longer lists it, the worker has stopped it: no more orders.
    expect((await w.ping([])).status).toBe(200);
    expect((await w.stops()).status).toBe(204);
  });

  it('tells only the worker that runs the job', async () => {
    const { ep, id } = await takenJob();
    const other = protocolWorker(t, ep, wid('bystander'));
    await t.api('POST', `/v2/${ep}/cancel/${id}`);
    expect((await other.stops()).status).toBe(204);
  });

  it('is a long poll too: with nothing to stop, 204 and no body only once stopWaitMs has passed', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('idle-stop'));
    const started = Date.now();
    const res = await w.stops();
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(Date.now() - started).toBeGreaterThanOrEqual(TAKE_WAIT_MS - 50);
  });
});

describe('job-done bodies (every captured shape)', () => {
  const finals: Array<[string, unknown, Record<string, unknown>]> = [
    [
      '{"output": {...}}',
      { output: { echo: { prompt: 'hello' } } },
      { status: 'COMPLETED', output: { echo: { prompt: 'hello' } } },
    ],
    ['{"error": "..."}', { error: 'bad input' }, { status: 'FAILED', error: 'bad input' }],
    [
      '{"output", "error"}',
      { output: { partial: 1 }, error: 'partial failure' },
      { status: 'FAILED', output: { partial: 1 }, error: 'partial failure' },
    ],
    ['a string output', { output: 'plain string' }, { status: 'COMPLETED', output: 'plain string' }],
    ['a list output', { output: [1, 2, 3] }, { status: 'COMPLETED', output: [1, 2, 3] }],
    ['a number output', { output: 42 }, { status: 'COMPLETED', output: 42 }],
    ['a null output', { output: null }, { status: 'COMPLETED', output: null }],
    ['a false output', { output: false }, { status: 'COMPLETED', output: false }],
    ['non-ASCII text, not escaped', { output: 'héllo ✓ 日本' }, { status: 'COMPLETED', output: 'héllo ✓ 日本' }],
    ['a falsy error', { output: 1, error: '' }, { status: 'COMPLETED', output: 1 }],
    ['an object error', { error: { kind: 'oops' } }, { status: 'FAILED', error: { kind: 'oops' } }],
  ];

  it.each(finals)('%s', async (_name, body, expected) => {
    const { ep, w, id } = await takenJob();
    // The Python SDK's exact post: JSON text (UTF-8) under a form-urlencoded content type.
    const res = await w.done(id, JSON.stringify(body));
    expect(res.status).toBe(200);
    const s = await status(ep, id);
    expect(s).toMatchObject(expected);
    if (!('error' in expected)) expect(s.error).toBeUndefined();
    expect(typeof s.executionTime).toBe('number');
  });

  it('{} completes the job without any output', async () => {
    const { ep, w, id } = await takenJob();
    expect((await w.done(id, {})).status).toBe(200);
    const s = await status(ep, id);
    expect(s.status).toBe('COMPLETED');
    expect('output' in s).toBe(false);
    expect('error' in s).toBe(false);
  });

  it('the handler-exception report (a JSON-encoded string) is the FAILED error, verbatim', async () => {
    const { ep, w, id } = await takenJob();
    const report = JSON.stringify({
      error_type: "<class 'ValueError'>",
      error_message: 'boom',
      error_traceback: 'Traceback (most recent call last):\n ...',
      hostname: 'worker-abc-host',
      worker_id: 'worker-abc',
      runpod_version: '1.12.0',
    });
    expect((await w.done(id, { error: report })).status).toBe(200);
    const s = await status(ep, id);
    expect(s.status).toBe('FAILED');
    expect(s.error).toBe(report);
    expect(JSON.parse(s.error).error_message).toBe('boom');
  });

  it('progress ({"status":"IN_PROGRESS"}) is not final and shows as output while the job runs', async () => {
    const { ep, w, id } = await takenJob();
    expect((await w.done(id, { status: 'IN_PROGRESS', output: { pct: 50 } })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'IN_PROGRESS', output: { pct: 50 } });
    expect((await w.done(id, { status: 'IN_PROGRESS', output: 'almost' })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'IN_PROGRESS', output: 'almost' });
    expect((await w.done(id, { output: { done: true } })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: { done: true } });
  });

  it('a progress post wakes /status-sync waiters without ending the wait', async () => {
    const { ep, w, id } = await takenJob();
    const waiting = t.api('GET', `/v2/${ep}/status-sync/${id}?wait=10000`);
    await new Promise((r) => setTimeout(r, 150));
    await w.done(id, { status: 'IN_PROGRESS', output: 'half' });
    await new Promise((r) => setTimeout(r, 150));
    await w.done(id, { output: 'all' });
    const res = await waiting;
    expect(res.json).toMatchObject({ status: 'COMPLETED', output: 'all' });
  });

  it('generator finals (isStream=true): {"output": []} and an aggregated list', async () => {
    for (const final of [[], [{ chunk: 0 }, { chunk: 1 }]]) {
      const { ep, w, id } = await takenJob({});
      expect((await w.stream(id, { output: { chunk: 0 } })).status).toBe(200);
      expect((await w.stream(id, { output: { chunk: 1 } })).status).toBe(200);
      expect((await w.done(id, { output: final }, true)).status).toBe(200);
      expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: final });
      const stream = await t.api('GET', `/v2/${ep}/stream/${id}`);
      expect(stream.json).toEqual({
        status: 'COMPLETED',
        stream: [{ output: { chunk: 0 } }, { output: { chunk: 1 } }],
      });
    }
  });

  it('a failing generator: chunks stay streamed, the final error fails the job', async () => {
    const { ep, w, id } = await takenJob({ fail: true });
    await w.stream(id, { output: { chunk: 0 } });
    const error = 'handler: gen failed \ntraceback: Traceback (most recent call last):\nRuntimeError: gen failed\n';
    expect((await w.done(id, { error }, true)).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'FAILED', error });
    expect((await t.api('GET', `/v2/${ep}/stream/${id}`)).json.stream).toEqual([{ output: { chunk: 0 } }]);
  });

  it('stopPod: true retires the worker: later takes get no job and are held, not spun', async () => {
    const { ep, w, id } = await takenJob();
    expect((await w.done(id, { error: 'bad input', stopPod: true })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'FAILED', error: 'bad input' });
    const next = await submit(ep, { after: 'retire' });
    const started = Date.now();
    const res = await w.take();
    expect(res.status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TAKE_WAIT_MS - 50);
    expect((await w.takeBatch(2)).status).toBe(204);
    expect((await status(ep, next)).status).toBe('IN_QUEUE');
    // Another worker gets it at once.
    const other = protocolWorker(t, ep, wid('fresh'));
    const took = await other.take();
    expect(took.json.id).toBe(next);
  });

  it("stopPod answers the worker's waiting take and stop polls at once: the SDK then exits (refresh_worker)", async () => {
    // The official SDK with refresh_worker exits once its in-flight long polls return (spec §1.10, scenario refresh);
    // so does any worker told to stop (SIGTERM, §1.3). On `long`, polls held to their end would answer after 10 s.
    const ep = await createEndpoint(long);
    const w = protocolWorker(long, ep, wid('refresh'));
    const id = await submit(ep, { x: 1 }, long);
    expect((await w.take()).json.id).toBe(id);
    // A worker with a free slot has a take waiting while the job runs; the stop channel always has a poll waiting.
    const take = w.take('job_in_progress=1');
    const stop = w.stops();
    await new Promise((r) => setTimeout(r, 200));
    const postedAt = Date.now();
    expect((await w.done(id, { output: { echo: { x: 1 } }, stopPod: true })).status).toBe(200);
    const [took, stopped] = await Promise.all([take, stop]);
    expect(Date.now() - postedAt).toBeLessThan(3000);
    expect(took.status).toBe(204);
    expect(stopped.status).toBe(204);
    // The job stands; a job submitted now waits for another worker.
    expect(await long.api('GET', `/v2/${ep}/status/${id}`)).toMatchObject({ json: { status: 'COMPLETED' } });
    const next = await submit(ep, { y: 1 }, long);
    expect((await protocolWorker(long, ep, wid('fresh')).take()).json.id).toBe(next);
  });

  it('stopPod on a successful result still completes the job (refresh_worker)', async () => {
    const { ep, w, id } = await takenJob({ x: 1 });
    expect((await w.done(id, { output: { echo: { x: 1 } }, stopPod: true })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: { echo: { x: 1 } } });
    await submit(ep, { y: 1 });
    expect((await w.take()).status).toBe(204);
  });

  it("stopPod: a retirement the store fails after the result is stored still wakes the job's waiters", async () => {
    // The result commits, then the worker's retirement fails (a store outage): the post answers 5xx and the SDK
    // retries it, which is acknowledged as already recorded. The job's waiters must have been woken by the first.
    const { ep, w, id } = await takenJob({ x: 2 });
    const store = t.server.store;
    const markWorker = store.markWorker.bind(store);
    let failed = false;
    store.markWorker = (...args) => {
      if (failed) return markWorker(...args);
      failed = true;
      return Promise.reject(new Error('store outage'));
    };
    try {
      const started = Date.now();
      const waiter = t.api('GET', `/v2/${ep}/status-sync/${id}?wait=20000`);
      await new Promise((r) => setTimeout(r, 100)); // the waiter is waiting
      expect((await w.done(id, { output: 'done', stopPod: true })).status).toBeGreaterThanOrEqual(500);
      expect((await w.done(id, { output: 'done', stopPod: true })).status).toBe(200);
      const res = await waiter;
      expect(res.json).toMatchObject({ status: 'COMPLETED', output: 'done' });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      store.markWorker = markWorker;
    }
  });

  it('a second final post for the same job is refused and changes nothing', async () => {
    const { ep, w, id } = await takenJob();
    expect((await w.done(id, { output: 'first' })).status).toBe(200);
    const again = await w.done(id, { output: 'second' });
    expectErrorShape(again, 409);
    expect(again.json.code).toBe('STALE_ATTEMPT');
    expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: 'first' });
    const progress = await w.done(id, { status: 'IN_PROGRESS', output: 'late progress' });
    expect(progress.status).toBe(409);
    expect((await status(ep, id)).output).toBe('first');
  });

  it('a result over the 20 MB a worker may post fails the job at once, with the reason', async () => {
    // The official SDK does not retry a 4xx and drops the job: left IN_PROGRESS, it would be found missing from the
    // worker's pings and run again, to the same refusal, until maxAttempts.
    const { ep, w, id } = await takenJob();
    const res = await w.done(id, JSON.stringify({ output: 'x'.repeat(21 * ONE_MB) }));
    expectErrorShape(res, 413);
    const s = await status(ep, id);
    expect(s.status).toBe('FAILED');
    expect(s.error).toMatch(/larger than the 20 MB/);
    // Another worker's oversized post changes nothing.
    const { ep: ep2, id: id2 } = await takenJob();
    const other = protocolWorker(t, ep2, wid('other'));
    expectErrorShape(await other.done(id2, JSON.stringify({ output: 'x'.repeat(21 * ONE_MB) })), 413);
    expect((await status(ep2, id2)).status).toBe('IN_PROGRESS');
  });

  it('a post for an unknown job is 404 with the error shape', async () => {
    const { w } = await takenJob();
    const res = await w.done('no-such-job', { output: 1 });
    expectErrorShape(res, 404);
    expect(res.json.code).toBe('JOB_NOT_FOUND');
  });
});

describe('malformed worker bodies', () => {
  const bad: Array<[string, string]> = [
    ['not JSON', 'output=1&x=2'],
    ['truncated JSON', '{"output": '],
    ['a JSON array', '[{"output": 1}]'],
    ['a JSON string', '"done"'],
    ['a JSON number', '42'],
    ['JSON null', 'null'],
    ['an empty body', ''],
  ];

  it.each(bad)('job-done with %s → 400 and the job unchanged', async (_name, raw) => {
    const { ep, w, id } = await takenJob();
    await w.done(id, { status: 'IN_PROGRESS', output: 'before' });
    const res = await w.done(id, raw);
    expectErrorShape(res, 400);
    expect(await status(ep, id)).toMatchObject({ status: 'IN_PROGRESS', output: 'before' });
    // The worker still holds the attempt and can post a proper result.
    expect((await w.done(id, { output: 'after' })).status).toBe(200);
    expect(await status(ep, id)).toMatchObject({ status: 'COMPLETED', output: 'after' });
  });

  it.each(bad)('job-stream with %s → 400 and no chunk added', async (_name, raw) => {
    const { ep, w, id } = await takenJob();
    const res = await w.stream(id, raw);
    expectErrorShape(res, 400);
    expect((await status(ep, id)).status).toBe('IN_PROGRESS');
    const stream = await t.api('GET', `/v2/${ep}/stream/${id}?wait=0`);
    expect(stream.json.stream).toEqual([]);
  });

  it('job-stream without an `output` member → 400', async () => {
    const { w, id } = await takenJob();
    const res = await w.stream(id, { chunk: 1 });
    expectErrorShape(res, 400);
  });

  it('a JSON body sent with a JSON content type that does not parse → 400 too', async () => {
    const { ep, id, w } = await takenJob();
    const workerId = (await status(ep, id)).workerId as string;
    const res = await request(
      `${t.url}/v2/${ep}/job-done/${workerId}/${id}?gpu=TEST&isStream=false`,
      'POST',
      undefined,
      {
        raw: '{not json',
        headers: { authorization: t.key, 'content-type': 'application/json' },
      },
    );
    expectErrorShape(res, 400);
    expect((await status(ep, id)).status).toBe('IN_PROGRESS');
    expect((await w.done(id, { output: 1 })).status).toBe(200);
  });
});

describe('payloads pass through as written (Python reads 64-bit integers and floats exactly)', () => {
  // Each of these changes when parsed into a JS number and written again.
  const SEED = '18446744073709551615';
  const INPUT = `{"seed": ${SEED}, "loss": 1.0, "tiny": 1e-9, "big": 1E+30, "neg": -0, "long": 0.12345678901234567}`;

  it('a /run input reaches the worker as the client wrote it', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, wid('w'));
    const res = await request(`${t.url}/v2/${ep}/run`, 'POST', undefined, {
      key: t.key,
      raw: `{"input": ${INPUT}, "policy": {"ttl": 60000}}`,
    });
    expect(res.status).toBe(200);
    const took = await w.take();
    expect(took.text).toContain(`"input":${INPUT}`);
    // The policy was read as numbers all the same.
    expect(took.json.policy).toEqual({ ttl: 60000 });
  });

  it('a result, progress, an error and stream chunks keep their numbers', async () => {
    const { ep, w, id } = await takenJob();
    expect((await w.done(id, `{"status": "IN_PROGRESS", "output": {"step": 1.0, "seed": ${SEED}}}`)).status).toBe(200);
    const progress = await t.api('GET', `/v2/${ep}/status/${id}`);
    expect(progress.text).toContain(`"output":{"step": 1.0, "seed": ${SEED}}`);
    expect((await w.stream(id, `{"output": {"token": 9007199254740993, "p": 0.50}}`)).status).toBe(200);
    expect((await w.done(id, `{"output": ${INPUT}}`)).status).toBe(200);
    const done = await t.api('GET', `/v2/${ep}/status/${id}`);
    expect(done.json.status).toBe('COMPLETED');
    expect(done.text).toContain(`"output":${INPUT}`);
    const stream = await t.api('GET', `/v2/${ep}/stream/${id}`);
    expect(stream.text).toContain('{"output": {"token": 9007199254740993, "p": 0.50}}');

    const failed = await takenJob();
    expect((await failed.w.done(failed.id, `{"error": {"code": ${SEED}}}`)).status).toBe(200);
    const body = await t.api('GET', `/v2/${failed.ep}/status/${failed.id}`);
    expect(body.json.status).toBe('FAILED');
    expect(body.text).toContain(`"error":{"code": ${SEED}}`);
  });

  it('NaN and Infinity in a result (Python json.dumps writes them) are stored as null, not refused', async () => {
    const { ep, w, id } = await takenJob();
    const res = await w.done(id, '{"output": {"loss": NaN, "hi": Infinity, "lo": -Infinity, "s": "NaN Infinity"}}');
    expect(res.status).toBe(200);
    expect(await status(ep, id)).toMatchObject({
      status: 'COMPLETED',
      output: { loss: null, hi: null, lo: null, s: 'NaN Infinity' },
    });
    const chunk = await takenJob();
    expect((await chunk.w.stream(chunk.id, '{"output": [1.5, NaN]}')).status).toBe(200);
    const stream = await t.api('GET', `/v2/${chunk.ep}/stream/${chunk.id}?wait=0`);
    expect(stream.json.stream).toEqual([{ output: [1.5, null] }]);
    // Still malformed when something else is wrong.
    expectErrorShape(await chunk.w.done(chunk.id, '{"output": NaN'), 400);
    expectErrorShape(await chunk.w.done(chunk.id, '{"output": nan}'), 400);
  });
});

describe('job-stream', () => {
  it('appends {"output": ...} items in order, visible through /stream while the job runs', async () => {
    const { ep, w, id } = await takenJob({});
    const items = [{ chunk: 0 }, 'text', [1, 2], null, 7];
    for (const output of items) expect((await w.stream(id, { output })).status).toBe(200);
    const first = await t.api('GET', `/v2/${ep}/stream/${id}`);
    expect(first.json).toEqual({ status: 'IN_PROGRESS', stream: items.map((output) => ({ output })) });
    // A /stream long poll waiting for more is woken by the next chunk, well before its 10 s wait would end.
    const waiting = t.api('GET', `/v2/${ep}/stream/${id}?wait=10000`);
    await new Promise((r) => setTimeout(r, 150));
    const postedAt = Date.now();
    await w.stream(id, { output: 'more' });
    const next = await waiting;
    expect(Date.now() - postedAt).toBeLessThan(3000);
    expect(next.json.stream).toEqual([{ output: 'more' }]);
  });

  it('a string chunk over 1 MB is split into several chunks of at most 1 MB', async () => {
    const { ep, w, id } = await takenJob({});
    // Multi-byte characters and characters JSON must escape, so byte, char and escaped lengths all differ.
    const unit = 'aé✓"\\\n';
    const big = unit.repeat(Math.ceil((2.5 * ONE_MB) / Buffer.byteLength(unit)));
    const res = await w.stream(id, { output: big });
    expect(res.status).toBe(200);
    const stream = await t.api('GET', `/v2/${ep}/stream/${id}`);
    const chunks = stream.json.stream as Array<{ output: string }>;
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) {
      expect(typeof c.output).toBe('string');
      expect(Buffer.byteLength(JSON.stringify(c))).toBeLessThanOrEqual(ONE_MB);
    }
    expect(chunks.map((c) => c.output).join('')).toBe(big);
  });

  it('a non-string chunk over 1 MB is refused with 413 and nothing is stored', async () => {
    const { ep, w, id } = await takenJob({});
    const res = await w.stream(id, { output: { text: 'x'.repeat(ONE_MB + 10) } });
    expectErrorShape(res, 413);
    expect((await status(ep, id)).status).toBe('IN_PROGRESS');
    expect((await t.api('GET', `/v2/${ep}/stream/${id}?wait=0`)).json.stream).toEqual([]);
  });

  it('a chunk of exactly the limit is kept whole', async () => {
    const { ep, w, id } = await takenJob({});
    const output = 'y'.repeat(ONE_MB - JSON.stringify({ output: '' }).length);
    expect(Buffer.byteLength(JSON.stringify({ output }))).toBe(ONE_MB);
    expect((await w.stream(id, { output })).status).toBe(200);
    const chunks = (await t.api('GET', `/v2/${ep}/stream/${id}`)).json.stream;
    expect(chunks).toHaveLength(1);
    expect(chunks[0].output).toBe(output);
  });
});

describe('ping', () => {
  it('answers {"status":"pong"} with 200, with and without job ids', async () => {
    const { w, id } = await takenJob();
    for (const res of [await w.ping(), await w.ping([id])]) {
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ status: 'pong' });
    }
  });

  it('status=unhealthy&check&reason marks the worker unhealthy and requeues its job', async () => {
    const { ep, w, id } = await takenJob();
    const workerId = (await status(ep, id)).workerId as string;
    const res = await w.ping(
      [],
      '&status=unhealthy&check=check_model_present&reason=RuntimeError%3A+model+file+missing',
    );
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'pong' });
    const s = await status(ep, id);
    expect(s.status).toBe('IN_QUEUE');
    expect(s.retries).toBe(1);
    const worker = await t.server.store.getWorker(workerId);
    expect(worker?.state).toBe('unhealthy');
    expect(worker?.reason).toContain('check_model_present');
    expect(worker?.reason).toContain('model file missing');
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.workers.unhealthy).toBe(1);
    expect(health.json.jobs.inQueue).toBe(1);
    // The job is someone else's now; the unhealthy worker's late result is refused and it takes nothing more.
    expect((await w.done(id, { output: 'late' })).status).toBe(409);
    const other = protocolWorker(t, ep, wid('healthy'));
    expect((await other.take()).json.id).toBe(id);
    await submit(ep, { more: 1 });
    expect((await w.take()).status).toBe(204);
  });
});
