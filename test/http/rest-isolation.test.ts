import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * Tenancy and scopes, table-driven over every route with a resource id (REST and queue): another user's key gets
 * the resource's 404; a read key gets 401 FORBIDDEN on every change and 200 on reads; a restricted key gets 401 on
 * the whole management API and on queue routes of endpoints it does not list. Nothing is changed by a refusal.
 */

type Access = 'read' | 'write';
type Row = [method: string, path: string, body: unknown, code: string, access: Access];

let t: TestServer;
let ids: { tpl: string; ep: string; vol: string; auth: string; pod: string; job: string; key: string };
let bobKey: string;
let readKey: string;
let restrictedKey: string;

beforeAll(async () => {
  t = await startTestServer();
  const auth = (await t.api('POST', '/v1/containerregistryauth', { name: 'r', username: 'u', password: 'p' })).json.id;
  const vol = (await t.api('POST', '/v1/networkvolumes', { name: 'v', size: 5, dataCenterId: 'EU-RO-1' })).json.id;
  const ep = await createEndpoint(t, { networkVolumeId: vol }, { containerRegistryAuthId: auth });
  const tpl = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId;
  const job = (await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 } })).json.id;
  const pod = 'isolationpod01';
  await t.server.store.upsertWorker({
    id: pod,
    endpointId: ep,
    keyHash: null,
    version: 1,
    managed: true,
    state: 'idle',
    reason: null,
    gpuTypeId: null,
    gpuCount: 0,
    createdAt: Date.now(),
    lastSeenAt: Date.now() + 3_600_000,
    retired: false,
    retiredAt: null,
  });
  const key = (await t.api('POST', '/v1/keys', { name: 'spare' })).json.id;
  ids = { tpl, ep, vol, auth, pod, job, key };
  bobKey = (await t.api('POST', '/v1/users', { name: 'bob' })).json.key;
  readKey = (await t.api('POST', '/v1/keys', { name: 'reader', scope: 'read' })).json.key;
  const other = await createEndpoint(t);
  restrictedKey = (await t.api('POST', '/v1/keys', { name: 'ci', scope: 'restricted', endpointIds: [other] })).json.key;
});
afterAll(async () => {
  await t.close();
});

/** Every route that names one of the admin's resources. */
const rows = (): Row[] => {
  const { tpl, ep, vol, auth, pod, job, key } = ids;
  return [
    ['GET', `/v1/templates/${tpl}`, undefined, 'TEMPLATE_NOT_FOUND', 'read'],
    ['PATCH', `/v1/templates/${tpl}`, { readme: 'x' }, 'TEMPLATE_NOT_FOUND', 'write'],
    ['POST', `/v1/templates/${tpl}/update`, { readme: 'x' }, 'TEMPLATE_NOT_FOUND', 'write'],
    ['DELETE', `/v1/templates/${tpl}`, undefined, 'TEMPLATE_NOT_FOUND', 'write'],
    ['GET', `/v1/endpoints/${ep}`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['GET', `/v1/endpoints/${ep}/logs`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['PATCH', `/v1/endpoints/${ep}`, { workersMax: 9 }, 'ENDPOINT_NOT_FOUND', 'write'],
    ['POST', `/v1/endpoints/${ep}/update`, { workersMax: 9 }, 'ENDPOINT_NOT_FOUND', 'write'],
    ['DELETE', `/v1/endpoints/${ep}`, undefined, 'ENDPOINT_NOT_FOUND', 'write'],
    ['GET', `/v1/networkvolumes/${vol}`, undefined, 'NETWORK_VOLUME_NOT_FOUND', 'read'],
    ['PATCH', `/v1/networkvolumes/${vol}`, { size: 50 }, 'NETWORK_VOLUME_NOT_FOUND', 'write'],
    ['POST', `/v1/networkvolumes/${vol}/update`, { size: 50 }, 'NETWORK_VOLUME_NOT_FOUND', 'write'],
    ['DELETE', `/v1/networkvolumes/${vol}`, undefined, 'NETWORK_VOLUME_NOT_FOUND', 'write'],
    ['GET', `/v1/containerregistryauth/${auth}`, undefined, 'REGISTRY_AUTH_NOT_FOUND', 'read'],
    ['DELETE', `/v1/containerregistryauth/${auth}`, undefined, 'REGISTRY_AUTH_NOT_FOUND', 'write'],
    ['GET', `/v1/pods/${pod}`, undefined, 'POD_NOT_FOUND', 'read'],
    ['PATCH', `/v1/pods/${pod}`, { name: 'x' }, 'POD_NOT_FOUND', 'write'],
    ['POST', `/v1/pods/${pod}/update`, { name: 'x' }, 'POD_NOT_FOUND', 'write'],
    ['DELETE', `/v1/pods/${pod}`, undefined, 'POD_NOT_FOUND', 'write'],
    ...['start', 'stop', 'reset', 'restart'].map((a): Row => [
      'POST',
      `/v1/pods/${pod}/${a}`,
      undefined,
      'POD_NOT_FOUND',
      'write',
    ]),
    ['DELETE', `/v1/keys/${key}`, undefined, 'API_KEY_NOT_FOUND', 'write'],
    ['POST', `/v2/${ep}/run`, { input: {} }, 'ENDPOINT_NOT_FOUND', 'write'],
    ['POST', `/v2/${ep}/runsync?wait=1000`, { input: {} }, 'ENDPOINT_NOT_FOUND', 'write'],
    ['GET', `/v2/${ep}/status/${job}`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['POST', `/v2/${ep}/status/${job}`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['GET', `/v2/${ep}/status-sync/${job}?wait=0`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['GET', `/v2/${ep}/stream/${job}?wait=0`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['POST', `/v2/${ep}/cancel/${job}`, undefined, 'ENDPOINT_NOT_FOUND', 'write'],
    ['POST', `/v2/${ep}/retry/${job}`, undefined, 'ENDPOINT_NOT_FOUND', 'write'],
    ['POST', `/v2/${ep}/purge-queue`, undefined, 'ENDPOINT_NOT_FOUND', 'write'],
    ['GET', `/v2/${ep}/health`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['GET', `/v2/${ep}/requests`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
    ['GET', `/v2/${ep}/webhooks/${job}`, undefined, 'ENDPOINT_NOT_FOUND', 'read'],
  ];
};

/** Collection routes: no id, so no 404, but scopes apply. */
const collections: Array<[string, string, unknown, Access]> = [
  ['GET', '/v1/templates', undefined, 'read'],
  ['POST', '/v1/templates', { name: 'n', imageName: 'file://./examples/echo-ts' }, 'write'],
  ['GET', '/v1/endpoints', undefined, 'read'],
  ['POST', '/v1/endpoints', { templateId: 'x' }, 'write'],
  ['GET', '/v1/networkvolumes', undefined, 'read'],
  ['POST', '/v1/networkvolumes', { name: 'n', size: 1, dataCenterId: 'EU-RO-1' }, 'write'],
  ['GET', '/v1/containerregistryauth', undefined, 'read'],
  ['POST', '/v1/containerregistryauth', { name: 'n', username: 'u', password: 'p' }, 'write'],
  ['GET', '/v1/pods?includeWorkers=true', undefined, 'read'],
  ['POST', '/v1/pods', {}, 'write'],
  ['GET', '/v1/keys', undefined, 'read'],
  ['POST', '/v1/keys', { name: 'n' }, 'write'],
  ['GET', '/v1/billing/endpoints', undefined, 'read'],
  ['GET', '/v1/billing/pods', undefined, 'read'],
  ['GET', '/v1/billing/networkvolumes', undefined, 'read'],
];

function expectError(res: ApiResponse, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${res.text}`).toBe(status);
  expect(res.json?.code, what).toBe(code);
}

async function adminResourcesIntact(): Promise<void> {
  const { tpl, ep, vol, auth, pod, job, key } = ids;
  expect((await t.api('GET', `/v1/templates/${tpl}`)).json.readme).toBe('');
  expect((await t.api('GET', `/v1/endpoints/${ep}`)).json.workersMax).toBe(0);
  expect((await t.api('GET', `/v1/networkvolumes/${vol}`)).json.size).toBe(5);
  expect((await t.api('GET', `/v1/containerregistryauth/${auth}`)).status).toBe(200);
  expect((await t.api('GET', `/v1/pods/${pod}`)).json.desiredStatus).toBe('RUNNING');
  expect((await t.api('GET', `/v2/${ep}/status/${job}`)).json.status).toBe('IN_QUEUE');
  expect((await t.api('GET', '/v1/keys')).json.find((k: any) => k.id === key).revokedAt).toBeNull();
  // No refused request submitted a job (the OpenAI routes run one for every request).
  expect((await t.api('GET', `/v2/${ep}/requests`)).json.requests.map((r: any) => r.id)).toEqual([job]);
}

/** The OpenAI-compatible routes: every request runs a job on the endpoint, so each needs a key that may write. */
const openAiRows = (): Array<[string, string, unknown]> => [
  ['POST', `/v2/${ids.ep}/openai/v1/chat/completions`, { model: 'm', messages: [] }],
  ['POST', `/v2/${ids.ep}/openai/v1/completions`, { model: 'm', prompt: 'p' }],
  ['POST', `/v2/${ids.ep}/openai/v1/embeddings`, { model: 'm', input: 'x' }],
  ['GET', `/v2/${ids.ep}/openai/v1/models`, undefined],
];

/** An OpenAI route's refusal: the OpenAI error shape, with the Wharf code as `code`. */
function expectOpenAiError(res: ApiResponse, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${res.text}`).toBe(status);
  expect(res.json?.error?.code, what).toBe(code);
}

describe('isolation between users', () => {
  it("every route naming another user's resource answers its 404", async () => {
    for (const [method, path, body, code] of rows()) {
      expectError(await t.api(method, path, body, { key: bobKey }), 404, code, `${method} ${path}`);
    }
    await adminResourcesIntact();
  });

  it("another user's endpoint is not found on the OpenAI routes either, and no job is run on it", async () => {
    for (const [method, path, body] of openAiRows()) {
      expectOpenAiError(await t.api(method, path, body, { key: bobKey }), 404, 'ENDPOINT_NOT_FOUND', path);
    }
    await adminResourcesIntact();
  });

  it("each user has a webhook signing secret of their own: another user's rotation leaves it as it was", async () => {
    const admin = (await t.api('GET', '/v1/webhook-secret')).json.secret as string;
    const bob = await t.api('GET', '/v1/webhook-secret', undefined, { key: bobKey });
    expect(bob.status, bob.text).toBe(200);
    expect(bob.json.secret).not.toBe(admin);
    const rotated = await t.api('POST', '/v1/webhook-secret', undefined, { key: bobKey });
    expect(rotated.json.secret).not.toBe(bob.json.secret);
    expect((await t.api('GET', '/v1/webhook-secret')).json.secret).toBe(admin);
  });

  it("lists and billing never show another user's resources", async () => {
    for (const [method, path] of collections.filter(([m]) => m === 'GET')) {
      const res = await t.api(method, path, undefined, { key: bobKey });
      expect(res.status, path).toBe(200);
      const mine = path === '/v1/keys' ? 1 : 0; // bob's own first key
      expect(res.json, path).toHaveLength(mine);
    }
  });

  it("another user's template, volume and registry auth cannot be referenced (400 naming the field)", async () => {
    const bob = (m: string, p: string, b: unknown) => t.api(m, p, b, { key: bobKey });
    const field = (res: ApiResponse) => res.json.details?.map((d: any) => d.field);
    expect(field(await bob('POST', '/v1/endpoints', { templateId: ids.tpl }))).toContain('templateId');
    const base = { imageName: 'file://./examples/echo-ts', dockerStartCmd: ['node', 'worker.ts'] };
    const bad = await bob('POST', '/v1/templates', { ...base, name: 'b', containerRegistryAuthId: ids.auth });
    expect(bad.status).toBe(400);
    expect(field(bad)).toContain('containerRegistryAuthId');
    const { json: tpl } = await bob('POST', '/v1/templates', { ...base, name: 'b' });
    const badEp = await bob('POST', '/v1/endpoints', { templateId: tpl.id, networkVolumeId: ids.vol });
    expect(badEp.status).toBe(400);
    expect(field(badEp)).toContain('networkVolumeId');
  });
});

describe('scopes', () => {
  it('a read key: 200 on every read, 401 FORBIDDEN on every change', async () => {
    for (const [method, path, body, , access] of rows()) {
      const res = await t.api(method, path, body, { key: readKey });
      if (access === 'write') expectError(res, 401, 'FORBIDDEN', `${method} ${path}`);
      else expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
    }
    for (const [method, path, body, access] of collections) {
      const res = await t.api(method, path, body, { key: readKey });
      if (access === 'write') expectError(res, 401, 'FORBIDDEN', `${method} ${path}`);
      else expect(res.status, `${method} ${path}`).toBe(200);
    }
    for (const [method, path, body] of openAiRows()) {
      expectOpenAiError(await t.api(method, path, body, { key: readKey }), 401, 'FORBIDDEN', path);
    }
    // The webhook signing secret lets its holder forge deliveries: not for a read key.
    for (const method of ['GET', 'POST']) {
      expectError(await t.api(method, '/v1/webhook-secret', undefined, { key: readKey }), 401, 'FORBIDDEN', method);
    }
    await adminResourcesIntact();
  });

  it('a restricted key: 401 FORBIDDEN on the management API and on endpoints it does not list', async () => {
    for (const [method, path, body] of rows()) {
      expectError(await t.api(method, path, body, { key: restrictedKey }), 401, 'FORBIDDEN', `${method} ${path}`);
    }
    for (const [method, path, body] of collections) {
      expectError(await t.api(method, path, body, { key: restrictedKey }), 401, 'FORBIDDEN', `${method} ${path}`);
    }
    for (const [method, path, body] of openAiRows()) {
      expectOpenAiError(await t.api(method, path, body, { key: restrictedKey }), 401, 'FORBIDDEN', path);
    }
    for (const method of ['GET', 'POST']) {
      const res = await t.api(method, '/v1/webhook-secret', undefined, { key: restrictedKey });
      expectError(res, 401, 'FORBIDDEN', method);
    }
    await adminResourcesIntact();
  });

  it('no key or a wrong key: 401 UNAUTHORIZED everywhere', async () => {
    for (const [method, path, body] of [...rows(), ...collections.map(([m, p, b]) => [m, p, b] as const)]) {
      expectError(await t.api(method, path, body, { key: null }), 401, 'UNAUTHORIZED', `${method} ${path}`);
      expectError(await t.api(method, path, body, { key: 'wharf_wrong' }), 401, 'UNAUTHORIZED', `${method} ${path}`);
    }
    for (const [method, path, body] of openAiRows()) {
      expectOpenAiError(await t.api(method, path, body, { key: null }), 401, 'UNAUTHORIZED', path);
    }
    for (const method of ['GET', 'POST']) {
      expectError(await t.api(method, '/v1/webhook-secret', undefined, { key: null }), 401, 'UNAUTHORIZED', method);
    }
  });
});
