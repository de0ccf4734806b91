import type { Job, JobPolicy, JobStatus, SubmitMode, WorkerRecord, WorkerState } from '../../domain/index.ts';

/** Row shapes as node:sqlite returns them, and their mapping to domain records. */

/**
 * The columns a Job is read from, in the order `toJob` reads them. Statements that read jobs select exactly these
 * (never `*`) and return rows as arrays (`SqliteJobs.jobsQ`): node:sqlite builds an object per row by looking up every
 * column name in V8's string table, which made reading a job row cost ~4.5 µs against ~2 µs as an array (measured).
 */
export const JOB_COLUMNS =
  'id, endpoint_id, status, input, webhook, policy, policy_given, policy_json, s3_config, mode, retention_ms, ' +
  'created_at, queued_at, started_at, completed_at, expires_at, attempt, retries, worker_id, output, error';

/** A job row as an array, in JOB_COLUMNS order. */
export type JobRow = readonly [
  id: string,
  endpointId: string,
  status: string,
  input: string,
  webhook: string | null,
  policy: string,
  policyGiven: number,
  policyJson: string | null,
  s3Config: string | null,
  mode: string,
  retentionMs: number,
  createdAt: number,
  queuedAt: number,
  startedAt: number | null,
  completedAt: number | null,
  expiresAt: number,
  attempt: number,
  retries: number,
  workerId: string | null,
  output: string | null,
  error: string | null,
];

export function toJob(r: JobRow): Job {
  return {
    id: r[0],
    endpointId: r[1],
    status: r[2] as JobStatus,
    inputJson: r[3],
    webhook: r[4],
    policy: JSON.parse(r[5]) as JobPolicy,
    policyGiven: r[6] === 1,
    policyJson: r[7],
    s3ConfigSealed: r[8],
    mode: r[9] as SubmitMode,
    retentionMs: r[10],
    createdAt: r[11],
    queuedAt: r[12],
    startedAt: r[13],
    completedAt: r[14],
    expiresAt: r[15],
    attempt: r[16],
    retries: r[17],
    workerId: r[18],
    outputJson: r[19],
    errorJson: r[20],
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
  retired_at: number | null;
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
    retiredAt: r.retired_at,
  };
}
