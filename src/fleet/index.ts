export { decideScaling, type ScalingDecision, type ScalerPolicy, type WorkerView } from './autoscaler.ts';
export { ProcessExecutor } from './executors/process.ts';
export type { Executor, ExecutorHooks, RunningWorker, WorkerSpec } from './executors/types.ts';
export {
  discoverGpus,
  GPU_POOLS,
  GpuInventory,
  parseDeclaredGpus,
  parseGpuIds,
  validateGpuIds,
  type Gpu,
  type GpuStock,
} from './gpus.ts';
export { discoverCudaVersion, isCudaVersion } from './cuda.ts';
export { LogBook, type LogLine, type LogQuery } from './logs.ts';
export { FleetStatusShare } from './shared-status.ts';
export { NO_FLEET_STATUS, Supervisor, type FleetStatus, type SupervisorOptions } from './supervisor.ts';
export { workerEnv } from './worker-env.ts';
