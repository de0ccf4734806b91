// The shapes the console reads come from the client SDK (src/sdk/client/types.ts), under the names the pages use.
export type {
  ApiKey as KeyView,
  BillingRecord,
  CreatedApiKey,
  Endpoint as EndpointView,
  EndpointHealth as Health,
  JobStatus as JobStatusView,
  JobStatusName as JobStatus,
  LogLine,
  NetworkVolume as VolumeView,
  Pod as WorkerView,
  RegistryAuth as RegistryAuthView,
  RequestSummary as JobSummary,
  Secret as SecretView,
  Template as TemplateView,
  VolumeBillingRecord,
} from '../../src/sdk/client/index.ts';
export { isFinalStatus } from '../../src/sdk/client/index.ts';

export type WorkerState = 'initializing' | 'idle' | 'running' | 'throttled' | 'unhealthy' | 'standby';
/** The order worker states are listed in. */
export const WORKER_STATES: readonly WorkerState[] = [
  'running',
  'idle',
  'initializing',
  'throttled',
  'standby',
  'unhealthy',
];
