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
 *   - REQUEST_COUNT: f = ceil((inQueue + inProgress) / scalerValue), except that low-priority jobs in progress add
 *     no worker: f is at most the larger of the same count without them and the live workers plus those the queued
 *     jobs need beyond the live workers' free slots (scalerValue each).
 *   - QUEUE_DELAY: f = busy (running + initializing)
 *       + idle workers about to take queued jobs (at most inQueue)
 *       + throttled workers while jobs are queued (the demand they stand for is still unmet)
 *       + 1 while the oldest queued job has waited longer than scalerValue seconds, no idle worker exists and no
 *         throttled one already stands for that extra worker (so waiting on capacity does not ratchet up).
 *   - Both: with queued jobs and zero live workers f >= 1 at once — scale from zero must not wait scalerValue.
 * - Stops only ever name `idle` workers; running and initializing workers are never stopped (a running worker
 *   finishes its jobs first; the next ticks see it idle). `retire` names busy or starting outdated workers, and busy
 *   or starting ones beyond workersMax: they take no new job and the supervisor stops them once they hold none. A retiring worker (`retiring`) and a stopping one
 *   (`holding`) still hold a slot toward workersMax (and their GPUs) but serve nobody new: the rules below do not
 *   count them as serving.
 * - Rolling update, surge first, one for one: each outdated worker that serves gets its own current-version
 *   replacement started beside it (a surge start, `surgeFor` names whom it replaces; at most surgeAllowance(workersMax)
 *   workers beyond workersMax, within `capacity`). The outdated worker keeps taking jobs until its replacement is
 *   ready, then hands over: stopped when idle, retired when busy. A replacement that crashes is simply started again
 *   (the supervisor's backoff applies), so a release that cannot start leaves the old workers serving while it
 *   reports the crash loop. An outdated worker still starting is retired at once (it proves nothing and would be
 *   replaced as soon as it was up). While outdated workers serve, current-version workers still starting are
 *   unproven: the stop rules do not count them.
 * - reinstate (before all else): current-version workers retired beyond workersMax (`retiredFor` 'above-max') serve
 *   again as far as workersMax has room for them beside the serving ones (it was raised while they finished their
 *   jobs), busiest first: a stop and a cold start would cost a start for nothing. The rules below count them as serving.
 * - Precedence when several rules apply (counting serving workers without the unproven ones):
 *   1. hand-over: outdated workers whose replacements are ready leave.
 *   2. above-max: workers beyond workersMax go right away: outdated ones first (idle ones stop, busy ones retire
 *      and finish their jobs), then the longest idle current ones, then current ones still starting, then the least
 *      busy current ones (retired: they finish their jobs), never below workersMin current-version workers. Waiting
 *      to see a busy worker idle would keep it for good under a steady queue.
 *   3. outdated-version: outdated idle workers beyond desired stop (surplus) without waiting for the idle timeout;
 *      a busy one beyond desired hands over to an idle current-version worker if one is there, which the idle
 *      timeout then keeps (busy workers are never cut for surplus alone). When capacity is 0, the fleet is whole
 *      (serving >= desired, or as large as it has been since the version changed: `fleet.largestServing`), no
 *      replacement is starting and nothing is stopping or retiring, one outdated worker
 *      leaves anyway (idle first, else the least busy retires): its GPUs are probably what the replacement needs,
 *      and waiting would stall the update forever (so on a full GPU host a broken release can leave one worker
 *      fewer).
 *   4. idle-timeout: idle workers beyond desired whose idleForMs >= idleTimeoutS * 1000, longest idle first, never
 *      below desired, never below workersMin current-version workers, and not while low-priority jobs wait (the idle
 *      worker is what serves them; stopping it would strand them until normal jobs scale up).
 * - start = max(0, desired - serving workers left), capped by `capacity` (the rest: `throttled`) and by the slots
 *   workersMax leaves beside live, retiring and stopping workers (the rest: `held`). Then `surge` more, one per
 *   outdated serving worker without a replacement, as far as current-version workers fall short of desired, within
 *   what capacity is left and workersMax + surgeAllowance.
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
  /** Of inProgress, the low-priority jobs (optional: 0 when not given). */
  inProgressLowPriority?: number;
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
  /** Why the autoscaler retired it, when it did (absent for other retirements: recycled, placement). */
  retiredFor?: StopReason;
  /** A rolling update's replacement: the id of the outdated worker it was started to take over from. */
  replaces?: string | null;
}

export type StopReason = 'idle-timeout' | 'above-max' | 'outdated-version';

export type DesiredReason =
  'scale-from-zero' | 'queue-delay' | 'request-count' | 'busy-workers' | 'min-workers' | 'at-max' | 'no-demand';

export type ScalingReason = DesiredReason | 'rolling-update' | 'above-max' | 'idle-timeout';

/** What the supervisor knows beyond this pass's snapshot. */
export interface FleetMemory {
  /** Workers of the endpoint still stopping: they hold slots (and GPUs) until they are gone. */
  holding?: number;
  /**
   * The most serving workers (live, not retiring) the endpoint has had since its version last changed: with no GPU
   * free, an outdated worker makes way only while the fleet is that large (or desired), i.e. when the previous
   * one's replacement did start.
   */
  largestServing?: number;
}

export interface ScalingDecision {
  desired: number;
  /** Workers to start now, `surge` included. */
  start: number;
  /** How many of `start` are rolling-update replacements started beside the outdated workers they replace. */
  surge: number;
  /** Whom the surge starts replace, one id per surge start. */
  surgeFor: string[];
  /** Starts wanted but not made for lack of capacity (GPUs). */
  throttled: number;
  /** Starts wanted but held back: workersMax is taken by workers still stopping or finishing their last jobs. */
  held: number;
  stop: Array<{ workerId: string; reason: StopReason }>;
  /**
   * Workers to retire (busy or starting): outdated ones, and those beyond workersMax. They take no new job and are
   * stopped once they hold none.
   */
  retire: Array<{ workerId: string; reason: StopReason }>;
  /**
   * Retiring workers to take back: retired beyond workersMax, which now has room for them again (it was raised while
   * they finished their jobs). They serve again, counted as serving by the rest of the decision.
   */
  reinstate: string[];
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
  // A retiring worker finishes what it runs but serves no demand: counting it as busy would start a worker for it
  // at every pass until one is up.
  const live = workers.filter((w) => isLive(w) && !w.retiring);
  const inQueue = Math.max(0, queue.inQueue);
  const fromZero = inQueue > 0 && live.length === 0;
  switch (policy.scalerType) {
    case 'REQUEST_COUNT': {
      // scalerValue >= 1 is validated upstream; the guard keeps a bad row from dividing by zero.
      const perWorker = Math.max(1, policy.scalerValue);
      const inProgress = Math.max(0, queue.inProgress);
      const low = Math.min(inProgress, Math.max(0, queue.inProgressLowPriority ?? 0));
      const all = Math.ceil((inQueue + inProgress) / perWorker);
      // Low-priority jobs never add workers (interface §2.3): running ones may keep the live workers, and count only
      // where they take the slots a queued normal job needs (one worker may hold several, taken in a batch).
      const normal = Math.ceil((inQueue + inProgress - low) / perWorker);
      const free = Math.max(0, live.length * perWorker - inProgress);
      const forQueued = live.length + Math.ceil(Math.max(0, inQueue - free) / perWorker);
      const f = Math.min(all, Math.max(normal, forQueued));
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
      // A worker still starting is on its way to the queue: one more start at every pass until it is up would
      // ratchet a cold endpoint to workersMax for a single job (an image pull outlasts many passes).
      const starting = live.some((w) => w.state === 'initializing');
      if (delayed && idle === 0 && throttled === 0 && !starting) {
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
  given: WorkerView[],
  capacity: number,
  fleet: FleetMemory = {},
): ScalingDecision {
  const holding = Math.max(0, fleet.holding ?? 0);
  const cap = Math.max(0, capacity);
  const max = Math.max(0, policy.workersMax);
  // Rows saved before workersMin <= workersMax was enforced: workersMax wins, as for desired.
  const min = Math.min(Math.max(0, policy.workersMin), max);
  const isCurrent = (w: WorkerView): boolean => w.version >= policy.version;
  const isOutdated = (w: WorkerView): boolean => !isCurrent(w);

  // 0. reinstate: workers retired beyond workersMax serve again as far as workersMax has room for them now (it was
  //    raised while they finished their jobs): stopping one and cold-starting another would cost a start for nothing.
  const reinstate = reinstatable(given, max, isCurrent);
  const taken = new Set(reinstate);
  const workers = given.map((w) => (taken.has(w.id) ? { ...w, retiring: false } : w));

  const { f, why: rawWhy } = demand(policy, queue, workers);
  const { desired, why } = clampDesired(policy, f, rawWhy);
  const live = workers.filter(isLive);
  const serving = live.filter((w) => !w.retiring);
  const stop: ScalingDecision['stop'] = [];
  const retire: ScalingDecision['retire'] = [];
  const gone = new Set<string>();
  let servingLeft = serving.length;
  let currentLeft = serving.filter(isCurrent).length;
  const leave = (w: WorkerView, reason: StopReason): void => {
    (w.state === 'idle' ? stop : retire).push({ workerId: w.id, reason });
    gone.add(w.id);
    servingLeft -= 1;
    if (isCurrent(w)) currentLeft -= 1;
  };
  const idleLeft = (): WorkerView[] => serving.filter((w) => w.state === 'idle' && !gone.has(w.id));
  const outdatedLeft = (): WorkerView[] => serving.filter((w) => isOutdated(w) && !gone.has(w.id));
  const replacementOf = new Map<string, WorkerView>();
  for (const w of serving) if (isCurrent(w) && w.replaces) replacementOf.set(w.replaces, w);

  // 1. hand-over: outdated workers still starting retire at once; the others hand over to their replacements once
  //    those are up.
  for (const w of serving) {
    if (!isOutdated(w)) continue;
    const replacement = replacementOf.get(w.id);
    if (w.state === 'initializing' || (replacement !== undefined && replacement.state !== 'initializing')) {
      leave(w, 'outdated-version');
    }
  }
  const unproven =
    outdatedLeft().length > 0 ? serving.filter((w) => isCurrent(w) && w.state === 'initializing').length : 0;
  const counted = (): number => servingLeft - unproven;

  // Outdated workers beyond `limit` go: idle ones, then busy ones (retired: they finish their jobs). Below workersMax
  // a busy one goes only by handing over to an idle current-version worker, one each (`standIns`, kept from the
  // idle timeout): busy workers are never cut for surplus alone.
  let spareIdle = idleLeft().filter(isCurrent).length;
  let standIns = 0;
  const shedOutdated = (limit: number, busyNeedsStandIn: boolean): void => {
    for (const w of outdatedLeft().sort(idleThenLeastBusy)) {
      if (counted() <= limit) break;
      if (w.state !== 'idle' && busyNeedsStandIn) {
        if (spareIdle === 0) break;
        spareIdle -= 1;
        standIns += 1;
      }
      leave(w, 'outdated-version');
    }
  };

  // 2. above-max: e.g. workersMax was lowered, or a replacement is up; outdated workers go first.
  shedOutdated(max, false);
  for (const w of idleLeft().filter(isCurrent).sort(longestIdleFirst)) {
    if (counted() <= max || spareIdle === 0) break;
    if (currentLeft <= min) continue;
    leave(w, 'above-max');
    spareIdle -= 1;
  }
  // Then busy ones retire (they finish their jobs and take no new one), those still starting first (counted only when
  // no outdated worker serves): under a steady queue a worker takes its next job the moment it posts a result, so
  // waiting to see it idle would keep it beyond workersMax (even 0) for good.
  const busyCurrent = serving.filter(
    (x) => isCurrent(x) && !gone.has(x.id) && (x.state === 'running' || (x.state === 'initializing' && unproven === 0)),
  );
  for (const w of busyCurrent.sort(idleThenLeastBusy)) {
    if (counted() <= max || currentLeft <= min) break;
    leave(w, 'above-max');
  }

  // 3. outdated-version: beyond desired, outdated workers go as above; with no capacity, one makes way.
  shedOutdated(desired, true);
  const anyOutdatedGone = [...stop, ...retire].some((x) => x.reason === 'outdated-version');
  const settled = holding === 0 && unproven === 0 && !live.some((w) => w.retiring);
  // Only while the fleet is whole (as large as it has been in this update, or desired): if the freed GPU did not let
  // a replacement start (another endpoint took it, the update asks for other GPUs), the next worker waits instead
  // of the whole fleet going one pass at a time.
  const whole = Math.min(desired, fleet.largestServing ?? Infinity);
  if (cap === 0 && settled && !anyOutdatedGone && servingLeft >= whole) {
    const first = outdatedLeft().sort(idleThenLeastBusy)[0];
    if (first !== undefined) leave(first, 'outdated-version');
  }

  // 4. idle-timeout: surplus idle workers that have been idle long enough.
  if (queue.inQueueLowPriority <= 0) {
    const timeoutMs = policy.idleTimeoutS * 1000;
    for (const w of idleLeft().sort(longestIdleFirst)) {
      if (counted() <= desired) break;
      if (w.idleForMs < timeoutMs) continue;
      if (isCurrent(w) && currentLeft <= min) continue;
      if (isCurrent(w) && idleLeft().filter(isCurrent).length <= standIns) continue;
      leave(w, 'idle-timeout');
    }
  }

  // Retiring workers, those retired or stopped now, and stopping ones hold their slots until they are gone.
  const occupied = live.length + holding;
  const wanted = Math.max(0, desired - servingLeft);
  const placeable = Math.min(cap, wanted);
  const start = Math.min(placeable, Math.max(0, max - occupied));
  // Surge: a replacement for each outdated worker still serving that has none yet.
  const unreplaced = outdatedLeft()
    .filter((w) => !replacementOf.has(w.id))
    .sort(idleThenLeastBusy);
  const surgeRoom = max + surgeAllowance(max) - (occupied + start);
  // Only as many as current-version workers still fall short of desired: an outdated worker beyond it is surplus
  // and goes (idle) or stays until idle (busy) without a replacement.
  const short = desired - currentLeft - start;
  const surge = Math.max(0, Math.min(unreplaced.length, short, cap - start, surgeRoom));
  return {
    desired,
    start: start + surge,
    surge,
    surgeFor: unreplaced.slice(0, surge).map((w) => w.id),
    throttled: wanted - placeable,
    held: placeable - start,
    stop,
    retire,
    reinstate,
    reason: summarise(why, start + surge, surge, [...stop, ...retire]),
  };
}

/**
 * Current-version workers retired beyond workersMax (`retiredFor` 'above-max') that workersMax has room for beside
 * the serving ones, the busiest first (the workers still starting last).
 */
function reinstatable(workers: WorkerView[], max: number, isCurrent: (w: WorkerView) => boolean): string[] {
  let room = max - workers.filter((w) => isLive(w) && !w.retiring).length;
  const retired = workers
    .filter((w) => isLive(w) && w.retiring === true && w.retiredFor === 'above-max' && isCurrent(w))
    .sort(
      (a, b) =>
        Number(a.state === 'initializing') - Number(b.state === 'initializing') ||
        b.runningJobs - a.runningJobs ||
        a.id.localeCompare(b.id),
    );
  const ids: string[] = [];
  for (const w of retired) {
    if (room <= 0) break;
    ids.push(w.id);
    room -= 1;
  }
  return ids;
}

/** How many workers beyond workersMax a rolling update may start at once: a quarter of workersMax, at least one. */
export function surgeAllowance(workersMax: number): number {
  return Math.max(1, Math.ceil(Math.max(0, workersMax) / 4));
}

/** Idle ones first (longest idle first), then the least busy. */
const idleThenLeastBusy = (a: WorkerView, b: WorkerView): number =>
  Number(a.state !== 'idle') - Number(b.state !== 'idle') || a.runningJobs - b.runningJobs || longestIdleFirst(a, b);

function summarise(why: DesiredReason, start: number, surge: number, stop: ScalingDecision['stop']): ScalingReason {
  if (surge > 0 || stop.some((s) => s.reason === 'outdated-version')) return 'rolling-update';
  const first = stop[0];
  if (start > 0 || first === undefined) return why;
  return first.reason === 'outdated-version' ? 'rolling-update' : first.reason;
}
