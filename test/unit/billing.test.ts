import { describe, expect, it } from 'vitest';
import {
  aggregate,
  bucketStart,
  DEFAULT_PRICES,
  discountPieces,
  hourlyPrice,
  nextBucketStart,
  parsePrices,
  splitByBucket,
  type BucketSize,
} from '../../src/domain/index.ts';

const at = (iso: string) => Date.parse(iso);
const H = 3_600_000;

describe('buckets (UTC)', () => {
  it.each<[BucketSize, string, string, string]>([
    ['hour', '2024-03-10T23:59:59.999Z', '2024-03-10T23:00:00Z', '2024-03-11T00:00:00Z'],
    ['day', '2024-02-29T12:00:00Z', '2024-02-29T00:00:00Z', '2024-03-01T00:00:00Z'],
    ['week', '2024-03-10T23:00:00Z', '2024-03-04T00:00:00Z', '2024-03-11T00:00:00Z'],
    ['week', '2024-03-11T00:00:00Z', '2024-03-11T00:00:00Z', '2024-03-18T00:00:00Z'],
    ['month', '2024-02-29T12:00:00Z', '2024-02-01T00:00:00Z', '2024-03-01T00:00:00Z'],
    ['month', '2024-12-31T23:00:00Z', '2024-12-01T00:00:00Z', '2025-01-01T00:00:00Z'],
    ['year', '2024-07-01T00:00:00Z', '2024-01-01T00:00:00Z', '2025-01-01T00:00:00Z'],
  ])('%s of %s starts at %s, the next at %s', (size, t, start, next) => {
    expect(bucketStart(at(t), size)).toBe(at(start));
    expect(nextBucketStart(at(start), size)).toBe(at(next));
  });

  it('splits an interval exactly: the pieces add up to the whole', () => {
    const from = at('2024-01-31T22:15:00Z');
    const to = at('2024-03-01T01:00:00Z');
    for (const size of ['hour', 'day', 'week', 'month', 'year'] as const) {
      const pieces = splitByBucket(from, to, size);
      expect(pieces.reduce((n, [, ms]) => n + ms, 0)).toBe(to - from);
    }
    expect(splitByBucket(from, to, 'month')).toEqual([
      [at('2024-01-01T00:00:00Z'), 1.75 * H],
      [at('2024-02-01T00:00:00Z'), 29 * 24 * H],
      [at('2024-03-01T00:00:00Z'), H],
    ]);
    expect(splitByBucket(from, from, 'day')).toEqual([]);
  });

  it('aggregates per bucket and group, sorted', () => {
    const out = aggregate(
      [
        { group: 'b', from: at('2024-01-01T23:00:00Z'), to: at('2024-01-02T01:00:00Z'), perHour: 1, diskGb: 0 },
        { group: 'a', from: at('2024-01-02T00:00:00Z'), to: at('2024-01-02T00:30:00Z'), perHour: 2, diskGb: 5 },
        { group: 'a', from: at('2024-01-02T03:00:00Z'), to: at('2024-01-02T03:30:00Z'), perHour: 2, diskGb: 7 },
      ],
      'day',
    );
    expect(out).toEqual([
      { time: at('2024-01-01T00:00:00Z'), group: 'b', timeBilledMs: H, amount: 1, diskGb: 0 },
      { time: at('2024-01-02T00:00:00Z'), group: 'a', timeBilledMs: H, amount: 2, diskGb: 7 },
      { time: at('2024-01-02T00:00:00Z'), group: 'b', timeBilledMs: H, amount: 1, diskGb: 0 },
    ]);
  });

  it('cuts at a discount expiry', () => {
    expect(discountPieces(0, 10, null)).toEqual([[0, 10, 1]]);
    expect(discountPieces(0, 10, { factor: 0.5, until: 20 })).toEqual([[0, 10, 0.5]]);
    expect(discountPieces(0, 10, { factor: 0.5, until: 0 })).toEqual([[0, 10, 1]]);
    expect(discountPieces(0, 10, { factor: 0.5, until: 4 })).toEqual([
      [0, 4, 0.5],
      [4, 10, 1],
    ]);
  });
});

describe('prices', () => {
  it('GPU price × count, else the CPU flavor; unknown types cost nothing', () => {
    expect(hourlyPrice(DEFAULT_PRICES, { gpuTypeId: 'NVIDIA A40', gpuCount: 2, cpuFlavorId: null })).toBe(0.8);
    expect(hourlyPrice(DEFAULT_PRICES, { gpuTypeId: null, gpuCount: 0, cpuFlavorId: 'cpu3c' })).toBe(0.06);
    expect(hourlyPrice(DEFAULT_PRICES, { gpuTypeId: 'Nope', gpuCount: 1, cpuFlavorId: null })).toBe(0);
  });

  it('a price file overlays the defaults and is checked', () => {
    const p = parsePrices({ gpu: { 'NVIDIA A40': 1.5, 'My GPU': 2 }, volumeGbMonth: 0.1 });
    expect(p.gpu['NVIDIA A40']).toBe(1.5);
    expect(p.gpu['My GPU']).toBe(2);
    expect(p.gpu['NVIDIA L4']).toBe(DEFAULT_PRICES.gpu['NVIDIA L4']);
    expect(p.cpu).toEqual(DEFAULT_PRICES.cpu);
    expect(p.volumeGbMonth).toBe(0.1);
    expect(() => parsePrices({ gpu: { x: -1 } })).toThrow(/prices.gpu\["x"\]/);
    expect(() => parsePrices({ gpus: {} })).toThrow(/unknown key gpus/);
    expect(() => parsePrices([])).toThrow();
  });
});
