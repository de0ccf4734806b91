/**
 * The CUDA version this machine's GPU driver supports, and whether an endpoint's CUDA limits (`allowedCudaVersions`,
 * `minCudaVersion`) let its workers run here. The hosted service places a worker only on machines whose CUDA
 * version is one of `allowedCudaVersions` (unset: any) and at least `minCudaVersion`; an image built for a newer
 * CUDA than the driver supports fails at its first CUDA call, so the same limits decide placement here.
 */
import { execFile } from 'node:child_process';
import { allowsAnyCudaVersion } from '../domain/index.ts';

const VERSION = /^(\d+)\.(\d+)$/;

/** `12.4` → [12, 4]; null for anything else. */
export function cudaVersionParts(version: string): [number, number] | null {
  const m = VERSION.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2])] : null;
}

export function isCudaVersion(text: string): boolean {
  return cudaVersionParts(text) !== null;
}

/** Negative when a < b, 0 when equal, positive when a > b (numerically: 12.10 is after 12.9). */
export function compareCudaVersions(a: string, b: string): number {
  const [x, y] = [cudaVersionParts(a), cudaVersionParts(b)];
  if (!x || !y) throw new Error(`not a CUDA version: '${x ? b : a}'`);
  return x[0] - y[0] || x[1] - y[1];
}

/** The driver's CUDA version from what `nvidia-smi` prints (its banner, or `-q`'s "CUDA Version : 12.4"). */
export function parseCudaVersion(output: string): string | null {
  const m = /CUDA Version\s*:\s*(\d+\.\d+)/.exec(output);
  return m ? m[1]! : null;
}

/**
 * The driver's CUDA version through `nvidia-smi` (its banner names it; no --query-gpu field does). null when
 * nvidia-smi is missing, fails or does not say: the endpoints' CUDA limits are then not applied.
 */
export async function discoverCudaVersion(opts: { command?: string; timeoutMs?: number } = {}): Promise<string | null> {
  const command = opts.command ?? 'nvidia-smi';
  return new Promise((resolve) => {
    execFile(command, [], { timeout: opts.timeoutMs ?? 15_000, encoding: 'utf8' }, (err, out) => {
      resolve(err === null ? parseCudaVersion(out) : null);
    });
  });
}

export interface CudaLimits {
  /** Empty = any. */
  allowedCudaVersions?: readonly string[];
  minCudaVersion?: string | null;
}

/**
 * Why an endpoint's workers may not run on a machine whose driver supports CUDA `host`, or null when they may (also
 * when `host` is unknown: nothing to check against).
 */
export function cudaRefusal(host: string | null, limits: CudaLimits): string | null {
  if (host === null) return null;
  const allowed = limits.allowedCudaVersions ?? [];
  const min = limits.minCudaVersion ?? null;
  if (!allowsAnyCudaVersion(allowed) && !allowed.some((v) => isCudaVersion(v) && compareCudaVersions(v, host) === 0)) {
    // A driver runs images built for older CUDA versions too: say how to allow this one.
    const older = allowed.filter((v) => isCudaVersion(v) && compareCudaVersions(v, host) < 0).sort(compareCudaVersions);
    const hint =
      older.length > 0 ? `; minCudaVersion ${older[0]} (instead of allowedCudaVersions) allows it and newer` : '';
    return `this node's GPU driver supports CUDA ${host}; the endpoint's allowedCudaVersions are ${allowed.join(', ')}${hint}`;
  }
  if (min !== null && isCudaVersion(min) && compareCudaVersions(host, min) < 0) {
    return `this node's GPU driver supports CUDA ${host}; the endpoint needs CUDA ${min} or newer (minCudaVersion)`;
  }
  return null;
}
