import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import { DATA_CENTER_IDS } from '../../src/domain/index.ts';

import {
  discoverGpus,
  GPU_POOLS,
  GPU_TYPE_IDS,
  GpuInventory,
  matchGpuType,
  parseDeclaredGpus,
  parseGpuIds,
  parseNvidiaSmi,
  validateGpuIds,
} from '../../src/fleet/gpus.ts';

const SMI_H100X2 = `0, NVIDIA H100 80GB HBM3, 81559, GPU-1b2c3d4e-0000-1111-2222-333344445555
1, NVIDIA H100 80GB HBM3, 81559, GPU-9f8e7d6c-0000-1111-2222-333344445555
`;

describe('parseNvidiaSmi', () => {
  it('reads index, name, memory (MiB → GB) and uuid', () => {
    expect(parseNvidiaSmi(SMI_H100X2)).toEqual([
      { index: '0', name: 'NVIDIA H100 80GB HBM3', memoryGb: 80, uuid: 'GPU-1b2c3d4e-0000-1111-2222-333344445555' },
      { index: '1', name: 'NVIDIA H100 80GB HBM3', memoryGb: 80, uuid: 'GPU-9f8e7d6c-0000-1111-2222-333344445555' },
    ]);
  });

  it('tolerates CRLF, blank lines, [N/A] fields and a missing uuid column', () => {
    const csv = '0, NVIDIA A100-SXM4-80GB, 81920, [N/A]\r\n\r\n1, NVIDIA GeForce RTX 4090, [N/A]\r\n';
    expect(parseNvidiaSmi(csv)).toEqual([
      { index: '0', name: 'NVIDIA A100-SXM4-80GB', memoryGb: 80 },
      { index: '1', name: 'NVIDIA GeForce RTX 4090', memoryGb: 0 },
    ]);
  });
});

describe('discoverGpus', () => {
  it('returns [] when nvidia-smi is not installed', async () => {
    await expect(discoverGpus({ command: '/nonexistent/nvidia-smi' })).resolves.toEqual([]);
  });

  it('parses what nvidia-smi prints and reports a failing nvidia-smi', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-gpus-'));
    try {
      const ok = join(dir, 'smi-ok');
      writeFileSync(ok, `#!/bin/sh\nprintf '%s' '${SMI_H100X2}'\n`);
      const bad = join(dir, 'smi-bad');
      writeFileSync(bad, '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn\'t communicate" >&2\nexit 9\n');
      chmodSync(ok, 0o755);
      chmodSync(bad, 0o755);
      expect(await discoverGpus({ command: ok })).toHaveLength(2);
      await expect(discoverGpus({ command: bad })).rejects.toThrow(/failed .*declare the GPUs/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('GPU pools and type ids', () => {
  it('maps every pool to exact GPU_TYPE_IDS strings', () => {
    for (const [pool, { types }] of Object.entries(GPU_POOLS)) {
      for (const t of types) expect(GPU_TYPE_IDS, `${pool}: ${t}`).toContain(t);
    }
    expect(Object.keys(GPU_POOLS).sort()).toEqual(
      [
        'AMPERE_16',
        'AMPERE_24',
        'ADA_24',
        'AMPERE_48',
        'ADA_48_PRO',
        'AMPERE_80',
        'ADA_80_PRO',
        'HOPPER_141',
        'ADA_32_PRO',
        'BLACKWELL_96',
        'BLACKWELL_180',
      ].sort(),
    );
    expect(GPU_TYPE_IDS).toHaveLength(49);
  });

  it('expands pools and applies exclusions in order', () => {
    expect(parseGpuIds('AMPERE_16,-NVIDIA RTX A4500')).toEqual([
      'NVIDIA RTX A4000',
      'NVIDIA RTX 4000 Ada Generation',
      'NVIDIA RTX 2000 Ada Generation',
    ]);
    expect(parseGpuIds('ADA_24, AMPERE_80')).toEqual([
      'NVIDIA GeForce RTX 4090',
      'NVIDIA A100-SXM4-80GB',
      'NVIDIA A100 80GB PCIe',
    ]);
    expect(parseGpuIds('NVIDIA L4,AMPERE_24')).toEqual(['NVIDIA L4', 'NVIDIA RTX A5000', 'NVIDIA GeForce RTX 3090']);
    expect(parseGpuIds('AMPERE_16,-NVIDIA  RTX A4500')).not.toContain('NVIDIA RTX A4500');
    expect(parseGpuIds('')).toEqual([]);
    const allBut = parseGpuIds('-NVIDIA H200');
    expect(allBut).not.toContain('NVIDIA H200');
    expect(allBut).toContain('NVIDIA H100 80GB HBM3');
  });

  it('validates gpuIds', () => {
    expect(validateGpuIds('AMPERE_16,-NVIDIA RTX A4500,NVIDIA H100 PCIe')).toBeNull();
    expect(validateGpuIds('AMPERE_99,-NVIDIA RTX Z9')).toMatch(/'AMPERE_99', 'NVIDIA RTX Z9'.*AMPERE_16/);
  });

  it.each([
    ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3'],
    ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100-SXM4-80GB'],
    ['A100-SXM4-80GB', 'NVIDIA A100-SXM4-80GB'],
    ['NVIDIA A100-PCIE-80GB', 'NVIDIA A100 80GB PCIe'],
    ['GeForce RTX 3090', 'NVIDIA GeForce RTX 3090'],
    ['NVIDIA GeForce RTX 3080TI', 'NVIDIA GeForce RTX 3080TI'],
    ['nvidia rtx a4500', 'NVIDIA RTX A4500'],
    ['Tesla T4', 'Tesla T4'],
    ['NVIDIA RTX A30', 'NVIDIA RTX A30'],
    ['NVIDIA A30', 'NVIDIA A30'],
  ])('matches %j to %j', (name, id) => {
    expect(matchGpuType(name)).toBe(id);
  });

  it('does not invent a type for an unknown GPU', () => {
    expect(matchGpuType('NVIDIA Imaginary X1')).toBeNull();
  });
});

describe('parseDeclaredGpus', () => {
  it('numbers declared GPUs and fills memory from the pool', () => {
    expect(parseDeclaredGpus('NVIDIA GeForce RTX 4090:2,NVIDIA A40:1')).toEqual([
      { index: '0', name: 'NVIDIA GeForce RTX 4090', memoryGb: 24 },
      { index: '1', name: 'NVIDIA GeForce RTX 4090', memoryGb: 24 },
      { index: '2', name: 'NVIDIA A40', memoryGb: 48 },
    ]);
    expect(parseDeclaredGpus('RTX 4090')).toEqual([{ index: '0', name: 'NVIDIA GeForce RTX 4090', memoryGb: 24 }]);
  });

  it('accepts a CPU-only machine', () => {
    expect(parseDeclaredGpus('none')).toEqual([]);
    expect(parseDeclaredGpus(' ')).toEqual([]);
  });

  it.each(['NVIDIA A40:0', 'NVIDIA A40:two', ':2', 'NVIDIA A40:-1'])('rejects %j', (spec) => {
    expect(() => parseDeclaredGpus(spec)).toThrow(/bad GPU declaration/);
  });

  it('refuses a name that is no GPU type id, suggesting the nearest one', () => {
    expect(() => parseDeclaredGpus('garbage')).toThrow(/^unknown GPU type 'garbage': "wharf serve --help" lists/);
    expect(() => parseDeclaredGpus('NVIDIA A40:1,NVIDIA A4O:2')).toThrow(
      /^unknown GPU type 'NVIDIA A4O' \(did you mean 'NVIDIA A40'\?\)/,
    );
    expect(() => parseDeclaredGpus('rtx 409:1')).toThrow(/did you mean 'NVIDIA GeForce RTX 4090'/);
  });
});

describe('GpuInventory', () => {
  const mixed = (): GpuInventory =>
    new GpuInventory(parseDeclaredGpus('NVIDIA RTX A4000:2,NVIDIA GeForce RTX 4090:2,NVIDIA A40:1'), {
      dataCenterId: 'EU-RO-1',
    });

  it('stock: GPUs by type in machine order, and how many no worker holds', () => {
    const inv = mixed();
    const all = [
      { gpuTypeId: 'NVIDIA RTX A4000', total: 2, free: 2 },
      { gpuTypeId: 'NVIDIA GeForce RTX 4090', total: 2, free: 2 },
      { gpuTypeId: 'NVIDIA A40', total: 1, free: 1 },
    ];
    expect(inv.stock()).toEqual(all);
    inv.allocate('w1', { count: 1, acceptableTypes: ['NVIDIA GeForce RTX 4090'] });
    inv.allocate('w2', { count: 1, acceptableTypes: ['NVIDIA A40'] });
    expect(inv.stock().map((s) => s.free)).toEqual([2, 1, 0]);
    inv.release('w1');
    inv.release('w2');
    expect(inv.stock()).toEqual(all);
  });

  it('places CPU workers without GPUs, in the data centers they allow', () => {
    const inv = new GpuInventory([], { dataCenterId: 'EU-RO-1' });
    expect(inv.allocate('w1', { count: 0, acceptableTypes: ['NVIDIA A40'], dataCenterIds: ['EU-RO-1'] })).toEqual({
      ok: true,
      indices: [],
      gpuTypeId: '',
    });
    expect(inv.capacityFor({ count: 0, acceptableTypes: [] })).toBe(Infinity);
    // The same placement rule as a GPU worker's, without the CUDA limits (a CPU worker makes no CUDA call).
    const elsewhere = { count: 0, acceptableTypes: [], dataCenterIds: ['US-TX-3'], minCudaVersion: '99.0' };
    expect(inv.allocate('w2', elsewhere)).toEqual({
      ok: false,
      reason: 'never-placeable',
      message: "this node is in data center 'EU-RO-1'; the endpoint's dataCenterIds are US-TX-3",
    });
    expect(inv.capacityFor(elsewhere)).toBe(0);
    expect(inv.placementRefusal({ ...elsewhere, dataCenterIds: [] })).toBeNull();
  });

  it('placementRefusal: data centers for every worker, CUDA limits for GPU workers, whatever GPUs are free', () => {
    const inv = new GpuInventory(parseDeclaredGpus('NVIDIA A40:1'), { dataCenterId: 'EU-RO-1', cudaVersion: '12.4' });
    const a40 = { count: 1, acceptableTypes: ['NVIDIA A40'] };
    inv.allocate('busy', a40); // the only GPU is taken: placement does not depend on it
    expect(inv.placementRefusal({ ...a40, dataCenterIds: ['EU-RO-1'], allowedCudaVersions: ['12.4'] })).toBeNull();
    expect(inv.placementRefusal({ ...a40, dataCenterIds: ['US-TX-3', 'EU-SE-1'] })).toBe(
      "this node is in data center 'EU-RO-1'; the endpoint's dataCenterIds are US-TX-3, EU-SE-1",
    );
    expect(inv.placementRefusal({ ...a40, allowedCudaVersions: ['12.8'] })).toMatch(/supports CUDA 12\.4/);
    expect(inv.placementRefusal({ ...a40, minCudaVersion: '12.8' })).toMatch(/CUDA 12\.8 or newer/);
    // GPU types and counts are what the worker is made from (a change rolls it), not placement limits.
    expect(inv.placementRefusal({ count: 2, acceptableTypes: ['NVIDIA H200'] })).toBeNull();
  });

  it('a Kubernetes cluster that places by data-center label: this node’s data center decides nothing', () => {
    const inv = new GpuInventory(parseDeclaredGpus('NVIDIA A40:1'), {
      dataCenterId: 'EU-RO-1',
      cudaVersion: '12.4',
      dataCentersPlacedElsewhere: true,
    });
    const a40 = { count: 1, acceptableTypes: ['NVIDIA A40'], dataCenterIds: ['US-TX-3'] };
    expect(inv.placementRefusal(a40)).toBeNull();
    expect(inv.capacityFor(a40)).toBe(1);
    expect(inv.allocate('w1', a40)).toMatchObject({ ok: true });
    expect(inv.placementRefusal({ ...a40, minCudaVersion: '12.8' })).toMatch(/CUDA 12\.8 or newer/);
  });

  it('prefers types in priority order and gives each GPU to one worker', () => {
    const inv = mixed();
    const req = { count: 1, acceptableTypes: parseGpuIds('ADA_24,AMPERE_16') };
    expect(inv.capacityFor(req)).toBe(4);
    expect(inv.allocate('a', req)).toEqual({ ok: true, indices: ['2'], gpuTypeId: 'NVIDIA GeForce RTX 4090' });
    expect(inv.allocate('b', req)).toEqual({ ok: true, indices: ['3'], gpuTypeId: 'NVIDIA GeForce RTX 4090' });
    expect(inv.allocate('c', req)).toEqual({ ok: true, indices: ['0'], gpuTypeId: 'NVIDIA RTX A4000' });
    expect(inv.allocate('d', req)).toMatchObject({ ok: true, indices: ['1'] });
    expect(inv.allocate('e', req)).toMatchObject({ ok: false, reason: 'no-capacity' });
    expect(inv.free()).toBe(1);
    inv.release('b');
    inv.release('b'); // idempotent
    expect(inv.allocate('e', req)).toEqual({ ok: true, indices: ['3'], gpuTypeId: 'NVIDIA GeForce RTX 4090' });
    expect(
      inv
        .describe()
        .gpus.filter((g) => g.workerId !== null)
        .map((g) => g.workerId),
    ).toEqual(['c', 'd', 'a', 'e']);
  });

  it('keeps a multi-GPU worker on one type', () => {
    const inv = mixed();
    const req = { count: 2, acceptableTypes: [] };
    expect(inv.allocate('a', req)).toEqual({ ok: true, indices: ['0', '1'], gpuTypeId: 'NVIDIA RTX A4000' });
    expect(inv.allocate('b', req)).toEqual({ ok: true, indices: ['2', '3'], gpuTypeId: 'NVIDIA GeForce RTX 4090' });
    expect(inv.free()).toBe(1);
    expect(inv.capacityFor(req)).toBe(0);
    expect(inv.allocate('c', req)).toMatchObject({ ok: false, reason: 'no-capacity' });
  });

  it('reports requests that can never be placed here', () => {
    const inv = mixed();
    expect(inv.allocate('a', { count: 1, acceptableTypes: parseGpuIds('HOPPER_141') })).toMatchObject({
      ok: false,
      reason: 'never-placeable',
      message: expect.stringContaining('NVIDIA H200'),
    });
    expect(inv.allocate('a', { count: 3, acceptableTypes: parseGpuIds('ADA_24') })).toMatchObject({
      ok: false,
      reason: 'never-placeable',
      message: expect.stringContaining('needs 3 GPUs'),
    });
    expect(inv.allocate('a', { count: 1, acceptableTypes: [], dataCenterIds: ['US-TX-3'] })).toMatchObject({
      ok: false,
      reason: 'never-placeable',
      message: expect.stringContaining('EU-RO-1'),
    });
    expect(inv.capacityFor({ count: 1, acceptableTypes: [], dataCenterIds: ['US-TX-3'] })).toBe(0);
    expect(
      inv.allocate('a', { count: 1, acceptableTypes: ['NVIDIA A40'], dataCenterIds: ['US-TX-3', 'EU-RO-1'] }),
    ).toEqual({ ok: true, indices: ['4'], gpuTypeId: 'NVIDIA A40' });
    // Every known data center named (REST's default) is "anywhere": a node with a name of its own qualifies.
    const homeLab = new GpuInventory(parseDeclaredGpus('NVIDIA A40:1'), { dataCenterId: 'home-lab' });
    expect(homeLab.allocate('a', { count: 1, acceptableTypes: [], dataCenterIds: [...DATA_CENTER_IDS] })).toMatchObject(
      {
        ok: true,
      },
    );
    expect(
      homeLab.allocate('b', { count: 1, acceptableTypes: [], dataCenterIds: DATA_CENTER_IDS.slice(1) }),
    ).toMatchObject({ ok: false, reason: 'never-placeable' });
    expect(new GpuInventory([], { dataCenterId: 'X' }).allocate('a', { count: 1, acceptableTypes: [] })).toMatchObject({
      ok: false,
      reason: 'never-placeable',
    });
  });

  it('matches nvidia-smi names against type ids', () => {
    const inv = new GpuInventory(parseNvidiaSmi('0, A100-SXM4-80GB, 81920, GPU-x\n'), { dataCenterId: 'EU-RO-1' });
    expect(inv.describe().gpus[0]).toMatchObject({ name: 'A100-SXM4-80GB', gpuTypeId: 'NVIDIA A100-SXM4-80GB' });
    expect(inv.allocate('a', { count: 1, acceptableTypes: parseGpuIds('AMPERE_80') })).toEqual({
      ok: true,
      indices: ['0'],
      gpuTypeId: 'NVIDIA A100-SXM4-80GB',
    });
  });

  it('refuses to allocate twice to one worker', () => {
    const inv = mixed();
    inv.allocate('a', { count: 1, acceptableTypes: [] });
    expect(() => inv.allocate('a', { count: 1, acceptableTypes: [] })).toThrow(/already holds/);
  });
});
