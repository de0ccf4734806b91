// The fleet scaling real worker processes (process executor, examples/echo-ts) against a real server on loopback:
// scale from zero on a burst within workersMax, back to zero after idleTimeout, workersMin kept warm, worker states.

import { afterEach, beforeEach, expect, it } from 'vitest';

import { closeFleet, isAlive, sleep, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';

let t: Fleet;

beforeEach(async () => {
  t = await startFleet();
});
afterEach(async () => {
  await closeFleet(t);
});

it('scales from zero on a burst, never above workersMax, and back to zero after idleTimeout', async () => {
  const ep = await t.endpoint({ workersMax: 3, scalerType: 'REQUEST_COUNT', scalerValue: 1, idleTimeout: 1 });
  expect((await t.health(ep)).workers).toMatchObject({ idle: 0, running: 0, initializing: 0 });
  expect(t.pids()).toEqual([]);

  const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => t.run(ep, { sleepMs: 600, n: i })));
  let maxLive = 0;
  let maxPods = 0;
  let maxPids = 0;
  const seenPids = new Set<number>();
  const reasons = new Set<string>();
  for (;;) {
    const [h, workers] = await Promise.all([t.health(ep), t.workers(ep)]);
    maxLive = Math.max(maxLive, h.workers.idle + h.workers.running + h.workers.initializing);
    maxPods = Math.max(maxPods, workers.filter((w) => w.desiredStatus === 'RUNNING').length);
    const pids = t.pids();
    for (const p of pids) seenPids.add(p);
    maxPids = Math.max(maxPids, pids.length);
    if (h.scaling) reasons.add(h.scaling.reason);
    if (h.jobs.completed === ids.length) break;
    await sleep(25);
  }
  // Three workers, never more at any moment: by /health, by the REST pods and by the processes themselves.
  expect(maxLive).toBe(3);
  expect(maxPods).toBe(3);
  expect(maxPids).toBe(3);
  expect(seenPids.size).toBe(3);
  expect(reasons).toContain('max-workers-reached');
  expect((await t.health(ep)).scaling).toBeUndefined();
  for (const id of ids) {
    const s = await t.status(ep, id);
    expect(s.status).toBe('COMPLETED');
    expect(s.output.echo.sleepMs).toBe(600);
  }

  // Back to zero: every worker stops after idleTimeout (1 s), its process is gone.
  await waitUntil(
    async () => t.pids().length === 0,
    10_000,
    () => `pids ${t.pids().join(',')}`,
  );
  await waitUntil(async () => {
    const h = await t.health(ep);
    return h.workers.idle + h.workers.running + h.workers.initializing === 0;
  }, 5_000);
  expect(await t.workers(ep)).toEqual([]);
  for (const p of seenPids) expect(isAlive(p)).toBe(false);
});

it('keeps workersMin workers warm without jobs, also past idleTimeout', async () => {
  const ep = await t.endpoint({ workersMin: 1, workersMax: 2, idleTimeout: 1 });
  await waitUntil(async () => (await t.health(ep)).workers.idle === 1, 15_000);
  const [pid] = t.pids();
  expect(t.pids()).toHaveLength(1);
  await sleep(2500);
  const h = await t.health(ep);
  expect(h.workers).toMatchObject({ idle: 1, running: 0, initializing: 0 });
  expect(t.pids()).toEqual([pid]);
  expect(isAlive(pid!)).toBe(true);

  // It takes a job at once, and stays afterwards.
  const id = await t.run(ep, { hello: 1 });
  expect((await t.waitJob(ep, id)).status).toBe('COMPLETED');
  await sleep(1500);
  expect(t.pids()).toEqual([pid]);

  // Deleting the endpoint stops its workers.
  expect((await t.api('DELETE', `/v1/endpoints/${ep}`)).status).toBe(204);
  // (The pid file goes once the exit is fully handled, a moment after the process is gone.)
  await waitUntil(() => !isAlive(pid!) && t.pids().length === 0, 10_000);
  expect(await t.api('GET', `/v1/endpoints/${ep}`)).toMatchObject({ status: 404 });
});

it('shows worker states initializing → idle → running → idle in /health and includeWorkers', async () => {
  // workersMin 1: the worker starts without a job, so it is idle before it runs one.
  const ep = await t.endpoint({ workersMin: 1, workersMax: 1, idleTimeout: 5 });
  const healthStates: string[] = [];
  const podStates: string[] = [];
  const push = (list: string[], state: string): void => {
    if (list[list.length - 1] !== state) list.push(state);
  };
  const record = async (): Promise<void> => {
    const [h, workers] = await Promise.all([t.health(ep), t.workers(ep)]);
    const live = (['initializing', 'idle', 'running'] as const).filter((k) => h.workers[k] > 0);
    expect(live.length).toBeLessThanOrEqual(1);
    if (live[0]) push(healthStates, live[0]);
    expect(workers.length).toBeLessThanOrEqual(1);
    if (workers[0]) push(podStates, String(workers[0].workerState));
  };
  await waitUntil(async () => {
    await record();
    return healthStates.includes('idle') && podStates.includes('idle');
  });
  const id = await t.run(ep, { sleepMs: 1000 });
  while ((await t.status(ep, id)).status !== 'COMPLETED') {
    await record();
    await sleep(20);
  }
  await waitUntil(async () => {
    await record();
    return healthStates[healthStates.length - 1] === 'idle' && podStates[podStates.length - 1] === 'idle';
  });
  expect(healthStates).toEqual(['initializing', 'idle', 'running', 'idle']);
  expect(podStates).toEqual(['initializing', 'idle', 'running', 'idle']);
  expect((await t.status(ep, id)).workerId).toBe((await t.workers(ep))[0].id);
});

it('a worker taking a short job every second is not stopped as idle between passes that never saw it busy', async () => {
  // Passes 1.5 s apart, jobs of a few ms: a pass almost never sees the job running.
  const sparse = await startFleet({ scaleIntervalMs: 1500 });
  try {
    const ep = await sparse.endpoint({ workersMax: 1, idleTimeout: 3 });
    const workers = new Set<string>();
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const res = await sparse.api('POST', `/v2/${ep}/runsync`, { input: { n: 1 } });
      expect(res.json.status).toBe('COMPLETED');
      workers.add(res.json.workerId as string);
      await sleep(1000);
    }
    // One worker served them all: sampled as idle, it was stopped and cold-started again every idleTimeout.
    expect([...workers]).toHaveLength(1);
  } finally {
    await closeFleet(sparse);
  }
}, 60_000);

it('lowering workersMax under a steady queue retires the busy workers beyond it; workersMax 0 stops the last', async () => {
  const ep = await t.endpoint({ workersMax: 2, scalerType: 'REQUEST_COUNT', scalerValue: 1, idleTimeout: 60 });
  // About 10 s of work for two workers: the queue never empties while the test looks.
  await Promise.all(Array.from({ length: 40 }, (_, i) => t.run(ep, { sleepMs: 500, n: i })));
  await waitUntil(async () => (await t.health(ep)).workers.running === 2, 15_000);

  // Each worker is busy at every pass, and takes its next job the moment it posts a result: none is ever idle to stop.
  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 1 })).status).toBe(200);
  await waitUntil(
    () => t.pids().length === 1,
    5_000,
    () => `pids ${t.pids().join(',')}`,
  );
  // The stopped worker's record follows its exit (the supervisor hears of it a moment after the pid file goes).
  const live = (h: any): number => h.workers.running + h.workers.idle + h.workers.initializing;
  let h1: any;
  await waitUntil(
    async () => live((h1 = await t.health(ep))) <= 1,
    5_000,
    () => JSON.stringify(h1),
  );
  expect(h1.jobs.inQueue).toBeGreaterThan(0);

  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 0 })).status).toBe(200);
  await waitUntil(
    () => t.pids().length === 0,
    5_000,
    () => `pids ${t.pids().join(',')}`,
  );
  let h0: any;
  await waitUntil(
    async () => live((h0 = await t.health(ep))) === 0 && h0.jobs.inProgress === 0,
    5_000,
    () => JSON.stringify(h0),
  );
  expect(h0.jobs.inQueue).toBeGreaterThan(0);
  // The retired workers finished the jobs they held: none failed or went back to the queue for the stops.
  expect(h0.jobs).toMatchObject({ inProgress: 0, failed: 0, retried: 0 });
  expect(h0.scaling?.reason).toBe('max-workers-zero');
}, 60_000);

it('workersMax raised again while a worker retired above it finishes its job takes that worker back: no stop, no cold start', async () => {
  const ep = await t.endpoint({ workersMax: 2, scalerType: 'REQUEST_COUNT', scalerValue: 1, idleTimeout: 60 });
  // Jobs of 3 s: a retired worker finishes its job for seconds, and the queue outlasts the test for two workers.
  const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => t.run(ep, { sleepMs: 3000, n: i })));
  await waitUntil(async () => (await t.health(ep)).workers.running === 2, 15_000);
  const pids = t.pids().sort();
  expect(pids).toHaveLength(2);

  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 1 })).status).toBe(200);
  let workers: any[] = [];
  await waitUntil(
    async () => (workers = await t.workers(ep)).some((w) => w.desiredStatus === 'EXITED'),
    5_000,
    () => JSON.stringify(workers),
  );
  const retired = workers.find((w) => w.desiredStatus === 'EXITED').id as string;
  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 2 })).status).toBe(200);

  // Past the end of the retired worker's job: it serves again, and the same two processes run all along.
  const until = Date.now() + 6_000;
  while (Date.now() < until) {
    expect(t.pids().sort()).toEqual(pids);
    await sleep(50);
  }
  workers = await t.workers(ep);
  expect(workers.find((w) => w.id === retired)?.desiredStatus).toBe('RUNNING');
  const served: string[] = [];
  for (const id of ids) {
    const s = await t.waitJob(ep, id, 30_000);
    expect(s.status).toBe('COMPLETED');
    served.push(s.workerId as string);
  }
  // It took jobs again after the one it was finishing when retired.
  expect(served.filter((w) => w === retired).length).toBeGreaterThanOrEqual(2);
  expect(new Set(served).size).toBe(2);
  expect((await t.health(ep)).jobs).toMatchObject({ failed: 0, retried: 0 });
}, 60_000);

it('QUEUE_DELAY adds a worker once a normal job has waited scalerValue seconds; a lowPriority job never does', async () => {
  const ep = await t.endpoint({ workersMax: 3, scalerType: 'QUEUE_DELAY', scalerValue: 2, idleTimeout: 60 });
  const busy = await t.run(ep, { sleepMs: 9000 });
  await t.untilRunning(ep, busy);
  expect(t.pids()).toHaveLength(1);

  // A lowPriority job waits behind the busy worker, past scalerValue: no worker is added for it.
  const low = await t.api('POST', `/v2/${ep}/run`, { input: { n: 'low' }, policy: { lowPriority: true } });
  expect(low.status).toBe(200);
  await sleep(3000);
  expect(t.pids()).toHaveLength(1);
  expect((await t.status(ep, low.json.id)).status).toBe('IN_QUEUE');
  // Out of the way: the queue is FIFO whatever the priority, so a new worker would take this older job first, and a
  // pass in the moment before it takes the normal one would see that job waiting with no worker free and rightly
  // start another (seen under a loaded CI run). The normal job's own scaling is what comes next.
  expect((await t.api('POST', `/v2/${ep}/cancel/${low.json.id}`)).status).toBe(200);

  // A normal job: nothing before scalerValue, one worker after it (and only one).
  const since = Date.now();
  const normal = await t.run(ep, { n: 'normal' });
  await sleep(1200);
  expect(t.pids()).toHaveLength(1);
  await waitUntil(
    () => t.pids().length === 2,
    8_000,
    () => `pids ${t.pids().join(',')}`,
  );
  expect(Date.now() - since).toBeGreaterThanOrEqual(2000);
  const done = await t.waitJob(ep, normal);
  expect(done.status).toBe('COMPLETED');
  // The added worker, idle now, serves a lowPriority job as well: dispatched like the others, no start for it.
  const lowAgain = await t.api('POST', `/v2/${ep}/run`, { input: { n: 'low' }, policy: { lowPriority: true } });
  expect(lowAgain.status).toBe(200);
  expect((await t.waitJob(ep, lowAgain.json.id)).status).toBe('COMPLETED');
  expect(t.pids()).toHaveLength(2);
}, 60_000);

it('idleTimeout lowered on a live endpoint stops its idle worker without waiting out the old timeout', async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 600 });
  expect((await t.waitJob(ep, await t.run(ep, { n: 1 }))).status).toBe('COMPLETED');
  await sleep(1500);
  expect(t.pids()).toHaveLength(1);
  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { idleTimeout: 1 })).status).toBe(200);
  await waitUntil(
    () => t.pids().length === 0,
    5_000,
    () => `pids ${t.pids().join(',')}`,
  );
  // The worker's record follows its exit (the supervisor hears of it a moment after the pid file goes).
  let workers: any;
  await waitUntil(
    async () => (workers = (await t.health(ep)).workers).idle === 0,
    5_000,
    () => JSON.stringify(workers),
  );
  expect(workers).toMatchObject({ idle: 0, running: 0, initializing: 0 });
});

it('deleting an endpoint stops its workers, a busy one too, and /health of the id is gone', async () => {
  const ep = await t.endpoint({ workersMax: 2, scalerType: 'REQUEST_COUNT', scalerValue: 1, idleTimeout: 60 });
  const busy = await t.run(ep, { sleepMs: 30_000 });
  await t.untilRunning(ep, busy);
  const idle = await t.run(ep, { n: 1 });
  expect((await t.waitJob(ep, idle)).status).toBe('COMPLETED');
  const pids = t.pids();
  expect(pids).toHaveLength(2);

  expect((await t.api('DELETE', `/v1/endpoints/${ep}`)).status).toBe(204);
  // Not left running its job: SIGTERM, then SIGKILL after the grace (10 s here; the SDK's handler runs on).
  await waitUntil(
    () => pids.every((p) => !isAlive(p)) && t.pids().length === 0,
    15_000,
    () => `pids ${t.pids().join(',')}`,
  );
  expect((await t.api('GET', `/v2/${ep}/health`)).status).toBe(404);
}, 30_000);

it('a stream of jobs to a cold endpoint that cannot start a worker runs one autoscaler pass, not one per job', async () => {
  // Passes a minute apart: any other pass here was started by a job's queue wake-up (Supervisor.poke).
  const slow = await startFleet({ scaleIntervalMs: 60_000 });
  try {
    const ep = await slow.endpoint({ workersMax: 0 });
    await sleep(200); // the pass the endpoint's creation asked for
    const store = slow.server.store;
    const activeEndpointIds = store.activeEndpointIds.bind(store);
    let passes = 0;
    store.activeEndpointIds = () => {
      passes++; // once at the start of every pass
      return activeEndpointIds();
    };
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(await slow.run(ep, { n: i }));
    await sleep(200);
    // The first job's pass found workersMax 0: each later job changed nothing a pass could act on. Each one ran a
    // full pass (every active endpoint, every endpoint's row), back to back for as long as the jobs came.
    expect(passes).toBeLessThanOrEqual(2);
    expect((await slow.health(ep)).jobs.inQueue).toBe(100);

    // What does change it still starts a worker at once: a raised workersMax (an endpoint change pokes by itself).
    expect((await slow.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 1 })).status).toBe(200);
    expect((await slow.waitJob(ep, ids[99]!, 15_000)).status).toBe('COMPLETED');
  } finally {
    await closeFleet(slow);
  }
}, 30_000);

it('a cold endpoint whose queued jobs went while it could not start a worker starts one at once for its next job', async () => {
  // Passes a minute apart, one GPU: the holder's worker has it when the other endpoint's job comes.
  const slow = await startFleet({ scaleIntervalMs: 60_000, gpus: 'NVIDIA A40:1' });
  try {
    const gpu = { computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1, workersMax: 1, idleTimeout: 60 };
    const holder = await slow.endpoint(gpu);
    const waiting = await slow.endpoint(gpu);
    expect((await slow.waitJob(holder, await slow.run(holder, { n: 1 }))).status).toBe('COMPLETED');
    const first = await slow.run(waiting, { n: 2 });
    await slow.untilScaling(waiting, 'no-gpu-capacity');
    expect((await slow.api('POST', `/v2/${waiting}/cancel/${first}`)).json.status).toBe('CANCELLED');
    // The GPU is freed (the holder is deleted: its worker stops, and passes follow), with nothing queued here.
    expect((await slow.api('DELETE', `/v1/endpoints/${holder}`)).status).toBe(204);
    await waitUntil(async () => slow.pids().length === 0, 15_000);
    await sleep(300);
    // Its next job starts a worker at once, not at the next pass a minute later.
    const second = await slow.run(waiting, { n: 3 });
    expect((await slow.waitJob(waiting, second, 15_000)).status).toBe('COMPLETED');
  } finally {
    await closeFleet(slow);
  }
}, 45_000);
