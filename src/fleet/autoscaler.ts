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
 *   finishes its jobs first; the next ticks see it idle). `retire` names running workers that take no new job and
 *   are stopped by the supervisor once their jobs are done; a retiring worker (`retiring`) still holds its slot but
 *   serves nobody new, so the rules below do not count it.
 * - Rolling update, surge first: every outdated worker (idle or busy) gets a current-version replacement started
 *   beside it (a surge start: up to `surgeAllowance(workersMax)` workers beyond workersMax, within `capacity`); an
 *   outdated worker leaves (stops when idle, retires when busy) only once the workers left without it still cover
 *   what is needed. Until then it keeps taking jobs. While outdated workers are live, current-version workers still
 *   initializing are the replacements in flight: the stop rules do not count them, so no outdated worker makes way
 *   for a replacement that has not shown it can start (a broken new template leaves the old workers serving while
 *   the supervisor's backoff reports the crash loop).
 * - Precedence when several rules apply (counting serving workers without the replacements in flight):
 *   1. above-max: workers beyond workersMax leave right away: outdated idle, then outdated busy (retired), then the
 *      longest idle current ones, but never so that fewer than workersMin current-version workers remain.
 *   2. outdated-version: outdated workers leave while the workers left without them are still at least desired
 *      (surplus, or their replacements are ready): idle ones first, then the least busy. When capacity is 0 and no
 *      current-version worker is initializing, one outdated idle worker stops per tick anyway: its GPUs are probably
 *      what the replacement needs, and waiting would stall the update forever (so on a full GPU host a release that
 *      cannot start can still leave fewer workers).
 *   3. idle-timeout: idle workers beyond desired whose idleForMs >= idleTimeoutS * 1000, longest idle first, never
 *      below desired, never below workersMin current-version workers, and not while low-priority jobs wait (the idle
 *      worker is what serves them; stopping it would strand them until normal jobs scale up).
 * - start = max(0, desired - serving workers left after the rules), capped by `capacity`; the rest show as
 *   throttled. Then `surge` more: current-version workers still short of desired (one per outdated worker left),
 *   within what capacity is left and workersMax + surgeAllowance live workers (retiring ones included).
 * - reason: 'rolling-update' when an outdated worker stops or retires or a surge starts; otherwise, when workers start, why desired is what it is
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
  /** Retired (rolling update, or it asked to be recycled): finishing its jobs, taking no new one. */
  retiring?: boolean;
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
  /** Busy outdated workers to retire: they finish their jobs, take no new one, and are stopped when done. */
  retire: Array<{ workerId: string; reason: StopReason }>;
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
  const serving = live.filter((w) => !w.retiring);
  const outdatedServing = serving.some((w) => !isCurrent(w));
  // The rollout's replacements in flight: not counted by the leave rules until they are ready.
  const inFlight = outdatedServing ? serving.filter((w) => w.state === 'initializing' && isCurrent(w)).length : 0;
  const stop: ScalingDecision['stop'] = [];
  const retire: ScalingDecision['retire'] = [];
  const gone = new Set<string>();
  let servingLeft = serving.length;
  let currentLeft = serving.filter(isCurrent).length;
  const counted = (): number => servingLeft - inFlight;
  const leave = (w: WorkerView, reason: StopReason): void => {
    (w.state === 'idle' ? stop : retire).push({ workerId: w.id, reason });
    gone.add(w.id);
    servingLeft -= 1;
    if (isCurrent(w)) currentLeft -= 1;
  };
  const idleLeft = (): WorkerView[] => serving.filter((w) => w.state === 'idle' && !gone.has(w.id));
  // Outdated workers in the order they leave: idle ones (longest idle first), then the least busy.
  const outdatedLeft = (): WorkerView[] =>
    serving
      .filter((w) => !isCurrent(w) && w.state !== 'initializing' && !gone.has(w.id))
      .sort((a, b) => Number(a.state !== 'idle') - Number(b.state !== 'idle') || leastBusyFirst(a, b));

  // 1. above-max: e.g. workersMax was lowered, or a surge replacement is ready; outdated workers go first.
  for (const w of [...outdatedLeft(), ...idleLeft().filter(isCurrent).sort(longestIdleFirst)]) {
    if (counted() <= policy.workersMax) break;
    if (isCurrent(w) && currentLeft <= min) continue;
    leave(w, isCurrent(w) ? 'above-max' : 'outdated-version');
  }

  // 2. outdated-version: outdated workers go once the workers left without them are enough.
  let outdatedGone = [...stop, ...retire].some((s) => s.reason === 'outdated-version');
  for (const w of outdatedLeft()) {
    if (counted() <= desired) break;
    leave(w, 'outdated-version');
    outdatedGone = true;
  }
  const firstOutdatedIdle = outdatedLeft().find((w) => w.state === 'idle');
  if (!outdatedGone && cap === 0 && inFlight === 0 && firstOutdatedIdle !== undefined) {
    leave(firstOutdatedIdle, 'outdated-version');
  }

  // 3. idle-timeout: surplus idle workers that have been idle long enough.
  if (queue.inQueueLowPriority <= 0) {
    const timeoutMs = policy.idleTimeoutS * 1000;
    for (const w of idleLeft().sort(longestIdleFirst)) {
      if (counted() <= desired) break;
      if (w.idleForMs < timeoutMs) continue;
      if (isCurrent(w) && currentLeft <= min) continue;
      leave(w, 'idle-timeout');
    }
  }

  const start = Math.min(cap, Math.max(0, desired - servingLeft));
  // Surge: replacements for the outdated workers left, as far as current-version ones still fall short of desired.
  const short = Math.max(0, Math.min(desired - currentLeft - start, outdatedLeft().length));
  const room = Math.max(0, policy.workersMax) + surgeAllowance(policy.workersMax) - (live.length - stop.length + start);
  const surge = Math.max(0, Math.min(short, cap - start, room));
  return {
    desired,
    start: start + surge,
    surge,
    stop,
    retire,
    reason: summarise(why, start + surge, surge, [...stop, ...retire]),
  };
}

/** How many workers beyond workersMax a rolling update may start at once: a quarter of workersMax, at least one. */
export function surgeAllowance(workersMax: number): number {
  return Math.max(1, Math.ceil(Math.max(0, workersMax) / 4));
}

const leastBusyFirst = (a: WorkerView, b: WorkerView): number =>
  a.runningJobs - b.runningJobs || longestIdleFirst(a, b);

function summarise(why: DesiredReason, start: number, surge: number, stop: ScalingDecision['stop']): ScalingReason {
  if (surge > 0 || stop.some((s) => s.reason === 'outdated-version')) return 'rolling-update';
  const first = stop[0];
  if (start > 0 || first === undefined) return why;
  return first.reason === 'outdated-version' ? 'rolling-update' : first.reason;
}
