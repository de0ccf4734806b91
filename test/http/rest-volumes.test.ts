import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** `/v1/networkvolumes`: CRUD, size only grows, directories on disk, in-use refusals, ownership checks. */

let t: TestServer;
let bob: { key: string; api: TestServer['api'] };
beforeAll(async () => {
  t = await startTestServer();
  const user = await t.server.accounts.createUser('bob');
  const { key } = await t.server.accounts.createKey(user.id, 'bob', 'all');
  bob = { key, api: (m, p, b, o = {}) => t.api(m, p, b, { ...o, key }) };
});
afterAll(async () => {
  await t.close();
});

function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.code).toBe(code);
  if (field) expect(res.json.details.map((d: { field: string }) => d.field)).toContain(field);
}

const create = (body: Record<string, unknown> = {}) =>
  t.api('POST', '/v1/networkvolumes', { name: 'vol', size: 10, dataCenterId: 'EU-RO-1', ...body });

describe('network volumes', () => {
  it('create 200 allocates a directory; list is a bare array; get; delete 204 removes it', async () => {
    const res = await create({ name: 'data', size: 50 });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{10}$/),
      name: 'data',
      size: 50,
      dataCenterId: 'EU-RO-1',
    });
    const dir = join(t.dataDir, 'volumes', res.json.id);
    expect(existsSync(dir)).toBe(true);
    expect(t.server.volumes.path(res.json.id)).toBe(dir);
    const list = await t.api('GET', '/v1/networkvolumes');
    expect(list.status).toBe(200);
    expect(list.json).toContainEqual(res.json);
    expect((await t.api('GET', `/v1/networkvolumes/${res.json.id}`)).json).toEqual(res.json);
    const del = await t.api('DELETE', `/v1/networkvolumes/${res.json.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect(existsSync(dir)).toBe(false);
    expectError(await t.api('GET', `/v1/networkvolumes/${res.json.id}`), 404, 'NETWORK_VOLUME_NOT_FOUND');
  });

  it('bad input → 400 naming the field', async () => {
    expectError(await create({ size: 4001 }), 400, 'VALIDATION_FAILED', 'size');
    expectError(await create({ size: -1 }), 400, 'VALIDATION_FAILED', 'size');
    expectError(await create({ size: 1.5 }), 400, 'VALIDATION_FAILED', 'size');
    expectError(await create({ name: '' }), 400, 'VALIDATION_FAILED', 'name');
    expectError(
      await t.api('POST', '/v1/networkvolumes', { name: 'x', size: 1 }),
      400,
      'VALIDATION_FAILED',
      'dataCenterId',
    );
    expectError(await create({ extra: true }), 400, 'VALIDATION_FAILED', 'extra');
  });

  it('PATCH and POST …/update are sparse synonyms; the size only grows', async () => {
    const { json: v } = await create({ name: 'grow', size: 20 });
    const renamed = await t.api('PATCH', `/v1/networkvolumes/${v.id}`, { name: 'grown' });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toMatchObject({ name: 'grown', size: 20 });
    const bigger = await t.api('POST', `/v1/networkvolumes/${v.id}/update`, { size: 30 });
    expect(bigger.json).toMatchObject({ name: 'grown', size: 30 });
    const same = await t.api('PATCH', `/v1/networkvolumes/${v.id}`, { size: 30 });
    expect(same.status).toBe(200);
    for (const [method, path] of [
      ['PATCH', `/v1/networkvolumes/${v.id}`],
      ['POST', `/v1/networkvolumes/${v.id}/update`],
    ] as const) {
      const res = await t.api(method, path, { size: 29 });
      expectError(res, 400, 'VALIDATION_FAILED', 'size');
      expect(res.json.message).toMatch(/only grow/);
    }
    expectError(await t.api('PATCH', `/v1/networkvolumes/${v.id}`, { size: 4001 }), 400, 'VALIDATION_FAILED', 'size');
    expect((await t.api('GET', `/v1/networkvolumes/${v.id}`)).json.size).toBe(30);
    expectError(await t.api('PATCH', '/v1/networkvolumes/nosuchvol1', { size: 40 }), 404, 'NETWORK_VOLUME_NOT_FOUND');
    expectError(await t.api('DELETE', '/v1/networkvolumes/nosuchvol1'), 404, 'NETWORK_VOLUME_NOT_FOUND');
  });

  it('an endpoint may only name its owner volumes (networkVolumeId and networkVolumeIds)', async () => {
    const { json: mine } = await create();
    const { json: theirs } = await bob.api('POST', '/v1/networkvolumes', {
      name: 'b',
      size: 1,
      dataCenterId: 'US-TX-3',
    });
    await expect(createEndpoint(t, { networkVolumeId: theirs.id })).rejects.toThrow(/400.*networkVolumeId/);
    await expect(createEndpoint(t, { networkVolumeIds: [mine.id, theirs.id] })).rejects.toThrow(
      /400.*networkVolumeIds/,
    );
    await expect(createEndpoint(t, { networkVolumeId: 'nosuchvol1' })).rejects.toThrow(/400/);
    const ep = await createEndpoint(t, { networkVolumeId: mine.id });
    expect((await t.api('GET', `/v1/endpoints/${ep}`)).json.networkVolumeId).toBe(mine.id);
    expectError(
      await t.api('PATCH', `/v1/endpoints/${ep}`, { networkVolumeId: theirs.id }),
      400,
      'VALIDATION_FAILED',
      'networkVolumeId',
    );
    expectError(
      await t.api('POST', `/v1/endpoints/${ep}/update`, { networkVolumeIds: [theirs.id] }),
      400,
      'VALIDATION_FAILED',
      'networkVolumeIds',
    );
  });

  it('a volume an endpoint uses cannot be deleted (409), through either field', async () => {
    const { json: a } = await create({ name: 'used-a' });
    const { json: b } = await create({ name: 'used-b' });
    const e1 = await createEndpoint(t, { networkVolumeId: a.id });
    const e2 = await createEndpoint(t, { networkVolumeIds: [b.id] });
    const refusal = await t.api('DELETE', `/v1/networkvolumes/${a.id}`);
    expectError(refusal, 409, 'RESOURCE_IN_USE');
    expect(refusal.json.message).toContain(e1);
    expectError(await t.api('DELETE', `/v1/networkvolumes/${b.id}`), 409, 'RESOURCE_IN_USE');
    expect(existsSync(t.server.volumes.path(a.id))).toBe(true);
    expect((await t.api('DELETE', `/v1/endpoints/${e1}`)).status).toBe(204);
    expect((await t.api('PATCH', `/v1/endpoints/${e2}`, { networkVolumeIds: [] })).status).toBe(200);
    expect((await t.api('DELETE', `/v1/networkvolumes/${a.id}`)).status).toBe(204);
    expect((await t.api('DELETE', `/v1/networkvolumes/${b.id}`)).status).toBe(204);
  });

  it("another user's volume is not found", async () => {
    const { json: v } = await create();
    for (const [m, p, body] of [
      ['GET', `/v1/networkvolumes/${v.id}`, undefined],
      ['PATCH', `/v1/networkvolumes/${v.id}`, { size: 99 }],
      ['POST', `/v1/networkvolumes/${v.id}/update`, { size: 99 }],
      ['DELETE', `/v1/networkvolumes/${v.id}`, undefined],
    ] as const) {
      expectError(await bob.api(m, p, body), 404, 'NETWORK_VOLUME_NOT_FOUND');
    }
    expect((await bob.api('GET', '/v1/networkvolumes')).json.map((x: { id: string }) => x.id)).not.toContain(v.id);
    expect((await t.api('GET', `/v1/networkvolumes/${v.id}`)).json.size).toBe(10);
  });
});
