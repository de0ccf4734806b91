import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Milliseconds since the epoch, for timestamps that are stored. */
  now(): number;
}

/**
 * Wall time anchored once at start and advanced by the monotonic clock, so that a jump of the system clock
 * (NTP step, manual change) while the server runs cannot expire jobs early or make leases run out at once.
 * A restart re-anchors to the wall clock.
 */
export function monotonicWallClock(): Clock {
  const anchorWall = Date.now();
  const anchorMono = performance.now();
  return { now: () => Math.round(anchorWall + (performance.now() - anchorMono)) };
}
