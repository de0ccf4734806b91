/**
 * Crash-loop backoff for worker starts, per endpoint. Pure: the supervisor keeps the history (start failures and
 * the last stretch during which one of the endpoint's workers was healthy) and asks before each start.
 *
 * Without it a worker whose image is broken (a typo in the start command, a missing dependency, a handler that
 * throws at import) is restarted in a tight loop: thousands of processes a minute, a log flood, and GPUs that
 * other endpoints could use held by a worker that never serves a job.
 *
 * - A start failure is a worker that exited (or failed to spawn) before it became healthy.
 * - Failures count as consecutive until a worker of the endpoint stays healthy for `resetAfterHealthyMs`; then
 *   every earlier failure is forgiven.
 * - After n consecutive failures the next start waits min(maxMs, baseMs * 2^(n-1)) from the last failure:
 *   1 s, 2 s, 4 s … 60 s with the defaults.
 * - At `crashLoopThreshold` consecutive failures the endpoint is in a crash loop: the supervisor reports its
 *   workers as unhealthy with the last error, instead of showing them as initializing forever.
 */

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** A worker healthy this long forgives earlier failures. */
  resetAfterHealthyMs: number;
  crashLoopThreshold: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({
  baseMs: 1_000,
  // 60 s cap: a fixed image should come back within a minute, without waiting hours for the next try.
  maxMs: 60_000,
  // 30 s healthy: long enough that a worker that crashes on its first job does not reset the count.
  resetAfterHealthyMs: 30_000,
  crashLoopThreshold: 3,
});

export interface StartFailure {
  atMs: number;
  error: string;
}

export interface StartHistory {
  /** Recent start failures, any order. Older than the last reset they are ignored, so trimming is optional. */
  failures: readonly StartFailure[];
  /** The most recent stretch with a healthy worker: untilMs null while it still lasts. */
  lastHealthy: { sinceMs: number; untilMs: number | null } | null;
}

export interface BackoffDecision {
  /** Whether a start may happen now. */
  allowed: boolean;
  /** When the next start may happen (nowMs when allowed). */
  nextAllowedAtMs: number;
  /** The wait imposed after the last failure; 0 without failures. */
  delayMs: number;
  consecutiveFailures: number;
  crashLoop: boolean;
  /** The most recent counted failure's error, to report with the unhealthy state. */
  lastError: string | null;
}

/** The wait after `consecutiveFailures` failures in a row. */
export function backoffDelayMs(consecutiveFailures: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  if (consecutiveFailures <= 0) return 0;
  // Cap the exponent: 2^1024 is Infinity, and min(Infinity, maxMs) would be right but NaN-prone with baseMs 0.
  const exponent = Math.min(consecutiveFailures - 1, 52);
  return Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
}

/** The instant before which failures are forgiven: the moment a healthy stretch reached resetAfterHealthyMs. */
function resetAtMs(history: StartHistory, nowMs: number, policy: BackoffPolicy): number {
  const healthy = history.lastHealthy;
  if (healthy === null) return -Infinity;
  const until = healthy.untilMs ?? nowMs;
  if (until - healthy.sinceMs < policy.resetAfterHealthyMs) return -Infinity;
  return healthy.sinceMs + policy.resetAfterHealthyMs;
}

/** Failures that still count, oldest first. */
export function countedFailures(
  history: StartHistory,
  nowMs: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): StartFailure[] {
  const resetAt = resetAtMs(history, nowMs, policy);
  return history.failures.filter((f) => f.atMs > resetAt).sort((a, b) => a.atMs - b.atMs);
}

export function decideBackoff(
  history: StartHistory,
  nowMs: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): BackoffDecision {
  const counted = countedFailures(history, nowMs, policy);
  const last = counted[counted.length - 1];
  if (last === undefined) {
    return {
      allowed: true,
      nextAllowedAtMs: nowMs,
      delayMs: 0,
      consecutiveFailures: 0,
      crashLoop: false,
      lastError: null,
    };
  }
  const delayMs = backoffDelayMs(counted.length, policy);
  const nextAllowedAtMs = Math.max(nowMs, last.atMs + delayMs);
  return {
    allowed: nowMs >= last.atMs + delayMs,
    nextAllowedAtMs,
    delayMs,
    consecutiveFailures: counted.length,
    crashLoop: counted.length >= policy.crashLoopThreshold,
    lastError: last.error,
  };
}

/**
 * A worker of the endpoint became healthy. A stretch still open goes on (its start is what counts toward the reset);
 * otherwise a new one begins, and the failures the last one forgave are dropped: measured against the new stretch
 * alone, they would count again.
 */
export function healthyFrom(
  history: StartHistory,
  nowMs: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): StartHistory {
  if (history.lastHealthy !== null && history.lastHealthy.untilMs === null) return history;
  return { failures: countedFailures(history, nowMs, policy), lastHealthy: { sinceMs: nowMs, untilMs: null } };
}

/**
 * Append a failure and drop the ones that no longer count, keeping at most `keep` (the history stays bounded
 * even when an endpoint fails for days).
 */
export function recordFailure(
  history: StartHistory,
  failure: StartFailure,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  keep = 32,
): StartHistory {
  const counted = countedFailures({ ...history, failures: [...history.failures, failure] }, failure.atMs, policy);
  return { ...history, failures: counted.slice(-keep) };
}
