import type { Job, JobPolicy, JobStatus, SubmitMode, WorkerRecord, WorkerState } from '../../domain/index.ts';

/** Row shapes as node:sqlite returns them, and their mapping to domain records. */
export interface JobRow {
  id: string;
  endpoint_id: string;
  status: string;
  input: string;
  webhook: string | null;
  policy: string;
  policy_given: number;
  policy_json: string | null;
  s3_config: string | null;
  mode: string;
  retention_ms: number;
  created_at: number;
  queued_at: number;
  started_at: number | null;
  completed_at: number | null;
  expires_at: number;
  attempt: number;
  retries: number;
  worker_id: string | null;
  output: string | null;
  error: string | null;
}

export function toJob(r: JobRow): Job {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    status: r.status as JobStatus,
    inputJson: r.input,
    webhook: r.webhook,
    policy: JSON.parse(r.policy) as JobPolicy,
    policyGiven: r.policy_given === 1,
    policyJson: r.policy_json,
    s3ConfigJson: r.s3_config,
    mode: r.mode as SubmitMode,
    retentionMs: r.retention_ms,
    createdAt: r.created_at,
    queuedAt: r.queued_at,
    startedAt: r.started_at,
    completedAt: r.completed_at,
    expiresAt: r.expires_at,
    attempt: r.attempt,
    retries: r.retries,
    workerId: r.worker_id,
    outputJson: r.output,
    errorJson: r.error,
  };
}

export interface WorkerRow {
  id: string;
  endpoint_id: string;
  key_hash: string | null;
  version: number;
  managed: number;
  state: string;
  reason: string | null;
  gpu_type_id: string | null;
  gpu_count: number;
  created_at: number;
  last_seen_at: number;
  retired: number;
}

export function toWorker(r: WorkerRow): WorkerRecord {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    keyHash: r.key_hash,
    version: r.version,
    managed: r.managed === 1,
    state: r.state as WorkerState,
    reason: r.reason,
    gpuTypeId: r.gpu_type_id,
    gpuCount: r.gpu_count,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    retired: r.retired === 1,
  };
}
