import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../helpers/graphql.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * runpodctl's GraphQL documents (facts §4): `{query, variables}` bodies (variables may be null), Bearer auth,
 * variable types as runpodctl declares them.
 */

let t: TestServer;
let templateId: string;
let templateB: string;
let volumeId: string;
const run = (query: string, variables?: Record<string, unknown> | null) => gql(t.url, t.key, query, variables);

function ok(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}
function fails(res: ApiResponse, root: string, code: string): string {
  expect(res.status, res.text).toBe(200);
  expect(res.json.data[root], res.text).toBeNull();
  expect(res.json.errors[0]).toMatchObject({ path: [root], extensions: { code } });
  return res.json.errors[0].message as string;
}

beforeAll(async () => {
  t = await startTestServer();
  const tpl = (name: string) => t.api('POST', '/v1/templates', { name, imageName: 'img:1', isServerless: true });
  templateId = (await tpl('ctl-tpl-a')).json.id;
  templateB = (await tpl('ctl-tpl-b')).json.id;
  volumeId = (await t.server.volumes.create(t.server.adminUserId, { name: 'v', size: 5, dataCenterId: 'US-TX-3' })).id;
});
afterAll(async () => {
  await t.close();
});

describe("runpodctl's documents (facts §4)", () => {
  const SAVE = `
		mutation SaveEndpoint($input: EndpointInput!) {
			saveEndpoint(input: $input) {
				id name templateId gpuIds instanceIds computeType networkVolumeId
				networkVolumeIds { networkVolumeId dataCenterId } locations idleTimeout scalerType scalerValue
				workersMin workersMax gpuCount minCudaVersion executionTimeoutMs flashBootType modelReferences
			}
		}
	`;

  it('serverless create (saveEndpoint with variables), then update --template-id', async () => {
    const pools = ok(await run('query { serverlessGpuPools { id gpuTypeIds } }', null), 'serverlessGpuPools');
    const pool = pools.find((p: any) => p.gpuTypeIds.includes('NVIDIA GeForce RTX 4090'));
    expect(pool.id).toBe('ADA_24');
    const input = {
      name: 'endpoint-abcd1234',
      templateId,
      gpuIds: pool.id,
      gpuCount: 1,
      workersMin: 0,
      workersMax: 3,
      locations: 'EU-RO-1',
      networkVolumeIds: [{ networkVolumeId: volumeId }],
      executionTimeoutMs: 300000,
      minCudaVersion: '12.4',
      flashBootType: 'FLASHBOOT',
    };
    const ep = ok(await run(SAVE, { input }), 'saveEndpoint');
    expect(ep).toMatchObject({
      gpuIds: 'ADA_24',
      computeType: 'GPU',
      locations: 'EU-RO-1',
      flashBootType: 'FLASHBOOT',
      modelReferences: [],
    });
    expect(ep.networkVolumeIds).toEqual([{ networkVolumeId: volumeId, dataCenterId: 'US-TX-3' }]);

    const update = `mutation UpdateEndpointTemplate($input: UpdateEndpointTemplateInput!) {
      updateEndpointTemplate(input: $input) { id templateId } }`;
    const res = ok(
      await run(update, { input: { endpointId: ep.id, templateId: templateB } }),
      'updateEndpointTemplate',
    );
    expect(res).toEqual({ id: ep.id, templateId: templateB });
    const bad = await run(update, { input: { endpointId: ep.id, templateId: 'nosuchtpl' } });
    expect(fails(bad, 'updateEndpointTemplate', 'VALIDATION_FAILED')).toContain('nosuchtpl');
  });

  it('template list (podTemplates with PodTemplateInput) and get (podTemplate)', async () => {
    const list = `query PodTemplates($input: PodTemplateInput) { podTemplates(input: $input) { id name imageName isServerless isPublic isRunpod category containerDiskInGb volumeInGb volumeMountPath } }`;
    expect(ok(await run(list, { input: { isRunpod: true } }), 'podTemplates')).toEqual([]);
    const mine = ok(await run(list, { input: { isRunpod: false } }), 'podTemplates');
    expect(mine.map((x: any) => x.id)).toEqual(expect.arrayContaining([templateId, templateB]));
    const get = `query GetTemplate($id: String!) { podTemplate(id: $id) { id name ports env { key value } readme } }`;
    expect(ok(await run(get, { id: templateId }), 'podTemplate')).toEqual({
      id: templateId,
      name: 'ctl-tpl-a',
      ports: '',
      env: [],
      readme: '',
    });
    expect(ok(await run(get, { id: 'nosuchtpl0' }), 'podTemplate')).toBeNull();
  });

  it('template create with port labels: the REST create, then saveTemplate with dockerArgs in JSON form', async () => {
    const created = await t.api('POST', '/v1/templates', {
      name: 'ctl-tpl-labels',
      imageName: 'runpod/worker:1',
      isServerless: true,
      ports: ['8000/http'],
      dockerEntrypoint: ['/bin/sh', '-c'],
      dockerStartCmd: ['python handler.py'],
      containerDiskInGb: 10,
    });
    expect(created.status, created.text).toBe(200);
    const save = `mutation UpdateTemplatePortLabels($input: SaveTemplateInput) { saveTemplate(input: $input) { id dockerArgs } }`;
    const input = {
      id: created.json.id,
      name: 'ctl-tpl-labels',
      imageName: 'runpod/worker:1',
      containerDiskInGb: 10,
      containerRegistryAuthId: '',
      dockerArgs: JSON.stringify({ cmd: ['python handler.py'], entrypoint: ['/bin/sh', '-c'] }),
      env: [],
      ports: '8000/http',
      portsConfig: [{ port: '8000', name: 'api' }],
      volumeInGb: 20,
      isPublic: false,
      isServerless: true,
      startJupyter: false,
      startSsh: false,
      advancedStart: false,
      readme: '',
      volumeMountPath: '/workspace',
      category: 'NVIDIA',
    };
    const saved = ok(await run(save, { input }), 'saveTemplate');
    // Read back in the same form, so that saving what was read keeps both.
    expect(JSON.parse(saved.dockerArgs)).toEqual({ cmd: ['python handler.py'], entrypoint: ['/bin/sh', '-c'] });
    const back = await t.api('GET', `/v1/templates/${created.json.id}`);
    expect(back.json).toMatchObject({ dockerEntrypoint: ['/bin/sh', '-c'], dockerStartCmd: ['python handler.py'] });
  });

  it('gpu list, datacenter list and user', async () => {
    const gpus = ok(
      await run('query { gpuTypes { id displayName memoryInGb secureCloud communityCloud } }', null),
      'gpuTypes',
    );
    expect(gpus).toContainEqual({
      id: 'NVIDIA H100 80GB HBM3',
      displayName: 'H100 80GB HBM3',
      memoryInGb: 80,
      secureCloud: true,
      communityCloud: false,
    });
    const dcs = ok(
      await run('query { dataCenters { id name location gpuAvailability { gpuTypeId displayName stockStatus } } }'),
      'dataCenters',
    );
    expect(dcs).toContainEqual({ id: 'EU-RO-1', name: 'EU-RO-1', location: 'Romania', gpuAvailability: [] });
    const user = ok(
      await run(
        'query { myself { id email clientBalance currentSpendPerHr spendLimit notifyPodsStale notifyPodsGeneral notifyLowBalance } }',
      ),
      'myself',
    );
    expect(user).toMatchObject({ id: t.server.adminUserId, clientBalance: 0 });
  });
});
