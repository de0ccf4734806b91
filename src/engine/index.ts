export { Bus, topics, type Waiter } from './bus.ts';
export { monotonicWallClock, type Clock } from './clock.ts';
export {
  JobEngine,
  isFinalStatus,
  type EngineOptions,
  type JobEvent,
  type JobEventListener,
  type Submission,
  type TerminalListener,
} from './engine.ts';
export { Sweeper, type SweeperOptions } from './sweeper.ts';
export { WorkerGateway, type PingReport, type WorkerGatewayOptions } from './workers.ts';
export { statusBody, streamBody, workerJobBody, type TakenJob } from './views.ts';
export { classifyDone, streamChunks, parseWorkerJson } from './worker-posts.ts';
export { Accounts, generateKey, hashKey, type Principal } from './accounts.ts';
export { Resources, type EndpointChange, type ImageValidator } from './resources.ts';
export { endpointHealth, workerCounts, type EndpointHealth } from './health.ts';
export { Volumes, type VolumeInput } from './volumes.ts';
export { RegistryAuths, type RegistryAuthView, type RegistryCredentials } from './registry-auths.ts';
export { UserSecrets, MissingSecretsError, type SecretInput, type SecretView } from './user-secrets.ts';
export {
  SecretBox,
  SecretKeyMismatchError,
  SecretUnreadableError,
  checkSecretKey,
  decodeSecretKey,
  isSealed,
  loadSecretKey,
} from './secrets.ts';
export {
  Billing,
  usageOf,
  type BillingRecord,
  type EndpointBillingQuery,
  type PodBillingQuery,
  type VolumeBillingRecord,
} from './billing.ts';
