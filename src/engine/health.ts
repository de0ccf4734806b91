import type { WorkerRecord } from '../domain/index.ts';
import type { SharedFleetStatus, Store } from '../store/index.ts';

export interface EndpointHealth {
  /** Why queued jobs wait, when they do (`no-worker-yet`, `crash-loop`, `max-workers-reached`, …). */
  scaling?: { reason: string; message: string | null };
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  workers: {
    idle: number;
    running: number;
    initializing: number;
    ready: number;
    throttled: number;
    unhealthy: number;
    standby: number;
  };
}

/**
 * The supervisor's reasons that explain queued jobs (its pass gives none when nothing is queued): the status is as
 * old as its last pass, so once the queue is empty they are dropped rather than shown for jobs already done.
 */
const WHILE_QUEUED = new Set([
  'max-workers-zero',
  'low-priority-waiting',
  'no-worker-yet',
  'scaling-up',
  'workers-stopping',
  'max-workers-reached',
  'all-workers-busy',
]);

/**
 * Workers by state, as /health and the metrics count them: a worker holding a job is running whatever its recorded
 * state; the fleet status adds the workers wanted but not started (throttled) and those a crash loop holds back
 * (unhealthy). The latter stand for the same crashed workers as the supervisor's dead records (kept 30 s while the
 * backoff reaches 60 s): the larger of the two counts, not their sum.
 */
export function workerCounts(
  workers: readonly WorkerRecord[],
  load: Record<string, number>,
  fleet: Pick<SharedFleetStatus, 'throttled' | 'unhealthy'> | undefined,
): Record<WorkerRecord['state'], number> {
  const w: Record<WorkerRecord['state'], number> = {
    idle: 0,
    running: 0,
    initializing: 0,
    throttled: 0,
    unhealthy: 0,
    standby: 0,
  };
  let crashed = 0;
  for (const worker of workers) {
    if ((load[worker.id] ?? 0) > 0) w.running++;
    else if (worker.state === 'idle' || worker.state === 'running') w.idle++;
    else if (worker.state === 'unhealthy' && worker.managed) crashed++;
    else w[worker.state]++;
  }
  w.throttled += fleet?.throttled ?? 0;
  w.unhealthy += Math.max(crashed, fleet?.unhealthy ?? 0);
  return w;
}

/** The /health body (interface §4.1 rule 7), with the extra worker states the hosted service also reports. */
export async function endpointHealth(
  store: Store,
  endpointId: string,
  fleet?: SharedFleetStatus,
): Promise<EndpointHealth> {
  const [counts, workers, load] = await Promise.all([
    store.jobCounts(endpointId),
    store.listWorkers(endpointId),
    store.runningByWorker(endpointId),
  ]);
  const c = workerCounts(workers, load, fleet);
  // In the order /health has always written them (ready, an alias of idle, after initializing).
  const w = {
    idle: c.idle,
    running: c.running,
    initializing: c.initializing,
    ready: c.idle,
    throttled: c.throttled,
    unhealthy: c.unhealthy,
    standby: c.standby,
  };
  const stale = counts.inQueue === 0 && WHILE_QUEUED.has(fleet?.reason ?? '');
  return {
    ...(fleet?.reason && !stale ? { scaling: { reason: fleet.reason, message: fleet.message } } : {}),
    jobs: {
      completed: counts.completed,
      failed: counts.failed + counts.timedOut,
      inProgress: counts.inProgress,
      inQueue: counts.inQueue,
      retried: counts.retried,
    },
    workers: w,
  };
}
