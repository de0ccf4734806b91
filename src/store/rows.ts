import type { Job, JobStatus, UsageRecord } from '../domain/index.ts';
import type { JobSummary } from './types-requests.ts';
import type { WebhookAttempt, WebhookDelivery, WebhookDeliveryState } from './types-webhooks.ts';

/**
 * Rows both stores read with the same columns and types (node:sqlite's numbers, and pg's BIGINTs parsed to numbers,
 * see postgres/db.ts), and their domain records. The job and worker rows differ between the stores and stay in each.
 */

/** The columns a job list reads (`/requests`, the console). */
export const SUMMARY_COLUMNS = 'id, status, created_at, queued_at, started_at, completed_at, worker_id, error, retries';

export interface SummaryRow {
  id: string;
  status: string;
  created_at: number;
  queued_at: number;
  started_at: number | null;
  completed_at: number | null;
  worker_id: string | null;
  error: string | null;
  retries: number;
}

export const toSummary = (r: SummaryRow): JobSummary => ({
  id: r.id,
  status: r.status as JobStatus,
  createdAt: r.created_at,
  queuedAt: r.queued_at,
  startedAt: r.started_at,
  completedAt: r.completed_at,
  workerId: r.worker_id,
  errorJson: r.error,
  retries: r.retries,
});

export interface UsageRow {
  worker_id: string;
  user_id: string;
  endpoint_id: string;
  template_id: string;
  image_name: string;
  gpu_type_id: string | null;
  gpu_count: number;
  cpu_flavor_id: string | null;
  data_center_id: string;
  started_at: number;
  ended_at: number | null;
}

export const toUsage = (r: UsageRow): UsageRecord => ({
  workerId: r.worker_id,
  userId: r.user_id,
  endpointId: r.endpoint_id,
  templateId: r.template_id,
  imageName: r.image_name,
  gpuTypeId: r.gpu_type_id,
  gpuCount: r.gpu_count,
  cpuFlavorId: r.cpu_flavor_id,
  dataCenterId: r.data_center_id,
  startedAt: r.started_at,
  endedAt: r.ended_at,
});

export interface DeliveryRow {
  id: string;
  job_id: string;
  endpoint_id: string;
  user_id: string | null;
  url: string;
  job: string;
  state: string;
  attempts: number;
  next_attempt_at: number | null;
  created_at: number;
  finished_at: number | null;
}

export const toDelivery = (r: DeliveryRow): WebhookDelivery => ({
  id: r.id,
  jobId: r.job_id,
  endpointId: r.endpoint_id,
  userId: r.user_id,
  url: r.url,
  job: JSON.parse(r.job) as Job,
  state: r.state as WebhookDeliveryState,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

export interface AttemptRow {
  attempt: number;
  at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

export const toAttempt = (a: AttemptRow): WebhookAttempt => ({
  attempt: a.attempt,
  at: a.at,
  durationMs: a.duration_ms,
  statusCode: a.status_code,
  error: a.error,
});
