import type { Store } from '../store/index.ts';

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

/** The /health body (interface §4.1 rule 7), with the extra worker states the hosted service also reports. */
export async function endpointHealth(
  store: Store,
  endpointId: string,
  fleet?: { throttled: number; reason: string | null; message: string | null },
): Promise<EndpointHealth> {
  const [counts, workers, load] = await Promise.all([
    store.jobCounts(endpointId),
    store.listWorkers(endpointId),
    store.runningByWorker(endpointId),
  ]);
  const w = { idle: 0, running: 0, initializing: 0, ready: 0, throttled: 0, unhealthy: 0, standby: 0 };
  for (const worker of workers) {
    if ((load[worker.id] ?? 0) > 0) w.running++;
    else if (worker.state === 'idle' || worker.state === 'running') w.idle++;
    else w[worker.state]++;
  }
  w.ready = w.idle;
  w.throttled += fleet?.throttled ?? 0;
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
