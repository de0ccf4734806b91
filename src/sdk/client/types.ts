// The shapes the Wharf API answers with and accepts (docs/ and spec/rest-v1.openapi.json). Standalone on purpose:
// the client is bundled for browsers and must not pull in server modules, even for types.

// ---------------------------------------------------------------------------------------------------------------
// Queue API (/v2/{endpointId}/…)

export type JobStatusName = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT';

/** The four states a job never leaves. */
export const FINAL_STATUSES: readonly JobStatusName[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
export const isFinalStatus = (status: string): boolean => (FINAL_STATUSES as readonly string[]).includes(status);

export interface QueueReason {
  /** `no-worker-yet`, `scaling-up`, `all-workers-busy`, `max-workers-reached`, `crash-loop`, … */
  reason: string;
  message: string | null;
}

/** `/status`, `/status-sync` and `/runsync` answers. */
export interface JobStatus<O = unknown> {
  id: string;
  status: JobStatusName;
  output?: O;
  /** What the worker reported on failure: usually a JSON string `{error_type, error_message, error_traceback}`. */
  error?: unknown;
  /** ms the job waited in the queue. */
  delayTime?: number;
  /** ms the job ran (so far, while IN_PROGRESS). */
  executionTime?: number;
  workerId?: string;
  /** Attempts after the first (a crashed worker's job is retried). */
  retries?: number;
  /** Why an IN_QUEUE job waits, when the server knows. */
  queueReason?: QueueReason;
}

export interface ExecutionPolicy {
  /** ms; overrides the endpoint's execution timeout for this job. */
  executionTimeout?: number;
  /** The job does not make the endpoint scale up. */
  lowPriority?: boolean;
  /** ms from submission after which the job is deleted, whatever its state. */
  ttl?: number;
}

export interface S3Config {
  accessId: string;
  accessSecret: string;
  bucketName: string;
  endpointUrl: string;
  objectPath?: string;
}

/** A submission with options. A bare input is wrapped as `{input}` by `run` and `runSync`. */
export interface SubmitRequest<I> {
  input: I;
  /** http(s) URL POSTed the job's final status. */
  webhook?: string;
  policy?: ExecutionPolicy;
  s3Config?: S3Config;
}

export interface RunResult {
  id: string;
  status: JobStatusName;
}

export interface CancelResult {
  id: string;
  status: JobStatusName;
}

export type RetryResult = CancelResult;

export interface PurgeResult {
  removed: number;
  status: string;
}

export interface EndpointHealth {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  workers: {
    idle: number;
    running: number;
    initializing: number;
    ready: number;
    throttled: number;
    unhealthy?: number;
    standby?: number;
  };
  /** Why queued jobs wait, when they do. */
  scaling?: QueueReason;
}

export interface RequestSummary {
  id: string;
  status: JobStatusName;
  createdAt: string;
  delayTime: number | null;
  executionTime: number | null;
  workerId: string | null;
  error: unknown;
  retries: number;
}

export interface RequestsPage {
  requests: RequestSummary[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

export interface WebhookDelivery {
  id: string;
  url: string;
  jobStatus: JobStatusName;
  state: string;
  createdAt: string | null;
  nextAttemptAt: string | null;
  finishedAt: string | null;
  attempts: {
    attempt: number;
    at: string | null;
    durationMs: number | null;
    statusCode: number | null;
    error: string | null;
  }[];
}

// ---------------------------------------------------------------------------------------------------------------
// Management API (/v1)

export type ComputeType = 'GPU' | 'CPU';
export type ScalerType = 'QUEUE_DELAY' | 'REQUEST_COUNT';

export interface Template {
  id: string;
  name: string;
  imageName: string;
  category: string;
  containerDiskInGb: number;
  containerRegistryAuthId?: string;
  dockerEntrypoint: string[];
  dockerStartCmd: string[];
  earned: number;
  env: Record<string, string>;
  isPublic: boolean;
  isRunpod: boolean;
  isServerless: boolean;
  ports: string[];
  readme: string;
  runtimeInMin: number;
  volumeInGb: number;
  volumeMountPath: string;
}

export interface TemplateUpdateInput {
  name?: string;
  imageName?: string;
  containerDiskInGb?: number;
  containerRegistryAuthId?: string;
  dockerEntrypoint?: string[];
  dockerStartCmd?: string[];
  env?: Record<string, string>;
  isPublic?: boolean;
  /** `8000/http`, `22/tcp`. */
  ports?: string[];
  readme?: string;
  volumeInGb?: number;
  volumeMountPath?: string;
}

export interface TemplateCreateInput extends TemplateUpdateInput {
  name: string;
  /** A container image, or `file://<dir>` for the process executor. */
  imageName: string;
  category?: 'NVIDIA' | 'AMD' | 'CPU';
  isServerless?: boolean;
}

/** A worker shown as a REST v1 pod. */
export interface Pod {
  id: string;
  name: string;
  endpointId: string;
  desiredStatus: string;
  workerState: string;
  workerStateReason?: string;
  computeType: ComputeType;
  gpu?: { id: string; count: number; displayName: string; securePrice: number };
  costPerHr: number;
  image?: string;
  templateId: string;
  lastStartedAt: string;
  lastStatusChange: string;
  [field: string]: unknown;
}

export interface Endpoint {
  id: string;
  name: string;
  userId: string;
  templateId: string;
  /** With `includeTemplate`. */
  template?: Template;
  type: string;
  computeType: ComputeType;
  createdAt: string;
  dataCenterIds: string[];
  env: Record<string, string>;
  executionTimeoutMs: number;
  flashboot: boolean;
  /** A CPU endpoint's flavors (`cpu3c`, …); empty on a GPU endpoint. */
  cpuFlavorIds: string[];
  /** A CPU endpoint's vCPUs per worker, as set (not a limit the executor enforces). */
  vcpuCount: number;
  gpuCount: number;
  gpuTypeIds: string[];
  /** The same choice as GraphQL's `gpuIds` string (`ADA_24,-NVIDIA GeForce RTX 4090`). */
  gpuIds: string;
  instanceIds: string[];
  idleTimeout: number;
  allowedCudaVersions: string[];
  minCudaVersion?: string;
  networkVolumeId?: string;
  networkVolumeIds: string[];
  scalerType: ScalerType;
  scalerValue: number;
  version: number;
  /** With `includeWorkers`. */
  workers?: Pod[];
  workersMax: number;
  workersMin: number;
}

export interface EndpointUpdateInput {
  name?: string;
  templateId?: string;
  gpuTypeIds?: string[];
  gpuCount?: number;
  cpuFlavorIds?: string[];
  vcpuCount?: number;
  dataCenterIds?: string[];
  allowedCudaVersions?: string[];
  /** null takes it off. */
  minCudaVersion?: string | null;
  executionTimeoutMs?: number;
  flashboot?: boolean;
  idleTimeout?: number;
  networkVolumeId?: string;
  networkVolumeIds?: string[];
  scalerType?: ScalerType;
  scalerValue?: number;
  workersMax?: number;
  workersMin?: number;
  env?: Record<string, string>;
}

export interface EndpointCreateInput extends EndpointUpdateInput {
  templateId: string;
  computeType?: ComputeType;
}

export interface EndpointQuery {
  includeTemplate?: boolean;
  includeWorkers?: boolean;
}

export interface NetworkVolume {
  id: string;
  name: string;
  /** GB. */
  size: number;
  dataCenterId: string;
}

export interface NetworkVolumeCreateInput {
  name: string;
  size: number;
  dataCenterId: string;
}

export interface NetworkVolumeUpdateInput {
  name?: string;
  /** GB; may only grow. */
  size?: number;
}

/** Registry credentials are never shown again: only id and name. */
export interface RegistryAuth {
  id: string;
  name: string;
}

export interface RegistryAuthCreateInput {
  name: string;
  username: string;
  password: string;
}

/** A named secret (`{{ RUNPOD_SECRET_<name> }}` in env): its value is never returned. */
export interface Secret {
  id: string;
  name: string;
  description: string;
  /** ISO 8601. */
  createdAt: string;
}

export interface SecretCreateInput {
  /** Letters, digits, _ and - (at most 64); unique among your secrets. */
  name: string;
  value: string;
  description?: string;
}

export interface PodListQuery {
  includeMachine?: boolean;
  includeNetworkVolume?: boolean;
  includeSavingsPlans?: boolean;
  includeTemplate?: boolean;
  /** Worker pods are listed only with this (as on the hosted API); true by default here. */
  includeWorkers?: boolean;
  computeType?: ComputeType;
  cpuFlavorId?: string[];
  dataCenterId?: string[];
  desiredStatus?: 'RUNNING' | 'EXITED' | 'TERMINATED';
  endpointId?: string;
  gpuTypeId?: string[];
  id?: string;
  imageName?: string;
  name?: string;
  networkVolumeId?: string;
  templateId?: string;
}

export interface PodQuery {
  includeMachine?: boolean;
  includeNetworkVolume?: boolean;
  includeSavingsPlans?: boolean;
  includeTemplate?: boolean;
  includeWorkers?: boolean;
}

export type BucketSize = 'hour' | 'day' | 'week' | 'month' | 'year';

export interface BillingWindow {
  bucketSize?: BucketSize;
  /** ISO 8601 date-time. */
  startTime?: string;
  endTime?: string;
}

export interface EndpointBillingQuery extends BillingWindow {
  dataCenterId?: string[];
  endpointId?: string;
  gpuTypeId?: string[];
  grouping?: 'endpointId' | 'podId' | 'gpuTypeId';
  imageName?: string;
  templateId?: string;
}

export interface PodBillingQuery extends BillingWindow {
  gpuTypeId?: string;
  grouping?: 'podId' | 'gpuTypeId';
  podId?: string;
}

export interface BillingRecord {
  /** Start of the bucket. */
  time: string;
  /** USD. */
  amount: number;
  timeBilledMs: number;
  diskSpaceBilledGb: number;
  endpointId?: string;
  podId?: string;
  gpuTypeId?: string;
}

export interface VolumeBillingRecord {
  time: string;
  amount: number;
  diskSpaceBilledGb: number;
  highPerformanceStorageAmount: number;
  highPerformanceStorageDiskSpaceBilledGb: number;
}

export type KeyScope = 'all' | 'read' | 'restricted';

export interface ApiKey {
  id: string;
  name: string;
  /** The first characters of the key, to recognise it. */
  prefix: string;
  scope: KeyScope;
  endpointIds: string[];
  createdAt: string;
  revokedAt: string | null;
}

/** A key as created: the only time `key` is shown. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface KeyCreateInput {
  name: string;
  /** Default `all`. */
  scope?: KeyScope;
  /** Required for (and only for) `restricted` keys. */
  endpointIds?: string[];
}

export interface ServerlessDiscount {
  discountFactor: number;
  type: 'SERVERLESS' | 'SERVERLESS_LO_VRAM' | 'SERVERLESS_HI_VRAM';
  expirationDate: string;
}

export interface User {
  id: string;
  name: string;
  isAdmin: boolean;
  createdAt: string;
  serverlessDiscount: ServerlessDiscount | null;
}

export interface CreatedUser extends User {
  /** The user's first API key, shown once. */
  key: string;
  apiKey: ApiKey;
}

export interface LogLine {
  /** Position in the endpoint's log; pass the last one as `after` to read on. */
  seq: number;
  time: string;
  workerId: string;
  jobId: string | null;
  stream: 'stdout' | 'stderr';
  level: string | null;
  message: string;
}

export interface LogsQuery {
  workerId?: string;
  jobId?: string;
  /** Only lines after this `seq`. */
  after?: number;
  limit?: number;
  /** Wait (up to 20 s on the server) for lines after `after` when there are none yet. */
  follow?: boolean;
}

export interface LogsPage {
  lines: LogLine[];
  /** The `after` of the next call. */
  next: number;
}

export interface WebhookSecret {
  secret: string;
  algorithm: string;
}
