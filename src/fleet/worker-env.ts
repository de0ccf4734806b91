import { hostname } from 'node:os';
import type { Endpoint, Template } from '../domain/index.ts';

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
  volumePath?: string | undefined;
}

/**
 * The environment of a managed worker: template env, then endpoint env, then the worker-protocol variables
 * (spec/worker-protocol.md §1.2, checklist §1.16), which always win so that a template cannot point a worker
 * at the wrong server or identity.
 */
export function workerEnv(i: WorkerEnvInput): Record<string, string> {
  const base = `${i.publicUrl.replace(/\/$/, '')}/v2/${i.endpoint.id}`;
  // Every template carries a `?`: the SDK appends its parameters with a literal `&` (spec §1.4).
  const q = `?gpu=${encodeURIComponent(i.gpuTypeId || 'CPU')}`;
  return {
    ...i.template.env,
    ...i.endpoint.env,
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
    // Workers must start on machines without internet: the SDK's network fitness check dials 8.8.8.8 (spec §1.2).
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    ...(i.gpuIndices.length === 0 ? { RUNPOD_SKIP_GPU_CHECK: 'true' } : {}),
    // Unbuffered output, so log lines reach the log book as they are written.
    PYTHONUNBUFFERED: '1',
    ...(i.volumePath ? { RUNPOD_VOLUME_PATH: i.volumePath } : {}),
  };
}
