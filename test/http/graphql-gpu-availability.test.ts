// GPU availability through GraphQL, as runpodctl reads it: `runpodctl gpu list` keeps only the GPU types that some
// data center's `gpuAvailability` lists with a stock status, and `lowestPrice(input: {dataCenterId, gpuCount})`
// reports a type's stock and counts. Wharf answers with this node's GPUs (declared here: two A40s and one RTX A4000 in
// EU-RO-1) and how many of them workers hold: a real worker process started on the A4000 takes it, and gives it back
// when it stops.

import { availableParallelism, totalmem } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';
import { gql } from '../helpers/graphql.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** runpodctl's ListDataCenters document (internal/api/gpu.go). */
const DATA_CENTERS = 'query { dataCenters { id name location gpuAvailability { gpuTypeId displayName stockStatus } } }';
const LOWEST_PRICE = `query GpuTypes($gpu: GpuTypeFilter, $lp: GpuLowestPriceInput) {
  gpuTypes(input: $gpu) { id lowestPrice(input: $lp) { stockStatus totalCount rentedCount maxUnreservedGpuCount } }
}`;

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({ gpus: 'NVIDIA A40:2,NVIDIA RTX A4000:1', dataCenterId: 'EU-RO-1' });
});
afterAll(async () => {
  if (fleet) await closeFleet(fleet);
});

async function availability(t: TestServer): Promise<Map<string, unknown[]>> {
  const res = await gql(t.url, t.key, DATA_CENTERS);
  expect(res.status, res.text).toBe(200);
  const dcs = res.json.data.dataCenters as Array<{ id: string; gpuAvailability: unknown[] }>;
  return new Map(dcs.map((dc) => [dc.id, dc.gpuAvailability]));
}

async function lowestPrice(gpuTypeId: string, lp: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await gql(fleet.url, fleet.key, LOWEST_PRICE, { gpu: { id: gpuTypeId }, lp });
  expect(res.status, res.text).toBe(200);
  return res.json.data.gpuTypes[0].lowestPrice;
}

describe("dataCenters.gpuAvailability and lowestPrice report this node's GPUs", () => {
  it("lists the node's GPU types in its data center only, all free at first", async () => {
    const byDc = await availability(fleet);
    expect(byDc.get('EU-RO-1')).toEqual([
      { gpuTypeId: 'NVIDIA A40', displayName: 'A40', stockStatus: 'High' },
      { gpuTypeId: 'NVIDIA RTX A4000', displayName: 'RTX A4000', stockStatus: 'High' },
    ]);
    for (const [id, list] of byDc) if (id !== 'EU-RO-1') expect(list, id).toEqual([]);

    expect(await lowestPrice('NVIDIA A40', { gpuCount: 2, dataCenterId: 'EU-RO-1' })).toEqual({
      stockStatus: 'High',
      totalCount: 2,
      rentedCount: 0,
      maxUnreservedGpuCount: 2,
    });
    // Three A40s are more than the node has; another data center has none of them.
    expect((await lowestPrice('NVIDIA A40', { gpuCount: 3 })).stockStatus).toBe('Low');
    expect(await lowestPrice('NVIDIA A40', { dataCenterId: 'US-TX-3' })).toEqual({
      stockStatus: null,
      totalCount: 0,
      rentedCount: 0,
      maxUnreservedGpuCount: 0,
    });
    // A type the node lacks has no stock status, as runpodctl expects of a type it should leave out.
    expect((await lowestPrice('NVIDIA H100 80GB HBM3', {})).stockStatus).toBeNull();
  });

  it('a worker holding the A4000 makes it Low until the worker stops; the A40s stay High', async () => {
    const gpu = { computeType: 'GPU', gpuTypeIds: ['NVIDIA RTX A4000'], gpuCount: 1, workersMin: 1 };
    const ep = await fleet.endpoint(gpu);
    const a4000 = async () => (await availability(fleet)).get('EU-RO-1')?.[1];
    await waitUntil(
      async () => ((await a4000()) as any)?.stockStatus === 'Low',
      20_000,
      () => 'the worker to take the A4000',
    );
    expect((await availability(fleet)).get('EU-RO-1')?.[0]).toMatchObject({
      gpuTypeId: 'NVIDIA A40',
      stockStatus: 'High',
    });
    expect(await lowestPrice('NVIDIA RTX A4000', { dataCenterId: 'EU-RO-1' })).toEqual({
      stockStatus: 'Low',
      totalCount: 1,
      rentedCount: 1,
      maxUnreservedGpuCount: 0,
    });

    const scaledDown = await fleet.api('PATCH', `/v1/endpoints/${ep}`, { workersMin: 0 });
    expect(scaledDown.status, scaledDown.text).toBe(200);
    await waitUntil(
      async () => ((await a4000()) as any)?.stockStatus === 'High',
      20_000,
      () => 'the A4000 to be free again',
    );
    expect(fleet.pids()).toEqual([]);
  });

  it("runpodctl get cloud (api/cloud.go) lists the node's types with this machine's memory and vCPUs", async () => {
    const query = `query LowestPrice($input: GpuLowestPriceInput!) {
      gpuTypes { lowestPrice(input: $input) { gpuTypeId minMemory minVcpu } memoryInGb } }`;
    const listed = async (input: Record<string, unknown>) => {
      const res = await gql(fleet.url, fleet.key, query, { input });
      expect(res.status, res.text).toBe(200);
      return (res.json.data.gpuTypes as Array<{ lowestPrice: any }>)
        .map((g) => g.lowestPrice)
        .filter((lp) => lp.minMemory !== null);
    };
    const memoryGb = Math.floor(totalmem() / 2 ** 30);
    const vcpus = availableParallelism();
    expect(await listed({ gpuCount: 1, secureCloud: null })).toEqual([
      { gpuTypeId: 'NVIDIA A40', minMemory: memoryGb, minVcpu: vcpus },
      { gpuTypeId: 'NVIDIA RTX A4000', minMemory: memoryGb, minVcpu: vcpus },
    ]);
    expect((await listed({ gpuCount: 2 })).map((lp) => lp.gpuTypeId)).toEqual(['NVIDIA A40']);
    expect(await listed({ gpuCount: 3 })).toEqual([]);
    expect(await listed({ gpuCount: 1, minMemoryInGb: memoryGb + 1 })).toEqual([]);
    expect(await listed({ gpuCount: 1, minVcpuCount: vcpus + 1, totalDisk: 50 })).toEqual([]);
  });

  it("lowestPrice's minMemory is no more than the node's per-worker memory cap (--worker-memory-mb)", async () => {
    // The executors limit a GPU worker to the cap, so a GPU type is offered with the cap's memory, not the machine's.
    const capped = await startFleet({ gpus: 'NVIDIA A40:1', dataCenterId: 'EU-RO-1', workerMemoryMb: 3 * 1024 + 500 });
    try {
      const query = `query LowestPrice($input: GpuLowestPriceInput!) {
        gpuTypes(input: {id: "NVIDIA A40"}) { lowestPrice(input: $input) { minMemory minVcpu } } }`;
      const a40 = async (input: Record<string, unknown>) => {
        const res = await gql(capped.url, capped.key, query, { input });
        expect(res.status, res.text).toBe(200);
        return res.json.data.gpuTypes[0].lowestPrice;
      };
      expect(totalmem()).toBeGreaterThan(4 * 2 ** 30); // the cap is below this machine's memory
      expect(await a40({ gpuCount: 1 })).toEqual({ minMemory: 3, minVcpu: availableParallelism() });
      expect(await a40({ gpuCount: 1, minMemoryInGb: 3 })).toMatchObject({ minMemory: 3 });
      expect(await a40({ gpuCount: 1, minMemoryInGb: 4 })).toEqual({ minMemory: null, minVcpu: null });
    } finally {
      await closeFleet(capped);
    }
  });

  it("cpuFlavors' specifics (flash's SecureCpuTypes): High in this node's data center, none elsewhere", async () => {
    const query = `query SecureCpuTypes($cpuFlavorInput: CpuFlavorInput, $specificsInput: SpecificsInput) {
      cpuFlavors(input: $cpuFlavorInput) { specifics(input: $specificsInput) { stockStatus } } }`;
    const stock = async (dataCenterId: string) => {
      const variables = { cpuFlavorInput: { id: 'cpu5g' }, specificsInput: { dataCenterId, instanceId: 'cpu5g-4-16' } };
      const res = await gql(fleet.url, fleet.key, query, variables);
      expect(res.status, res.text).toBe(200);
      return res.json.data.cpuFlavors;
    };
    expect(await stock('EU-RO-1')).toEqual([{ specifics: { stockStatus: 'High' } }]);
    expect(await stock('US-TX-3')).toEqual([{ specifics: { stockStatus: null } }]);
  });
});

describe('a server that runs no workers', () => {
  it('lists no GPU availability anywhere', async () => {
    const t = await startTestServer();
    try {
      for (const [id, list] of await availability(t)) expect(list, id).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
