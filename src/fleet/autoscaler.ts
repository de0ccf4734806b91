/**
 * The autoscaler's decision: a pure function from (policy, queue, workers, capacity) to what the supervisor should
 * do this tick. No clock, no I/O; the supervisor turns the decision into starts and stops.
 *
 * Rules (DESIGN.md §3 "Autoscaling"):
 * - Live workers are `initializing`, `idle` and `running` ones. `unhealthy` workers are not live (the supervisor
 *   replaces them); `throttled` workers are wanted-but-not-placed and never live.
 * - `queue.inQueue` counts normal-priority queued jobs only; low-priority ones are in `inQueueLowPriority` and never
 *   add workers (nothing below reads it except the idle-timeout rule), but existing workers serve them.
 * - desired = clamp(workersMin, workersMax, f); when workersMin > workersMax, workersMax wins.
 *   - REQUEST_COUNT: f = ceil((inQueue + inProgress) / scalerValue).
 *   - QUEUE_DELAY: f = busy (running + initializing)
 *       + idle workers about to take queued jobs (at most inQueue)
 *       + throttled workers while jobs are queued (the demand they stand for is still unmet)
 *       + 1 while the oldest queued job has waited longer than scalerValue seconds, no idle worker exists and no
 *         throttled one already stands for that extra worker (so waiting on capacity does not ratchet up).
 *   - Both: with queued jobs and zero live workers f >= 1 at once — scale from zero must not wait scalerValue.
 * - Stops only ever name `idle` workers; running and initializing workers are never stopped (a running worker
 *   finishes its jobs first; the next ticks see it idle).
 * - Rolling update, surge first: an outdated worker is replaced by starting a current-version worker beside it (a
 *   surge start, up to one worker beyond workersMax and within `capacity`) and stopping the outdated one only once
 *   the replacement is ready. While outdated workers are live, current-version workers still initializing are the
 *   rollout's replacements in flight: the stop rules below do not count them, so an outdated worker never makes way
 *   for a replacement that has not shown it can start (a broken new template leaves the old workers serving, and
 *   the supervisor's backoff reports the crash loop).
 * - Precedence when several rules apply (counting live workers without the replacements in flight):
 *   1. above-max: live workers beyond workersMax stop right away (outdated first, then longest idle), but never so
 *      that fewer than workersMin current-version workers remain (outdated busy ones leave soon anyway).
 *   2. outdated-version: an idle worker of an older version stops when live workers without it are still at least
 *      desired (surplus, or its replacement is ready). When capacity is 0 and no current-version worker is
 *      initializing, one outdated idle worker stops per tick anyway: its GPUs are probably what the replacement
 *      needs, and waiting would stall the update forever.
 *   3. idle-timeout: idle workers beyond desired whose idleForMs >= idleTimeoutS * 1000, longest idle first, never
 *      below desired, never below workersMin current-version workers, and not while low-priority jobs wait (the idle
 *      worker is what serves them; stopping it would strand them until normal jobs scale up).
 * - start = max(0, desired - live workers left after the stops), capped by `capacity`; the rest show as throttled.
 *   Then `surge` more: one for each outdated idle worker left that no replacement (in flight or starting now)
 *   stands for, within what capacity is left and workersMax + 1 live workers.
 * - reason: 'rolling-update' when an outdated worker stops or a surge starts; otherwise, when workers start, why desired is what it is
 *   ('scale-from-zero' | 'queue-delay' | 'request-count' | 'busy-workers' | 'min-workers' | 'at-max'); otherwise the
 *   first stop's reason ('above-max' | 'idle-timeout'); otherwise the desired reason again ('no-demand' at zero).
 */

export type WorkerState = 'initializing' | 'idle' | 'running' | 'throttled' | 'unhealthy';

export interface ScalerPolicy {
  workersMin: number;
  workersMax: number;
  idleTimeoutS: number;
  scalerType: 'QUEUE_DELAY' | 'REQUEST_COUNT';
  scalerValue: number;
  version: number;
}

export interface QueueSnapshot {
  /** Normal-priority queued jobs. */
  inQueue: number;
  inQueueLowPriority: number;
  inProgress: number;
  /** Age of the oldest normal-priority queued job; null when none. */
  oldestQueuedAgeMs: number | null;
}

export interface WorkerView {
  id: string;
  state: WorkerState;
  version: number;
  /** 0 unless idle. */
  idleForMs: number;
  runningJobs: number;
}

export type StopReason = 'idle-timeout' | 'above-max' | 'outdated-version';

export type DesiredReason =
  'scale-from-zero' | 'queue-delay' | 'request-count' | 'busy-workers' | 'min-workers' | 'at-max' | 'no-demand';

export type ScalingReason = DesiredReason | 'rolling-update' | 'above-max' | 'idle-timeout';

export interface ScalingDecision {
  desired: number;
  /** Workers to start now, `surge` included. */
  start: number;
  /** How many of `start` are rolling-update replacements started beside the outdated workers they replace. */
  surge: number;
  stop: Array<{ workerId: string; reason: StopReason }>;
  reason: ScalingReason;
}

function isLive(w: WorkerView): boolean {
  switch (w.state) {
    case 'initializing':
    case 'idle':
    case 'running':
      return true;
    case 'throttled':
    case 'unhealthy':
      return false;
    default: {
      const unreachable: never = w.state;
      return unreachable;
    }
  }
}

/** Raw demand f(queue) before clamping, with the rule that produced it. */
function demand(policy: ScalerPolicy, queue: QueueSnapshot, workers: WorkerView[]): { f: number; why: DesiredReason } {
  const live = workers.filter(isLive);
  const inQueue = Math.max(0, queue.inQueue);
  const fromZero = inQueue > 0 && live.length === 0;
  switch (policy.scalerType) {
    case 'REQUEST_COUNT': {
      // scalerValue >= 1 is validated upstream; the guard keeps a bad row from dividing by zero.
      const f = Math.ceil((inQueue + Math.max(0, queue.inProgress)) / Math.max(1, policy.scalerValue));
      if (fromZero) return { f: Math.max(1, f), why: 'scale-from-zero' };
      return { f, why: f > 0 ? 'request-count' : 'no-demand' };
    }
    case 'QUEUE_DELAY': {
      const busy = live.filter((w) => w.state !== 'idle').length;
      const idle = live.length - busy;
      const throttled = workers.filter((w) => w.state === 'throttled').length;
      let f = busy + Math.min(idle, inQueue) + (inQueue > 0 ? throttled : 0);
      const delayed =
        inQueue > 0 && queue.oldestQueuedAgeMs !== null && queue.oldestQueuedAgeMs > policy.scalerValue * 1000;
      if (fromZero) return { f: Math.max(1, f), why: 'scale-from-zero' };
      if (delayed && idle === 0 && throttled === 0) {
        f += 1;
        return { f, why: 'queue-delay' };
      }
      return { f, why: f > 0 ? 'busy-workers' : 'no-demand' };
    }
    default: {
      const unreachable: never = policy.scalerType;
      return unreachable;
    }
  }
}

function clampDesired(policy: ScalerPolicy, f: number, why: DesiredReason): { desired: number; why: DesiredReason } {
  const min = Math.max(0, policy.workersMin);
  const max = Math.max(0, policy.workersMax);
  if (f > max) return { desired: max, why: 'at-max' };
  if (f < min) return { desired: Math.min(min, max), why: 'min-workers' };
  return { desired: f, why };
}

const longestIdleFirst = (a: WorkerView, b: WorkerView): number =>
  b.idleForMs - a.idleForMs || a.id.localeCompare(b.id);

export function decideScaling(
  policy: ScalerPolicy,
  queue: QueueSnapshot,
  workers: WorkerView[],
  capacity: number,
): ScalingDecision {
  const { f, why: rawWhy } = demand(policy, queue, workers);
  const { desired, why } = clampDesired(policy, f, rawWhy);
  const cap = Math.max(0, capacity);
  const min = Math.max(0, policy.workersMin);
  const isCurrent = (w: WorkerView): boolean => w.version >= policy.version;

  const live = workers.filter(isLive);
  const outdatedLive = live.some((w) => !isCurrent(w));
  // The rollout's replacements in flight: not counted by the stop rules until they are ready.
  const inFlight = outdatedLive ? live.filter((w) => w.state === 'initializing' && isCurrent(w)).length : 0;
  const stop: ScalingDecision['stop'] = [];
  const stopped = new Set<string>();
  let liveLeft = live.length;
  let currentLeft = live.filter(isCurrent).length;
  const serving = (): number => liveLeft - inFlight;
  const stopWorker = (w: WorkerView, reason: StopReason): void => {
    stop.push({ workerId: w.id, reason });
    stopped.add(w.id);
    liveLeft -= 1;
    if (isCurrent(w)) currentLeft -= 1;
  };
  const idleLeft = (): WorkerView[] => live.filter((w) => w.state === 'idle' && !stopped.has(w.id));

  // 1. above-max: e.g. workersMax was lowered; outdated workers go first because they are leaving anyway.
  const aboveMaxOrder = idleLeft().sort(
    (a, b) => Number(isCurrent(a)) - Number(isCurrent(b)) || longestIdleFirst(a, b),
  );
  for (const w of aboveMaxOrder) {
    if (serving() <= policy.workersMax) break;
    if (isCurrent(w) && currentLeft <= min) continue;
    stopWorker(w, isCurrent(w) ? 'above-max' : 'outdated-version');
  }

  // 2. outdated-version: an outdated idle worker goes once the workers left without it are enough.
  const outdatedIdle = idleLeft()
    .filter((w) => !isCurrent(w))
    .sort(longestIdleFirst);
  let outdatedStopped = 0;
  for (const w of outdatedIdle) {
    if (serving() <= desired) break;
    stopWorker(w, 'outdated-version');
    outdatedStopped += 1;
  }
  const firstOutdated = outdatedIdle.find((w) => !stopped.has(w.id));
  if (outdatedStopped === 0 && cap === 0 && inFlight === 0 && firstOutdated !== undefined) {
    stopWorker(firstOutdated, 'outdated-version');
  }

  // 3. idle-timeout: surplus idle workers that have been idle long enough.
  if (queue.inQueueLowPriority <= 0) {
    const timeoutMs = policy.idleTimeoutS * 1000;
    for (const w of idleLeft().sort(longestIdleFirst)) {
      if (serving() <= desired) break;
      if (w.idleForMs < timeoutMs) continue;
      if (isCurrent(w) && currentLeft <= min) continue;
      stopWorker(w, 'idle-timeout');
    }
  }

  const start = Math.min(cap, Math.max(0, desired - liveLeft));
  // Surge: a replacement for each outdated idle worker left that none in flight or starting now stands for.
  const unreplaced = idleLeft().filter((w) => !isCurrent(w)).length - inFlight - start;
  const surgeRoom = Math.max(0, policy.workersMax) + 1 - (liveLeft + start);
  const surge = Math.max(0, Math.min(unreplaced, cap - start, surgeRoom));
  return { desired, start: start + surge, surge, stop, reason: summarise(why, start + surge, surge, stop) };
}

function summarise(why: DesiredReason, start: number, surge: number, stop: ScalingDecision['stop']): ScalingReason {
  if (surge > 0 || stop.some((s) => s.reason === 'outdated-version')) return 'rolling-update';
  const first = stop[0];
  if (start > 0 || first === undefined) return why;
  return first.reason === 'outdated-version' ? 'rolling-update' : first.reason;
}
