// The real-GPU check: `npm run gpu-check` on a machine with NVIDIA GPUs, nvidia-smi and PyTorch (python3 -c 'import
// torch'). CI has no GPU, and the fleet tests there run on declared GPUs (`--gpus "NVIDIA A40:2"`); this checks what
// only real hardware can show, end to end through a real server, the process executor and real worker processes:
//
// 1. discovery: nvidia-smi's GPUs become GPU type ids that endpoints can name, and its CUDA version is read;
// 2. assignment: a GPU endpoint's worker gets exactly its GPUs (CUDA_VISIBLE_DEVICES, RUNPOD_GPU_*), and CUDA inside
//    it sees those devices (the same UUIDs nvidia-smi listed) and runs a kernel on them;
// 3. exclusivity: a second endpoint's worker waits (no-gpu-capacity) while the first holds the GPUs, and gets them
//    once the first idles out;
// 4. a CPU endpoint's worker sees no GPU at all;
// 5. an endpoint whose CUDA versions exclude this driver is reported never-placeable, and its job is not started;
// 6. a worker's GPU memory, held by a child process as a model server's would be, is freed when Wharf stops the
//    worker at its idle timeout and when the worker is killed (kill -9) — also when that child started a session of
//    its own, out of the worker's process group — and the replacement gets the GPU.
//
// It prints each step and a JSON line with what it saw, and exits non-zero on the first step that fails.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { startServer } from '../src/cli/index.ts';
import { loadConfig } from '../src/config/index.ts';
import { CUDA_VERSIONS } from '../src/domain/index.ts';
import { discoverCudaVersion } from '../src/fleet/cuda.ts';
import { discoverGpus, matchGpuType } from '../src/fleet/gpus.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WORKER_DIR = join(ROOT, 'test/fixtures/gpu-worker');
const ADMIN_KEY = 'wharf_gpu_check_admin_key_0123456789';

interface Probe {
  env: Record<string, string | null>;
  cuda: { count?: number; devices?: { name: string; uuid: string }[]; matmulFinite?: boolean; error?: string };
  holderPid?: number;
}

/** The fields this check reads from Wharf's answers (jobs, /health, endpoints, templates). */
interface Answer {
  id: string;
  status: string;
  output?: unknown;
  scaling?: { reason: string; message: string | null };
  workers?: { gpu?: { id: string; count: number } }[];
}

const HOLD_MIB = 8192;

/** GPU memory in use on the whole machine, MiB (nvidia-smi's view: every process, ours or not). */
function gpuMemoryUsedMiB(): number {
  const out = execFileSync('nvidia-smi', ['--query-gpu=memory.used', '--format=csv,noheader,nounits'], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .reduce((sum, l) => sum + Number(l.trim()), 0);
}

/** Whether a process still runs: a zombie (dead, not reaped yet by whoever inherited it) holds no GPU memory. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(what: string, ms: number, ok: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await ok())) {
    assert.ok(Date.now() - started < ms, `${what}: not within ${ms} ms`);
    await sleep(100);
  }
  return Date.now() - started;
}

const seen: Record<string, unknown> = {};
const step = (text: string): void => void process.stdout.write(`• ${text}\n`);

async function main(): Promise<void> {
  const gpus = await discoverGpus();
  const cudaVersion = await discoverCudaVersion();
  seen.gpus = gpus;
  seen.cudaVersion = cudaVersion;
  assert.ok(gpus.length > 0, 'nvidia-smi found no GPU: run this on a machine with NVIDIA GPUs and their driver');
  const typeId = matchGpuType(gpus[0]!.name);
  assert.ok(
    typeId !== null,
    `nvidia-smi names GPU 0 '${gpus[0]!.name}', which is no GPU type id endpoints can ask for`,
  );
  assert.ok(cudaVersion !== null, 'nvidia-smi did not say which CUDA version the driver supports');
  const ofType = gpus.filter((g) => matchGpuType(g.name) === typeId);
  step(`discovered ${gpus.length} GPU(s), ${ofType.length} of type '${typeId}', driver CUDA ${cudaVersion}`);

  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-gpu-check-'));
  const config = loadConfig({
    argv: [],
    env: {},
    overrides: {
      port: 0,
      host: '127.0.0.1',
      adminKey: ADMIN_KEY,
      dataDir,
      executor: 'process',
      gpus: 'auto',
      rateLimits: 'off',
      scaleIntervalMs: 100,
      workerPingIntervalMs: 1000,
      leaseMs: 5000,
      takeWaitMs: 1000,
      workerInitTimeoutMs: 120_000,
    },
  });
  const server = await startServer(config, { silent: true });
  const api = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Answer;
  };
  const template = await api('POST', '/v1/templates', {
    name: 'gpu-probe',
    imageName: `file://${WORKER_DIR}`,
    dockerStartCmd: ['node', 'worker.ts'],
  });
  const endpoint = async (name: string, fields: Record<string, unknown>): Promise<string> =>
    (await api('POST', '/v1/endpoints', { name, templateId: template.id, workersMin: 0, workersMax: 1, ...fields })).id;
  const runsync = async (ep: string, input: Record<string, unknown> = {}): Promise<Probe> => {
    const r = await api('POST', `/v2/${ep}/runsync?wait=180000`, { input });
    assert.equal(r.status, 'COMPLETED', `job on ${ep} ended ${r.status}: ${JSON.stringify(r)}`);
    return r.output as Probe;
  };
  const untilScaling = async (ep: string, reason: string): Promise<string | null> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const health = await api('GET', `/v2/${ep}/health`);
      if (health.scaling?.reason === reason) return health.scaling.message;
      assert.ok(Date.now() < deadline, `${ep} never reported ${reason}: ${JSON.stringify(health)}`);
      await sleep(200);
    }
  };

  try {
    // 2. Assignment: every GPU of the type, to one worker.
    const gpuEp = await endpoint('gpu', {
      gpuTypeIds: [typeId],
      gpuCount: ofType.length,
      allowedCudaVersions: [cudaVersion],
      idleTimeout: 10,
    });
    const onGpu = await runsync(gpuEp);
    seen.gpuWorker = onGpu;
    assert.equal(onGpu.env.CUDA_VISIBLE_DEVICES, ofType.map((g) => g.index).join(','));
    assert.equal(onGpu.env.CUDA_DEVICE_ORDER, 'PCI_BUS_ID');
    assert.equal(onGpu.env.RUNPOD_GPU_COUNT, String(ofType.length));
    assert.equal(onGpu.env.RUNPOD_GPU_TYPE_ID, typeId);
    assert.equal(onGpu.cuda.error, undefined, `PyTorch failed in the worker: ${onGpu.cuda.error}`);
    assert.equal(onGpu.cuda.count, ofType.length, 'CUDA in the worker sees a different number of GPUs');
    const uuids = (onGpu.cuda.devices ?? []).map((d) => d.uuid.replace(/^GPU-/, ''));
    assert.deepEqual(
      [...uuids].sort(),
      ofType.map((g) => (g.uuid ?? '').replace(/^GPU-/, '')).sort(),
      'CUDA in the worker sees other GPUs than the ones it was given',
    );
    assert.equal(onGpu.cuda.matmulFinite, true, 'a matrix product on the worker’s GPU failed');
    const [worker] = (await api('GET', `/v1/endpoints/${gpuEp}?includeWorkers=true`)).workers ?? [];
    assert.equal(worker?.gpu?.id, typeId, 'the worker record names another GPU type');
    assert.equal(worker?.gpu?.count, ofType.length);
    step(
      `GPU endpoint: worker ${onGpu.env.RUNPOD_POD_ID} got CUDA_VISIBLE_DEVICES=${onGpu.env.CUDA_VISIBLE_DEVICES}; CUDA sees ${uuids.join(', ')}; a kernel ran`,
    );

    // 3. Exclusivity: the GPUs are held by that worker (idle, inside its idle timeout).
    const waitingEp = await endpoint('gpu-waiting', { gpuTypeIds: [typeId], gpuCount: 1, idleTimeout: 1 });
    const waitingJob = (await api('POST', `/v2/${waitingEp}/run`, { input: {} })).id;
    seen.noCapacity = await untilScaling(waitingEp, 'no-gpu-capacity');
    assert.equal((await api('GET', `/v2/${waitingEp}/status/${waitingJob}`)).status, 'IN_QUEUE');
    step(`second GPU endpoint waits while the GPUs are held: ${seen.noCapacity}`);
    const waited = Date.now();
    let after: Answer;
    for (;;) {
      after = await api('GET', `/v2/${waitingEp}/status/${waitingJob}?wait=5000`);
      if (after.status === 'COMPLETED' || after.status === 'FAILED') break;
      assert.ok(Date.now() - waited < 90_000, `the waiting job never ran: ${JSON.stringify(after)}`);
      await sleep(500);
    }
    assert.equal(after.status, 'COMPLETED', JSON.stringify(after));
    const second = after.output as Probe;
    seen.secondWorker = second;
    assert.equal((await api('GET', `/v1/endpoints/${gpuEp}?includeWorkers=true`)).workers?.length, 0);
    assert.equal(second.env.CUDA_VISIBLE_DEVICES, ofType[0]!.index);
    assert.equal(second.cuda.count, 1);
    assert.equal(second.cuda.matmulFinite, true);
    step(`it ran once the first endpoint's worker idled out, on GPU ${second.env.CUDA_VISIBLE_DEVICES}`);

    // 4. A CPU worker sees no GPU.
    const cpuEp = await endpoint('cpu', { computeType: 'CPU' });
    const onCpu = await runsync(cpuEp);
    seen.cpuWorker = onCpu;
    assert.equal(onCpu.env.CUDA_VISIBLE_DEVICES, '');
    assert.equal(onCpu.cuda.error, undefined, `PyTorch failed in the CPU worker: ${onCpu.cuda.error}`);
    assert.equal(onCpu.cuda.count, 0, 'a CPU worker can see GPUs');
    step('CPU endpoint: CUDA_VISIBLE_DEVICES is empty and CUDA sees no device');

    // 5. CUDA versions that exclude this driver.
    const otherVersion = CUDA_VERSIONS.find((v) => v !== cudaVersion)!;
    const excludedEp = await endpoint('cuda-excluded', {
      gpuTypeIds: [typeId],
      gpuCount: 1,
      allowedCudaVersions: [otherVersion],
    });
    const excludedJob = (await api('POST', `/v2/${excludedEp}/run`, { input: {} })).id;
    seen.neverPlaceable = await untilScaling(excludedEp, 'never-placeable');
    assert.match(String(seen.neverPlaceable), /CUDA/);
    assert.equal((await api('GET', `/v2/${excludedEp}/status/${excludedJob}`)).status, 'IN_QUEUE');
    step(`endpoint allowing CUDA ${otherVersion} only: ${seen.neverPlaceable}`);

    // 6. GPU memory held by a worker's child process is freed with the worker.
    await until('earlier GPU workers gone', 60_000, () => gpuMemoryUsedMiB() < HOLD_MIB / 2);
    const memoryEp = await endpoint('gpu-memory', { gpuTypeIds: [typeId], gpuCount: 1, idleTimeout: 3 });
    const holding = await runsync(memoryEp, { holdGpuMiB: HOLD_MIB });
    await until(`${HOLD_MIB} MiB held`, 10_000, () => gpuMemoryUsedMiB() >= HOLD_MIB);
    const idleFreed = await until(
      'GPU memory freed after the idle timeout',
      60_000,
      () => gpuMemoryUsedMiB() < HOLD_MIB / 2,
    );
    assert.equal(alive(holding.holderPid!), false, 'the holder outlived its worker');
    seen.idleStopFreedAfterMs = idleFreed;
    step(
      `idle timeout: worker ${holding.env.RUNPOD_POD_ID} stopped and its ${HOLD_MIB} MiB freed ${idleFreed} ms after it held them`,
    );

    const killed = await runsync(memoryEp, { holdGpuMiB: HOLD_MIB, newSession: true });
    await until(`${HOLD_MIB} MiB held`, 10_000, () => gpuMemoryUsedMiB() >= HOLD_MIB);
    const pidFile = join(dataDir, 'workers', `${killed.env.RUNPOD_POD_ID}.pid`);
    const workerPid = (JSON.parse(readFileSync(pidFile, 'utf8')) as { pid: number }).pid;
    process.kill(workerPid, 'SIGKILL');
    const crashFreed = await until('GPU memory freed after kill -9', 30_000, () => gpuMemoryUsedMiB() < HOLD_MIB / 2);
    assert.equal(alive(killed.holderPid!), false, 'the holder outlived its killed worker');
    const replacement = await runsync(memoryEp);
    assert.notEqual(replacement.env.RUNPOD_POD_ID, killed.env.RUNPOD_POD_ID);
    assert.equal(replacement.cuda.count, 1);
    assert.equal(replacement.cuda.matmulFinite, true);
    seen.killFreedAfterMs = crashFreed;
    step(
      `kill -9 of worker ${killed.env.RUNPOD_POD_ID}: its ${HOLD_MIB} MiB (held in a session of its own) freed after ${crashFreed} ms; replacement ${replacement.env.RUNPOD_POD_ID} ran on the GPU`,
    );
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

try {
  await main();
  process.stdout.write(`gpu-check passed\n${JSON.stringify({ gpuCheck: 'passed', ...seen })}\n`);
} catch (err) {
  process.stdout.write(`gpu-check FAILED: ${(err as Error).stack ?? String(err)}\n`);
  process.stdout.write(`${JSON.stringify({ gpuCheck: 'failed', ...seen })}\n`);
  process.exitCode = 1;
}
