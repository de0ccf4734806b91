// The console's formatters (console/src/format.ts) are plain functions: tested here without a browser.
import { describe, expect, it } from 'vitest';

import { ms } from '../../console/src/format.ts';

describe('console ms()', () => {
  it('keeps milliseconds, seconds and minutes with seconds below an hour', () => {
    expect(ms(null)).toBe('—');
    expect(ms(250)).toBe('250 ms');
    expect(ms(2_345)).toBe('2.35 s');
    expect(ms(12_340)).toBe('12.3 s');
    expect(ms(61_000)).toBe('1 min 1 s');
    expect(ms(59 * 60_000 + 59_000)).toBe('59 min 59 s');
  });
  it('carries a rounded-up second or minute into the next unit', () => {
    // 59.96 s read "60.0 s", and 119.6 s "1 min 60 s".
    expect(ms(59_960)).toBe('1 min 0 s');
    expect(ms(119_600)).toBe('2 min 0 s');
    expect(ms(3_599_600)).toBe('1 h 0 min');
  });
  it('shows hours and minutes from an hour, days and hours from a day', () => {
    // A long job (LLM generation, a training step) read "125 min 3 s", a day "1440 min 0 s".
    expect(ms(3_600_000)).toBe('1 h 0 min');
    expect(ms(125 * 60_000 + 3_000)).toBe('2 h 5 min');
    expect(ms(23 * 3_600_000 + 59 * 60_000)).toBe('23 h 59 min');
    expect(ms(1440 * 60_000)).toBe('1 d 0 h');
    expect(ms(2 * 86_400_000 + 5 * 3_600_000 + 20 * 60_000)).toBe('2 d 5 h');
  });
});
