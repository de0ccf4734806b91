import type { Job, JobPolicy, JobStatus, SubmitMode, WorkerRecord, WorkerState } from '../../domain/index.ts';

/** Row shapes as pg returns them (BIGINT already parsed to numbers, see db.ts), and their domain records. */
export interface JobRow {
  seq: number;
  id: string;
  endpoint_id: string;
  status: string;
  input: string;
  webhook: string | null;
  policy: string;
  policy_given: boolean;
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
    policyGiven: r.policy_given,
    policyJson: r.policy_json,
    s3ConfigSealed: r.s3_config,
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

/** Queue order: submission (or retry) time, then insertion order, as SQLite's (queued_at, rowid). */
export function byQueueOrder(rows: JobRow[]): Job[] {
  return rows.sort((a, b) => a.queued_at - b.queued_at || a.seq - b.seq).map(toJob);
}

export interface WorkerRow {
  id: string;
  endpoint_id: string;
  key_hash: string | null;
  version: number;
  managed: boolean;
  state: string;
  reason: string | null;
  gpu_type_id: string | null;
  gpu_count: number;
  created_at: number;
  last_seen_at: number;
  retired: boolean;
  retired_at: number | null;
}

export function toWorker(r: WorkerRow): WorkerRecord {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    keyHash: r.key_hash,
    version: r.version,
    managed: r.managed,
    state: r.state as WorkerState,
    reason: r.reason,
    gpuTypeId: r.gpu_type_id,
    gpuCount: r.gpu_count,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    retired: r.retired,
    retiredAt: r.retired_at,
  };
}

/** Documents are stored as JSON text and come back parsed. */
export const docs = <T>(rows: Array<{ doc: string }>): T[] => rows.map((r) => JSON.parse(r.doc) as T);
