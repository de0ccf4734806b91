// The Docker executor end to end, against a real Docker Engine: an endpoint whose template is a container image
// (the echo example on the pinned Node, imported without a registry by scripts/docker-test-image.sh) scales from
// zero, runs jobs through the official worker protocol, streams, scales back to zero; a container killed mid-job
// has its job retried; FlashBoot restarts the kept container instead of creating one; nothing is left behind.
// Skipped, with the reason printed, where no Docker Engine can be reached (see test/helpers/docker.ts).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  DOCKER_SOCKET,
  dockerForTests,
  type DockerForTests,
  removeWharfContainers,
  wharfContainers,
} from '../helpers/docker.ts';
import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';

const docker = await dockerForTests();
const d = 'skip' in docker ? null : docker;

describe.skipIf(d === null)('docker executor', () => {
  // Collected even when skipped: the body must not touch the daemon then.
  const { client, image } = d ?? ({} as DockerForTests);
  let t: Fleet;
  let nodeId: string;

  const containersOf = async (ep: string) =>
    (await wharfContainers(client, nodeId)).filter((c) => c.Labels['wharf.endpoint-id'] === ep);
  const template = { imageName: image, dockerStartCmd: ['node', 'worker.ts'], containerDiskInGb: 5 };

  beforeEach(async () => {
    nodeId = `dk${Math.random().toString(36).slice(2, 8)}`;
    t = await startFleet({ executor: 'docker', dockerSocket: DOCKER_SOCKET, nodeId, workerMemoryMb: 512 });
  });
  afterEach(async () => {
    try {
      await closeFleet(t);
      expect(await wharfContainers(client, nodeId)).toEqual([]);
    } finally {
      await removeWharfContainers(client, nodeId);
    }
  });

  it('scales from zero, runs and streams jobs in a labelled container, logs, and scales back to zero', async () => {
    const ep = await t.endpoint({ workersMax: 1, idleTimeout: 1 }, template);
    expect(await containersOf(ep)).toEqual([]);

    const first = await t.waitJob(ep, await t.run(ep, { n: 1 }), 60_000);
    expect(first).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 1 } } });

    const [container] = await containersOf(ep);
    expect(container).toBeDefined();
    expect(container!.Labels).toMatchObject({
      'wharf.managed': 'true',
      'wharf.node-id': nodeId,
      'wharf.endpoint-id': ep,
      'wharf.worker-id': first.workerId,
    });
    const info = await client.inspectContainer(container!.Id);
    expect(info?.State.Running).toBe(true);

    const streamed = await t.run(ep, { stream: 4 });
    const seen: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await t.api('GET', `/v2/${ep}/stream/${streamed}`);
      expect(res.status).toBe(200);
      seen.push(...(res.json.stream as unknown[]));
      if (res.json.status === 'COMPLETED') break;
    }
    expect(seen).toEqual([0, 1, 2, 3].map((chunk) => ({ output: { chunk } })));

    const failed = await t.waitJob(ep, await t.run(ep, { fail: 'bad input in a container' }));
    expect(failed.status).toBe('FAILED');
    // The container's output, demultiplexed, is in the worker log store.
    const logs = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`);
    const lines = logs.json.lines as Array<{ workerId: string; message: string; level: string }>;
    expect(lines.some((l) => l.workerId === first.workerId && l.message.includes('bad input in a container'))).toBe(
      true,
    );

    // Idle for idleTimeout (1 s): the worker stops and its container is removed (no FlashBoot on this endpoint).
    await waitUntil(
      async () => (await containersOf(ep)).length === 0,
      20_000,
      () => 'container removed',
    );
    // The worker's record leaves /health on the supervisor's pass after the removal: wait for it, not race it.
    await waitUntil(
      async () => {
        const w = (await t.health(ep)).workers;
        return w.idle === 0 && w.running === 0;
      },
      10_000,
      () => 'no idle or running worker in /health',
    );
    const h = await t.health(ep);
    expect(h.workers).toMatchObject({ idle: 0, running: 0 });
    expect(h.jobs).toMatchObject({ completed: 2, failed: 1, inQueue: 0, inProgress: 0 });
  });

  it('a CPU endpoint’s worker container gets its instance’s vCPUs, its memory bounded by the node cap', async () => {
    // cpu3c at 1 vCPU: 2 GB, above this node's 512 MiB per worker, which wins.
    const ep = await t.endpoint({ computeType: 'CPU', cpuFlavorIds: ['cpu3c'], vcpuCount: 1, workersMax: 1 }, template);
    expect(await t.waitJob(ep, await t.run(ep, { n: 1 }), 60_000)).toMatchObject({ status: 'COMPLETED' });
    const [container] = await containersOf(ep);
    const info = (await client.inspectContainer(container!.Id)) as any;
    expect(info.HostConfig).toMatchObject({ CpuPeriod: 100_000, CpuQuota: 100_000, Memory: 512 * 1024 * 1024 });
  });

  it('retries the job of a container killed mid-job (docker kill) on a new container', async () => {
    const ep = await t.endpoint({ workersMax: 2, idleTimeout: 2 }, template);
    const id = await t.run(ep, { sleepMs: 3000, n: 'kill' });
    let s: any;
    await waitUntil(
      async () => {
        s = await t.status(ep, id);
        return s.status === 'IN_PROGRESS';
      },
      60_000,
      () => JSON.stringify(s),
    );
    const [victim] = await containersOf(ep);
    await client.killContainer(victim!.Id, 'SIGKILL');

    const final = await t.waitJob(ep, id, 60_000);
    expect(final).toMatchObject({ status: 'COMPLETED', output: { echo: { sleepMs: 3000, n: 'kill' } }, retries: 1 });
    expect(final.workerId).not.toBe(victim!.Labels['wharf.worker-id']);
    // The killed container is gone (removed after its exit), not left stopped.
    expect(await client.inspectContainer(victim!.Id)).toBeNull();
    const h = await t.health(ep);
    expect(h.jobs.retried).toBe(1);
  });

  it('FlashBoot: an idle worker’s stopped container is kept and restarted for the next burst', async () => {
    const ep = await t.endpoint(
      { workersMax: 2, idleTimeout: 1, flashboot: true, scalerType: 'REQUEST_COUNT', scalerValue: 1 },
      template,
    );
    const burst = async (tag: string) => {
      const ids = [await t.run(ep, { sleepMs: 1500, tag }), await t.run(ep, { sleepMs: 1500, tag })];
      const done = await Promise.all(ids.map((id) => t.waitJob(ep, id, 60_000)));
      expect(done.map((s) => s.status)).toEqual(['COMPLETED', 'COMPLETED']);
      return new Set(done.map((s) => s.workerId as string));
    };
    const firstWorkers = await burst('a');
    expect(firstWorkers.size).toBe(2);
    const created = new Set((await containersOf(ep)).map((c) => c.Id));
    expect(created.size).toBe(2);

    // Idle: one worker stays as the supervisor's standby, the other's container is stopped and kept.
    await waitUntil(
      async () => {
        const states = (await containersOf(ep)).map((c) => c.State);
        return states.filter((st) => st === 'exited').length === 1;
      },
      20_000,
      () => 'one kept container',
    );

    await burst('b');
    const after = await containersOf(ep);
    // Same two containers: the kept one was restarted, none was created.
    expect(new Set(after.map((c) => c.Id))).toEqual(created);
    expect(after.filter((c) => c.State === 'running').length).toBeGreaterThanOrEqual(1);
  });
});
