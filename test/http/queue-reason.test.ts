// "Why is my job queued?": /status of an IN_QUEUE job carries queueReason from the supervisor's view of its endpoint
// (docs/observability.md). Real worker processes through the process executor, fast fleet timers. Placement limits
// (data centers, CUDA versions) changed while workers run also retire them, on both stores.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { closeFleet, isAlive, sleep, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { ROOT } from '../helpers/processes.ts';
import { createEndpoint, startTestServer } from '../helpers/server.ts';

let fleet: Fleet;
const pgDown = await pgUnavailable('placement limits changed while workers run, on PostgreSQL');

beforeAll(async () => {
  fleet = await startFleet();
});
afterAll(async () => {
  if (fleet) await closeFleet(fleet);
  await dropSchemas();
});

async function submit(ep: string, input: unknown, policy?: unknown): Promise<string> {
  const res = await fleet.api('POST', `/v2/${ep}/run`, policy ? { input, policy } : { input });
  expect(res.status, res.text).toBe(200);
  return res.json.id as string;
}

/** Poll /status until the job's queueReason has `reason`; returns that status body. */
function reasonOf(ep: string, id: string, reason: string, ms = 10_000): Promise<any> {
  return reasonIn(fleet, ep, id, reason, ms);
}

describe('queueReason on /status', () => {
  it('max-workers-zero: no worker will ever start', async () => {
    const ep = await fleet.endpoint({ workersMax: 0 });
    const id = await submit(ep, {});
    const body = await reasonOf(ep, id, 'max-workers-zero');
    expect(body.status).toBe('IN_QUEUE');
    expect(body.queueReason.message).toMatch(/workersMax is 0/);
    expect((await fleet.health(ep)).scaling.reason).toBe('max-workers-zero');
  });

  it('low-priority-waiting: a lowPriority job alone does not start a worker; a normal job does, and both run', async () => {
    const ep = await fleet.endpoint();
    const low = await submit(ep, { n: 'low' }, { lowPriority: true });
    const body = await reasonOf(ep, low, 'low-priority-waiting');
    expect(body.queueReason.message).toMatch(/lowPriority/);
    expect(fleet.pids()).toEqual([]);
    const normal = await submit(ep, { n: 'normal' });
    expect((await fleet.waitJob(ep, normal)).status).toBe('COMPLETED');
    expect((await fleet.waitJob(ep, low)).status).toBe('COMPLETED');
  });

  it('scaling-up: a worker was started but has not called in yet', async () => {
    const ep = await fleet.endpoint({}, { dockerStartCmd: ['node', '-e', 'setTimeout(() => {}, 30000)'] });
    const id = await submit(ep, {});
    const body = await reasonOf(ep, id, 'scaling-up');
    expect(body.queueReason.message).toMatch(/starting/);
    expect((await fleet.api('POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('CANCELLED');
    await fleet.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 0 });
  });

  it('crash-loop: workers that die on start report the last error', async () => {
    const ep = await fleet.endpoint(
      {},
      { dockerStartCmd: ['node', '-e', 'console.error("cannot import model_xyz"); process.exit(3)'] },
    );
    const id = await submit(ep, {});
    const body = await reasonOf(ep, id, 'crash-loop', 15_000);
    expect(body.queueReason.message).toMatch(/cannot import model_xyz|exited with code 3/);
    await fleet.api('PATCH', `/v1/endpoints/${ep}`, { workersMax: 0 });
  });

  it('never-placeable: a GPU endpoint on a machine without GPUs', async () => {
    const ep = await fleet.endpoint({ computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1 });
    const id = await submit(ep, {});
    const body = await reasonOf(ep, id, 'never-placeable');
    expect(body.queueReason.message).toBeTruthy();
  });

  it('max-workers-reached while the only worker is busy; no queueReason once the job runs or finishes', async () => {
    const ep = await fleet.endpoint({ workersMax: 1 });
    const busy = await submit(ep, { sleepMs: 4000 });
    await fleet.untilRunning(ep, busy, 10_000);
    const waiting = await submit(ep, { n: 2 });
    const body = await reasonOf(ep, waiting, 'max-workers-reached');
    expect(body.queueReason.message).toMatch(/workersMax/);
    const running = await fleet.status(ep, busy);
    expect(running.queueReason).toBeUndefined();
    expect((await fleet.waitJob(ep, waiting)).status).toBe('COMPLETED');
    expect((await fleet.status(ep, waiting)).queueReason).toBeUndefined();
  });
});

describe('CUDA limits on a node whose driver supports CUDA 12.4', () => {
  it('an endpoint that excludes it is never placeable, with the reason; allowing it starts the worker', async () => {
    const gpuFleet = await startFleet({ gpus: 'NVIDIA A40:1', cudaVersion: '12.4' });
    try {
      const gpu = { computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1 };
      const ep = await gpuFleet.endpoint({ ...gpu, minCudaVersion: '12.8' });
      const res = await gpuFleet.api('POST', `/v2/${ep}/run`, { input: { n: 1 } });
      const id = res.json.id as string;
      let last: any;
      await waitUntil(
        async () => (last = await gpuFleet.status(ep, id)).queueReason?.reason === 'never-placeable',
        10_000,
        () => `never-placeable; last ${JSON.stringify(last)}`,
      );
      expect(last.queueReason.message).toBe(
        "this node's GPU driver supports CUDA 12.4; the endpoint needs CUDA 12.8 or newer (minCudaVersion)",
      );
      expect(gpuFleet.pids()).toEqual([]);

      const allowed = await gpuFleet.api('PATCH', `/v1/endpoints/${ep}`, { allowedCudaVersions: ['12.4', '12.5'] });
      expect(allowed.status, allowed.text).toBe(200);
      // minCudaVersion 12.8 still excludes it.
      await new Promise((r) => setTimeout(r, 300));
      expect(gpuFleet.pids()).toEqual([]);
      const fixed = await gpuFleet.api('PATCH', `/v1/endpoints/${ep}`, { minCudaVersion: '12.4' });
      expect(fixed.status, fixed.text).toBe(200);
      expect((await gpuFleet.waitJob(ep, id, 15_000)).status).toBe('COMPLETED');
    } finally {
      await closeFleet(gpuFleet);
    }
  });
});

/** A node with one A40 whose driver supports CUDA 12.4 (declared: `--gpus 'NVIDIA A40:1' --cuda-version 12.4`). */
const GPU_NODE = { gpus: 'NVIDIA A40:1', cudaVersion: '12.4' };
const A40 = { computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1 };

/** The final results the server accepted, by job (a spy around the real gateway: each still goes through). */
function acceptedResults(t: Fleet): Array<{ workerId: string; jobId: string }> {
  const accepted: Array<{ workerId: string; jobId: string }> = [];
  const gateway = t.server.workers;
  const done = gateway.done.bind(gateway);
  gateway.done = async (worker, jobId, raw) => {
    await done(worker, jobId, raw);
    if (!raw.includes('"IN_PROGRESS"')) accepted.push({ workerId: worker.id, jobId });
  };
  return accepted;
}

describe.each(pgDown === null ? ['sqlite', 'postgres'] : ['sqlite'])(
  'placement limits changed while a worker runs (%s store)',
  (store) => {
    const startNode = (overrides: Record<string, unknown>): Promise<Fleet> =>
      startFleet({
        ...overrides,
        ...(store === 'postgres'
          ? { store: schemaUrl(newSchema()), secretKey: randomBytes(32).toString('base64') }
          : {}),
      });

    it.each([
      {
        what: "allowedCudaVersions without the driver's CUDA 12.4",
        node: GPU_NODE,
        fields: { ...A40, allowedCudaVersions: ['12.4'] },
        change: { allowedCudaVersions: ['12.8'] },
        message: /supports CUDA 12\.4; the endpoint's allowedCudaVersions are 12\.8/,
      },
      {
        what: "a GPU endpoint's dataCenterIds without this node's",
        node: GPU_NODE,
        fields: { ...A40, dataCenterIds: ['EU-RO-1'] },
        change: { dataCenterIds: ['US-TX-3'] },
        message: /this node is in (data center )?'?EU-RO-1'?.*dataCenterIds/,
      },
      {
        what: "a CPU endpoint's dataCenterIds without this node's",
        node: {},
        fields: { dataCenterIds: ['EU-RO-1'] },
        change: { dataCenterIds: ['US-TX-3'] },
        message: /this node is in (data center )?'?EU-RO-1'?.*dataCenterIds/,
      },
    ])('$what: the worker finishes its job once, then stops; the endpoint says why', async (c) => {
      const t = await startNode(c.node);
      try {
        const accepted = acceptedResults(t);
        const ep = await t.endpoint({ ...c.fields, idleTimeout: 60 });
        const id = await t.run(ep, { sleepMs: 3000 });
        const worker = (await t.untilRunning(ep, id)).workerId as string;
        const [pid] = t.pids();

        const patched = await t.api('PATCH', `/v1/endpoints/${ep}`, c.change);
        expect(patched.status, patched.text).toBe(200);
        // A job sent now is not taken by the worker (retired: it takes no new job) and nothing else can start here.
        const next = await t.run(ep, { n: 'after the change' });
        const queued = await reasonIn(t, ep, next, 'never-placeable');
        expect(queued.queueReason.message).toMatch(c.message);
        expect((await t.status(ep, id)).status).toBe('IN_PROGRESS');
        const record = (await t.workers(ep)).find((w) => w.id === worker);
        expect(record).toMatchObject({ desiredStatus: 'EXITED' });
        expect(record.workerStateReason).toMatch(c.message);

        // The job in flight completes on its worker, once; then the worker stops and none replaces it.
        expect(await t.waitJob(ep, id)).toMatchObject({
          status: 'COMPLETED',
          workerId: worker,
          output: { echo: { sleepMs: 3000 } },
        });
        await waitUntil(
          () => t.pids().length === 0 && !isAlive(pid!),
          10_000,
          () => `worker ${worker} to stop`,
        );
        expect(accepted.filter((a) => a.jobId === id)).toEqual([{ workerId: worker, jobId: id }]);
        await sleep(300);
        expect(t.pids()).toEqual([]);
        expect((await t.status(ep, next)).status).toBe('IN_QUEUE');
        expect((await t.health(ep)).scaling).toMatchObject({ reason: 'never-placeable' });
        expect(accepted.filter((a) => a.jobId === next)).toEqual([]);
      } finally {
        await closeFleet(t);
      }
    });

    it('limits changed back while the retired worker still runs its job: the worker is taken back, not replaced', async () => {
      const t = await startNode(GPU_NODE);
      try {
        const ep = await t.endpoint({ ...A40, dataCenterIds: ['EU-RO-1'], idleTimeout: 60 });
        const id = await t.run(ep, { sleepMs: 3000 });
        const worker = (await t.untilRunning(ep, id)).workerId as string;
        const pids = t.pids();

        expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { dataCenterIds: ['US-TX-3'] })).status).toBe(200);
        await waitUntil(
          async () => (await t.workers(ep)).some((w) => w.id === worker && w.desiredStatus === 'EXITED'),
          5_000,
          () => `worker ${worker} retired`,
        );
        expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { dataCenterIds: ['EU-RO-1'] })).status).toBe(200);
        await waitUntil(
          async () => (await t.workers(ep)).some((w) => w.id === worker && w.desiredStatus === 'RUNNING'),
          5_000,
          () => `worker ${worker} taken back`,
        );
        expect((await t.status(ep, id)).status).toBe('IN_PROGRESS');

        // The job in flight completes, and the same process takes the next one.
        expect(await t.waitJob(ep, id)).toMatchObject({ status: 'COMPLETED', workerId: worker });
        const next = await t.waitJob(ep, await t.run(ep, { n: 2 }));
        expect(next).toMatchObject({ status: 'COMPLETED', workerId: worker });
        expect(t.pids()).toEqual(pids);
        expect((await t.workers(ep)).map((w) => [w.id, w.desiredStatus, w.workerStateReason ?? null])).toEqual([
          [worker, 'RUNNING', null],
        ]);
      } finally {
        await closeFleet(t);
      }
    });

    it('a worker taken back while it polls for a second job takes the next job at once, not when its poll ends', async () => {
      // Polls last 15 s here: a poll that saw the worker retired must not hold the next job that long once it is back.
      const t = await startNode({ ...GPU_NODE, takeWaitMs: 15_000 });
      try {
        const ep = await t.endpoint(
          { ...A40, dataCenterIds: ['EU-RO-1'], idleTimeout: 60 },
          { imageName: `file://${join(ROOT, 'test/fixtures/two-slot-worker')}`, dockerStartCmd: ['node', 'worker.ts'] },
        );
        const first = await t.run(ep, { sleepMs: 8000 });
        const worker = (await t.untilRunning(ep, first)).workerId as string;
        const desired = async (): Promise<string | undefined> =>
          (await t.workers(ep)).find((w) => w.id === worker)?.desiredStatus;
        expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { dataCenterIds: ['US-TX-3'] })).status).toBe(200);
        await waitUntil(
          async () => (await desired()) === 'EXITED',
          5_000,
          () => `worker ${worker} retired`,
        );
        // A job sent meanwhile wakes the worker's waiting poll, which finds the worker retired and takes nothing.
        const second = await t.run(ep, { sleepMs: 0 });
        await reasonIn(t, ep, second, 'never-placeable');

        const back = Date.now();
        expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { dataCenterIds: ['EU-RO-1'] })).status).toBe(200);
        expect(await t.waitJob(ep, second, 20_000)).toMatchObject({ status: 'COMPLETED', workerId: worker });
        expect(Date.now() - back).toBeLessThan(3_000);
        // In the worker's second slot, while the first job still runs.
        expect((await t.status(ep, first)).status).toBe('IN_PROGRESS');
      } finally {
        await closeFleet(t);
      }
    });

    it('limits that still allow this node (one more CUDA version, a lower minimum, one more data center) keep the same worker', async () => {
      const t = await startNode(GPU_NODE);
      try {
        const ep = await t.endpoint({
          ...A40,
          allowedCudaVersions: ['12.4'],
          dataCenterIds: ['EU-RO-1'],
          idleTimeout: 60,
        });
        const first = await t.waitJob(ep, await t.run(ep, { n: 1 }));
        expect(first.status).toBe('COMPLETED');
        const pids = t.pids();
        expect(pids).toHaveLength(1);

        const patched = await t.api('PATCH', `/v1/endpoints/${ep}`, {
          allowedCudaVersions: ['12.4', '12.8'],
          minCudaVersion: '12.0',
          dataCenterIds: ['EU-RO-1', 'US-TX-3'],
        });
        expect(patched.status, patched.text).toBe(200);
        await sleep(500); // ten supervisor passes
        const second = await t.waitJob(ep, await t.run(ep, { n: 2 }));
        expect(second).toMatchObject({ status: 'COMPLETED', workerId: first.workerId });
        expect(t.pids()).toEqual(pids);
        expect((await t.workers(ep)).map((w) => [w.id, w.desiredStatus])).toEqual([[first.workerId, 'RUNNING']]);
      } finally {
        await closeFleet(t);
      }
    });
  },
);

/** Poll /status on fleet `t` until the job's queueReason has `reason`; returns that status body. */
async function reasonIn(t: Fleet, ep: string, id: string, reason: string, ms = 10_000): Promise<any> {
  let last: any;
  await waitUntil(
    async () => (last = await t.status(ep, id)).queueReason?.reason === reason,
    ms,
    () => `queueReason ${reason}; last status ${JSON.stringify(last)}`,
  );
  return last;
}

describe('without a supervisor on the node', () => {
  it('a queued job has no queueReason', async () => {
    const t = await startTestServer();
    try {
      const ep = await createEndpoint(t);
      const res = await t.api('POST', `/v2/${ep}/run`, { input: {} });
      const status = await t.api('GET', `/v2/${ep}/status/${res.json.id}`);
      expect(status.json.status).toBe('IN_QUEUE');
      expect(status.json).not.toHaveProperty('queueReason');
    } finally {
      await t.close();
    }
  });
});

describe('/health scaling', () => {
  it('drops a reason about queued jobs once none are queued, without waiting for the next pass', async () => {
    // One pass when the job arrives at the cold endpoint (the supervisor is poked), none after it for a minute: the
    // supervisor's status stays that pass's "no worker yet" while the job is started and done.
    const slow = await startFleet({ scaleIntervalMs: 60_000 });
    try {
      const ep = await slow.endpoint({ workersMax: 1, idleTimeout: 60 });
      const id = await slow.run(ep, { n: 1 });
      expect((await slow.waitJob(ep, id)).status).toBe('COMPLETED');
      const h = await slow.health(ep);
      expect(h.jobs.inQueue).toBe(0);
      expect(h.scaling).toBeUndefined();
    } finally {
      await closeFleet(slow);
    }
  });
});

describe('/health throttled workers', () => {
  it('a start wanted for lack of a GPU is no longer counted once its job is gone', async () => {
    const gpuFleet = await startFleet({ gpus: 'NVIDIA A40:1' });
    try {
      const gpu = { computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1, workersMax: 1, idleTimeout: 60 };
      const holder = await gpuFleet.endpoint(gpu);
      const waiting = await gpuFleet.endpoint(gpu);
      // The only GPU is held by the first endpoint's idle worker for a minute.
      expect((await gpuFleet.waitJob(holder, await gpuFleet.run(holder, { n: 1 }))).status).toBe('COMPLETED');
      const id = await gpuFleet.run(waiting, { n: 2 });
      const h = await gpuFleet.untilScaling(waiting, 'no-gpu-capacity');
      expect(h.workers.throttled).toBe(1);

      expect((await gpuFleet.api('POST', `/v2/${waiting}/cancel/${id}`)).json.status).toBe('CANCELLED');
      // Many passes later: nothing is queued and no worker is wanted.
      await sleep(1000);
      const after = await gpuFleet.health(waiting);
      expect(after.jobs.inQueue).toBe(0);
      expect(after.workers.throttled).toBe(0);
    } finally {
      await closeFleet(gpuFleet);
    }
  });
});
