// The driver's CUDA version (nvidia-smi) and endpoints' CUDA limits (allowedCudaVersions, minCudaVersion) in placement.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { CUDA_VERSIONS } from '../../src/domain/index.ts';
import {
  compareCudaVersions,
  cudaRefusal,
  discoverCudaVersion,
  isCudaVersion,
  parseCudaVersion,
} from '../../src/fleet/cuda.ts';
import { GpuInventory, parseDeclaredGpus } from '../../src/fleet/gpus.ts';

// nvidia-smi's banner, as printed by driver 550.
const BANNER = `+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
`;

describe('reading the CUDA version', () => {
  it('from the banner and from nvidia-smi -q', () => {
    expect(parseCudaVersion(BANNER)).toBe('12.4');
    expect(
      parseCudaVersion(
        'Driver Version                            : 580.65.06\nCUDA Version                              : 13.0\n',
      ),
    ).toBe('13.0');
    expect(parseCudaVersion('No devices were found')).toBeNull();
  });

  it('runs nvidia-smi; missing or failing, the version is unknown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-cuda-'));
    try {
      const ok = join(dir, 'smi-ok');
      writeFileSync(ok, `#!/bin/sh\ncat <<'END'\n${BANNER}END\n`);
      const bad = join(dir, 'smi-bad');
      writeFileSync(bad, '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n');
      chmodSync(ok, 0o755);
      chmodSync(bad, 0o755);
      expect(await discoverCudaVersion({ command: ok })).toBe('12.4');
      expect(await discoverCudaVersion({ command: bad })).toBeNull();
      expect(await discoverCudaVersion({ command: '/nonexistent/nvidia-smi' })).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compares versions numerically', () => {
    expect(compareCudaVersions('12.10', '12.9')).toBeGreaterThan(0);
    expect(compareCudaVersions('11.8', '12.0')).toBeLessThan(0);
    expect(compareCudaVersions('12.4', '12.4')).toBe(0);
    expect(isCudaVersion('12.4')).toBe(true);
    expect(isCudaVersion('12')).toBe(false);
    expect(isCudaVersion('12.4.1')).toBe(false);
  });
});

describe('cudaRefusal', () => {
  it('lets anything run where the version is unknown, or the endpoint sets no limit', () => {
    expect(cudaRefusal(null, { allowedCudaVersions: ['12.8'], minCudaVersion: '12.8' })).toBeNull();
    expect(cudaRefusal('12.4', {})).toBeNull();
    expect(cudaRefusal('12.4', { allowedCudaVersions: [], minCudaVersion: null })).toBeNull();
  });

  it('allowedCudaVersions must name the driver’s version, as on the hosted service', () => {
    expect(cudaRefusal('12.4', { allowedCudaVersions: ['12.4', '12.5'] })).toBeNull();
    expect(cudaRefusal('12.4', { allowedCudaVersions: ['12.8', '12.9'] })).toBe(
      "this node's GPU driver supports CUDA 12.4; the endpoint's allowedCudaVersions are 12.8, 12.9",
    );
    // Listing older versions only: the driver would run them, so the message says how to allow it.
    expect(cudaRefusal('12.8', { allowedCudaVersions: ['12.2', '12.1'] })).toMatch(
      /allowedCudaVersions are 12.2, 12.1; minCudaVersion 12.1 \(instead of allowedCudaVersions\) allows it and newer$/,
    );
    // Every known version named ("select all") is any version, a driver newer than the list included.
    expect(cudaRefusal('13.1', { allowedCudaVersions: [...CUDA_VERSIONS] })).toBeNull();
  });

  it('minCudaVersion is the oldest driver CUDA version allowed', () => {
    expect(cudaRefusal('12.8', { minCudaVersion: '12.4' })).toBeNull();
    expect(cudaRefusal('12.4', { minCudaVersion: '12.4' })).toBeNull();
    expect(cudaRefusal('12.4', { minCudaVersion: '12.8' })).toBe(
      "this node's GPU driver supports CUDA 12.4; the endpoint needs CUDA 12.8 or newer (minCudaVersion)",
    );
  });
});

describe('placement with CUDA limits', () => {
  it('a GPU endpoint whose limits exclude the driver is never placeable; CPU endpoints are not concerned', () => {
    const inv = new GpuInventory(parseDeclaredGpus('NVIDIA A40:1'), { dataCenterId: 'EU-RO-1', cudaVersion: '12.4' });
    const strict = { count: 1, acceptableTypes: [], minCudaVersion: '12.8' };
    expect(inv.capacityFor(strict)).toBe(0);
    expect(inv.allocate('a', strict)).toEqual({
      ok: false,
      reason: 'never-placeable',
      message: expect.stringContaining('needs CUDA 12.8 or newer'),
    });
    expect(inv.allocate('a', { count: 0, acceptableTypes: [], minCudaVersion: '12.8' })).toMatchObject({ ok: true });
    const fits = { count: 1, acceptableTypes: [], allowedCudaVersions: ['12.4'] };
    expect(inv.capacityFor(fits)).toBe(1);
    expect(inv.allocate('a', fits)).toMatchObject({ ok: true, gpuTypeId: 'NVIDIA A40' });
    expect(inv.describe().cudaVersion).toBe('12.4');
  });
});
