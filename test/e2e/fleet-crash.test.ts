// Workers that crash, as real processes under the supervisor: a crash mid-job is retried on another worker and
// completes once; a template that cannot start is backed off (1 s, 2 s, 4 s …) and reported as a crash loop;
// an image the process executor cannot run is refused when the endpoint is created.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, expect, it } from 'vitest';

import { closeFleet, ECHO_TEMPLATE, sleep, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';
import { sample } from '../helpers/prometheus.ts';
import { createEndpoint, TestClock } from '../helpers/server.ts';

let t: Fleet;
let tmp: string;

beforeEach(async () => {
  t = await startFleet();
  tmp = mkdtempSync(join(tmpdir(), 'wharf-fleet-crash-'));
});
afterEach(async () => {
  rmSync(tmp, { recursive: true, force: true });
  await closeFleet(t);
});

it('retries a job whose worker crashed mid-job on another worker; it completes exactly once', async () => {
  // Record every final result the server accepted.
  const accepted: Array<{ workerId: string; jobId: string }> = [];
  const gateway = t.server.workers;
  const done = gateway.done.bind(gateway);
  gateway.done = async (worker, jobId, raw) => {
    await done(worker, jobId, raw);
    if (!raw.includes('"IN_PROGRESS"')) accepted.push({ workerId: worker.id, jobId });
  };

  const ep = await t.endpoint({ workersMax: 2, idleTimeout: 2 });
  const marker = join(tmp, 'crashed-once');
  const id = await t.run(ep, { crashOnceFile: marker, n: 1 });
  const final = await t.waitJob(ep, id, 25_000);
  expect(final.status).toBe('COMPLETED');
  expect(final.output.echo).toEqual({ crashOnceFile: marker, n: 1 });
  expect(final.retries).toBe(1);

  const crashedWorker = readFileSync(marker, 'utf8');
  expect(final.workerId).not.toBe(crashedWorker);
  expect(accepted).toEqual([{ workerId: final.workerId, jobId: id }]);

  const h = await t.health(ep);
  expect(h.jobs).toMatchObject({ completed: 1, failed: 0, inQueue: 0, inProgress: 0 });
  expect(h.jobs.retried).toBe(1);

  // The crashed worker is reported with its exit, not left as a live worker.
  const workers = await t.workers(ep);
  const dead = workers.find((w) => w.id === crashedWorker);
  if (dead) expect(dead.workerState).toBe('unhealthy');
});

it('backs off a worker that exits at once, reports the crash loop with its error, and keeps the job queued', async () => {
  const ep = await t.endpoint(
    { workersMax: 2, idleTimeout: 1 },
    { dockerStartCmd: ['node', '-e', 'console.error("boom: missing model"); process.exit(1)'] },
  );
  const started = Date.now();
  const id = await t.run(ep, { n: 1 });

  let h = await t.untilScaling(ep, 'crash-loop');
  const crashLoopAfterMs = Date.now() - started;
  expect(h.scaling.message).toContain('boom: missing model');
  expect(h.scaling.message).toContain('exited with code 1');
  expect(h.jobs).toMatchObject({ inQueue: 1, inProgress: 0, completed: 0, failed: 0 });
  // Three failures: start, +1 s, +2 s; the crash loop cannot be reached in less than about 3 s.
  expect(crashLoopAfterMs).toBeGreaterThanOrEqual(2500);

  // Over the next seconds the supervisor waits 4 s before the next start: no tight loop.
  await sleep(3000);
  const res = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`);
  expect(res.status).toBe(200);
  const lines = res.json.lines as Array<{ workerId: string; message: string; stream: string }>;
  const starts = new Set(lines.filter((l) => l.message.includes('boom: missing model')).map((l) => l.workerId));
  const elapsed = Date.now() - started;
  // Backoff 1 s, 2 s, 4 s: starts at ~0, ~1, ~3, ~7 s.
  expect(starts.size).toBeGreaterThanOrEqual(3);
  expect(starts.size).toBeLessThanOrEqual(elapsed < 7000 ? 3 : 4);
  expect(lines.every((l) => l.stream === 'stderr')).toBe(true);
  // Each failed start stays visible for a while as an unhealthy worker. (Its reason, the exit and last line, is
  // overwritten with 'lease-expired' by the store's lease sweep once leaseMs has passed, so it is not checked here.)
  const pods = await t.workers(ep);
  const crashed = pods.filter((p) => starts.has(p.id));
  expect(crashed).toHaveLength(starts.size);
  for (const p of crashed) expect(p.workerState).toBe('unhealthy');
  // At most one more: a start that the backoff allowed after the logs above were read.
  expect(pods.length - crashed.length).toBeLessThanOrEqual(1);

  // The job is still queued, with the explanation.
  expect((await t.status(ep, id)).status).toBe('IN_QUEUE');
  h = await t.health(ep);
  expect(h.scaling.reason).toBe('crash-loop');
  expect(h.workers.idle + h.workers.running).toBe(0);

  // Fixing the template (a new endpoint version) starts a worker without waiting out the backoff, and the crash
  // loop of the broken version is no longer reported.
  const templateId = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId as string;
  const fixed = await t.api('PATCH', `/v1/templates/${templateId}`, { dockerStartCmd: ['node', 'worker.ts'] });
  expect(fixed.status).toBe(200);
  const fixedAt = Date.now();
  await waitUntil(async () => (await t.status(ep, id)).status === 'COMPLETED', 10_000);
  // The reason is recomputed on the supervisor's next pass (scaleIntervalMs): it clears within a few passes.
  await waitUntil(async () => (await t.health(ep)).scaling === undefined, 5_000);
  expect((await t.health(ep)).scaling).toBeUndefined();
  console.log(`crash loop: ${starts.size} starts in ${elapsed} ms; job done ${Date.now() - fixedAt} ms after the fix`);
});

it('after start failures, one worker at a time probes the image: not workersMax of them per backoff window', async () => {
  const ep = await t.endpoint(
    { workersMax: 3, idleTimeout: 1, scalerType: 'REQUEST_COUNT', scalerValue: 1 },
    { dockerStartCmd: ['node', '-e', 'console.error("boom: broken image"); process.exit(1)'] },
  );
  for (let n = 0; n < 3; n++) await t.run(ep, { n });
  const startsSoFar = async (): Promise<number> => {
    const res = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`);
    const lines = res.json.lines as Array<{ workerId: string; message: string }>;
    return new Set(lines.filter((l) => l.message.includes('boom: broken image')).map((l) => l.workerId)).size;
  };
  // Nothing had failed yet: three at once. Three failures: the next start waits 4 s, and then one probe goes.
  await waitUntil(
    async () => (await startsSoFar()) >= 3,
    15_000,
    () => 'the first three starts',
  );
  await waitUntil(
    async () => (await startsSoFar()) >= 4,
    15_000,
    () => 'the probe after the backoff',
  );
  // The probe failed too: 8 s until the next one. Before the fix, each window started three again.
  await sleep(2000);
  expect(await startsSoFar()).toBe(4);
});

it('a crash loop reads as unhealthy workers in /health for as long as it lasts, never as throttled ones', async () => {
  // A test clock: the backoff windows (4, 8, 16, 32 s) and the 30 s a crashed worker's record is kept pass at once.
  const clock = new TestClock();
  const f = await startFleet({}, { clock });
  try {
    const ep = await f.endpoint(
      { workersMax: 1, idleTimeout: 1 },
      { dockerStartCmd: ['node', '-e', 'console.error("boom: crash loop"); process.exit(1)'] },
    );
    await f.run(ep, { n: 1 });
    const starts = async (): Promise<number> => {
      const res = await f.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`);
      const lines = res.json.lines as Array<{ workerId: string; message: string }>;
      return new Set(lines.filter((l) => l.message.includes('boom: crash loop')).map((l) => l.workerId)).size;
    };
    // Between two starts: the crashed worker gone, the next start waiting out the backoff.
    const betweenStarts = async (): Promise<any> => {
      let h: any;
      await waitUntil(
        async () => (h = await f.health(ep)).scaling?.reason === 'crash-loop' && h.workers.initializing === 0,
        10_000,
        () => JSON.stringify(h),
      );
      return h;
    };
    await waitUntil(
      async () => (await starts()) >= 3,
      15_000,
      () => 'three failed starts',
    );
    for (const [n, backoffMs] of [
      [4, 4000],
      [5, 8000],
      [6, 16_000],
    ] as const) {
      const h = await betweenStarts();
      expect(h.workers).toMatchObject({ throttled: 0, idle: 0, running: 0 });
      expect(h.workers.unhealthy).toBeGreaterThanOrEqual(1);
      clock.advance(backoffMs);
      await waitUntil(
        async () => (await starts()) >= n,
        10_000,
        () => `start ${n}`,
      );
    }
    // Six failures: the next start waits 32 s, longer than a crashed worker's record is kept (30 s). Past that, the
    // loop still reads as the one worker wanted, unhealthy.
    await betweenStarts();
    clock.advance(31_000);
    await waitUntil(
      async () => (await f.workers(ep)).length === 0,
      5_000,
      () => 'the crashed records pruned',
    );
    const h = await f.health(ep);
    expect(h.scaling.reason).toBe('crash-loop');
    expect(h.workers).toMatchObject({ unhealthy: 1, throttled: 0, initializing: 0, idle: 0, running: 0 });
    // The metrics count them as /health does.
    const metrics = (await f.api('GET', '/metrics')).text;
    expect(sample(metrics, 'wharf_workers', { endpoint: ep, state: 'unhealthy' })).toBe(1);
    expect(sample(metrics, 'wharf_workers', { endpoint: ep, state: 'throttled' })).toBe(0);
    expect(await starts()).toBe(6);
  } finally {
    await closeFleet(f);
  }
}, 60_000);

it('refuses an endpoint whose template image is not file://… with the process executor', async () => {
  await expect(
    createEndpoint(t, { computeType: 'CPU', workersMax: 1 }, { imageName: 'runpod/worker:latest' }),
  ).rejects.toThrow(/400/);
  const tpl = await t.api('POST', '/v1/templates', { name: 'docker-image', imageName: 'runpod/worker:latest' });
  expect(tpl.status).toBe(200);
  const res = await t.api('POST', '/v1/endpoints', { name: 'x', templateId: tpl.json.id, computeType: 'CPU' });
  expect(res.status).toBe(400);
  expect(res.json.code).toBe('IMAGE_NOT_SUPPORTED');
  expect(res.json.message).toContain('file://');
  expect(res.json.details).toEqual([expect.objectContaining({ field: 'imageName' })]);

  // Nor can a running endpoint be switched to such an image, through its template or another one.
  const ep = await t.endpoint({ workersMax: 1 });
  const templateId = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId as string;
  const patchTpl = await t.api('PATCH', `/v1/templates/${templateId}`, { imageName: 'runpod/worker:latest' });
  expect([patchTpl.status, patchTpl.json.code]).toEqual([400, 'IMAGE_NOT_SUPPORTED']);
  const patchEp = await t.api('PATCH', `/v1/endpoints/${ep}`, { templateId: tpl.json.id });
  expect([patchEp.status, patchEp.json.code]).toEqual([400, 'IMAGE_NOT_SUPPORTED']);
  const id = await t.run(ep, { still: 'works' });
  expect((await t.waitJob(ep, id)).status).toBe('COMPLETED');
});

it("runs only admin users' endpoints by default: another user's workers would run as the server's OS user", async () => {
  const carol = await t.server.accounts.createUser(`carol-${Date.now()}`);
  const { key } = await t.server.accounts.createKey(carol.id, 'carol', 'all');
  const asCarol = (method: string, path: string, body?: unknown) => t.api(method, path, body, { key });
  const tpl = await asCarol('POST', '/v1/templates', { name: 'mine', ...ECHO_TEMPLATE });
  expect(tpl.status).toBe(200);
  const res = await asCarol('POST', '/v1/endpoints', { name: 'x', templateId: tpl.json.id, computeType: 'CPU' });
  expect([res.status, res.json.code]).toEqual([400, 'IMAGE_NOT_SUPPORTED']);
  expect(res.json.message).toContain('WHARF_PROCESS_EXECUTOR_USERS=all');

  // Trusted with processExecutorUsers "all": the same endpoint runs.
  const trusting = await startFleet({ processExecutorUsers: 'all' });
  try {
    const dave = await trusting.server.accounts.createUser('dave');
    const daveKey = (await trusting.server.accounts.createKey(dave.id, 'dave', 'all')).key;
    const ep = await createEndpoint(
      { api: (m: string, p: string, b?: unknown) => trusting.api(m, p, b, { key: daveKey }) },
      { computeType: 'CPU', workersMax: 1, idleTimeout: 1 },
      ECHO_TEMPLATE,
    );
    const run = await trusting.api('POST', `/v2/${ep}/runsync`, { input: { dave: true } }, { key: daveKey });
    expect(run.json).toMatchObject({ status: 'COMPLETED', output: { echo: { dave: true } } });
  } finally {
    await closeFleet(trusting);
  }
});

it('gives the GPUs back when a start fails on a store error, so the next start gets them', async () => {
  const gpuFleet = await startFleet({ gpus: 'NVIDIA A40:1' });
  try {
    // The store fails once as the supervisor records the worker it is about to start (a full disk, a lost database).
    const store = gpuFleet.server.store;
    const upsert = store.upsertWorker.bind(store);
    let failures = 1;
    store.upsertWorker = async (w) => {
      if (failures-- > 0) throw new Error('SQLITE_FULL: database or disk is full');
      return upsert(w);
    };
    const ep = await gpuFleet.endpoint({ computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1 });
    const id = await gpuFleet.run(ep, { n: 1 });
    expect(await gpuFleet.waitJob(ep, id, 25_000)).toMatchObject({ status: 'COMPLETED' });
    expect(failures).toBeLessThan(0); // the failure did happen
  } finally {
    await closeFleet(gpuFleet);
  }
});
