import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** REST v1 templates and endpoints: status codes, bare arrays, sparse updates and their two routes. */

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.code).toBe(code);
  if (field) expect(res.json.details.map((d: { field: string }) => d.field)).toContain(field);
}

const template = (over: Record<string, unknown> = {}) => ({
  name: `tpl-${Math.random().toString(36).slice(2)}`,
  imageName: 'file://./examples/echo-ts',
  dockerStartCmd: ['node', 'worker.ts'],
  ...over,
});

describe('templates', () => {
  it('create 200 with defaults, list is a bare array, get by id', async () => {
    const res = await t.api('POST', '/v1/templates', template({ name: 'defaults' }));
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      name: 'defaults',
      category: 'NVIDIA',
      containerDiskInGb: 50,
      volumeInGb: 20,
      volumeMountPath: '/workspace',
      env: {},
      isServerless: false,
    });
    const list = await t.api('GET', '/v1/templates');
    expect(Array.isArray(list.json)).toBe(true);
    expect(list.json.map((x: { id: string }) => x.id)).toContain(res.json.id);
    expect((await t.api('GET', `/v1/templates/${res.json.id}`)).json.name).toBe('defaults');
  });

  it('a body starting with a UTF-8 byte order mark is read without it', async () => {
    const res = await t.api('POST', '/v1/templates', undefined, {
      raw: `\uFEFF${JSON.stringify(template({ name: 'bom' }))}`,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.name).toBe('bom');
  });

  it('PATCH and POST …/update are sparse synonyms', async () => {
    const { json: tpl } = await t.api('POST', '/v1/templates', template({ env: { A: '1' }, readme: 'r' }));
    const patched = await t.api('PATCH', `/v1/templates/${tpl.id}`, { readme: 'patched' });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ readme: 'patched', env: { A: '1' }, imageName: tpl.imageName });
    const posted = await t.api('POST', `/v1/templates/${tpl.id}/update`, { env: { B: '2' } });
    expect(posted.status).toBe(200);
    expect(posted.json).toMatchObject({ readme: 'patched', env: { B: '2' } });
    expect((await t.api('GET', `/v1/templates/${tpl.id}`)).json).toMatchObject({ readme: 'patched', env: { B: '2' } });
  });

  it('400 naming the field, 404 unknown, 409 name taken and in use, 204 delete', async () => {
    expectError(await t.api('POST', '/v1/templates', { name: 'x' }), 400, 'VALIDATION_FAILED', 'imageName');
    expectError(
      await t.api('POST', '/v1/templates', template({ volumeInGb: -1 })),
      400,
      'VALIDATION_FAILED',
      'volumeInGb',
    );
    expectError(await t.api('POST', '/v1/templates', template({ bogus: 1 })), 400, 'VALIDATION_FAILED', 'bogus');
    // curl -d without a content type sends form-urlencoded: 415, not a puzzling "body must be object".
    expectError(
      await t.api('POST', '/v1/templates', undefined, {
        raw: JSON.stringify(template({})),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(await t.api('GET', '/v1/templates/nosuchtpl1'), 404, 'TEMPLATE_NOT_FOUND');
    expectError(await t.api('PATCH', '/v1/templates/nosuchtpl1', { readme: '' }), 404, 'TEMPLATE_NOT_FOUND');
    expectError(await t.api('DELETE', '/v1/templates/nosuchtpl1'), 404, 'TEMPLATE_NOT_FOUND');
    const { json: a } = await t.api('POST', '/v1/templates', template({ name: 'taken' }));
    expectError(await t.api('POST', '/v1/templates', template({ name: 'taken' })), 409, 'NAME_TAKEN');
    const { json: ep } = await t.api('POST', '/v1/endpoints', { templateId: a.id, workersMax: 0 });
    expectError(await t.api('DELETE', `/v1/templates/${a.id}`), 409, 'RESOURCE_IN_USE');
    expect((await t.api('DELETE', `/v1/endpoints/${ep.id}`)).status).toBe(204);
    const del = await t.api('DELETE', `/v1/templates/${a.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectError(await t.api('GET', `/v1/templates/${a.id}`), 404, 'TEMPLATE_NOT_FOUND');
  });
  it('a NUL character where a worker start would carry it (env, command, entrypoint, image, mount path) is a 400', async () => {
    // No environment variable, argument or path can hold one: accepted, every worker start failed (crash-loop).
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ env: { A: 'x\u0000y' } }, 'env.A'],
      [{ env: { 'A\u0000': 'x' } }, 'env'],
      [{ dockerStartCmd: ['node', 'work\u0000er.ts'] }, 'dockerStartCmd'],
      [{ dockerEntrypoint: ['\u0000'] }, 'dockerEntrypoint'],
      [{ imageName: 'file://./examples/echo-ts\u0000' }, 'imageName'],
      [{ volumeMountPath: '/work\u0000space' }, 'volumeMountPath'],
    ];
    const { json: tpl } = await t.api('POST', '/v1/templates', template());
    for (const [over, field] of cases) {
      expectError(await t.api('POST', '/v1/templates', template(over)), 400, 'VALIDATION_FAILED', field);
      expectError(await t.api('PATCH', `/v1/templates/${tpl.id}`, over), 400, 'VALIDATION_FAILED', field);
    }
    expect((await t.api('GET', `/v1/templates/${tpl.id}`)).json).toMatchObject({
      env: {},
      dockerStartCmd: ['node', 'worker.ts'],
    });
    // An endpoint's env is the worker's too.
    const { json: ep } = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, workersMax: 0 });
    const bad = { env: { A: 'x\u0000y' } };
    expectError(
      await t.api('POST', '/v1/endpoints', { templateId: tpl.id, ...bad }),
      400,
      'VALIDATION_FAILED',
      'env.A',
    );
    expectError(await t.api('PATCH', `/v1/endpoints/${ep.id}`, bad), 400, 'VALIDATION_FAILED', 'env.A');
  });
});

describe('endpoints', () => {
  it('create 200 with the REST defaults; list is a bare array; includeTemplate', async () => {
    const { json: tpl } = await t.api('POST', '/v1/templates', template());
    const res = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, name: 'e1', workersMax: 0 });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      name: 'e1',
      templateId: tpl.id,
      computeType: 'GPU',
      gpuCount: 1,
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      version: 1,
    });
    expect(res.json.id).toMatch(/^[a-z0-9]{14}$/);
    const list = await t.api('GET', '/v1/endpoints');
    expect(Array.isArray(list.json)).toBe(true);
    const got = await t.api('GET', `/v1/endpoints/${res.json.id}?includeTemplate=true&includeWorkers=true`);
    expect(got.json.template.id).toBe(tpl.id);
    expect(got.json.workers).toEqual([]);
  });

  it('PATCH and POST …/update are sparse synonyms; changes to what a worker is made from bump the version', async () => {
    const { json: tpl } = await t.api('POST', '/v1/templates', template());
    const { json: ep } = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, workersMax: 2, idleTimeout: 9 });
    const a = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { workersMax: 4 });
    expect(a.status).toBe(200);
    // An empty volume id is no volume, as in GraphQL.
    const noVolume = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { networkVolumeId: '' });
    expect(noVolume.status, noVolume.text).toBe(200);
    expect(noVolume.json.networkVolumeId).toBeUndefined();
    // minCudaVersion set, then taken off with null (placement: src/fleet/cuda.ts); a bad one names the versions.
    expect((await t.api('PATCH', `/v1/endpoints/${ep.id}`, { minCudaVersion: '12.4' })).json.minCudaVersion).toBe(
      '12.4',
    );
    const noMin = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { minCudaVersion: null });
    expect(noMin.status, noMin.text).toBe(200);
    expect(noMin.json.minCudaVersion).toBeUndefined();
    const badMin = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { minCudaVersion: '12' });
    expectError(badMin, 400, 'VALIDATION_FAILED', 'minCudaVersion');
    expect(badMin.json.details).toEqual([
      { field: 'minCudaVersion', message: expect.stringMatching(/^minCudaVersion must be one of 13.0, 12.9, .*11.8/) },
    ]);
    expect(a.json).toMatchObject({ workersMax: 4, idleTimeout: 9, version: 1 });
    const b = await t.api('POST', `/v1/endpoints/${ep.id}/update`, { env: { X: 'y' } });
    expect(b.json).toMatchObject({ workersMax: 4, idleTimeout: 9, env: { X: 'y' }, version: 2 });
    // What a running worker was made from (its GPUs, its volume) outdates it too; scaling settings do not.
    const gpus = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { gpuTypeIds: ['NVIDIA A40'], gpuCount: 2 });
    expect(gpus.json).toMatchObject({ gpuTypeIds: ['NVIDIA A40'], gpuCount: 2, version: 3 });
    const same = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { gpuTypeIds: ['NVIDIA A40'], scalerValue: 2 });
    expect(same.json).toMatchObject({ scalerValue: 2, version: 3 });
    const { json: vol } = await t.api('POST', '/v1/networkvolumes', {
      name: `v-${ep.id}`,
      size: 1,
      dataCenterId: 'EU-RO-1',
    });
    const withVolume = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { networkVolumeId: vol.id });
    expect(withVolume.json).toMatchObject({ networkVolumeId: vol.id, version: 4 });
    // The same volume named twice is one volume (and naming it so again changes nothing).
    const twice = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { networkVolumeIds: [vol.id, vol.id] });
    expect(twice.status, twice.text).toBe(200);
    expect(twice.json.networkVolumeIds).toEqual([vol.id]);
    const again = await t.api('PATCH', `/v1/endpoints/${ep.id}`, { networkVolumeIds: [vol.id, vol.id] });
    expect(again.json.version).toBe(twice.json.version);
    // Its template: a new image rolls the endpoint; a new name or readme does not.
    await t.api('PATCH', `/v1/templates/${tpl.id}`, { name: `renamed-${tpl.id}`, readme: 'about' });
    expect((await t.api('GET', `/v1/endpoints/${ep.id}`)).json.version).toBe(again.json.version);
    await t.api('PATCH', `/v1/templates/${tpl.id}`, { imageName: 'img:next' });
    expect((await t.api('GET', `/v1/endpoints/${ep.id}`)).json.version).toBe(again.json.version + 1);
  });

  it('400 naming the field, 404 unknown, 204 delete', async () => {
    const { json: tpl } = await t.api('POST', '/v1/templates', template());
    expectError(await t.api('POST', '/v1/endpoints', { workersMax: 1 }), 400, 'VALIDATION_FAILED', 'templateId');
    expectError(
      await t.api('POST', '/v1/endpoints', { templateId: 'nosuchtpl1' }),
      400,
      'VALIDATION_FAILED',
      'templateId',
    );
    // A value outside a fixed set: one detail, naming what is allowed.
    const enumError = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, computeType: 'TPU' });
    expectError(enumError, 400, 'VALIDATION_FAILED', 'computeType');
    expect(enumError.json.details).toEqual([{ field: 'computeType', message: 'computeType must be one of GPU, CPU' }]);
    const longList = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, gpuTypeIds: ['RTX'] });
    expectError(longList, 400, 'VALIDATION_FAILED', 'gpuTypeIds.0');
    expect(longList.json.details).toHaveLength(1);
    expect(longList.json.message).toMatch(/gpuTypeIds\.0 must be one of NVIDIA .*in all/);
    expectError(
      await t.api('POST', '/v1/endpoints', { templateId: tpl.id, idleTimeout: 0 }),
      400,
      'VALIDATION_FAILED',
      'idleTimeout',
    );
    expectError(
      await t.api('POST', '/v1/endpoints', { templateId: tpl.id, workersMin: 3, workersMax: 1 }),
      400,
      'VALIDATION_FAILED',
      'workersMin',
    );
    expectError(
      await t.api('POST', '/v1/endpoints', { templateId: tpl.id, gpuTypeIds: ['NVIDIA Nope'] }),
      400,
      'VALIDATION_FAILED',
    );
    const { json: ep } = await t.api('POST', '/v1/endpoints', { templateId: tpl.id, workersMax: 0 });
    expectError(
      await t.api('PATCH', `/v1/endpoints/${ep.id}`, { scalerValue: 0 }),
      400,
      'VALIDATION_FAILED',
      'scalerValue',
    );
    expectError(
      await t.api('PATCH', `/v1/endpoints/${ep.id}`, { computeType: 'CPU' }),
      400,
      'VALIDATION_FAILED',
      'computeType',
    );
    for (const [m, p] of [
      ['GET', '/v1/endpoints/nosuchendpoint'],
      ['PATCH', '/v1/endpoints/nosuchendpoint'],
      ['POST', '/v1/endpoints/nosuchendpoint/update'],
      ['DELETE', '/v1/endpoints/nosuchendpoint'],
    ] as const) {
      expectError(
        await t.api(m, p, m === 'GET' || m === 'DELETE' ? undefined : { name: 'x' }),
        404,
        'ENDPOINT_NOT_FOUND',
      );
    }
    const del = await t.api('DELETE', `/v1/endpoints/${ep.id}`);
    expect(del.status).toBe(204);
    expectError(await t.api('GET', `/v1/endpoints/${ep.id}`), 404, 'ENDPOINT_NOT_FOUND');
  });
});
