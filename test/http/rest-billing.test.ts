import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageStart } from '../../src/domain/index.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * `/v1/billing/*` over usage written through the store with fixed timestamps: exact splits at hour, day, week,
 * month and year boundaries, groupings, filters, the serverless discount and volume storage.
 * Default prices: NVIDIA A40 0.40 $/h, NVIDIA L4 0.43 $/h, cpu3c 0.06 $/h, volumes 0.07 $/GB-month (30 days).
 */

const at = (iso: string) => Date.parse(iso);
const MIN = 60_000;
const H = 3_600_000;

let t: TestServer;
let carol: { id: string; key: string };

const usage = (over: Partial<UsageStart> & { workerId: string; startedAt: number }): UsageStart => ({
  userId: t.server.adminUserId,
  endpointId: 'endpointaaaaaa',
  templateId: 'templateaa',
  imageName: 'img:a',
  gpuTypeId: 'NVIDIA A40',
  gpuCount: 2,
  cpuFlavorId: null,
  dataCenterId: 'EU-RO-1',
  ...over,
});

beforeAll(async () => {
  t = await startTestServer();
  const s = t.server.store;
  // A: 2 × A40 from Sunday 2024-03-10 23:30 to Monday 01:00 (crosses an hour, a day and a week boundary).
  await s.recordUsageStart(usage({ workerId: 'wa', startedAt: at('2024-03-10T23:30:00Z') }));
  await s.recordUsageEnd('wa', at('2024-03-11T01:00:00Z'));
  // B: a CPU worker of another endpoint and template, in another data center, 2 h on Monday.
  await s.recordUsageStart(
    usage({
      workerId: 'wb',
      endpointId: 'endpointbbbbbb',
      templateId: 'templatebb',
      imageName: 'img:b',
      gpuTypeId: null,
      gpuCount: 0,
      cpuFlavorId: 'cpu3c',
      dataCenterId: 'US-TX-3',
      startedAt: at('2024-03-11T00:00:00Z'),
    }),
  );
  await s.recordUsageEnd('wb', at('2024-03-11T02:00:00Z'));
  // C: one L4 across the end of March (a month boundary).
  await s.recordUsageStart(
    usage({ workerId: 'wc', gpuTypeId: 'NVIDIA L4', gpuCount: 1, startedAt: at('2024-03-31T23:00:00Z') }),
  );
  await s.recordUsageEnd('wc', at('2024-04-01T01:00:00Z'));

  const user = await t.server.accounts.createUser('carol');
  carol = { id: user.id, key: (await t.server.accounts.createKey(user.id, 'carol', 'all')).key };
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, key?: string): Promise<ApiResponse> => t.api('GET', path, undefined, key ? { key } : {});
const WINDOW = 'startTime=2024-03-01T00:00:00Z&endTime=2024-05-01T00:00:00Z';

describe('endpoint billing', () => {
  it('day buckets grouped by endpoint (the default), split exactly at midnight', async () => {
    const res = await get(`/v1/billing/endpoints?${WINDOW}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual([
      {
        amount: 0.4,
        diskSpaceBilledGb: 0,
        endpointId: 'endpointaaaaaa',
        time: '2024-03-10T00:00:00.000Z',
        timeBilledMs: 30 * MIN,
      },
      {
        amount: 0.8,
        diskSpaceBilledGb: 0,
        endpointId: 'endpointaaaaaa',
        time: '2024-03-11T00:00:00.000Z',
        timeBilledMs: H,
      },
      {
        amount: 0.12,
        diskSpaceBilledGb: 0,
        endpointId: 'endpointbbbbbb',
        time: '2024-03-11T00:00:00.000Z',
        timeBilledMs: 2 * H,
      },
      {
        amount: 0.43,
        diskSpaceBilledGb: 0,
        endpointId: 'endpointaaaaaa',
        time: '2024-03-31T00:00:00.000Z',
        timeBilledMs: H,
      },
      {
        amount: 0.43,
        diskSpaceBilledGb: 0,
        endpointId: 'endpointaaaaaa',
        time: '2024-04-01T00:00:00.000Z',
        timeBilledMs: H,
      },
    ]);
  });

  it('hour, week (Monday), month and year buckets', async () => {
    const hour = await get(
      `/v1/billing/endpoints?${WINDOW}&bucketSize=hour&endpointId=endpointaaaaaa&gpuTypeId=NVIDIA%20A40`,
    );
    expect(hour.json.map((r: any) => [r.time, r.timeBilledMs, r.amount])).toEqual([
      ['2024-03-10T23:00:00.000Z', 30 * MIN, 0.4],
      ['2024-03-11T00:00:00.000Z', H, 0.8],
    ]);
    const week = await get(`/v1/billing/endpoints?${WINDOW}&bucketSize=week&grouping=gpuTypeId`);
    expect(week.json.map((r: any) => [r.time, r.gpuTypeId, r.timeBilledMs])).toEqual([
      ['2024-03-04T00:00:00.000Z', 'NVIDIA A40', 30 * MIN],
      ['2024-03-11T00:00:00.000Z', 'NVIDIA A40', H],
      ['2024-03-11T00:00:00.000Z', 'cpu3c', 2 * H],
      // 2024-04-01 is itself a Monday: the L4's two hours fall into two weeks.
      ['2024-03-25T00:00:00.000Z', 'NVIDIA L4', H],
      ['2024-04-01T00:00:00.000Z', 'NVIDIA L4', H],
    ]);
    const month = await get(
      `/v1/billing/endpoints?${WINDOW}&bucketSize=month&grouping=gpuTypeId&gpuTypeId=NVIDIA%20L4`,
    );
    expect(month.json).toEqual([
      { amount: 0.43, diskSpaceBilledGb: 0, gpuTypeId: 'NVIDIA L4', time: '2024-03-01T00:00:00.000Z', timeBilledMs: H },
      { amount: 0.43, diskSpaceBilledGb: 0, gpuTypeId: 'NVIDIA L4', time: '2024-04-01T00:00:00.000Z', timeBilledMs: H },
    ]);
    const year = await get(`/v1/billing/endpoints?${WINDOW}&bucketSize=year`);
    expect(year.json.map((r: any) => [r.time, r.endpointId, r.timeBilledMs, r.amount])).toEqual([
      ['2024-01-01T00:00:00.000Z', 'endpointaaaaaa', 3.5 * H, 2.06],
      ['2024-01-01T00:00:00.000Z', 'endpointbbbbbb', 2 * H, 0.12],
    ]);
  });

  it('grouping by pod, and the filters', async () => {
    const byPod = await get(`/v1/billing/endpoints?${WINDOW}&bucketSize=year&grouping=podId`);
    expect(byPod.json.map((r: any) => [r.podId, r.timeBilledMs])).toEqual([
      ['wa', 1.5 * H],
      ['wb', 2 * H],
      ['wc', 2 * H],
    ]);
    const sum = (res: ApiResponse) => res.json.reduce((n: number, r: any) => n + r.timeBilledMs, 0);
    expect(sum(await get(`/v1/billing/endpoints?${WINDOW}&dataCenterId=US-TX-3`))).toBe(2 * H);
    expect(sum(await get(`/v1/billing/endpoints?${WINDOW}&dataCenterId=US-TX-3&dataCenterId=EU-RO-1`))).toBe(5.5 * H);
    expect(sum(await get(`/v1/billing/endpoints?${WINDOW}&templateId=templatebb`))).toBe(2 * H);
    expect(sum(await get(`/v1/billing/endpoints?${WINDOW}&imageName=img:a`))).toBe(3.5 * H);
    expect(sum(await get(`/v1/billing/endpoints?${WINDOW}&gpuTypeId=NVIDIA%20H200`))).toBe(0);
  });

  it('the window clips intervals exactly', async () => {
    const res = await get(
      '/v1/billing/endpoints?startTime=2024-03-11T00:30:00Z&endTime=2024-03-11T01:30:00Z&bucketSize=hour',
    );
    expect(res.json.map((r: any) => [r.endpointId, r.time, r.timeBilledMs])).toEqual([
      ['endpointaaaaaa', '2024-03-11T00:00:00.000Z', 30 * MIN],
      ['endpointbbbbbb', '2024-03-11T00:00:00.000Z', 30 * MIN],
      ['endpointbbbbbb', '2024-03-11T01:00:00.000Z', 30 * MIN],
    ]);
  });

  it('bad queries → 400 naming the parameter', async () => {
    for (const [query, field] of [
      ['bucketSize=minute', 'bucketSize'],
      ['startTime=yesterday', 'startTime'],
      ['grouping=templateId', 'grouping'],
      ['startTime=2024-03-02T00:00:00Z&endTime=2024-03-01T00:00:00Z', 'startTime'],
    ]) {
      const res = await get(`/v1/billing/endpoints?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.json.details.map((d: any) => d.field)).toContain(field);
    }
  });

  it("the user's serverlessDiscount multiplies amounts until it expires; usage of others is not seen", async () => {
    expect((await get(`/v1/billing/endpoints?${WINDOW}`, carol.key)).json).toEqual([]);
    const s = t.server.store;
    await s.recordUsageStart(usage({ workerId: 'wd', userId: carol.id, startedAt: at('2024-03-10T23:30:00Z') }));
    await s.recordUsageEnd('wd', at('2024-03-11T01:00:00Z'));
    const patch = await t.api('PATCH', `/v1/users/${carol.id}`, {
      serverlessDiscount: { discountFactor: 0.5, type: 'SERVERLESS', expirationDate: '2024-03-11T00:30:00Z' },
    });
    expect(patch.status).toBe(200);
    const res = await get(`/v1/billing/endpoints?${WINDOW}`, carol.key);
    // 30 min at 0.8 $/h × 0.5, then 30 min × 0.5 and 30 min at full price.
    expect(res.json.map((r: any) => [r.time, r.amount])).toEqual([
      ['2024-03-10T00:00:00.000Z', 0.2],
      ['2024-03-11T00:00:00.000Z', 0.6],
    ]);
    await t.api('PATCH', `/v1/users/${carol.id}`, { serverlessDiscount: null });
    expect((await get(`/v1/billing/endpoints?${WINDOW}`, carol.key)).json[0].amount).toBe(0.4);
  });

  it('a running worker is billed up to now', async () => {
    const user = await t.server.accounts.createUser('dave');
    const { key } = await t.server.accounts.createKey(user.id, 'dave', 'all');
    // A second of slack: the server's clock is anchored at start and advanced monotonically, so it may trail
    // Date.now() by a few milliseconds.
    await t.server.store.recordUsageStart(
      usage({ workerId: 'we', userId: user.id, startedAt: Date.now() - 2 * H - 1000 }),
    );
    const res = await get('/v1/billing/endpoints?bucketSize=year', key);
    expect(res.json).toHaveLength(1);
    expect(res.json[0].timeBilledMs).toBeGreaterThanOrEqual(2 * H);
    expect(res.json[0].timeBilledMs).toBeLessThan(2 * H + 60_000);
  });
});

describe('pod billing', () => {
  it('groups by GPU type by default, by pod on request, and filters by pod and GPU type', async () => {
    const res = await get(`/v1/billing/pods?${WINDOW}&bucketSize=month`);
    expect(res.json.map((r: any) => [r.time, r.gpuTypeId, r.timeBilledMs])).toEqual([
      ['2024-03-01T00:00:00.000Z', 'NVIDIA A40', 1.5 * H],
      ['2024-03-01T00:00:00.000Z', 'NVIDIA L4', H],
      ['2024-03-01T00:00:00.000Z', 'cpu3c', 2 * H],
      ['2024-04-01T00:00:00.000Z', 'NVIDIA L4', H],
    ]);
    const pod = await get(`/v1/billing/pods?${WINDOW}&bucketSize=year&grouping=podId&podId=wb`);
    expect(pod.json).toEqual([
      { amount: 0.12, diskSpaceBilledGb: 0, podId: 'wb', time: '2024-01-01T00:00:00.000Z', timeBilledMs: 2 * H },
    ]);
    const gpu = await get(`/v1/billing/pods?${WINDOW}&bucketSize=year&gpuTypeId=NVIDIA%20L4`);
    expect(gpu.json.map((r: any) => r.amount)).toEqual([0.86]);
  });
});

describe('network volume billing', () => {
  it('size × time × volumeGbMonth, following resizes and deletion', async () => {
    const s = t.server.store;
    const v = {
      id: 'volbilling',
      userId: carol.id,
      name: 'v',
      size: 100,
      dataCenterId: 'EU-RO-1',
      createdAt: at('2024-03-01T00:00:00Z'),
    };
    await s.createNetworkVolume(v);
    await s.updateNetworkVolume({ ...v, size: 200 }, at('2024-03-01T12:00:00Z'));
    await s.deleteNetworkVolume(carol.id, v.id, at('2024-03-02T06:00:00Z'));
    const res = await get(`/v1/billing/networkvolumes?${WINDOW}`, carol.key);
    expect(res.status).toBe(200);
    const perGbHour = 0.07 / 720;
    expect(res.json).toEqual([
      {
        amount: Math.round((100 * 12 + 200 * 12) * perGbHour * 1e6) / 1e6,
        diskSpaceBilledGb: 200,
        highPerformanceStorageAmount: 0,
        highPerformanceStorageDiskSpaceBilledGb: 0,
        time: '2024-03-01T00:00:00.000Z',
      },
      {
        amount: Math.round(200 * 6 * perGbHour * 1e6) / 1e6,
        diskSpaceBilledGb: 200,
        highPerformanceStorageAmount: 0,
        highPerformanceStorageDiskSpaceBilledGb: 0,
        time: '2024-03-02T00:00:00.000Z',
      },
    ]);
    expect((await get(`/v1/billing/networkvolumes?${WINDOW}`)).json).toEqual([]);
  });
});
