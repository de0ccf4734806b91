import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../helpers/graphql.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * Round-trip fidelity for declarative clients (flash, the Pulumi/Terraform providers, runpodctl): they save an
 * endpoint or a template, read it back and compare with their desired config; a field that reads back otherwise than
 * it was sent looks like drift and is saved (and, for a worker-shaping field, rolled) again on every run. Each case
 * sends a full input as those clients build it, then checks the mutation's answer AND a later read (myself
 * { endpoints / podTemplates }, GET /v1/...) give every sent field back unchanged. Where Wharf stores a value in
 * another form (an empty id as none), the case says so and why.
 */

let t: TestServer;
let templateId: string;
let otherTemplateId: string;
let vol1: string;
let vol2: string;
let authId: string;

const run = (query: string, variables?: Record<string, unknown>) => gql(t.url, t.key, query, variables);
function ok(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}

const ENDPOINT_FIELDS = `id name templateId type computeType gpuIds gpuCount instanceIds locations idleTimeout
  scalerType scalerValue workersMin workersMax networkVolumeId networkVolumeIds { networkVolumeId dataCenterId }
  allowedCudaVersions minCudaVersion executionTimeoutMs flashBootType env { key value } version`;
const SAVE_ENDPOINT = `mutation saveEndpoint($input: EndpointInput!) { saveEndpoint(input: $input) { ${ENDPOINT_FIELDS} } }`;
const MY_ENDPOINTS = `query { myself { endpoints { ${ENDPOINT_FIELDS} } } }`;

const TEMPLATE_FIELDS = `id name imageName dockerArgs containerDiskInGb volumeInGb volumeMountPath ports
  portsConfig { port name } env { key value } isServerless isPublic containerRegistryAuthId readme startSsh
  startJupyter startScript advancedStart config category`;
const SAVE_TEMPLATE = `mutation saveTemplate($input: SaveTemplateInput) { saveTemplate(input: $input) { ${TEMPLATE_FIELDS} } }`;
const MY_TEMPLATES = `query { myself { podTemplates { ${TEMPLATE_FIELDS} } } }`;

/** The sent GraphQL endpoint input as it reads back: networkVolumeIds gain their volume's dataCenterId. */
function endpointAsRead(input: Record<string, unknown>, dataCenters: Record<string, string>) {
  const out: Record<string, unknown> = { ...input };
  if (Array.isArray(input['networkVolumeIds'])) {
    out['networkVolumeIds'] = (input['networkVolumeIds'] as { networkVolumeId: string }[]).map((v) => ({
      networkVolumeId: v.networkVolumeId,
      dataCenterId: dataCenters[v.networkVolumeId],
    }));
  }
  return out;
}

async function readEndpoint(id: string) {
  const list = ok(await run(MY_ENDPOINTS), 'myself').endpoints as { id: string }[];
  return list.find((e) => e.id === id);
}

async function readTemplate(id: string) {
  const list = ok(await run(MY_TEMPLATES), 'myself').podTemplates as { id: string }[];
  return list.find((x) => x.id === id);
}

beforeAll(async () => {
  t = await startTestServer();
  const tpl = (name: string) => t.api('POST', '/v1/templates', { name, imageName: 'img:1', isServerless: true });
  templateId = (await tpl('rt-tpl-a')).json.id;
  otherTemplateId = (await tpl('rt-tpl-b')).json.id;
  const user = t.server.adminUserId;
  vol1 = (await t.server.volumes.create(user, { name: 'v1', size: 5, dataCenterId: 'EU-RO-1' })).id;
  vol2 = (await t.server.volumes.create(user, { name: 'v2', size: 5, dataCenterId: 'US-TX-3' })).id;
  const auth = await t.api('POST', '/v1/containerregistryauth', { name: 'rt-reg', username: 'u', password: 'p' });
  expect(auth.status, auth.text).toBe(200);
  authId = auth.json.id;
});
afterAll(async () => {
  await t.close();
});

describe('GraphQL saveEndpoint: every sent field reads back unchanged', () => {
  const dcs = () => ({ [vol1]: 'EU-RO-1', [vol2]: 'US-TX-3' });
  // flash's ServerlessResource.model_dump(exclude_none) with a data center list, CUDA versions and two volumes
  // (serverless.py: locations = ",".join(datacenter), allowedCudaVersions = ",".join(cudaVersions), networkVolumeIds
  // as [{networkVolumeId}] when there is more than one), plus env as Pulumi and runpodctl send it.
  const flashInput = () => ({
    name: 'rt-flash',
    templateId,
    type: 'QB',
    gpuIds: 'ADA_24,AMPERE_80,-NVIDIA A100 80GB PCIe',
    gpuCount: 2,
    locations: 'EU-RO-1,US-TX-3',
    idleTimeout: 60,
    scalerType: 'REQUEST_COUNT',
    scalerValue: 3,
    workersMin: 1,
    workersMax: 4,
    networkVolumeIds: [{ networkVolumeId: vol1 }, { networkVolumeId: vol2 }],
    allowedCudaVersions: '12.8,12.4',
    minCudaVersion: '12.4',
    executionTimeoutMs: 0,
    flashBootType: 'FLASHBOOT',
    env: [
      { key: 'ZED', value: '1' },
      { key: 'ALPHA', value: '' },
      { key: 'MODEL', value: 'org/model' },
    ],
  });
  let id: string;
  let version: number;

  it('create: the answer and myself { endpoints } give back what was sent', async () => {
    const input = flashInput();
    const created = ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint');
    expect(created).toMatchObject(endpointAsRead(input, dcs()));
    id = created.id;
    version = created.version;
    expect(await readEndpoint(id)).toMatchObject(endpointAsRead(input, dcs()));
  });

  it('saving the same input again changes nothing and does not bump version (flash reads version)', async () => {
    const input = { ...flashInput(), id };
    const saved = ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint');
    expect(saved).toMatchObject({ ...endpointAsRead(input, dcs()), version });
    expect(await readEndpoint(id)).toMatchObject({ ...endpointAsRead(input, dcs()), version });
  });

  it('update by id: every changed field reads back as sent', async () => {
    const input = {
      ...flashInput(),
      id,
      name: 'rt-flash-2',
      templateId: otherTemplateId,
      type: 'LB',
      gpuIds: 'HOPPER_141',
      gpuCount: 1,
      locations: 'US-TX-3',
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      networkVolumeIds: [{ networkVolumeId: vol2 }],
      allowedCudaVersions: '12.9',
      minCudaVersion: '12.9',
      executionTimeoutMs: 600_000,
      flashBootType: 'OFF',
      env: [{ key: 'MODEL', value: 'org/other' }],
    };
    const saved = ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint');
    expect(saved).toMatchObject(endpointAsRead(input, dcs()));
    expect(saved.version).toBe(version + 1);
    expect(await readEndpoint(id)).toMatchObject(endpointAsRead(input, dcs()));
  });

  it('locations read back as sent: a country with one data center, and whole countries given as their code', async () => {
    for (const locations of ['EU-RO-1', 'EU-SE-1,EU-CZ-1', 'CA-MTL-1,CA-MTL-2,CA-MTL-3', 'US', 'RO,US-TX-3']) {
      const input = { ...flashInput(), id, locations };
      expect(ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint').locations).toBe(locations);
      expect((await readEndpoint(id))!).toMatchObject({ locations });
    }
  });

  it('allowedCudaVersions "" (flash sends it when no versions are chosen) reads back ""', async () => {
    const input = { ...flashInput(), id, allowedCudaVersions: '' };
    expect(ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint').allowedCudaVersions).toBe('');
    expect((await readEndpoint(id))!).toMatchObject({ allowedCudaVersions: '' });
  });

  it('locations "" (anywhere) still reads "" after a REST PATCH echoing GET\'s dataCenterIds (every one: the same)', async () => {
    const input = { ...flashInput(), id, locations: '' };
    expect(ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint').locations).toBe('');
    // REST shows "anywhere" as every data center; a client that saves back what it read stores them all.
    const got = (await t.api('GET', `/v1/endpoints/${id}`)).json;
    const res = await t.api('PATCH', `/v1/endpoints/${id}`, { dataCenterIds: got.dataCenterIds });
    expect(res.status, res.text).toBe(200);
    expect((await readEndpoint(id))!).toMatchObject({ locations: '' });
    // A real change of the data centers still reads as derived from them (a whole country as its code).
    await t.api('PATCH', `/v1/endpoints/${id}`, { dataCenterIds: ['EU-SE-1'] });
    expect((await readEndpoint(id))!).toMatchObject({ locations: 'SE' });
  });

  it('a CPU endpoint: instanceIds of one flavor in two sizes (flash CpuInstanceType) read back as sent', async () => {
    for (const instanceIds of [['cpu3c-2-4', 'cpu3c-4-8'], ['cpu5c-4-8', 'cpu3g-2-8'], ['cpu3g-4-16']]) {
      const input = { ...flashInput(), id, gpuIds: undefined, gpuCount: undefined, instanceIds };
      const saved = ok(await run(SAVE_ENDPOINT, { input }), 'saveEndpoint');
      expect(saved).toMatchObject({ computeType: 'CPU', instanceIds });
      expect((await readEndpoint(id))!).toMatchObject({ computeType: 'CPU', instanceIds });
    }
  });
});

describe('GraphQL saveTemplate: every sent field reads back unchanged', () => {
  // runpodctl project deploy (isServerless, startSsh true), the Python SDK's create_template, runpodctl's port labels
  // (portsConfig) and a pod-template config: what Pulumi's SaveTemplateInput carries.
  const full = () => ({
    name: 'rt-template',
    imageName: 'ghcr.io/org/worker:1.2',
    dockerArgs: "bash -c 'python -u handler.py --port 8000'",
    containerDiskInGb: 30,
    volumeInGb: 0,
    volumeMountPath: '/runpod-volume',
    ports: '8000/http,22/tcp',
    portsConfig: [
      { port: '8000/http', name: 'api' },
      { port: '22/tcp', name: 'ssh' },
    ],
    env: [
      { key: 'B', value: '2' },
      { key: 'A', value: '1' },
    ],
    isServerless: true,
    isPublic: false,
    containerRegistryAuthId: authId,
    readme: '# worker\n',
    startSsh: true,
    startJupyter: false,
    startScript: 'echo started',
    advancedStart: true,
    config: { mode: 'fast', retries: 2 },
  });
  let id: string;

  it('create: the answer and myself { podTemplates } give back what was sent', async () => {
    const input = full();
    const saved = ok(await run(SAVE_TEMPLATE, { input }), 'saveTemplate');
    expect(saved).toMatchObject(input);
    id = saved.id;
    expect(await readTemplate(id)).toMatchObject(input);
  });

  it('update by id: changed fields read back as sent', async () => {
    const input = {
      ...full(),
      id,
      name: 'rt-template-2',
      dockerArgs: 'python  -u  "my handler.py"',
      containerDiskInGb: 40,
      volumeMountPath: '/data',
      ports: '8080/http',
      portsConfig: [{ port: '8080/http', name: 'web' }],
      env: [{ key: 'C', value: '3' }],
      isPublic: true,
      readme: '',
      startSsh: false,
      startScript: '',
      advancedStart: false,
      config: 'plain text',
    };
    const saved = ok(await run(SAVE_TEMPLATE, { input }), 'saveTemplate');
    expect(saved).toMatchObject(input);
    expect(await readTemplate(id)).toMatchObject(input);
  });

  it('flash (PodTemplate defaults: config {}, dockerArgs "") reads back as sent', async () => {
    const input = {
      name: 'rt-flash-tpl',
      imageName: 'runpod/flash:latest',
      dockerArgs: '',
      containerDiskInGb: 64,
      volumeInGb: 0,
      env: [{ key: 'RUNPOD_API_KEY', value: 'k' }],
      readme: '',
      config: {},
      startScript: '',
      advancedStart: false,
    };
    const saved = ok(await run(SAVE_TEMPLATE, { input }), 'saveTemplate');
    expect(saved).toMatchObject(input);
    expect(await readTemplate(saved.id)).toMatchObject(input);
  });

  it("saving a template again unchanged (flash's update_template echo) does not bump its endpoints' version", async () => {
    const input = { ...full(), name: 'rt-template-used' };
    const tpl = ok(await run(SAVE_TEMPLATE, { input }), 'saveTemplate');
    const ep = ok(await run(SAVE_ENDPOINT, { input: { name: 'rt-uses', templateId: tpl.id } }), 'saveEndpoint');
    ok(await run(SAVE_TEMPLATE, { input: { ...input, id: tpl.id } }), 'saveTemplate');
    expect((await readEndpoint(ep.id))!).toMatchObject({ version: ep.version });
    ok(await run(SAVE_TEMPLATE, { input: { ...input, id: tpl.id, dockerArgs: 'python -u other.py' } }), 'saveTemplate');
    expect((await readEndpoint(ep.id))!).toMatchObject({ version: ep.version + 1 });
  });
});

describe('REST /v1/endpoints: every sent field reads back unchanged', () => {
  const body = () => ({
    name: 'rt-rest',
    templateId,
    computeType: 'GPU',
    gpuTypeIds: ['NVIDIA L40S', 'NVIDIA GeForce RTX 4090', 'NVIDIA A40'],
    gpuCount: 2,
    dataCenterIds: ['US-TX-3', 'EU-RO-1'],
    allowedCudaVersions: ['12.8', '12.4'],
    minCudaVersion: '12.4',
    executionTimeoutMs: 120_000,
    flashboot: true,
    idleTimeout: 30,
    networkVolumeId: vol1,
    networkVolumeIds: [vol2, vol1],
    scalerType: 'REQUEST_COUNT',
    scalerValue: 2,
    workersMin: 1,
    workersMax: 5,
    env: { Z: '1', A: '' },
  });
  let id: string;
  let version: number;

  it('POST: the answer and GET give back what was sent', async () => {
    const sent = body();
    const res = await t.api('POST', '/v1/endpoints', sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject(sent);
    id = res.json.id;
    version = res.json.version;
    expect((await t.api('GET', `/v1/endpoints/${id}`)).json).toMatchObject(sent);
    expect((await t.api('GET', '/v1/endpoints')).json).toContainEqual(expect.objectContaining(sent));
  });

  it('PATCH with the same body: nothing changes, version stays', async () => {
    const { computeType: _, ...sent } = body();
    const res = await t.api('PATCH', `/v1/endpoints/${id}`, sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ ...sent, version });
  });

  it('PATCH: changed fields read back as sent', async () => {
    const sent = {
      name: 'rt-rest-2',
      gpuTypeIds: ['NVIDIA H100 80GB HBM3'],
      gpuCount: 1,
      dataCenterIds: ['EU-SE-1'],
      allowedCudaVersions: ['13.0'],
      minCudaVersion: '12.9',
      executionTimeoutMs: 0,
      flashboot: false,
      idleTimeout: 1,
      networkVolumeIds: [vol1],
      scalerType: 'QUEUE_DELAY',
      scalerValue: 10,
      workersMin: 0,
      workersMax: 2,
      env: { B: 'x' },
    };
    const res = await t.api('PATCH', `/v1/endpoints/${id}`, sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject(sent);
    expect((await t.api('GET', `/v1/endpoints/${id}`)).json).toMatchObject(sent);
  });

  it('a CPU endpoint: cpuFlavorIds and vcpuCount read back (terraform compares them)', async () => {
    const sent = { name: 'rt-cpu', templateId, computeType: 'CPU', cpuFlavorIds: ['cpu5c', 'cpu3g'], vcpuCount: 4 };
    const res = await t.api('POST', '/v1/endpoints', sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject(sent);
    expect((await t.api('GET', `/v1/endpoints/${res.json.id}`)).json).toMatchObject(sent);
    const patch = { cpuFlavorIds: ['cpu3c'], vcpuCount: 2 };
    expect((await t.api('PATCH', `/v1/endpoints/${res.json.id}`, patch)).json).toMatchObject(patch);
  });
});

describe('REST /v1/templates: every sent field reads back unchanged', () => {
  const body = () => ({
    name: 'rt-rest-template',
    imageName: 'ghcr.io/org/worker:2',
    category: 'NVIDIA',
    containerDiskInGb: 25,
    containerRegistryAuthId: authId,
    dockerEntrypoint: ['/bin/sh', '-c'],
    dockerStartCmd: ['python -u handler.py'],
    env: { Z: '1', A: '2' },
    isPublic: false,
    isServerless: true,
    ports: ['8000/http', '22/tcp'],
    readme: '# hi',
    volumeInGb: 0,
    volumeMountPath: '/runpod-volume',
  });
  let id: string;

  it('POST: the answer and GET give back what was sent', async () => {
    const sent = body();
    const res = await t.api('POST', '/v1/templates', sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject(sent);
    id = res.json.id;
    expect((await t.api('GET', `/v1/templates/${id}`)).json).toMatchObject(sent);
  });

  it('PATCH: changed fields read back as sent', async () => {
    const sent = {
      name: 'rt-rest-template-2',
      imageName: 'ghcr.io/org/worker:3',
      containerDiskInGb: 10,
      dockerEntrypoint: [],
      dockerStartCmd: ['node', 'worker.js'],
      env: { Q: '' },
      isPublic: true,
      ports: ['8080/http'],
      readme: '',
      volumeInGb: 5,
      volumeMountPath: '/data',
    };
    const res = await t.api('PATCH', `/v1/templates/${id}`, sent);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject(sent);
    expect((await t.api('GET', `/v1/templates/${id}`)).json).toMatchObject(sent);
  });
});

describe('GraphQL saveEndpoint with an inline template: an update replaces the bound template in place', () => {
  // flash's _do_deploy sends the template of its config inline (PodTemplate named after the config's resource_id,
  // with no id: EndpointTemplateInput has none), and its update sends it again, under the same name, whenever its
  // cached state has no templateId. RunPod keeps one template per endpoint; made anew each time, it was refused
  // (NAME_TAKEN, against the endpoint's own template) or rolled every worker.
  const inline = (over: Record<string, unknown> = {}) => ({
    name: 'rt-inline-tpl',
    imageName: 'img:inline-1',
    containerDiskInGb: 20,
    dockerArgs: '',
    env: [{ key: 'A', value: '1' }],
    config: {},
    ...over,
  });
  const endpoint = (over: Record<string, unknown> = {}) => ({
    name: 'rt-inline',
    gpuIds: 'ADA_24',
    workersMax: 0,
    template: inline(),
    ...over,
  });
  const fields = `id templateId version template { id name imageName boundEndpointId }`;
  const SAVE = `mutation saveEndpoint($input: EndpointInput!) { saveEndpoint(input: $input) { ${fields} } }`;
  const save = (input: Record<string, unknown>) => run(SAVE, { input });
  const named = async (name: string) =>
    (ok(await run(MY_TEMPLATES), 'myself').podTemplates as { id: string; name: string }[]).filter((x) =>
      x.name.startsWith(name),
    );
  let id: string;
  let tplId: string;
  let version: number;

  it('the same inline template again: same templateId, same version, no other template', async () => {
    const created = ok(await save(endpoint()), 'saveEndpoint');
    id = created.id;
    tplId = created.templateId;
    version = created.version;
    expect(created.template).toMatchObject({ id: tplId, name: 'rt-inline-tpl', boundEndpointId: id });
    const again = ok(await save(endpoint({ id })), 'saveEndpoint');
    expect(again).toMatchObject({ templateId: tplId, version });
    expect((await readEndpoint(id))!).toMatchObject({ templateId: tplId, version });
    expect((await named('rt-inline-tpl')).map((x) => x.id)).toEqual([tplId]);
  });

  it('a changed image: same templateId, version + 1, read back changed', async () => {
    const saved = ok(await save(endpoint({ id, template: inline({ imageName: 'img:inline-2' }) })), 'saveEndpoint');
    expect(saved).toMatchObject({ templateId: tplId, version: version + 1 });
    expect(saved.template).toMatchObject({ id: tplId, imageName: 'img:inline-2', boundEndpointId: id });
    expect(await readTemplate(tplId)).toMatchObject({ imageName: 'img:inline-2' });
    version += 1;
  });

  it('a changed template and a changed endpoint together roll the workers once', async () => {
    const input = endpoint({ id, gpuIds: 'AMPERE_80', template: inline({ imageName: 'img:inline-3' }) });
    const saved = ok(await save(input), 'saveEndpoint');
    expect(saved).toMatchObject({ templateId: tplId, version: version + 1 });
    version += 1;
  });

  it('a replace: fields left out return to their defaults, without rolling when none shapes workers', async () => {
    const saved = ok(
      await save(endpoint({ id, gpuIds: 'AMPERE_80', template: inline({ imageName: 'img:inline-3', config: null }) })),
      'saveEndpoint',
    );
    expect(saved).toMatchObject({ templateId: tplId, version });
    expect(await readTemplate(tplId)).toMatchObject({ config: null, imageName: 'img:inline-3' });
  });

  it("names: a new one renames the endpoint's template; another template's is NAME_TAKEN and nothing changes", async () => {
    const renamed = ok(
      await save(
        endpoint({ id, gpuIds: 'AMPERE_80', template: inline({ name: 'rt-inline-tpl-b', imageName: 'img:inline-3' }) }),
      ),
      'saveEndpoint',
    );
    expect(renamed).toMatchObject({ templateId: tplId, version, template: { name: 'rt-inline-tpl-b' } });
    expect((await named('rt-inline-tpl')).map((x) => x.id)).toEqual([tplId]);

    const taken = await save(
      endpoint({ id, gpuIds: 'AMPERE_80', template: inline({ name: 'rt-tpl-a', imageName: 'img:other' }) }),
    );
    expect(taken.json.data.saveEndpoint, taken.text).toBeNull();
    expect(taken.json.errors[0]).toMatchObject({ extensions: { code: 'NAME_TAKEN' } });
    expect(await readTemplate(tplId)).toMatchObject({ name: 'rt-inline-tpl-b', imageName: 'img:inline-3' });
    expect((await readEndpoint(id))!).toMatchObject({ templateId: tplId, version });
  });

  it('a refused endpoint leaves its template as it was', async () => {
    const refused = await save(
      endpoint({ id, networkVolumeId: 'nosuchvol0', template: inline({ imageName: 'img:refused' }) }),
    );
    expect(refused.json.errors?.[0], refused.text).toMatchObject({ extensions: { code: 'VALIDATION_FAILED' } });
    expect(await readTemplate(tplId)).toMatchObject({ imageName: 'img:inline-3' });
    expect((await readEndpoint(id))!).toMatchObject({ templateId: tplId, version });
  });

  it('an endpoint on a shared template gets a new one bound to it, the shared one untouched; then in place', async () => {
    const shared = await readTemplate(templateId);
    const ep = ok(
      await save({ name: 'rt-inline-shared', gpuIds: 'ADA_24', workersMax: 0, templateId }),
      'saveEndpoint',
    );
    const input = endpoint({ id: ep.id, name: 'rt-inline-shared', template: inline({ name: 'rt-inline-own' }) });
    const moved = ok(await save(input), 'saveEndpoint');
    expect(moved.templateId).not.toBe(templateId);
    expect(moved).toMatchObject({
      version: ep.version + 1,
      template: { name: 'rt-inline-own', boundEndpointId: ep.id },
    });
    expect(await readTemplate(templateId)).toEqual(shared);
    const again = ok(await save(input), 'saveEndpoint');
    expect(again).toMatchObject({ templateId: moved.templateId, version: moved.version });
    expect((await named('rt-inline-own')).map((x) => x.id)).toEqual([moved.templateId]);
  });
});
