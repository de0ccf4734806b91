/**
 * Usage and its billing: worker time recorded as the supervisor starts and stops workers, volume size over time,
 * and the pure arithmetic that splits intervals into calendar buckets (UTC) exactly.
 */

/** One worker's run, opened when the supervisor starts it and closed when it stops, exits or is lost. */
export interface UsageStart {
  workerId: string;
  userId: string;
  endpointId: string;
  templateId: string;
  imageName: string;
  gpuTypeId: string | null;
  gpuCount: number;
  /** The CPU flavor billed when the worker has no GPU. */
  cpuFlavorId: string | null;
  dataCenterId: string;
  startedAt: number;
}

export interface UsageRecord extends UsageStart {
  /** Null while the worker runs. */
  endedAt: number | null;
}

/** A network volume at one size over an interval (a resize closes one and opens the next). */
export interface VolumeUsage {
  volumeId: string;
  userId: string;
  sizeGb: number;
  startedAt: number;
  endedAt: number | null;
}

export const BUCKET_SIZES = ['hour', 'day', 'week', 'month', 'year'] as const;
export type BucketSize = (typeof BUCKET_SIZES)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Start of the UTC bucket holding `t`; weeks start on Monday (ISO 8601). */
export function bucketStart(t: number, size: BucketSize): number {
  const d = new Date(t);
  switch (size) {
    case 'hour':
      return Math.floor(t / HOUR_MS) * HOUR_MS;
    case 'day':
      return Math.floor(t / DAY_MS) * DAY_MS;
    case 'week': {
      const day = Math.floor(t / DAY_MS) * DAY_MS;
      const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
      return day - sinceMonday * DAY_MS;
    }
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    case 'year':
      return Date.UTC(d.getUTCFullYear(), 0, 1);
    default: {
      const unreachable: never = size;
      return unreachable;
    }
  }
}

export function nextBucketStart(start: number, size: BucketSize): number {
  const d = new Date(start);
  switch (size) {
    case 'hour':
      return start + HOUR_MS;
    case 'day':
      return start + DAY_MS;
    case 'week':
      return start + 7 * DAY_MS;
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    case 'year':
      return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
    default: {
      const unreachable: never = size;
      return unreachable;
    }
  }
}

/** [bucket start, milliseconds inside it] for each bucket the interval [from, to) touches; nothing is lost. */
export function splitByBucket(from: number, to: number, size: BucketSize): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let at = from;
  while (at < to) {
    const start = bucketStart(at, size);
    const end = Math.min(nextBucketStart(start, size), to);
    out.push([start, end - at]);
    at = end;
  }
  return out;
}

/** One stretch of billable time: `perHour` USD per hour, `diskGb` reported as diskSpaceBilledGb. */
export interface Billable {
  group: string;
  from: number;
  to: number;
  perHour: number;
  diskGb: number;
}

export interface Bucketed {
  time: number;
  group: string;
  timeBilledMs: number;
  amount: number;
  diskGb: number;
}

/** Sum billable stretches per (bucket, group); sorted by time, then group. Amounts are rounded to 1e-6 USD. */
export function aggregate(items: Iterable<Billable>, size: BucketSize): Bucketed[] {
  const sums = new Map<string, Bucketed>();
  for (const item of items) {
    for (const [time, ms] of splitByBucket(item.from, item.to, size)) {
      const key = `${time}\u0000${item.group}`;
      const acc = sums.get(key) ?? { time, group: item.group, timeBilledMs: 0, amount: 0, diskGb: 0 };
      acc.timeBilledMs += ms;
      acc.amount += (ms / HOUR_MS) * item.perHour;
      acc.diskGb = Math.max(acc.diskGb, item.diskGb);
      sums.set(key, acc);
    }
  }
  return [...sums.values()]
    .map((b) => ({ ...b, amount: Math.round(b.amount * 1e6) / 1e6 }))
    .sort((a, b) => a.time - b.time || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
}

/**
 * Cut [from, to) at the discount's expiry: the part before it is billed at `factor`, the rest at full price.
 * Returns [from, to, multiplier] pieces.
 */
export function discountPieces(
  from: number,
  to: number,
  discount: { factor: number; until: number } | null,
): Array<[number, number, number]> {
  if (!discount || discount.until <= from) return [[from, to, 1]];
  if (discount.until >= to) return [[from, to, discount.factor]];
  return [
    [from, discount.until, discount.factor],
    [discount.until, to, 1],
  ];
}
