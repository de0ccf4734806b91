import { describe, expect, it } from 'vitest';

import { backoffDelayMs, decideBackoff, DEFAULT_BACKOFF, healthyFrom, recordFailure } from '../../src/fleet/backoff.ts';
import type { StartHistory } from '../../src/fleet/backoff.ts';

const fail = (atMs: number, error = `boom at ${atMs}`): { atMs: number; error: string } => ({ atMs, error });
const history = (failures: number[], lastHealthy: StartHistory['lastHealthy'] = null): StartHistory => ({
  failures: failures.map((t) => fail(t)),
  lastHealthy,
});

describe('backoffDelayMs', () => {
  it('doubles from 1 s and caps at 60 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 5000].map((n) => backoffDelayMs(n))).toEqual([
      0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000,
    ]);
  });

  it('stays finite with odd policies', () => {
    expect(backoffDelayMs(10_000, { ...DEFAULT_BACKOFF, baseMs: 0 })).toBe(0);
  });
});

describe('decideBackoff', () => {
  it('allows a start with no failures', () => {
    expect(decideBackoff(history([]), 10_000)).toEqual({
      allowed: true,
      nextAllowedAtMs: 10_000,
      delayMs: 0,
      consecutiveFailures: 0,
      crashLoop: false,
      lastError: null,
    });
  });

  it('waits 1 s after the first failure', () => {
    const h = history([10_000]);
    expect(decideBackoff(h, 10_500)).toMatchObject({ allowed: false, nextAllowedAtMs: 11_000, delayMs: 1_000 });
    expect(decideBackoff(h, 11_000)).toMatchObject({ allowed: true, nextAllowedAtMs: 11_000 });
  });

  it('counts from the last failure whatever the order of the list', () => {
    const h = history([13_000, 10_000, 11_000]);
    const d = decideBackoff(h, 14_000);
    expect(d).toMatchObject({
      allowed: false,
      nextAllowedAtMs: 17_000,
      delayMs: 4_000,
      consecutiveFailures: 3,
      lastError: 'boom at 13000',
    });
  });

  it('reports a crash loop at three consecutive failures', () => {
    expect(decideBackoff(history([1, 2]), 100_000).crashLoop).toBe(false);
    const d = decideBackoff(history([1, 2, 3]), 100_000);
    expect(d).toMatchObject({ crashLoop: true, allowed: true, lastError: 'boom at 3' });
  });

  it('resets after a worker stayed healthy long enough', () => {
    const failures = [1_000, 2_000, 4_000, 8_000];
    // Healthy from 10 s, still healthy at 45 s: 35 s >= 30 s forgives everything before.
    const h = history(failures, { sinceMs: 10_000, untilMs: null });
    expect(decideBackoff(h, 45_000)).toMatchObject({ consecutiveFailures: 0, crashLoop: false, allowed: true });
    // The same stretch seen at 20 s has not yet reached 30 s.
    expect(decideBackoff(h, 20_000)).toMatchObject({ consecutiveFailures: 4, crashLoop: true });
  });

  it('does not reset after a short healthy stretch', () => {
    const h = history([1_000, 2_000, 30_000], { sinceMs: 10_000, untilMs: 20_000 });
    expect(decideBackoff(h, 30_500)).toMatchObject({ consecutiveFailures: 3, crashLoop: true, delayMs: 4_000 });
  });

  it('counts failures after the reset point', () => {
    const h = history([1_000, 2_000, 50_000], { sinceMs: 10_000, untilMs: 45_000 });
    expect(decideBackoff(h, 50_100)).toMatchObject({
      consecutiveFailures: 1,
      crashLoop: false,
      allowed: false,
      nextAllowedAtMs: 51_000,
    });
  });

  it('honours a custom policy', () => {
    const policy = { baseMs: 100, maxMs: 250, resetAfterHealthyMs: 1_000, crashLoopThreshold: 5 };
    const d = decideBackoff(history([0, 10, 20, 30]), 100, policy);
    expect(d).toMatchObject({ delayMs: 250, nextAllowedAtMs: 280, crashLoop: false });
  });
});

describe('recordFailure', () => {
  it('appends and stays bounded', () => {
    let h: StartHistory = { failures: [], lastHealthy: null };
    for (let t = 0; t < 100; t += 1) h = recordFailure(h, fail(t * 1_000), DEFAULT_BACKOFF, 8);
    expect(h.failures).toHaveLength(8);
    expect(h.failures[7]?.atMs).toBe(99_000);
    expect(decideBackoff(h, 99_000)).toMatchObject({ delayMs: 60_000, crashLoop: true });
  });

  it('drops failures forgiven by a healthy stretch', () => {
    const h = recordFailure(history([1_000, 2_000], { sinceMs: 5_000, untilMs: 40_000 }), fail(50_000));
    expect(h.failures.map((f) => f.atMs)).toEqual([50_000]);
  });
});

describe('healthyFrom', () => {
  it('keeps forgiven failures forgiven when a later worker becomes healthy', () => {
    // A crash loop, then a worker healthy for 40 s (forgiving it), gone; later another worker comes up.
    const forgiven = history([0, 1_000, 2_000], { sinceMs: 10_000, untilMs: 50_000 });
    expect(decideBackoff(forgiven, 55_000)).toMatchObject({ consecutiveFailures: 0, crashLoop: false });
    const next = healthyFrom(forgiven, 60_000);
    expect(next).toEqual({ failures: [], lastHealthy: { sinceMs: 60_000, untilMs: null } });
    expect(decideBackoff(next, 61_000)).toMatchObject({ consecutiveFailures: 0, crashLoop: false, allowed: true });
  });

  it('keeps failures a short stretch did not forgive, and an open stretch its start', () => {
    const short = history([0, 1_000], { sinceMs: 5_000, untilMs: 10_000 });
    expect(healthyFrom(short, 20_000).failures.map((f) => f.atMs)).toEqual([0, 1_000]);
    const open = history([0], { sinceMs: 5_000, untilMs: null });
    expect(healthyFrom(open, 20_000)).toBe(open);
    // 30 s after the open stretch began (not after the second worker came up), the failure is forgiven.
    expect(decideBackoff(healthyFrom(open, 20_000), 35_001)).toMatchObject({ consecutiveFailures: 0 });
  });
});
