// `npm run gpu-check` (scripts/gpu-check.ts) is meant for machines with NVIDIA GPUs, which CI never has. So that it
// keeps working between such runs, CI runs it end to end — a real server, the process executor, real worker
// processes — against stand-ins for the two things only a GPU machine has: `nvidia-smi` (one H100, its CUDA version,
// the memory in use) and `python3` with PyTorch (the devices CUDA_VISIBLE_DEVICES names; a GPU memory holder that
// counts as used memory while it lives). The stand-ins decide nothing the check asserts about Wharf: the GPUs a
// worker is given, the waits, the stops and the kills are Wharf's own.

import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ROOT } from '../helpers/processes.ts';

const UUID = '1b2c3d4e-0000-1111-2222-333344445555';

let shims = '';

function writeShims(dir: string): void {
  const holderPid = join(dir, 'holder.pid');
  // The holder's pid is its own ($$ survives exec); it holds GPU memory until it dies (a zombie holds none).
  const nvidiaSmi = `#!/bin/bash
if [ $# -eq 0 ]; then echo "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |"; exit 0; fi
if [ "$1" = "--query-gpu=memory.used" ]; then
  state=$(awk '{print $3}' /proc/$(cat ${holderPid} 2>/dev/null || echo 0)/stat 2>/dev/null)
  if [ -n "$state" ] && [ "$state" != Z ]; then echo 8700; else echo 0; fi
  exit 0
fi
echo "0, NVIDIA H100 80GB HBM3, 81559, GPU-${UUID}"
`;
  const python3 = `#!/bin/bash
case "$2" in *"held ="*) echo $$ > ${holderPid}; echo held; exec sleep 86400;; esac
if [ -z "$CUDA_VISIBLE_DEVICES" ]; then echo '{"count": 0, "devices": []}'; exit 0; fi
echo '{"count": 1, "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "${UUID}"}], "matmulFinite": true}'
`;
  for (const [name, text] of [
    ['nvidia-smi', nvidiaSmi],
    ['python3', python3],
  ] as const) {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o755);
  }
}

function gpuCheck(path: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/gpu-check.ts')], {
      cwd: ROOT,
      env: { ...process.env, PATH: path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.once('close', (code) => resolve({ code, out }));
  });
}

beforeAll(() => {
  shims = mkdtempSync(join(tmpdir(), 'wharf-gpu-shims-'));
  writeShims(shims);
});
afterAll(() => {
  // A holder that outlived its worker (the check failed) must not outlive the test.
  const pidFile = join(shims, 'holder.pid');
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    } catch {
      // Gone already: the check passed.
    }
  }
  rmSync(shims, { recursive: true, force: true });
});

describe('npm run gpu-check', () => {
  it('passes every step through a real server and real workers', { timeout: 120_000 }, async () => {
    const { code, out } = await gpuCheck(`${shims}:${process.env.PATH ?? ''}`);
    expect(out).toContain('gpu-check passed');
    expect(code).toBe(0);
    expect(out).toContain("discovered 1 GPU(s), 1 of type 'NVIDIA H100 80GB HBM3', driver CUDA 13.0");
    expect(out).toMatch(/GPU endpoint: worker \w+ got CUDA_VISIBLE_DEVICES=0/);
    expect(out).toContain('second GPU endpoint waits while the GPUs are held');
    expect(out).toContain('CPU endpoint: CUDA_VISIBLE_DEVICES is empty');
    expect(out).toMatch(/endpoint allowing CUDA [\d.]+ only: this node's GPU driver supports CUDA 13.0/);
    expect(out).toMatch(/idle timeout: worker \w+ stopped and its 8192 MiB freed/);
    expect(out).toMatch(/kill -9 of worker \w+: its 8192 MiB \(held in a session of its own\) freed/);
  });

  it('fails, saying why, on a machine without nvidia-smi', async () => {
    const { code, out } = await gpuCheck('/usr/bin:/bin');
    expect(code).toBe(1);
    expect(out).toContain('nvidia-smi found no GPU');
  });
});
