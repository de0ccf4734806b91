/** Workers as the server sees them: a lease kept alive by the worker's requests (pings, takes, results). */

/**
 * `standby`: a FlashBoot worker kept started while its endpoint is scaled to zero; it is not counted or billed and
 * becomes a normal worker the moment it takes a job.
 */
export type WorkerState = 'initializing' | 'idle' | 'running' | 'throttled' | 'unhealthy' | 'standby';

export interface WorkerRecord {
  id: string;
  endpointId: string;
  /** SHA-256 of the worker's own key (RUNPOD_AI_API_KEY), null for workers that use their owner's API key. */
  keyHash: string | null;
  /** Endpoint version the worker was started with; external workers take the current one. */
  version: number;
  /** Whether Wharf's supervisor started it (and so may stop it). */
  managed: boolean;
  state: WorkerState;
  /** Machine-readable reason for the state (`crash-loop`, `fitness-check-failed`, …). */
  reason: string | null;
  gpuTypeId: string | null;
  gpuCount: number;
  createdAt: number;
  lastSeenAt: number;
  /** The worker asked to be recycled (stopPod), or was retired: it gets no more jobs. */
  retired: boolean;
  /**
   * When it was retired (ms), null when it is not, or when it was retired before the time was kept (schema 8/9).
   * Stored, so every node and a restarted server see how long ago a worker joined from outside was retired.
   */
  retiredAt: number | null;
}

/**
 * Whether a new job may be handed straight to this worker, waiting in a take, on `endpointId` (the store's
 * hand-off, WorkerGateway): not retired (a worker of an older endpoint version is retired by its supervisor once its
 * replacement is ready, and takes jobs until then), and not written off by the lease sweeper (its take revives it
 * first, then looks at the queue itself). The PostgreSQL store states the same rule in SQL (store/postgres/jobs.ts,
 * HAND_OFF).
 */
export function mayHandJobTo(worker: WorkerRecord, endpointId: string): boolean {
  return (
    worker.endpointId === endpointId &&
    !worker.retired &&
    !(worker.state === 'unhealthy' && worker.reason === 'lease-expired')
  );
}
