import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpuWorkerSize, DATA_CENTER_IDS } from '../../src/domain/index.ts';
import { billedCpuFlavor } from '../../src/engine/billing.ts';
import { gql } from '../helpers/graphql.ts';
import { request, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * saveEndpoint / deleteEndpoint / updateEndpointTemplate: the docs' examples (interface §4.3, sent with ?api_key= as
 * the docs do), the non-sparse modify (facts §2.3) and the EndpointInput fields.
 */

let t: TestServer;
let templateId: string;
let volumeId: string;

/** The docs' way: ?api_key= in the URL, body `{query}` only. */
const docs = (query: string): Promise<ApiResponse> =>
  request(`${t.url}/graphql?api_key=${encodeURIComponent(t.key)}`, 'POST', { query });
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
const rest = async (id: string) => (await t.api('GET', `/v1/endpoints/${id}`)).json;

beforeAll(async () => {
  t = await startTestServer();
  const tpl = (name: string) => t.api('POST', '/v1/templates', { name, imageName: 'img:1', isServerless: true });
  templateId = (await tpl('ep-tpl-a')).json.id;
  volumeId = (await t.server.volumes.create(t.server.adminUserId, { name: 'v', size: 5, dataCenterId: 'US-TX-3' })).id;
});
afterAll(async () => {
  await t.close();
});

describe('the docs examples (interface §4.3)', () => {
  let id: string;
  const fields = 'gpuIds id idleTimeout locations name scalerType scalerValue templateId workersMax workersMin';
  const input = `gpuIds: "AMPERE_16", idleTimeout: 5, locations: "US", name: "Generated Endpoint -fb", networkVolumeId: "", scalerType: "QUEUE_DELAY", scalerValue: 4, templateId: "${'TPL'}", workersMax: 3, workersMin: 0`;

  it('creates an endpoint', async () => {
    const doc = `mutation { saveEndpoint(input: { ${input.replace('TPL', templateId)} }) { ${fields} } }`;
    const ep = ok(await docs(doc), 'saveEndpoint');
    expect(ep).toEqual({
      gpuIds: 'AMPERE_16',
      id: expect.any(String),
      idleTimeout: 5,
      locations: 'US',
      name: 'Generated Endpoint -fb',
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      templateId,
      workersMax: 3,
      workersMin: 0,
    });
    id = ep.id;
    expect((await rest(id)).dataCenterIds.every((dc: string) => dc.startsWith('US-'))).toBe(true);
  });

  it('modifies it by id', async () => {
    const doc = `mutation { saveEndpoint(input: { id: "${id}", ${input.replace('TPL', templateId).replace('workersMax: 3', 'workersMax: 0')} }) { ${fields} } }`;
    expect(ok(await docs(doc), 'saveEndpoint')).toMatchObject({ id, workersMax: 0, workersMin: 0 });
  });

  it('lists endpoints with pods and serverlessDiscount', async () => {
    const doc = `query Endpoints { myself { endpoints { ${fields} networkVolumeId pods { desiredStatus } } serverlessDiscount { discountFactor type expirationDate } } }`;
    const me = ok(await docs(doc), 'myself');
    expect(me.serverlessDiscount).toBeNull();
    expect(me.endpoints).toContainEqual(expect.objectContaining({ id, pods: [], networkVolumeId: null }));
    const discount = { discountFactor: 0.8, type: 'SERVERLESS', expirationDate: '2030-01-01T00:00:00.000Z' };
    await t.server.accounts.setServerlessDiscount(t.server.adminUserId, discount);
    expect(ok(await docs(doc), 'myself').serverlessDiscount).toEqual(discount);
  });

  it('deletes it once workers are 0; data.deleteEndpoint is null', async () => {
    const scaled = ok(
      await run(`mutation { saveEndpoint(input: {name: "busy", templateId: "${templateId}", workersMin: 1}) { id } }`),
      'saveEndpoint',
    );
    const refused = await docs(`mutation { deleteEndpoint(id: "${scaled.id}") }`);
    expect(fails(refused, 'deleteEndpoint', 'ENDPOINT_HAS_WORKERS')).toMatch(
      /workersMin 1 and workersMax 3.*set both to 0/,
    );
    ok(
      await run(`mutation { saveEndpoint(input: {id: "${scaled.id}", name: "busy", workersMax: 0}) { id } }`),
      'saveEndpoint',
    );
    const res = await docs(`mutation { deleteEndpoint(id: "${scaled.id}") }`);
    expect(res.json).toEqual({ data: { deleteEndpoint: null } });
    expect((await t.api('GET', `/v1/endpoints/${scaled.id}`)).status).toBe(404);
    expect(ok(await docs(`mutation { deleteEndpoint(id: "${id}") }`), 'deleteEndpoint')).toBeNull();
    expect(
      fails(await docs(`mutation { deleteEndpoint(id: "${id}") }`), 'deleteEndpoint', 'ENDPOINT_NOT_FOUND'),
    ).toContain(id);
  });
});

describe('saveEndpoint fields and modify semantics', () => {
  const all = `id name templateId gpuIds gpuCount instanceIds computeType type locations idleTimeout scalerType scalerValue
    workersMin workersMax workersStandby networkVolumeId networkVolumeIds { networkVolumeId dataCenterId }
    networkVolume { id dataCenterId } allowedCudaVersions minCudaVersion executionTimeoutMs flashBootType env { key value }`;

  it('maps every EndpointInput field onto the endpoint, and a modify resets what it leaves out', async () => {
    const create = `mutation { saveEndpoint(input: { name: "full", templateId: "${templateId}", gpuIds: "AMPERE_24,-NVIDIA L4",
      gpuCount: 2, locations: "US,EU-RO-1", idleTimeout: 30, scalerType: "REQUEST_COUNT", scalerValue: 2, workersMin: 1,
      workersMax: 5, workersStandby: 1, networkVolumeId: "${volumeId}", networkVolumeIds: [{networkVolumeId: "${volumeId}"}],
      allowedCudaVersions: "12.4,12.5", minCudaVersion: "12.1", executionTimeoutMs: 60000, flashBootType: FLASHBOOT,
      env: [{key: "A", value: "1"}], type: "QB" }) { ${all} } }`;
    const ep = ok(await run(create), 'saveEndpoint');
    expect(ep).toMatchObject({
      gpuIds: 'AMPERE_24,-NVIDIA L4',
      gpuCount: 2,
      instanceIds: [],
      computeType: 'GPU',
      // As sent (whole countries and ids alike): a client comparing what it reads with what it sent sees no drift.
      locations: 'US,EU-RO-1',
      idleTimeout: 30,
      scalerType: 'REQUEST_COUNT',
      workersStandby: 1,
      networkVolume: { id: volumeId, dataCenterId: 'US-TX-3' },
      networkVolumeIds: [{ networkVolumeId: volumeId, dataCenterId: 'US-TX-3' }],
      allowedCudaVersions: '12.4,12.5',
      minCudaVersion: '12.1',
      executionTimeoutMs: 60000,
      flashBootType: 'FLASHBOOT',
      env: [{ key: 'A', value: '1' }],
    });
    expect(await rest(ep.id)).toMatchObject({
      gpuTypeIds: ['NVIDIA RTX A5000', 'NVIDIA GeForce RTX 3090'],
      flashboot: true,
      networkVolumeIds: [volumeId],
    });

    // Only id, name and gpuIds: scaling settings reset, the rest is kept (facts §2.3, measured live), the execution
    // timeout too (the hosted resolver writes it only when given, as runpod-mcp's endpoint-gpu-ids.ts records).
    const modify = `mutation { saveEndpoint(input: {id: "${ep.id}", name: "full2", gpuIds: "ADA_24"}) { ${all} } }`;
    expect(ok(await run(modify), 'saveEndpoint')).toEqual({
      ...ep,
      name: 'full2',
      gpuIds: 'ADA_24',
      idleTimeout: 10,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      workersStandby: 0,
      flashBootType: 'OFF',
    });
    // Explicit null resets a kept field.
    const clear = `mutation { saveEndpoint(input: {id: "${ep.id}", name: "full2", locations: null, networkVolumeId: null,
      networkVolumeIds: null, allowedCudaVersions: null, env: null, gpuCount: null, executionTimeoutMs: null}) { ${all} } }`;
    expect(ok(await run(clear), 'saveEndpoint')).toMatchObject({
      executionTimeoutMs: 600000,
      locations: null,
      networkVolume: null,
      networkVolumeIds: [],
      allowedCudaVersions: null,
      env: [],
      gpuCount: 1,
    });
  });

  it('instanceIds make a CPU endpoint; type LB; flashBootType OFF', async () => {
    const doc = `mutation { saveEndpoint(input: {name: "cpu", templateId: "${templateId}", instanceIds: ["cpu3g-4-16"], type: "LB", flashBootType: OFF}) { id computeType instanceIds type flashBootType } }`;
    const ep = ok(await run(doc), 'saveEndpoint');
    expect(ep).toMatchObject({ computeType: 'CPU', instanceIds: ['cpu3g-4-16'], type: 'LB', flashBootType: 'OFF' });
    const stored = await t.server.store.getEndpoint(null, ep.id);
    expect(stored).toMatchObject({ computeType: 'CPU', cpuFlavorIds: ['cpu3g'], vcpuCount: 4 });
  });

  it('a CPU endpoint made over REST has the instance ids GraphQL reads, so saving what was read keeps it CPU', async () => {
    const created = await t.api('POST', '/v1/endpoints', {
      templateId,
      name: 'restcpu',
      computeType: 'CPU',
      cpuFlavorIds: ['cpu5c'],
      vcpuCount: 8,
    });
    expect(created.status, created.text).toBe(200);
    expect(created.json.instanceIds).toEqual(['cpu5c-8-16']);
    const read = `query { myself { endpoint(id: "${created.json.id}") { computeType instanceIds locations } } }`;
    const seen = ok(await run(read), 'myself').endpoint;
    expect(seen).toMatchObject({ computeType: 'CPU', instanceIds: ['cpu5c-8-16'] });
    // runpodctl's read-modify-write: every field round-trips.
    const save = `mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id computeType instanceIds } }`;
    const input = {
      id: created.json.id,
      name: 'restcpu',
      templateId,
      instanceIds: seen.instanceIds,
      flashBootType: 'OFF',
    };
    expect(ok(await run(save, { input }), 'saveEndpoint')).toMatchObject({
      computeType: 'CPU',
      instanceIds: ['cpu5c-8-16'],
    });
    // A REST change of the vCPUs or flavors changes the instance ids with them.
    const patched = await t.api('PATCH', `/v1/endpoints/${created.json.id}`, {
      cpuFlavorIds: ['cpu3g', 'cpu5c'],
      vcpuCount: 4,
    });
    expect(patched.json.instanceIds).toEqual(['cpu3g-4-16', 'cpu5c-4-8']);
  });

  it('a REST reorder of cpuFlavorIds makes the new first flavor the instance every worker is sized, billed and read as', async () => {
    const save = `mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id instanceIds } }`;
    const input = { name: 'reorder', templateId, instanceIds: ['cpu3c-2-4', 'cpu3g-2-8'] };
    const { id } = ok(await run(save, { input }), 'saveEndpoint');
    const before = (await t.server.store.getEndpoint(null, id))!;
    const patched = await t.api('PATCH', `/v1/endpoints/${id}`, { cpuFlavorIds: ['cpu3g', 'cpu3c'] });
    expect(patched.status, patched.text).toBe(200);
    const after = (await t.server.store.getEndpoint(null, id))!;
    // REST shows cpu3g first and bills cpu3g: the worker is cpu3g's 2 vCPUs with 8 GB, not cpu3c's 4 GB.
    expect(after.cpuFlavorIds).toEqual(['cpu3g', 'cpu3c']);
    expect(billedCpuFlavor({ gpuCount: 0 }, after)).toBe('cpu3g');
    expect(cpuWorkerSize(after)).toEqual({ vcpus: 2, memoryMb: 8 * 1024 });
    expect(after.version).toBe(before.version + 1);
    const read = `query { myself { endpoint(id: "${id}") { instanceIds } } }`;
    expect(ok(await run(read), 'myself').endpoint.instanceIds).toEqual(['cpu3g-2-8', 'cpu3c-2-4']);
  });

  it('an endpoint made over REST without a name can be saved back as read (name ""); a new one still needs one', async () => {
    const created = await t.api('POST', '/v1/endpoints', { templateId, workersMax: 2 });
    expect(created.status, created.text).toBe(200);
    const read = `query { myself { endpoint(id: "${created.json.id}") { name workersMax } } }`;
    const seen = ok(await run(read), 'myself').endpoint;
    expect(seen.name).toBe('');
    const save = `mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id name workersMax } }`;
    const input = { id: created.json.id, name: seen.name, templateId, workersMax: 4 };
    expect(ok(await run(save, { input }), 'saveEndpoint')).toMatchObject({ name: '', workersMax: 4 });
    // A named endpoint is not renamed to nothing, and a new endpoint needs a name.
    const named = ok(await run(save, { input: { id: created.json.id, name: 'named', templateId } }), 'saveEndpoint');
    expect(named.name).toBe('named');
    expect(
      fails(
        await run(save, { input: { id: created.json.id, name: ' ', templateId } }),
        'saveEndpoint',
        'VALIDATION_FAILED',
      ),
    ).toMatch(/name/);
    expect(fails(await run(save, { input: { name: '', templateId } }), 'saveEndpoint', 'VALIDATION_FAILED')).toMatch(
      /name/,
    );
  });

  it('empty locations (what the Python SDK sends) allow every data center, and REST reads them as every one', async () => {
    const doc = `mutation { saveEndpoint(input: {name: "anywhere", templateId: "${templateId}", gpuIds: "AMPERE_16", locations: ""}) { id locations } }`;
    const ep = ok(await run(doc), 'saveEndpoint');
    expect(ep.locations ?? '').toBe('');
    const rest = await t.api('GET', `/v1/endpoints/${ep.id}`);
    expect(rest.json.dataCenterIds).toEqual([...DATA_CENTER_IDS]);
  });

  it('creates an inline template; refuses templateId and template together', async () => {
    const tpl = `template: {name: "inline-tpl", imageName: "img:inline", containerDiskInGb: 5, dockerArgs: "python -u h.py", env: []}`;
    const ep = ok(
      await run(
        `mutation { saveEndpoint(input: {name: "inline", ${tpl}}) { id template { name imageName dockerArgs isServerless } } }`,
      ),
      'saveEndpoint',
    );
    expect(ep.template).toEqual({
      name: 'inline-tpl',
      imageName: 'img:inline',
      dockerArgs: 'python -u h.py',
      isServerless: true,
    });
    const both = await run(
      `mutation { saveEndpoint(input: {name: "x", templateId: "${templateId}", ${tpl.replace('inline-tpl', 'other')}}) { id } }`,
    );
    expect(fails(both, 'saveEndpoint', 'VALIDATION_FAILED')).toMatch(/template/);
  });

  it('an inline template is bound to its endpoint: listed over REST only when asked for, deleted with it', async () => {
    const tpl = `template: {name: "bound-tpl", imageName: "img:bound", containerDiskInGb: 5, dockerArgs: "", env: []}`;
    const ep = ok(
      await run(`mutation { saveEndpoint(input: {name: "bound", workersMax: 0, ${tpl}}) { id templateId } }`),
      'saveEndpoint',
    );
    const bound = ok(await run(`{ podTemplate(id: "${ep.templateId}") { id boundEndpointId } }`), 'podTemplate');
    expect(bound).toEqual({ id: ep.templateId, boundEndpointId: ep.id });
    const ids = async (q: string) =>
      (await t.api('GET', `/v1/templates${q}`)).json.map((x: { id: string }) => x.id) as string[];
    expect(await ids('')).not.toContain(ep.templateId);
    expect(await ids('?includeEndpointBoundTemplates=true')).toContain(ep.templateId);
    // Saved again with another inline template: the bound one is replaced in place (round-trip.test.ts).
    const tpl2 = tpl.replace('bound-tpl', 'bound-tpl-2');
    const save = async (input: string) =>
      ok(
        await run(
          `mutation { saveEndpoint(input: {id: "${ep.id}", name: "bound", workersMax: 0, ${input}}) { templateId } }`,
        ),
        'saveEndpoint',
      ).templateId as string;
    expect(await save(tpl2)).toBe(ep.templateId);
    // Moved to a shared template: the bound one goes; a later inline template is a new one, bound to it.
    expect(await save(`templateId: "${templateId}"`)).toBe(templateId);
    expect((await t.api('GET', `/v1/templates/${ep.templateId}`)).status).toBe(404);
    const moved = { templateId: await save(tpl2) };
    expect([ep.templateId, templateId]).not.toContain(moved.templateId);
    expect(ok(await run(`mutation { deleteEndpoint(id: "${ep.id}") }`), 'deleteEndpoint')).toBeNull();
    expect((await t.api('GET', `/v1/templates/${moved.templateId}`)).status).toBe(404);

    // A refused endpoint leaves no template behind; an empty id is a new endpoint's.
    const refused = await run(
      `mutation { saveEndpoint(input: {name: "refused", networkVolumeId: "nope123", ${tpl}}) { id } }`,
    );
    fails(refused, 'saveEndpoint', 'VALIDATION_FAILED');
    const all = await t.api('GET', '/v1/templates?includeEndpointBoundTemplates=true');
    expect(all.json.map((x: { name: string }) => x.name)).not.toContain('bound-tpl');
    const fresh = ok(
      await run(`mutation { saveEndpoint(input: {id: "", name: "fresh", ${tpl}}) { id } }`),
      'saveEndpoint',
    );
    expect(fresh.id).toMatch(/^[a-z0-9]{14}$/);
  });

  it('bad values are resolver errors naming the field (HTTP 200, VALIDATION_FAILED)', async () => {
    const cases: Array<[string, RegExp]> = [
      ['gpuIds: "AMPERE_99"', /AMPERE_99/],
      ['gpuIds: "AMPERE_16,-NVIDIA Nope"', /NVIDIA Nope/],
      ['locations: "XX"', /locations/],
      ['instanceIds: ["gpu-1-2"]', /instanceIds/],
      // No memory is no instance: its worker was sized from nothing, neither its vCPUs nor its memory confined.
      ['instanceIds: ["cpu3c-2-0"]', /instanceIds.*cpu3c-2-0/],
      ['instanceIds: ["cpu3c-2-4", "cpu3g-2-00"]', /instanceIds.*cpu3g-2-00/],
      ['scalerType: "FAST"', /scalerType/],
      ['type: "XB"', /type/],
      ['idleTimeout: 0', /idleTimeout/],
      ['workersMin: 4, workersMax: 2', /workersMin/],
      ['allowedCudaVersions: "9.0"', /allowedCudaVersions/],
      [`networkVolumeId: "nosuchvol0"`, /nosuchvol0.*network volumes/],
      ['modelReferences: ["https://huggingface.co/x/y:main"]', /modelReferences/],
    ];
    for (const [field, message] of cases) {
      const res = await run(
        `mutation { saveEndpoint(input: {name: "bad", templateId: "${templateId}", ${field}}) { id } }`,
      );
      expect(fails(res, 'saveEndpoint', 'VALIDATION_FAILED'), field).toMatch(message);
    }
    expect(
      fails(
        await run('mutation { saveEndpoint(input: {name: "no template"}) { id } }'),
        'saveEndpoint',
        'VALIDATION_FAILED',
      ),
    ).toMatch(/templateId/);
    expect(
      fails(
        await run('mutation { saveEndpoint(input: {id: "nosuchendpoint", name: "x"}) { id } }'),
        'saveEndpoint',
        'ENDPOINT_NOT_FOUND',
      ),
    ).toContain('nosuchendpoint');
    // An enum written as a string literal is a document error (HTTP 400), as on the hosted service.
    const quoted = await run(
      `mutation { saveEndpoint(input: {name: "q", templateId: "${templateId}", flashBootType: "FLASHBOOT"}) { id } }`,
    );
    expect(quoted.status).toBe(400);
    expect(quoted.json.errors[0].message).toMatch(/Enum "FlashBootType" cannot represent non-enum value/);
  });
});

// Documents of the other official clients, as their sources send them (facts §2.3: fields "used live but absent from
// the Sep-2025 snapshot" and hubReleaseId). A field the schema does not define fails the whole document with a 400.
describe('saveEndpoint as flash, runpod-mcp and runpodctl --hub-id send it', () => {
  // runpod/flash src/runpod_flash/core/api/runpod.py save_endpoint(), with its own indentation.
  const FLASH_SAVE = `
        mutation saveEndpoint($input: EndpointInput!) {
            saveEndpoint(input: $input) {
                aiKey
                gpuIds
                id
                idleTimeout
                locations
                name
                networkVolumeId
                networkVolumeIds {
                    networkVolumeId
                    dataCenterId
                }
                flashEnvironmentId
                scalerType
                scalerValue
                templateId
                type
                userId
                version
                workersMax
                workersMin
                workersStandby
                workersPFBTarget
                gpuCount
                allowedCudaVersions
                minCudaVersion
                executionTimeoutMs
                instanceIds
                activeBuildid
                idePodId
                flashBootType
            }
        }
        `;

  it('flash: ServerlessResource.model_dump() (workersPFBTarget, flashEnvironmentId) creates, then updates by id', async () => {
    // The pydantic defaults of ServerlessResource, exclude_none (serverless.py): flashboot → flashBootType FLASHBOOT.
    const input = {
      executionTimeoutMs: 0,
      gpuCount: 1,
      idleTimeout: 60,
      minCudaVersion: '12.8',
      name: 'flash-ep',
      flashEnvironmentId: 'env-abc123',
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      templateId,
      type: 'QB',
      workersMax: 3,
      workersMin: 0,
      workersPFBTarget: 0,
      allowedCudaVersions: '',
      gpuIds: 'AMPERE_16,AMPERE_24',
      flashBootType: 'FLASHBOOT',
    };
    const created = ok(await run(FLASH_SAVE, { input }), 'saveEndpoint');
    expect(created).toMatchObject({
      name: 'flash-ep',
      templateId,
      idleTimeout: 60,
      minCudaVersion: '12.8',
      flashBootType: 'FLASHBOOT',
      workersPFBTarget: 0,
      flashEnvironmentId: null,
      activeBuildid: null,
      idePodId: null,
    });
    const updated = ok(
      await run(FLASH_SAVE, { input: { ...input, id: created.id, workersMax: 5, workersPFBTarget: 2 } }),
      'saveEndpoint',
    );
    expect(updated).toMatchObject({ id: created.id, workersMax: 5, workersPFBTarget: 0 });
  });

  it('flash: a first deploy from an image sends its PodTemplate inline, whose `config` is an object', async () => {
    // PodTemplate (core/resources/template.py) defaults, model_dump(exclude_none) inside the endpoint's payload.
    const template = {
      advancedStart: false,
      config: {},
      containerDiskInGb: 64,
      containerRegistryAuthId: '',
      dockerArgs: '',
      env: [{ key: 'RUNPOD_API_KEY', value: 'k' }],
      imageName: 'runpod/flash:latest',
      name: 'ServerlessResource_0123abcd__PodTemplate_4567ef',
      ports: '',
      startScript: '',
    };
    const input = { name: 'flash-img', template, gpuIds: 'ADA_24', workersPFBTarget: 0, flashBootType: 'FLASHBOOT' };
    const ep = ok(await run(FLASH_SAVE, { input }), 'saveEndpoint');
    expect(ep).toMatchObject({ name: 'flash-img', templateId: expect.any(String), flashBootType: 'FLASHBOOT' });
    const tpl = (await t.api('GET', `/v1/templates/${ep.templateId}`)).json;
    expect(tpl).toMatchObject({ imageName: 'runpod/flash:latest', env: { RUNPOD_API_KEY: 'k' } });
  });

  it("flash: the GPU stock check's lowestPrice input (secureCloud, includeAiApi, allowedCudaVersions, compliance)", async () => {
    const query = `
        query ServerlessGpuTypes($lowestPriceInput: GpuLowestPriceInput, $gpuTypesInput: GpuTypeFilter) {
          gpuTypes(input: $gpuTypesInput) {
            lowestPrice(input: $lowestPriceInput) {
              stockStatus
            }
          }
        }
        `;
    const variables = {
      gpuTypesInput: { ids: ['NVIDIA GeForce RTX 4090'] },
      lowestPriceInput: {
        dataCenterId: null,
        gpuCount: 1,
        secureCloud: true,
        includeAiApi: true,
        allowedCudaVersions: [],
        compliance: [],
      },
    };
    const types = ok(await run(query, variables), 'gpuTypes');
    expect(types).toHaveLength(1);
  });

  it('runpod-mcp set-endpoint-gpus: reads the snapshot (requestTTL), echoes it with compliance', async () => {
    const made = ok(
      await run(
        `mutation { saveEndpoint(input: {name: "mcp", templateId: "${templateId}", gpuIds: "ADA_24"}) { id } }`,
      ),
      'saveEndpoint',
    );
    // src/_shared/endpoint-gpu-ids.ts SNAPSHOT_QUERY and SAVE_ENDPOINT_MUTATION.
    const snapshotQuery = `
  query EndpointSnapshot($id: String!) {
    myself {
      endpoint(id: $id) {
        id
        name
        gpuIds
        gpuCount
        workersMin
        workersMax
        idleTimeout
        scalerType
        scalerValue
        executionTimeoutMs
        requestTTL
        flashBootType
        locations
        allowedCudaVersions
        minCudaVersion
        instanceIds
      }
    }
  }
`;
    const snap = ok(await run(snapshotQuery, { id: made.id }), 'myself').endpoint;
    expect(snap).toMatchObject({ id: made.id, gpuIds: 'ADA_24', requestTTL: null });
    const save = `
  mutation saveEndpoint($input: EndpointInput!) {
    saveEndpoint(input: $input) {
      id
      name
      gpuIds
      gpuCount
      workersMin
      workersMax
    }
  }
`;
    const { instanceIds: _none, ...echo } = snap;
    const saved = ok(
      await run(save, {
        input: { ...echo, gpuIds: 'ADA_24,-NVIDIA GeForce RTX 4090', compliance: ['GDPR', 'SOC_2_TYPE_2'] },
      }),
      'saveEndpoint',
    );
    expect(saved).toMatchObject({ id: made.id, gpuIds: 'ADA_24,-NVIDIA GeForce RTX 4090' });
    const read = ok(await run(`{ myself { endpoint(id: "${made.id}") { compliance requestTTL } } }`), 'myself');
    expect(read.endpoint).toEqual({ compliance: [], requestTTL: null });
  });

  it('runpodctl serverless create --hub-id: hubReleaseId with an inline template', async () => {
    const doc = `mutation SaveEndpoint($input: EndpointInput!) { saveEndpoint(input: $input) { id name templateId gpuIds } }`;
    const input = {
      name: 'hub-ep',
      hubReleaseId: 'rel-123',
      template: { name: 'hub-ep-tpl', imageName: 'img:1', containerDiskInGb: 20, dockerArgs: '', env: [] },
      gpuIds: 'ADA_24',
      gpuCount: 1,
      workersMin: 0,
      workersMax: 3,
      flashBootType: 'FLASHBOOT',
    };
    const ep = ok(await run(doc, { input }), 'saveEndpoint');
    expect(ep).toMatchObject({ name: 'hub-ep', gpuIds: 'ADA_24', templateId: expect.any(String) });
  });
});
