// Usage for billing is written by the supervisor as it starts and stops real workers (process executor).

import { afterEach, beforeEach, expect, it } from 'vitest';

import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';

let t: Fleet;

beforeEach(async () => {
  t = await startFleet();
});
afterEach(async () => {
  await closeFleet(t);
});

it('a worker the supervisor ran is billed from its start to its stop, as a pod and as its endpoint', async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 1, cpuFlavorIds: ['cpu5g'] });
  const id = await t.run(ep, { sleepMs: 200 });
  expect((await t.waitJob(ep, id, 20_000)).status).toBe('COMPLETED');
  const { workerId } = await t.status(ep, id);
  expect((await t.api('GET', `/v1/pods/${workerId}`)).json).toMatchObject({ costPerHr: 0.1, cpuFlavorId: 'cpu5g' });

  // The idle worker stops after idleTimeout; its usage record is closed then and stays closed.
  await waitUntil(async () => (await t.workers(ep)).length === 0, 15_000);
  const pods = async () => (await t.api('GET', '/v1/billing/pods?grouping=podId&bucketSize=year')).json;
  const [record] = await pods();
  expect(record).toMatchObject({ podId: workerId, diskSpaceBilledGb: 0 });
  expect(record.timeBilledMs).toBeGreaterThan(200);
  expect(record.timeBilledMs).toBeLessThan(20_000);
  await new Promise((r) => setTimeout(r, 300));
  expect((await pods())[0].timeBilledMs).toBe(record.timeBilledMs);

  const byEndpoint = (await t.api('GET', `/v1/billing/endpoints?bucketSize=year&endpointId=${ep}`)).json;
  expect(byEndpoint).toEqual([expect.objectContaining({ endpointId: ep, timeBilledMs: record.timeBilledMs })]);
  const byType = (await t.api('GET', '/v1/billing/endpoints?bucketSize=year&grouping=gpuTypeId')).json;
  expect(byType).toEqual([expect.objectContaining({ gpuTypeId: 'cpu5g' })]);
});
