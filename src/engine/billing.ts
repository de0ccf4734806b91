import {
  aggregate,
  DEFAULT_CPU_FLAVOR,
  discountPieces,
  hourlyPrice,
  MONTH_MS,
  type Billable,
  type BucketSize,
  type Endpoint,
  type PriceTable,
  type Template,
  type UsageRecord,
  type UsageStart,
  type WorkerRecord,
} from '../domain/index.ts';
import { invalidField } from '../errors/index.ts';
import type { Store } from '../store/index.ts';
import type { Clock } from './clock.ts';

interface Window {
  bucketSize?: BucketSize | undefined;
  startTime?: string | undefined;
  endTime?: string | undefined;
}
export interface EndpointBillingQuery extends Window {
  endpointId?: string | undefined;
  gpuTypeId?: string[] | undefined;
  grouping?: 'endpointId' | 'podId' | 'gpuTypeId' | undefined;
  dataCenterId?: string[] | undefined;
  imageName?: string | undefined;
  templateId?: string | undefined;
}
export interface PodBillingQuery extends Window {
  gpuTypeId?: string | undefined;
  grouping?: 'podId' | 'gpuTypeId' | undefined;
  podId?: string | undefined;
}

/** REST v1 `BillingRecord`: the grouping key names what the record is about. */
export interface BillingRecord {
  amount: number;
  diskSpaceBilledGb: number;
  endpointId?: string;
  podId?: string;
  gpuTypeId?: string;
  time: string;
  timeBilledMs: number;
}
export interface VolumeBillingRecord {
  amount: number;
  diskSpaceBilledGb: number;
  highPerformanceStorageAmount: number;
  highPerformanceStorageDiskSpaceBilledGb: number;
  time: string;
}

/** What a worker is billed as in `gpuTypeId`: its GPU type, or its CPU flavor when it has no GPU. */
const typeOf = (u: { gpuTypeId: string | null; gpuCount: number; cpuFlavorId: string | null }): string =>
  u.gpuTypeId && u.gpuCount > 0 ? u.gpuTypeId : (u.cpuFlavorId ?? 'cpu');

/** The CPU flavor a worker without GPUs is billed as: its endpoint's first, else the smallest. */
export const billedCpuFlavor = (w: Pick<WorkerRecord, 'gpuCount'>, e: Pick<Endpoint, 'cpuFlavorIds'>): string | null =>
  w.gpuCount > 0 ? null : (e.cpuFlavorIds[0] ?? DEFAULT_CPU_FLAVOR);

/** The usage record the supervisor opens when it starts a worker. */
export function usageOf(e: Endpoint, t: Template, w: WorkerRecord, dataCenterId: string): UsageStart {
  return {
    workerId: w.id,
    userId: e.userId,
    endpointId: e.id,
    templateId: t.id,
    imageName: t.imageName,
    gpuTypeId: w.gpuTypeId,
    gpuCount: w.gpuCount,
    cpuFlavorId: billedCpuFlavor(w, e),
    dataCenterId,
    startedAt: w.createdAt,
  };
}

/**
 * Billing (`/v1/billing/*`): per-second worker time × the price of its GPUs or CPU flavor, network volume size ×
 * time × the GB-month price, summed into UTC buckets with every interval split exactly at bucket boundaries.
 * The user's serverlessDiscount multiplies worker amounts until it expires.
 */
export class Billing {
  private readonly store: Store;
  readonly prices: PriceTable;
  private readonly clock: Clock;

  constructor(store: Store, prices: PriceTable, clock: Clock) {
    this.store = store;
    this.prices = prices;
    this.clock = clock;
  }

  /** USD per hour of a worker (pod `costPerHr`). */
  costPerHr(w: { gpuTypeId: string | null; gpuCount: number; cpuFlavorId: string | null }): number {
    return hourlyPrice(this.prices, w);
  }

  /**
   * USD per hour of one of an endpoint's workers, as its usage is billed (REST and GraphQL pods show this); workers
   * that joined from elsewhere are not billed here.
   */
  workerCostPerHr(w: WorkerRecord, e: Endpoint): number {
    if (!w.managed) return 0;
    return this.costPerHr({ gpuTypeId: w.gpuTypeId, gpuCount: w.gpuCount, cpuFlavorId: billedCpuFlavor(w, e) });
  }

  private window(q: Window): { from: number; to: number; size: BucketSize } {
    const now = this.clock.now();
    const from = q.startTime ? Date.parse(q.startTime) : 0;
    const to = Math.min(q.endTime ? Date.parse(q.endTime) : now, now);
    if (Number.isNaN(from)) throw invalidField('startTime', 'startTime is not a date-time');
    if (Number.isNaN(to)) throw invalidField('endTime', 'endTime is not a date-time');
    if (q.startTime && q.endTime && from > Date.parse(q.endTime)) {
      throw invalidField('startTime', 'startTime must not be after endTime');
    }
    return { from, to, size: q.bucketSize ?? 'day' };
  }

  private async workerTime(
    userId: string,
    usage: UsageRecord[],
    from: number,
    to: number,
    groupOf: (u: UsageRecord) => string,
  ): Promise<Billable[]> {
    const user = await this.store.getUser(userId);
    const d = user?.serverlessDiscount;
    const discount = d ? { factor: d.discountFactor, until: Date.parse(d.expirationDate) || 0 } : null;
    const items: Billable[] = [];
    for (const u of usage) {
      const start = Math.max(u.startedAt, from);
      const end = Math.min(u.endedAt ?? to, to);
      if (end <= start) continue;
      const perHour = hourlyPrice(this.prices, u);
      for (const [a, b, factor] of discountPieces(start, end, discount)) {
        items.push({ group: groupOf(u), from: a, to: b, perHour: perHour * factor, diskGb: 0 });
      }
    }
    return items;
  }

  async endpoints(userId: string, q: EndpointBillingQuery): Promise<BillingRecord[]> {
    const { from, to, size } = this.window(q);
    const grouping = q.grouping ?? 'endpointId';
    const usage = (
      await this.store.listUsage({
        userId,
        from,
        to,
        endpointId: q.endpointId,
        templateId: q.templateId,
        imageName: q.imageName,
      })
    ).filter(
      (u) =>
        (!q.gpuTypeId?.length || q.gpuTypeId.includes(typeOf(u))) &&
        (!q.dataCenterId?.length || q.dataCenterId.includes(u.dataCenterId)),
    );
    const groupOf = (u: UsageRecord) =>
      grouping === 'endpointId' ? u.endpointId : grouping === 'podId' ? u.workerId : typeOf(u);
    return this.records(await this.workerTime(userId, usage, from, to, groupOf), size, grouping);
  }

  /** Wharf's pods are its serverless workers: the same usage, grouped by worker (podId) or GPU type. */
  async pods(userId: string, q: PodBillingQuery): Promise<BillingRecord[]> {
    const { from, to, size } = this.window(q);
    const grouping = q.grouping ?? 'gpuTypeId';
    const usage = (await this.store.listUsage({ userId, from, to, workerId: q.podId })).filter(
      (u) => !q.gpuTypeId || typeOf(u) === q.gpuTypeId,
    );
    const groupOf = (u: UsageRecord) => (grouping === 'podId' ? u.workerId : typeOf(u));
    return this.records(await this.workerTime(userId, usage, from, to, groupOf), size, grouping);
  }

  private records(items: Billable[], size: BucketSize, grouping: 'endpointId' | 'podId' | 'gpuTypeId') {
    return aggregate(items, size).map((b): BillingRecord => ({
      amount: b.amount,
      diskSpaceBilledGb: 0,
      [grouping]: b.group,
      time: new Date(b.time).toISOString(),
      timeBilledMs: b.timeBilledMs,
    }));
  }

  /** Size × time × volumeGbMonth (a month = 30 days); diskSpaceBilledGb = the GB held in the bucket. */
  async networkVolumes(userId: string, q: Window): Promise<VolumeBillingRecord[]> {
    const { from, to, size } = this.window(q);
    const perGbHour = this.prices.volumeGbMonth / (MONTH_MS / 3_600_000);
    const items: Billable[] = [];
    for (const v of await this.store.listVolumeUsage(userId, from, to)) {
      const start = Math.max(v.startedAt, from);
      const end = Math.min(v.endedAt ?? to, to);
      if (end > start)
        items.push({ group: v.volumeId, from: start, to: end, perHour: v.sizeGb * perGbHour, diskGb: v.sizeGb });
    }
    const byTime = new Map<number, VolumeBillingRecord>();
    for (const b of aggregate(items, size)) {
      const r = byTime.get(b.time) ?? {
        amount: 0,
        diskSpaceBilledGb: 0,
        highPerformanceStorageAmount: 0,
        highPerformanceStorageDiskSpaceBilledGb: 0,
        time: new Date(b.time).toISOString(),
      };
      r.amount = Math.round((r.amount + b.amount) * 1e6) / 1e6;
      r.diskSpaceBilledGb += b.diskGb;
      byTime.set(b.time, r);
    }
    return [...byTime.values()];
  }
}
