import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as py from '../helpers/graphql.ts';
import { pythonGql } from '../helpers/graphql.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * Every GraphQL document runpod-python 1.12.0 sends (spec/worker-protocol.md §4), sent as the SDK sends it, checking
 * what the SDK reads: `data.<rootField>` (and sub-paths), or `errors[0].message` for a QueryError.
 */

let t: TestServer;
const send = (query: string): Promise<ApiResponse> => pythonGql(t.url, t.key, query);

/** What the SDK's run_graphql_query returns or raises. */
function sdkData(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}
function sdkError(res: ApiResponse, code: string): string {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors[0].extensions.code, res.text).toBe(code);
  return res.json.errors[0].message as string;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('runpod-python GraphQL documents', () => {
  let templateId: string;
  let endpointId: string;

  it('get_user and update_user_settings', async () => {
    const volume = await t.server.volumes.create(t.server.adminUserId, {
      name: 'v',
      size: 10,
      dataCenterId: 'EU-RO-1',
    });
    const user = sdkData(await send(py.QUERY_USER), 'myself');
    expect(user).toEqual({
      id: t.server.adminUserId,
      pubKey: '',
      networkVolumes: [{ id: volume.id, name: 'v', size: 10, dataCenterId: 'EU-RO-1' }],
    });
    const keys = 'ssh-ed25519 AAAA one\nssh-ed25519 BBBB two';
    const updated = sdkData(await send(py.updateUserSettings(keys)), 'updateUserSettings');
    expect(updated).toEqual({ id: t.server.adminUserId, pubKey: keys });
    expect(sdkData(await send(py.QUERY_USER), 'myself').pubKey).toBe(keys);
  });

  it('get_gpus and get_gpu', async () => {
    const gpus = sdkData(await send(py.QUERY_GPU_TYPES), 'gpuTypes');
    expect(gpus.length).toBe(49);
    expect(gpus).toContainEqual({ id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24 });
    const [gpu] = sdkData(await send(py.gpuQuery('NVIDIA A40', 2)), 'gpuTypes');
    expect(gpu).toMatchObject({ id: 'NVIDIA A40', maxGpuCount: 8, manufacturer: 'Nvidia', memoryInGb: 48 });
    expect(gpu.lowestPrice).toEqual({ minimumBidPrice: expect.any(Number), uninterruptablePrice: expect.any(Number) });
    expect(gpu.securePrice).toBeGreaterThanOrEqual(0);
    // An unknown GPU gives an empty list (the SDK raises ValueError on it).
    expect(sdkData(await send(py.gpuQuery('NVIDIA Z9000')), 'gpuTypes')).toEqual([]);
  });

  it('create_template (docker args with quotes, env, serverless)', async () => {
    const doc = py.saveTemplate({
      name: 'sdk-template',
      imageName: 'file://./examples/echo-ts',
      dockerStartCmd: 'node worker.ts --greeting "hello world"',
      env: { MODE: 'test', LEVEL: '2' },
      isServerless: true,
    });
    const tpl = sdkData(await send(doc), 'saveTemplate');
    expect(tpl).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{10}$/),
      name: 'sdk-template',
      imageName: 'file://./examples/echo-ts',
      dockerArgs: 'node worker.ts --greeting "hello world"',
      containerDiskInGb: 10,
      volumeInGb: 0,
      volumeMountPath: '/workspace',
      ports: '',
      env: [
        { key: 'MODE', value: 'test' },
        { key: 'LEVEL', value: '2' },
      ],
      isServerless: true,
    });
    templateId = tpl.id;
    const rest = await t.api('GET', `/v1/templates/${templateId}`);
    expect(rest.json.dockerStartCmd).toEqual(['node', 'worker.ts', '--greeting', 'hello world']);
  });

  it('create_endpoint with flashboot, CUDA versions and the SDK defaults', async () => {
    const doc = py.saveEndpoint({ name: 'sdk-ep', templateId, flashboot: true, allowedCudaVersions: '12.4,12.5' });
    const ep = sdkData(await send(doc), 'saveEndpoint');
    expect(ep).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'sdk-ep',
      templateId,
      gpuIds: 'AMPERE_16',
      networkVolumeId: null,
      // The SDK sends locations: "" (anywhere), which reads back as sent.
      locations: '',
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      allowedCudaVersions: '12.4,12.5',
      gpuCount: 1,
      flashBootType: 'FLASHBOOT',
    });
    endpointId = ep.id;
    const rest = (await t.api('GET', `/v1/endpoints/${endpointId}`)).json;
    expect(rest).toMatchObject({ flashboot: true, computeType: 'GPU', allowedCudaVersions: ['12.4', '12.5'] });
    expect(rest.gpuTypeIds).toEqual([
      'NVIDIA RTX A4000',
      'NVIDIA RTX A4500',
      'NVIDIA RTX 4000 Ada Generation',
      'NVIDIA RTX 2000 Ada Generation',
    ]);
  });

  it('get_endpoints', async () => {
    const endpoints = sdkData(await send(py.QUERY_ENDPOINT), 'myself').endpoints;
    const ep = endpoints.find((e: any) => e.id === endpointId);
    expect(ep).toEqual({
      aiKey: null,
      gpuIds: 'AMPERE_16',
      id: endpointId,
      idleTimeout: 5,
      name: 'sdk-ep',
      networkVolumeId: null,
      // The SDK sends locations: "" (anywhere), which reads back as sent.
      locations: '',
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      templateId,
      type: 'QB',
      userId: t.server.adminUserId,
      version: 1,
      workersMax: 3,
      workersMin: 0,
      workersStandby: 1,
      gpuCount: 1,
      env: [],
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      networkVolume: null,
    });
  });

  it('update_endpoint_template', async () => {
    const other = sdkData(await send(py.saveTemplate({ name: 'sdk-template-2', imageName: 'img:2' })), 'saveTemplate');
    const res = sdkData(await send(py.updateEndpointTemplate(endpointId, other.id)), 'updateEndpointTemplate');
    expect(res).toEqual({ id: endpointId, templateId: other.id });
    expect((await t.api('GET', `/v1/endpoints/${endpointId}`)).json).toMatchObject({
      templateId: other.id,
      version: 2,
    });
  });

  it('get_pods, get_pod, stop_pod and terminate_pod on a worker', async () => {
    const worker = await t.server.workers.resolveWorker(
      await t.server.resources.getEndpoint(null, endpointId),
      'sdkworker00001',
      null,
    );
    const pods = sdkData(await send(py.QUERY_POD), 'myself').pods;
    expect(pods).toHaveLength(1);
    expect(pods[0]).toMatchObject({ id: worker.id, desiredStatus: 'RUNNING', imageName: 'img:2', env: [] });
    expect(pods[0].runtime).toEqual({ ports: [] });
    const pod = sdkData(await send(py.podQuery(worker.id)), 'pod');
    expect(pod).toEqual(pods[0]);
    expect(sdkData(await send(py.podQuery('nosuchpod')), 'pod')).toBeNull();

    expect(sdkData(await send(py.podStop(worker.id)), 'podStop')).toEqual({ id: worker.id, desiredStatus: 'EXITED' });
    expect((await t.server.store.getWorker(worker.id))?.retired).toBe(true);
    expect(sdkData(await send(py.podTerminate(worker.id)), 'podTerminate')).toBeNull();
    expect(sdkError(await send(py.podTerminate('nosuchpod')), 'POD_NOT_FOUND')).toContain('nosuchpod');
  });

  it('create_pod and resume_pod answer that Wharf runs serverless workers only', async () => {
    for (const doc of [py.podDeployMutation('NVIDIA GeForce RTX 4090'), py.podDeployMutation(null)]) {
      expect(sdkError(await send(doc), 'PODS_NOT_SUPPORTED')).toMatch(/serverless workers only/);
    }
    expect(sdkError(await send(py.podResume('abc', 1)), 'PODS_NOT_SUPPORTED')).toMatch(/podResume/);
  });

  it('container registry auth: create, update, delete', async () => {
    const created = sdkData(await send(py.saveRegistryAuth('docker-hub', 'me', 's3cret')), 'saveRegistryAuth');
    expect(created).toEqual({ id: expect.stringMatching(/^c[a-z0-9]{24}$/), name: 'docker-hub' });
    const updated = sdkData(await send(py.updateRegistryAuth(created.id, 'me2', 'n3w')), 'updateRegistryAuth');
    expect(updated).toEqual(created);
    expect(sdkData(await send(py.deleteRegistryAuth(created.id)), 'deleteRegistryAuth')).toBeNull();
    expect(sdkError(await send(py.deleteRegistryAuth(created.id)), 'REGISTRY_AUTH_NOT_FOUND')).toContain(created.id);
  });

  it('a bad key is HTTP 401 (AuthenticationError), with a JSON body', async () => {
    const res = await pythonGql(t.url, 'wharf_not_a_key', py.QUERY_USER);
    expect(res.status).toBe(401);
    expect(res.json.errors[0]).toMatchObject({ message: expect.any(String), extensions: { code: 'UNAUTHORIZED' } });
  });
});
