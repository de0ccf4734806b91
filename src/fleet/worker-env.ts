import { hostname } from 'node:os';
import { cpuWorkerSize, memoryLimitMb, type Endpoint, type Template } from '../domain/index.ts';
import { MissingSecretsError } from '../engine/index.ts';

export interface WorkerEnvInput {
  publicUrl: string;
  endpoint: Endpoint;
  template: Template;
  workerId: string;
  workerKey: string;
  pingIntervalMs: number;
  gpuTypeId: string;
  gpuIndices: string[];
  dataCenterId: string;
  /** The node's memory cap per worker in MiB (`--worker-memory-mb`), 0 or absent for none. */
  memoryCapMb?: number | undefined;
  volumePath?: string | undefined;
  /** The owner's secrets that the template and endpoint env reference (secretReferences), by name. */
  secrets?: ReadonlyMap<string, string>;
}

/**
 * `{{ RUNPOD_SECRET_<name> }}` in an env value, whitespace inside the braces optional. Everything up to the closing
 * braces is the name, so that a reference naming no secret (a typo, a character names cannot hold) fails the start
 * instead of reaching the worker as text.
 */
const SECRET_REFERENCE = /\{\{\s*RUNPOD_SECRET_([^\s{}]*)\s*\}\}/g;

/** The names of the secrets the env values reference. */
export function secretReferences(...envs: Array<Record<string, string>>): Set<string> {
  const names = new Set<string>();
  for (const env of envs) {
    for (const value of Object.values(env)) for (const m of value.matchAll(SECRET_REFERENCE)) names.add(m[1]!);
  }
  return names;
}

/** The env with every secret reference replaced by its value; a reference `secrets` lacks is a MissingSecretsError. */
function withSecrets(env: Record<string, string>, secrets: ReadonlyMap<string, string>): Record<string, string> {
  const missing = [...secretReferences(env)].filter((name) => !secrets.has(name));
  if (missing.length > 0) throw new MissingSecretsError(missing);
  const out: Record<string, string> = {};
  // A replacer function: a value holding `$&` or `$1` must be inserted as it is.
  for (const [key, value] of Object.entries(env))
    out[key] = value.replace(SECRET_REFERENCE, (_, name: string) => secrets.get(name)!);
  return out;
}

/**
 * The environment of a managed worker: template env, then endpoint env (both with their secret references
 * replaced by the owner's values), then the worker-protocol variables
 * (spec/worker-protocol.md §1.2, checklist §1.16), which always win so that a template cannot point a worker
 * at the wrong server or identity.
 */
export function workerEnv(i: WorkerEnvInput): Record<string, string> {
  const base = `${i.publicUrl.replace(/\/$/, '')}/v2/${i.endpoint.id}`;
  // Every template carries a `?`: the SDK appends its parameters with a literal `&` (spec §1.4).
  const q = `?gpu=${encodeURIComponent(i.gpuTypeId || 'CPU')}`;
  const secrets = i.secrets ?? new Map<string, string>();
  const cpu = cpuWorkerSize(i.endpoint);
  return {
    ...withSecrets(i.template.env, secrets),
    ...withSecrets(i.endpoint.env, secrets),
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID${q}`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID${q}`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID${q}`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID${q}`,
    RUNPOD_AI_API_KEY: i.workerKey,
    RUNPOD_POD_ID: i.workerId,
    RUNPOD_ENDPOINT_ID: i.endpoint.id,
    RUNPOD_PING_INTERVAL: String(Math.max(1000, i.pingIntervalMs)),
    RUNPOD_POD_HOSTNAME: `${i.workerId}-${hostname()}`,
    RUNPOD_DC_ID: i.dataCenterId,
    RUNPOD_GPU_COUNT: String(i.gpuIndices.length),
    RUNPOD_GPU_TYPE_ID: i.gpuTypeId,
    // A CPU worker's size, as the hosted pods name theirs (code sizes its process pools by RUNPOD_CPU_COUNT, as
    // axolotl does, and its memory use by RUNPOD_MEM_GB): the memory it may use, the node's cap where smaller, in
    // whole GB as the hosted pods say it (at least 1). A GPU worker has no size: neither.
    ...(cpu ? { RUNPOD_CPU_COUNT: String(cpu.vcpus), RUNPOD_MEM_GB: memoryGb(cpu.memoryMb, i.memoryCapMb) } : {}),
    // Workers must start on machines without internet: the SDK's network fitness check dials 8.8.8.8 (spec §1.2).
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    ...(i.gpuIndices.length === 0 ? { RUNPOD_SKIP_GPU_CHECK: 'true' } : {}),
    // Unbuffered output, so log lines reach the log book as they are written.
    PYTHONUNBUFFERED: '1',
    ...(i.volumePath ? { RUNPOD_VOLUME_PATH: i.volumePath } : {}),
  };
}

/** Whole GB of memory a worker may use: its own, or the node's cap where that is smaller; at least 1. */
function memoryGb(ownMb: number, capMb: number | undefined): string {
  return String(Math.max(1, Math.floor(memoryLimitMb(capMb ?? 0, ownMb) / 1024)));
}
