import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerRecord } from '../../src/domain/index.ts';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** `/v1/pods`: Wharf's serverless workers shown as pods; what is refused and what retires a worker. */

let t: TestServer;
let ep: string;
let cpuEp: string;
const T0 = Date.parse('2025-01-02T03:04:05.000Z');
/** Seen "in the future", so the lease sweep leaves these hand-made workers alone during the test. */
const SEEN = Date.now() + 3_600_000;

const worker = (id: string, endpointId: string, over: Partial<WorkerRecord> = {}): WorkerRecord => ({
  id,
  endpointId,
  keyHash: null,
  version: 1,
  managed: true,
  state: 'idle',
  reason: null,
  gpuTypeId: 'NVIDIA A40',
  gpuCount: 2,
  createdAt: T0,
  lastSeenAt: SEEN,
  retired: false,
  retiredAt: null,
  ...over,
});

beforeAll(async () => {
  t = await startTestServer();
  ep = await createEndpoint(t, { name: 'gpu', gpuTypeIds: ['NVIDIA A40'], gpuCount: 2 });
  cpuEp = await createEndpoint(t, { name: 'cpu', computeType: 'CPU', cpuFlavorIds: ['cpu5c'], vcpuCount: 4 });
  await t.server.store.upsertWorker(worker('gpuworker000001', ep));
  await t.server.store.upsertWorker(worker('gpuworker000002', ep, { state: 'unhealthy', reason: 'crash' }));
  await t.server.store.upsertWorker(worker('cpuworker000001', cpuEp, { gpuTypeId: null, gpuCount: 0 }));
});
afterAll(async () => {
  await t.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.code).toBe(code);
}

const ids = (res: ApiResponse): string[] => res.json.map((p: { id: string }) => p.id).sort();

describe('listing and reading', () => {
  it('worker pods are hidden unless includeWorkers=true, as in the hosted API', async () => {
    const plain = await t.api('GET', '/v1/pods');
    expect(plain.status).toBe(200);
    expect(plain.json).toEqual([]);
    const all = await t.api('GET', '/v1/pods?includeWorkers=true');
    expect(ids(all)).toEqual(['cpuworker000001', 'gpuworker000001', 'gpuworker000002']);
  });

  it("an endpoint's workers (includeWorkers) are the same pods, image included", async () => {
    const pod = (await t.api('GET', '/v1/pods/gpuworker000001')).json;
    expect(pod.image).toEqual(expect.any(String));
    const endpoint = (await t.api('GET', `/v1/endpoints/${ep}?includeWorkers=true`)).json;
    const worker = endpoint.workers.find((w: { id: string }) => w.id === 'gpuworker000001');
    expect(worker.image).toBe(pod.image);
  });

  it('a pod carries its endpoint, status, GPU, price and machine', async () => {
    const res = await t.api('GET', '/v1/pods/gpuworker000001');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: 'gpuworker000001',
      endpointId: ep,
      desiredStatus: 'RUNNING',
      computeType: 'GPU',
      gpu: { id: 'NVIDIA A40', count: 2, displayName: 'A40' },
      costPerHr: 0.8,
      lastStartedAt: new Date(T0).toISOString(),
      lastStatusChange: new Date(SEEN).toISOString(),
      machine: { gpuDisplayName: 'A40', dataCenterId: 'EU-RO-1' },
      image: 'file://./examples/echo-ts',
    });
    expect(res.json.template).toBeUndefined();
    const more = await t.api('GET', '/v1/pods/gpuworker000001?includeTemplate=true&includeSavingsPlans=true');
    expect(more.json.template.imageName).toBe('file://./examples/echo-ts');
    expect(more.json.savingsPlans).toEqual([]);
    const cpu = await t.api('GET', '/v1/pods/cpuworker000001');
    expect(cpu.json).toMatchObject({
      computeType: 'CPU',
      cpuFlavorId: 'cpu5c',
      vcpuCount: 4,
      memoryInGb: 8, // cpu5c: 2 GB per vCPU
      costPerHr: 0.08,
    });
    expect((await t.api('GET', '/v1/pods/gpuworker000001')).json.memoryInGb).toBeUndefined();
    // GraphQL's pods show the same size.
    const gql = await t.api('POST', '/graphql', {
      query: '{ myself { pods { id vcpuCount memoryInGb } } }',
    });
    expect(gql.json.data.myself.pods).toEqual(
      expect.arrayContaining([
        { id: 'cpuworker000001', vcpuCount: 4, memoryInGb: 8 },
        { id: 'gpuworker000001', vcpuCount: 0, memoryInGb: 0 },
      ]),
    );
    expect((await t.api('GET', '/v1/pods/gpuworker000002')).json.desiredStatus).toBe('EXITED');
  });

  it('the documented filters', async () => {
    const q = (s: string) => t.api('GET', `/v1/pods?includeWorkers=true&${s}`).then(ids);
    expect(await q(`endpointId=${cpuEp}`)).toEqual(['cpuworker000001']);
    expect(await q('desiredStatus=EXITED')).toEqual(['gpuworker000002']);
    expect(await q('desiredStatus=TERMINATED')).toEqual([]);
    expect(await q('gpuTypeId=NVIDIA%20A40')).toEqual(['gpuworker000001', 'gpuworker000002']);
    expect(await q('gpuTypeId=NVIDIA%20L4&gpuTypeId=NVIDIA%20A40')).toHaveLength(2);
    expect(await q('id=gpuworker000001')).toEqual(['gpuworker000001']);
    expect(await q('computeType=CPU')).toEqual(['cpuworker000001']);
    expect(await q('cpuFlavorId=cpu5c')).toEqual(['cpuworker000001']);
    expect(await q('dataCenterId=US-TX-3')).toEqual([]);
    expect(await q('imageName=file://./examples/echo-ts')).toHaveLength(3);
    expect((await t.api('GET', '/v1/pods?desiredStatus=SLEEPING')).status).toBe(400);
  });

  it('an endpoint with includeWorkers lists the same pods', async () => {
    const res = await t.api('GET', `/v1/endpoints/${ep}?includeWorkers=true`);
    expect(res.json.workers.map((w: { id: string }) => w.id).sort()).toEqual(['gpuworker000001', 'gpuworker000002']);
    expect(res.json.workers[0].costPerHr).toBe(0.8);
  });

  it('GraphQL shows the same price and GPU name as REST and billing, for GPU, CPU and outside workers', async () => {
    const plainCpu = await createEndpoint(t, { name: 'plain-cpu', computeType: 'CPU' }); // no cpuFlavorIds: cpu3c
    await t.server.store.upsertWorker(worker('cpuworker000002', plainCpu, { gpuTypeId: null, gpuCount: 0 }));
    await t.server.store.upsertWorker(worker('outsideworker01', ep, { managed: false }));
    const query = 'query P($id: String!) { pod(input: { podId: $id }) { costPerHr machine { gpuDisplayName } } }';
    for (const id of ['gpuworker000001', 'cpuworker000001', 'cpuworker000002', 'outsideworker01']) {
      const rest = (await t.api('GET', `/v1/pods/${id}`)).json;
      const gql = await t.api('POST', '/graphql', { query, variables: { id } });
      expect(gql.json.errors, id).toBeUndefined();
      expect(gql.json.data.pod, id).toEqual({
        costPerHr: rest.costPerHr,
        machine: { gpuDisplayName: rest.machine.gpuDisplayName },
      });
    }
    expect((await t.api('GET', '/v1/pods/cpuworker000002')).json.costPerHr).toBe(0.06);
    expect((await t.api('GET', '/v1/pods/outsideworker01')).json.costPerHr).toBe(0);
  });

  it('unknown or foreign pods are not found', async () => {
    expectError(await t.api('GET', '/v1/pods/nosuchpod00001'), 404, 'POD_NOT_FOUND');
    const user = await t.server.accounts.createUser('eve');
    const { key } = await t.server.accounts.createKey(user.id, 'eve', 'all');
    expectError(await t.api('GET', '/v1/pods/gpuworker000001', undefined, { key }), 404, 'POD_NOT_FOUND');
    expectError(await t.api('POST', '/v1/pods/gpuworker000001/stop', undefined, { key }), 404, 'POD_NOT_FOUND');
    expect((await t.api('GET', '/v1/pods?includeWorkers=true', undefined, { key })).json).toEqual([]);
  });
});

describe('what Wharf refuses and what retires a worker', () => {
  it('create, update and start are refused with PODS_NOT_SUPPORTED', async () => {
    const created = await t.api('POST', '/v1/pods', { name: 'my pod', imageName: 'x' });
    expectError(created, 400, 'PODS_NOT_SUPPORTED');
    expect(created.json.message).toMatch(/serverless workers only; create an endpoint instead/);
    expectError(await t.api('PATCH', '/v1/pods/gpuworker000001', { name: 'x' }), 400, 'PODS_NOT_SUPPORTED');
    expectError(await t.api('POST', '/v1/pods/gpuworker000001/update', { name: 'x' }), 400, 'PODS_NOT_SUPPORTED');
    expectError(await t.api('POST', '/v1/pods/gpuworker000001/start'), 400, 'PODS_NOT_SUPPORTED');
    expectError(await t.api('POST', '/v1/pods/nosuchpod00001/start'), 404, 'POD_NOT_FOUND');
  });

  it('stop retires the worker (200, EXITED); reset and restart too; delete 204', async () => {
    await t.server.store.upsertWorker(worker('stopme00000001', ep));
    await t.server.store.upsertWorker(worker('resetme0000001', ep));
    await t.server.store.upsertWorker(worker('deleteme000001', ep));
    const stopped = await t.api('POST', '/v1/pods/stopme00000001/stop');
    expect(stopped.status).toBe(200);
    expect(stopped.json.desiredStatus).toBe('EXITED');
    expect((await t.server.store.getWorker('stopme00000001'))?.retired).toBe(true);
    for (const action of ['reset', 'restart']) {
      expect((await t.api('POST', `/v1/pods/resetme0000001/${action}`)).status).toBe(200);
    }
    expect((await t.server.store.getWorker('resetme0000001'))?.reason).toMatch(/through the API/);
    const del = await t.api('DELETE', '/v1/pods/deleteme000001');
    expect(del.status).toBe(204);
    expect((await t.server.store.getWorker('deleteme000001'))?.retired).toBe(true);
  });
});

describe('a pod’s memory under the node’s per-worker cap (--worker-memory-mb)', () => {
  it('is what the worker may use: the cap where smaller than its instance’s; a GPU worker’s, the cap', async () => {
    const capped = await startTestServer({ workerMemoryMb: 6144 });
    try {
      const big = await createEndpoint(capped, {
        name: 'big',
        computeType: 'CPU',
        cpuFlavorIds: ['cpu5c'],
        vcpuCount: 4,
      });
      const small = await createEndpoint(capped, {
        name: 'small',
        computeType: 'CPU',
        cpuFlavorIds: ['cpu3c'],
        vcpuCount: 1,
      });
      const gpu = await createEndpoint(capped, { name: 'gpu', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1 });
      await capped.server.store.upsertWorker(worker('cpubigworker01', big, { gpuTypeId: null, gpuCount: 0 }));
      await capped.server.store.upsertWorker(worker('cpusmallworker', small, { gpuTypeId: null, gpuCount: 0 }));
      await capped.server.store.upsertWorker(worker('gpucappedworkr', gpu, { gpuCount: 1 }));
      const rest = async (id: string) => (await capped.api('GET', `/v1/pods/${id}`)).json.memoryInGb;
      expect(await rest('cpubigworker01')).toBe(6); // 8 GB instance, 6 GiB cap
      expect(await rest('cpusmallworker')).toBe(2); // 2 GB instance under the cap
      expect(await rest('gpucappedworkr')).toBe(6);
      const gql = await capped.api('POST', '/graphql', { query: '{ myself { pods { id memoryInGb } } }' });
      expect(gql.json.data.myself.pods).toEqual(
        expect.arrayContaining([
          { id: 'cpubigworker01', memoryInGb: 6 },
          { id: 'cpusmallworker', memoryInGb: 2 },
          { id: 'gpucappedworkr', memoryInGb: 6 },
        ]),
      );
    } finally {
      await capped.close();
    }
  });
});
