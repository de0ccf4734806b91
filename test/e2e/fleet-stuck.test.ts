// Workers that stop answering, and stops that take their time, under the real supervisor: a worker process that
// hangs after it became ready (here SIGSTOP) is stopped once its lease is gone and replaced, so its endpoint does not
// stay stuck behind it; and a worker taking its grace to stop holds up no other endpoint's scaling.

import { afterEach, beforeEach, expect, it } from 'vitest';

import { closeFleet, isAlive, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';

let t: Fleet;

beforeEach(async () => {
  // The hung worker ignores SIGTERM (stopped): its stop ends with SIGKILL after this grace.
  t = await startFleet({ shutdownGraceMs: 8000 });
});
afterEach(async () => {
  await closeFleet(t);
});

it('a worker that hangs after it became ready is stopped when its lease runs out, and replaced', async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 30 });
  const id = await t.run(ep, { sleepMs: 60_000 });
  await t.untilRunning(ep, id, 20_000);
  const [hung] = t.pids();
  expect(hung).toBeDefined();
  const hungWorkerId = (await t.status(ep, id)).workerId as string;
  process.kill(hung!, 'SIGSTOP');
  try {
    // Lease (3 s) → the job goes back to the queue; the supervisor stops the silent process (SIGKILL after the 8 s
    // grace) and starts another, which runs the job again.
    await waitUntil(
      () => Promise.resolve(!isAlive(hung!)),
      25_000,
      () => `hung worker ${hung} still alive`,
    );
    await waitUntil(
      async () => {
        const s = await t.status(ep, id);
        return s.status === 'IN_PROGRESS' && s.workerId !== hungWorkerId;
      },
      25_000,
      () => 'the job to run on a replacement worker',
    );
    expect((await t.status(ep, id)).retries).toBe(1);
    expect(t.pids()).not.toContain(hung);
    expect(await t.api('POST', `/v2/${ep}/cancel/${id}`)).toMatchObject({ status: 200 });
  } finally {
    if (isAlive(hung!)) process.kill(hung!, 'SIGKILL');
  }
}, 90_000);

it("a worker finishing its job within its stop's grace holds up no other endpoint's scale from zero", async () => {
  const busy = await t.endpoint({ workersMax: 1, idleTimeout: 30 });
  const cold = await t.endpoint({ workersMax: 1, idleTimeout: 30 });
  // The job runs 7 s whatever happens: the stop waits for it (the grace is 8 s).
  const id = await t.run(busy, { holdMs: 7000 });
  await t.untilRunning(busy, id, 20_000);
  // Deleting the endpoint stops its worker (SIGTERM: the SDK finishes the running job first).
  expect((await t.api('DELETE', `/v1/endpoints/${busy}`)).status).toBe(204);
  const started = Date.now();
  const res = await t.api('POST', `/v2/${cold}/runsync`, { input: { hello: 1 } });
  const took = Date.now() - started;
  expect(res.json.status).toBe('COMPLETED');
  // A cold start takes well under a second here; waiting for the other stop would take most of the 7 s job.
  expect(took).toBeLessThan(4000);
  await waitUntil(
    () => Promise.resolve(t.pids().length === 1),
    15_000,
    () => 'the deleted endpoint worker to go',
  );
}, 90_000);

it('a started worker counts as up from its first request, not from the supervisor’s next pass', async () => {
  // Passes 3 s apart: before, /health counted the worker as initializing until the next one.
  const slow = await startFleet({ scaleIntervalMs: 3000 });
  try {
    const ep = await slow.endpoint({ workersMax: 1, idleTimeout: 30 });
    const res = await slow.api('POST', `/v2/${ep}/runsync`, { input: { n: 1 } });
    expect(res.json.status).toBe('COMPLETED');
    const h = await slow.health(ep);
    expect(h.workers).toMatchObject({ initializing: 0, idle: 1 });
  } finally {
    await closeFleet(slow);
  }
}, 60_000);

it('a slow executor start (an image pull) holds up no other endpoint, and its init timeout counts from its end', async () => {
  // The init timeout is shorter than the pull: counted from before the pull, the worker would be stopped at once.
  const pulling = await startFleet({ workerInitTimeoutMs: 3000 });
  try {
    const executor = pulling.server.executor!;
    const slowEp = await pulling.endpoint({ workersMax: 1, idleTimeout: 30 });
    const quickEp = await pulling.endpoint({ workersMax: 1, idleTimeout: 30 });
    const start = executor.start.bind(executor);
    let pulled = false;
    executor.start = async (spec, hooks) => {
      if (spec.endpointId === slowEp) {
        await new Promise((r) => setTimeout(r, 5000));
        pulled = true;
      }
      return start(spec, hooks);
    };
    const slowJob = await pulling.run(slowEp, { n: 1 });
    await waitUntil(
      async () => (await pulling.health(slowEp)).workers.initializing === 1,
      10_000,
      () => 'the pull to begin',
    );
    // Another endpoint scales from zero and finishes its job while the pull goes on.
    const quick = await pulling.api('POST', `/v2/${quickEp}/runsync`, { input: { n: 2 } });
    expect(quick.json.status).toBe('COMPLETED');
    expect(pulled).toBe(false);
    // The pulled worker is not stopped as one that never became ready: it runs the job.
    expect(await pulling.waitJob(slowEp, slowJob, 30_000)).toMatchObject({ status: 'COMPLETED' });
    expect(pulled).toBe(true);
  } finally {
    await closeFleet(pulling);
  }
}, 60_000);

it('a worker whose endpoint is deleted, or whose server stops, during its start is stopped once it exists', async () => {
  const pulling = await startFleet();
  try {
    const executor = pulling.server.executor!;
    const start = executor.start.bind(executor);
    let pulls = 0;
    executor.start = async (spec, hooks) => {
      await new Promise((r) => setTimeout(r, 2000));
      pulls++;
      return start(spec, hooks);
    };
    const deleted = await pulling.endpoint({ workersMax: 1, idleTimeout: 30 });
    await pulling.run(deleted, { n: 1 });
    await waitUntil(
      async () => (await pulling.health(deleted)).workers.initializing === 1,
      10_000,
      () => 'the pull to begin',
    );
    expect((await pulling.api('DELETE', `/v1/endpoints/${deleted}`)).status).toBe(204);
    await waitUntil(
      async () => pulls === 1 && pulling.pids().length === 0,
      15_000,
      () => 'the started worker to be stopped',
    );

    // The server stops during a start: its shutdown stops the worker too (closeFleet checks that none is left).
    const other = await pulling.endpoint({ workersMax: 1, idleTimeout: 30 });
    await pulling.run(other, { n: 2 });
    await waitUntil(
      async () => (await pulling.health(other)).workers.initializing === 1,
      10_000,
      () => 'the next pull',
    );
  } finally {
    await closeFleet(pulling);
  }
}, 60_000);
