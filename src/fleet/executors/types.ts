/**
 * The executor seam: how the supervisor starts and stops workers, whatever runs them (local processes, Docker
 * Engine, Kubernetes pods). Executors only start and stop; everything else goes through the worker protocol
 * (DESIGN.md §1, principle 4), so an executor never reports a worker as healthy or busy.
 */
import { memoryLimitMb } from '../../domain/index.ts';

/** Everything an executor needs to start one worker, already resolved from the endpoint and its template. */
export interface WorkerSpec {
  workerId: string;
  endpointId: string;
  /** The template's imageName: `file://<dir>` for the process executor, a container image otherwise. */
  imageName: string;
  /** The template's dockerEntrypoint. */
  entrypoint: string[];
  /** The template's dockerStartCmd. */
  startCmd: string[];
  /** Template env, endpoint env and the worker-protocol variables, merged by the supervisor. */
  env: Record<string, string>;
  /** GPU indices placed by the inventory; [] for a CPU worker. */
  gpuIndices: string[];
  /**
   * A CPU endpoint's instance size (domain cpuWorkerSize): the vCPUs and memory its worker may use. Docker and
   * Kubernetes confine the worker to it, the process executor where it has cgroups (cgroups.ts). Absent for a GPU worker.
   */
  cpu?: { vcpus: number; memoryMb: number };
  /** The network volume's host path, when the endpoint has one. */
  volumePath?: string;
  /** The network volume's id (the Kubernetes executor mounts a claim named after it). */
  volumeId?: string;
  /** Credentials of the template's container registry auth, for pulling imageName (Docker, Kubernetes). */
  registryAuth?: { username: string; password: string };
  /** The template's containerDiskInGb: a limit on the worker's writable filesystem where the executor can set one. */
  containerDiskInGb?: number;
  /** The endpoint's flashboot: the executor may keep a stopped worker to restart it instead of creating a new one. */
  flashboot?: boolean;
  /** The GPU type the inventory placed the worker on ('' for a CPU worker); Kubernetes selects nodes by it. */
  gpuTypeId?: string;
  /** The endpoint's dataCenterIds; Kubernetes restricts placement to nodes labelled with one of them. */
  dataCenterIds?: string[];
  /** The endpoint's CUDA limits; Kubernetes restricts GPU placement to nodes whose driver's CUDA version meets them. */
  allowedCudaVersions?: string[];
  minCudaVersion?: string | null;
}

export interface ExecutorHooks {
  /** One line of the worker's output, without its newline. Must not throw (a throw is swallowed). */
  onLog(stream: 'stdout' | 'stderr', line: string): void;
  /** Called exactly once, when the worker is gone. Must not throw (a throw is swallowed). */
  onExit(info: { code: number | null; signal: string | null }): void;
}

export interface RunningWorker {
  workerId: string;
  pid?: number;
  /**
   * Ask the worker to stop (SIGTERM or the executor's equivalent), force it after graceMs; resolves once gone.
   * `keep`: the worker is stopped for idleness, so an executor with FlashBoot may keep what it stopped (a stopped
   * container) to restart it for a later worker of the same endpoint instead of creating one.
   */
  stop(opts: { graceMs: number; keep?: boolean }): Promise<void>;
}

/** Who an endpoint belongs to, as far as running its image is concerned. */
export interface ImageOwner {
  isAdmin: boolean;
}

export interface Executor {
  readonly kind: string;
  /**
   * null when this executor can run the image for an endpoint of `owner`, else a message that says what to do
   * instead. Without an owner, only whether the image is of a kind this executor runs.
   */
  validateImage(imageName: string, owner?: ImageOwner): string | null;
  /** Resolves once the worker was launched; rejects (never throws asynchronously later) when it could not be. */
  start(spec: WorkerSpec, hooks: ExecutorHooks): Promise<RunningWorker>;
  /** Remove workers left behind by a previous supervisor that died without stopping them; returns how many. */
  cleanupOrphans(): Promise<number>;
  /** Stop every worker this executor started. */
  stopAll(opts: { graceMs: number }): Promise<void>;
}

/** The memory limit of a worker in MiB, 0 for none (domain memoryLimitMb: the node's cap and a CPU worker's own). */
export function workerMemoryMb(nodeCapMb: number, spec: Pick<WorkerSpec, 'cpu'>): number {
  return memoryLimitMb(nodeCapMb, spec.cpu?.memoryMb ?? 0);
}
