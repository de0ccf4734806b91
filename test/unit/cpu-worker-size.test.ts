// The size of a CPU endpoint's worker (its first instance's vCPUs and memory), which the Docker and Kubernetes
// executors confine the worker to and its environment names, and the changes to it that outdate running workers.

import { describe, expect, it } from 'vitest';

import {
  cpuWorkerSize,
  ENDPOINT_DEFAULTS,
  endpointVersionChanged,
  TEMPLATE_DEFAULTS,
  type Endpoint,
} from '../../src/domain/index.ts';
import { workerEnv } from '../../src/fleet/worker-env.ts';

const endpoint = (extra: Partial<Endpoint>): Endpoint => ({
  ...structuredClone(ENDPOINT_DEFAULTS),
  id: 'ep00000000000a',
  userId: 'u1',
  templateId: 't000000001',
  version: 1,
  createdAt: 0,
  ...extra,
});

describe('cpuWorkerSize', () => {
  it('a CPU endpoint made over REST (flavors and a vCPU count): its first flavor at that count, GB as GiB', () => {
    expect(
      cpuWorkerSize(endpoint({ computeType: 'CPU', cpuFlavorIds: ['cpu3g'], vcpuCount: 4, instanceIds: [] })),
    ).toEqual({
      vcpus: 4,
      memoryMb: 16 * 1024,
    });
    expect(
      cpuWorkerSize(endpoint({ computeType: 'CPU', cpuFlavorIds: ['cpu5c'], vcpuCount: 1, instanceIds: [] })),
    ).toEqual({
      vcpus: 1,
      memoryMb: 2 * 1024,
    });
  });

  it('instances of different sizes (GraphQL instanceIds): the first one’s', () => {
    const e = endpoint({
      computeType: 'CPU',
      cpuFlavorIds: ['cpu3c'],
      vcpuCount: 2,
      instanceIds: ['cpu3c-2-4', 'cpu3c-4-8'],
    });
    expect(cpuWorkerSize(e)).toEqual({ vcpus: 2, memoryMb: 4096 });
  });

  it('cpuFlavorIds reordered over REST: the new first flavor’s, which the workers are billed and shown as', () => {
    const e = endpoint({
      computeType: 'CPU',
      cpuFlavorIds: ['cpu3g', 'cpu3c'],
      vcpuCount: 2,
      instanceIds: ['cpu3c-2-4', 'cpu3g-2-8'],
    });
    expect(cpuWorkerSize(e)).toEqual({ vcpus: 2, memoryMb: 8192 });
  });

  it('a CPU endpoint stored with no flavor (written before REST added the default): the default flavor’s', () => {
    expect(cpuWorkerSize(endpoint({ computeType: 'CPU', cpuFlavorIds: [], vcpuCount: 2, instanceIds: [] }))).toEqual({
      vcpus: 2,
      memoryMb: 4096,
    });
  });

  it('none for a GPU endpoint', () => {
    expect(cpuWorkerSize(endpoint({ computeType: 'GPU', cpuFlavorIds: [], instanceIds: [] }))).toBeNull();
  });
});

describe('endpointVersionChanged and the CPU size', () => {
  const before = endpoint({
    computeType: 'CPU',
    cpuFlavorIds: ['cpu3c', 'cpu3g'],
    vcpuCount: 2,
    instanceIds: ['cpu3c-2-4', 'cpu3g-2-8'],
  });

  it('outdates the workers when the first instance, and with it the memory, changes', () => {
    // Its memory alone (flavors and vCPUs the same); a reorder (GraphQL reorders cpuFlavorIds with it) is a change too.
    expect(endpointVersionChanged(before, { ...before, instanceIds: ['cpu3c-2-8', 'cpu3g-2-8'] })).toBe(true);
    expect(
      endpointVersionChanged(before, {
        ...before,
        cpuFlavorIds: ['cpu3g', 'cpu3c'],
        instanceIds: ['cpu3g-2-8', 'cpu3c-2-4'],
      }),
    ).toBe(true);
  });

  it('leaves them when only a later instance changes', () => {
    expect(endpointVersionChanged(before, { ...before, instanceIds: ['cpu3c-2-4', 'cpu3g-2-8', 'cpu3c-2-4'] })).toBe(
      false,
    );
  });
});

describe('the worker environment names the size, as a hosted pod’s does', () => {
  const envOf = (e: Endpoint, memoryCapMb?: number) =>
    workerEnv({
      memoryCapMb,
      publicUrl: 'http://127.0.0.1:8080',
      endpoint: e,
      template: { ...TEMPLATE_DEFAULTS, id: 't000000001', userId: 'u1', name: 't', imageName: 'i', createdAt: 0 },
      workerId: 'w0000000000001',
      workerKey: 'k',
      pingIntervalMs: 1000,
      gpuTypeId: '',
      gpuIndices: [],
      dataCenterId: 'EU-RO-1',
    });

  it('RUNPOD_CPU_COUNT and RUNPOD_MEM_GB for a CPU worker: its instance’s', () => {
    const env = envOf(endpoint({ computeType: 'CPU', cpuFlavorIds: ['cpu3g'], vcpuCount: 4, instanceIds: [] }));
    expect(env).toMatchObject({ RUNPOD_CPU_COUNT: '4', RUNPOD_MEM_GB: '16', RUNPOD_GPU_COUNT: '0' });
  });

  it('RUNPOD_MEM_GB is what the worker may use: the node’s cap where smaller, in whole GB', () => {
    const e = endpoint({ computeType: 'CPU', cpuFlavorIds: ['cpu3g'], vcpuCount: 4, instanceIds: [] });
    expect(envOf(e, 4096)).toMatchObject({ RUNPOD_CPU_COUNT: '4', RUNPOD_MEM_GB: '4' });
    expect(envOf(e, 3000)).toMatchObject({ RUNPOD_MEM_GB: '2' });
    expect(envOf(e, 512)).toMatchObject({ RUNPOD_MEM_GB: '1' });
    expect(envOf(e, 65536)).toMatchObject({ RUNPOD_MEM_GB: '16' });
  });

  it('neither for a GPU worker, which is not confined to a size', () => {
    const env = envOf(endpoint({ computeType: 'GPU' }));
    expect(env.RUNPOD_CPU_COUNT).toBeUndefined();
    expect(env.RUNPOD_MEM_GB).toBeUndefined();
  });
});
