import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../helpers/graphql.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * Tenancy on every GraphQL query and mutation: another user's endpoints, templates, volumes, registry auths and
 * workers are never shown and are "not found" (or an unknown reference) to every operation (DESIGN.md §3).
 */

let t: TestServer;
let bobKey: string;
/** The admin's resources, which Bob tries to reach. */
const admin = { endpoint: '', template: '', templateName: 'admin-tpl', volume: '', auth: '', worker: 'adminworker001' };
let bobTemplate: string;
let bobEndpoint: string;

const asBob = (query: string, variables?: Record<string, unknown>) => gql(t.url, bobKey, query, variables);
const asAdmin = (query: string) => gql(t.url, t.key, query);

function data(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}
function refused(res: ApiResponse, root: string, code: string): void {
  expect(res.status, res.text).toBe(200);
  expect(res.json.data?.[root], res.text).toBeNull();
  expect(res.json.errors?.[0]?.extensions.code, res.text).toBe(code);
}

beforeAll(async () => {
  t = await startTestServer();
  const uid = t.server.adminUserId;
  admin.template = (await t.api('POST', '/v1/templates', { name: admin.templateName, imageName: 'img:a' })).json.id;
  admin.volume = (await t.server.volumes.create(uid, { name: 'av', size: 1, dataCenterId: 'EU-RO-1' })).id;
  admin.auth = (await t.server.registryAuths.create(uid, { name: 'aa', username: 'u', password: 'p' })).id;
  admin.endpoint = (
    await t.api('POST', '/v1/endpoints', { name: 'admin-ep', templateId: admin.template, workersMax: 0 })
  ).json.id;
  await t.server.workers.resolveWorker(await t.server.resources.getEndpoint(null, admin.endpoint), admin.worker, null);
  await t.server.accounts.setServerlessDiscount(uid, { discountFactor: 0.5, type: 'SERVERLESS', expirationDate: 'x' });
  await asAdmin('mutation { updateUserSettings(input: {pubKey: "admin-key"}) { id } }');

  const bob = await t.server.accounts.createUser('bob');
  bobKey = (await t.server.accounts.createKey(bob.id, 'bob', 'all')).key;
  // Names are per user: Bob may use the admin's template name.
  const tpl = `mutation { saveTemplate(input: {name: "${admin.templateName}", imageName: "img:b", dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: []}) { id } }`;
  bobTemplate = data(await asBob(tpl), 'saveTemplate').id;
  bobEndpoint = data(
    await asBob(
      `mutation { saveEndpoint(input: {name: "bob-ep", templateId: "${bobTemplate}", workersMax: 0}) { id } }`,
    ),
    'saveEndpoint',
  ).id;
});
afterAll(async () => {
  await t.close();
});

describe("another user's resources", () => {
  it('are absent from myself and the lists', async () => {
    const me = data(
      await asBob(`{ myself { id pubKey serverlessDiscount { discountFactor } endpoints { id } podTemplates { id }
        networkVolumes { id } containerRegistryCreds { id } pods { id } } }`),
      'myself',
    );
    expect(me).toEqual({
      id: expect.stringMatching(/^user_/),
      pubKey: '',
      serverlessDiscount: null,
      endpoints: [{ id: bobEndpoint }],
      podTemplates: [{ id: bobTemplate }],
      networkVolumes: [],
      containerRegistryCreds: [],
      pods: [],
    });
    expect(data(await asBob('{ podTemplates(input: {isRunpod: false}) { id } }'), 'podTemplates')).toEqual([
      { id: bobTemplate },
    ]);
    expect(data(await asBob(`{ podTemplate(id: "${admin.template}") { id } }`), 'podTemplate')).toBeNull();
    expect(data(await asBob(`{ pod(input: {podId: "${admin.worker}"}) { id } }`), 'pod')).toBeNull();
  });

  it('cannot be changed or deleted', async () => {
    const e = admin.endpoint;
    refused(
      await asBob(`mutation { saveEndpoint(input: {id: "${e}", name: "x", templateId: "${bobTemplate}"}) { id } }`),
      'saveEndpoint',
      'ENDPOINT_NOT_FOUND',
    );
    refused(await asBob(`mutation { deleteEndpoint(id: "${e}") }`), 'deleteEndpoint', 'ENDPOINT_NOT_FOUND');
    const ut = (endpointId: string, templateId: string) =>
      `mutation { updateEndpointTemplate(input: {endpointId: "${endpointId}", templateId: "${templateId}"}) { id } }`;
    refused(await asBob(ut(e, bobTemplate)), 'updateEndpointTemplate', 'ENDPOINT_NOT_FOUND');
    const tplFields = 'dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: []';
    refused(
      await asBob(`mutation { saveTemplate(input: {id: "${admin.template}", name: "x", ${tplFields}}) { id } }`),
      'saveTemplate',
      'TEMPLATE_NOT_FOUND',
    );
    refused(await asBob(`mutation { podStop(input: {podId: "${admin.worker}"}) { id } }`), 'podStop', 'POD_NOT_FOUND');
    refused(
      await asBob(`mutation { podTerminate(input: {podId: "${admin.worker}"}) }`),
      'podTerminate',
      'POD_NOT_FOUND',
    );
    refused(
      await asBob(`mutation { updateRegistryAuth(input: {id: "${admin.auth}", username: "x", password: "y"}) { id } }`),
      'updateRegistryAuth',
      'REGISTRY_AUTH_NOT_FOUND',
    );
    refused(
      await asBob(`mutation { deleteRegistryAuth(registryAuthId: "${admin.auth}") }`),
      'deleteRegistryAuth',
      'REGISTRY_AUTH_NOT_FOUND',
    );
    refused(
      await asBob(`mutation { updateNetworkVolume(input: {id: "${admin.volume}", size: 9}) { id } }`),
      'updateNetworkVolume',
      'NETWORK_VOLUME_NOT_FOUND',
    );
    refused(
      await asBob(`mutation { deleteNetworkVolume(input: {id: "${admin.volume}"}) }`),
      'deleteNetworkVolume',
      'NETWORK_VOLUME_NOT_FOUND',
    );
    // deleteTemplate by name deletes Bob's own template of that name, never the admin's.
    refused(
      await asBob(`mutation { deleteTemplate(templateName: "${admin.templateName}") }`),
      'deleteTemplate',
      'RESOURCE_IN_USE',
    );
  });

  it("cannot be referenced from one's own resources", async () => {
    const ut = `mutation { updateEndpointTemplate(input: {endpointId: "${bobEndpoint}", templateId: "${admin.template}"}) { id } }`;
    refused(await asBob(ut), 'updateEndpointTemplate', 'VALIDATION_FAILED');
    const create = (extra: string) => `mutation { saveEndpoint(input: {name: "n", ${extra}}) { id } }`;
    refused(await asBob(create(`templateId: "${admin.template}"`)), 'saveEndpoint', 'VALIDATION_FAILED');
    refused(
      await asBob(create(`templateId: "${bobTemplate}", networkVolumeId: "${admin.volume}"`)),
      'saveEndpoint',
      'VALIDATION_FAILED',
    );
    const nvs = `templateId: "${bobTemplate}", networkVolumeIds: [{networkVolumeId: "${admin.volume}"}]`;
    refused(await asBob(create(nvs)), 'saveEndpoint', 'VALIDATION_FAILED');
    const tpl = `mutation { saveTemplate(input: {name: "r", imageName: "i", dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: [], containerRegistryAuthId: "${admin.auth}"}) { id } }`;
    refused(await asBob(tpl), 'saveTemplate', 'VALIDATION_FAILED');
  });

  it('are untouched afterwards', async () => {
    const me = data(
      await asAdmin(`{ myself { pubKey serverlessDiscount { discountFactor } endpoints { id templateId name }
        podTemplates { id name } networkVolumes { id size } containerRegistryCreds { id } pods { id desiredStatus } } }`),
      'myself',
    );
    expect(me).toEqual({
      pubKey: 'admin-key',
      serverlessDiscount: { discountFactor: 0.5 },
      endpoints: [{ id: admin.endpoint, templateId: admin.template, name: 'admin-ep' }],
      podTemplates: [{ id: admin.template, name: admin.templateName }],
      networkVolumes: [{ id: admin.volume, size: 1 }],
      containerRegistryCreds: [{ id: admin.auth }],
      pods: [{ id: admin.worker, desiredStatus: 'RUNNING' }],
    });
  });
});
