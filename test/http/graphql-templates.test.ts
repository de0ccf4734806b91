import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../helpers/graphql.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** saveTemplate / deleteTemplate, registry auths and network volumes through GraphQL (facts §2.7–2.9). */

let t: TestServer;
const run = (query: string, variables?: Record<string, unknown>) => gql(t.url, t.key, query, variables);

function ok(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}
function fails(res: ApiResponse, root: string, code: string): string {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors?.[0], res.text).toMatchObject({ path: [root], extensions: { code } });
  return res.json.errors[0].message as string;
}

const FIELDS = `id name imageName dockerArgs containerDiskInGb volumeInGb volumeMountPath ports env { key value }
  isServerless isPublic containerRegistryAuthId readme category isRunpod`;
const SAVE = `mutation Save($input: SaveTemplateInput) { saveTemplate(input: $input) { ${FIELDS} } }`;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('saveTemplate', () => {
  let id: string;
  let authId: string;

  it('creates a template from every SaveTemplateInput field', async () => {
    authId = ok(
      await run('mutation { saveRegistryAuth(input: {name: "ghcr", username: "u", password: "p"}) { id } }'),
      'saveRegistryAuth',
    ).id;
    const input = {
      name: 'worker',
      imageName: 'ghcr.io/me/worker:1',
      dockerArgs: 'python -u handler.py --name \'a b\' --q "c\\"d"',
      containerDiskInGb: 20,
      volumeInGb: 0,
      volumeMountPath: '/data',
      ports: '8888/http, 22/tcp',
      portsConfig: [{ port: '8888', name: 'jupyter' }],
      env: [{ key: 'K', value: 'v' }],
      isServerless: true,
      isPublic: false,
      containerRegistryAuthId: authId,
      readme: '# hi',
      startSsh: true,
      startJupyter: false,
      advancedStart: false,
      category: 'NVIDIA',
    };
    const tpl = ok(await run(SAVE, { input }), 'saveTemplate');
    expect(tpl).toEqual({
      ...input,
      id: expect.stringMatching(/^[a-z0-9]{10}$/),
      // dockerArgs reads back as sent (its quoting is the sender's); REST shows the argv it gives.
      ports: '8888/http,22/tcp',
      portsConfig: undefined,
      startSsh: undefined,
      startJupyter: undefined,
      advancedStart: undefined,
      isRunpod: false,
    });
    id = tpl.id;
    const rest = (await t.api('GET', `/v1/templates/${id}`)).json;
    expect(rest).toMatchObject({
      dockerStartCmd: ['python', '-u', 'handler.py', '--name', 'a b', '--q', 'c"d'],
      ports: ['8888/http', '22/tcp'],
      env: { K: 'v' },
      containerRegistryAuthId: authId,
    });
  });

  it('replaces a template by id: optional fields left out return to their defaults', async () => {
    const input = { id, name: 'worker-2', dockerArgs: '', containerDiskInGb: 5, volumeInGb: 0, env: [] };
    expect(ok(await run(SAVE, { input }), 'saveTemplate')).toMatchObject({
      name: 'worker-2',
      imageName: 'ghcr.io/me/worker:1',
      isServerless: true,
      volumeMountPath: '/workspace',
      ports: '',
      containerRegistryAuthId: null,
      readme: '',
    });
  });

  it('refuses duplicate names, bad ports, unknown registry auths and unknown ids', async () => {
    const base = { name: 'worker-2', imageName: 'i', dockerArgs: '', containerDiskInGb: 1, volumeInGb: 0, env: [] };
    expect(fails(await run(SAVE, { input: base }), 'saveTemplate', 'NAME_TAKEN')).toMatch(/worker-2/);
    const badPorts = await run(SAVE, { input: { ...base, name: 'p', ports: '8888' } });
    expect(fails(badPorts, 'saveTemplate', 'VALIDATION_FAILED')).toMatch(/ports/);
    const badAuth = await run(SAVE, {
      input: { ...base, name: 'a', containerRegistryAuthId: 'cnosuchauth00000000000000' },
    });
    fails(badAuth, 'saveTemplate', 'VALIDATION_FAILED');
    fails(await run(SAVE, { input: { ...base, id: 'nosuchtpl0' } }), 'saveTemplate', 'TEMPLATE_NOT_FOUND');
    fails(
      await run(SAVE, { input: { ...base, imageName: undefined, name: 'noimage' } }),
      'saveTemplate',
      'VALIDATION_FAILED',
    );
    fails(await run(SAVE, { input: null }), 'saveTemplate', 'VALIDATION_FAILED');
  });

  it('is listed in myself.podTemplates (runpodctl port-label round trip)', async () => {
    const query = `query GetTemplateForPortLabels { myself { podTemplates { id name imageName dockerArgs env { key value } ports
      volumeMountPath volumeInGb containerDiskInGb containerRegistryAuthId startJupyter startSsh startScript isServerless
      isPublic readme advancedStart category } } }`;
    const state = ok(await run(query), 'myself').podTemplates.find((x: any) => x.id === id);
    const { startScript: _s, ...rest } = state;
    const input = {
      ...rest,
      containerRegistryAuthId: '',
      ports: '8888/http',
      portsConfig: [{ port: '8888', name: 'ui' }],
    };
    const saved = await run(
      'mutation UpdateTemplatePortLabels($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }',
      { input },
    );
    expect(ok(saved, 'saveTemplate')).toEqual({ id });
  });
});

describe('deleteTemplate (by name)', () => {
  it('is refused while an endpoint uses the template, then deletes it', async () => {
    const tpl = ok(
      await run(
        'mutation { saveTemplate(input: {name: "used", imageName: "i", dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: []}) { id } }',
      ),
      'saveTemplate',
    );
    const ep = ok(
      await run(`mutation { saveEndpoint(input: {name: "e", templateId: "${tpl.id}", workersMax: 0}) { id } }`),
      'saveEndpoint',
    );
    expect(
      fails(await run('mutation { deleteTemplate(templateName: "used") }'), 'deleteTemplate', 'RESOURCE_IN_USE'),
    ).toContain(ep.id);
    ok(await run(`mutation { deleteEndpoint(id: "${ep.id}") }`), 'deleteEndpoint');
    expect(await run('mutation { deleteTemplate(templateName: "used") }')).toMatchObject({
      json: { data: { deleteTemplate: null } },
    });
    expect((await t.api('GET', `/v1/templates/${tpl.id}`)).status).toBe(404);
  });
});

describe('registry auths and network volumes', () => {
  it('lists registry credentials by id and name only', async () => {
    const creds = ok(await run('{ myself { id containerRegistryCreds { id name userId } } }'), 'myself');
    expect(creds.containerRegistryCreds).toEqual([{ id: expect.stringMatching(/^c/), name: 'ghcr', userId: creds.id }]);
    const missing = await run('mutation { deleteRegistryAuth }');
    fails(missing, 'deleteRegistryAuth', 'VALIDATION_FAILED');
    const malformed = await run('mutation { deleteRegistryAuth(registryAuthId: "not-an-id") }');
    fails(malformed, 'deleteRegistryAuth', 'VALIDATION_FAILED');
  });

  it('a variable that does not coerce is refused without echoing its value (a password)', async () => {
    const doc = 'mutation Save($input: SaveRegistryAuthInput!) { saveRegistryAuth(input: $input) { id } }';
    const res = await run(doc, { input: { name: 'hub', username: 'me', password: 'TOPSECRETPW9', extra: 1 } });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('TOPSECRETPW9');
    expect(res.json.errors[0].message).toBe(
      'Variable "$input" got invalid value; Field "extra" is not defined by type "SaveRegistryAuthInput".',
    );
    // The scalars' own reasons print the value again; an env secret as an object, a wrong enum value too.
    const numeric = await run(doc, { input: { name: 'hub', username: 'me', password: 98765432101 } });
    expect(numeric.status).toBe(400);
    expect(numeric.text).not.toContain('98765432101');
    expect(numeric.json.errors[0].message).toBe(
      'Variable "$input" got invalid value at "input.password"; String cannot represent a non string value.',
    );
    const envDoc = 'mutation T($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }';
    const env = await run(envDoc, {
      input: { name: 't', imageName: 'x', containerDiskInGb: 5, env: [{ key: 'K', value: { s: 'TOPSECRETENV7' } }] },
    });
    expect(env.status).toBe(400);
    expect(env.text).not.toContain('TOPSECRETENV7');
    const wrongEnum = await run(envDoc, {
      input: { name: 't', imageName: 'x', containerDiskInGb: 5, env: [], category: 'SECRETISH_VALUE' },
    });
    expect(wrongEnum.status).toBe(400);
    expect(wrongEnum.text).not.toContain('SECRETISH_VALUE');
    expect(wrongEnum.json.errors.map((e: { message: string }) => e.message)).toContain(
      'Variable "$input" got invalid value at "input.category"; The value does not exist in "TemplateCategory" enum.',
    );
  });

  it('a literal that does not coerce, or a document that does not parse at a secret, is refused without it', async () => {
    const auth = (password: string) =>
      run(`mutation { saveRegistryAuth(input: {name: "hub", username: "me", ${password}}) { id } }`);
    const template = (env: string) =>
      run(
        `mutation { saveTemplate(input: {name: "t", imageName: "x", dockerArgs: "", containerDiskInGb: 5, volumeInGb: 0, env: [${env}]}) { id } }`,
      );
    const cases: Array<[Promise<ApiResponse>, string, string]> = [
      // Written unquoted (an enum-like name, a number): the scalar's reason printed the value.
      [auth('password: TOPSECRETPW9'), 'TOPSECRETPW9', 'String cannot represent a non string value.'],
      [auth('password: 98765432101'), '98765432101', 'String cannot represent a non string value.'],
      [
        template('{key: "K", value: {s: "TOPSECRETENV7"}}'),
        'TOPSECRETENV7',
        'String cannot represent a non string value.',
      ],
      // A password with a quote in it, pasted into the document unescaped: the parser named the token after it.
      [auth('password: "ab" "TOPSECRETPW9"'), 'TOPSECRETPW9', 'Syntax Error: Expected Name, found String.'],
      [auth('password: "ab"TOPSECRETPW9 x"'), 'TOPSECRETPW9', 'Syntax Error: Expected ":", found Name.'],
      [auth('password: "TOPSECRET\\qPW9"'), '\\q', 'Syntax Error: Invalid character escape sequence.'],
      [
        run('mutation { saveEndpoint(input: {name: "q", templateId: "x", flashBootType: SECRETISH_VALUE}) { id } }'),
        'SECRETISH_VALUE',
        'The value does not exist in "FlashBootType" enum.',
      ],
    ];
    for (const [pending, secret, message] of cases) {
      const res = await pending;
      expect(res.status, res.text).toBe(400);
      expect(res.text).not.toContain(secret);
      expect(res.json.errors[0].message).toBe(message);
      // Where it is in the document is still said.
      expect(res.json.errors[0].locations?.length, res.text).toBe(1);
    }
  });

  it('bounds names, data center ids and credentials as REST does (the engine checks them for both)', async () => {
    const long = (n: number) => 'x'.repeat(n);
    const volume = (name: string, dataCenterId: string) =>
      run('mutation V($i: CreateNetworkVolumeInput!) { createNetworkVolume(input: $i) { id } }', {
        i: { name, size: 1, dataCenterId },
      });
    fails(await volume(long(192), 'EU-RO-1'), 'createNetworkVolume', 'VALIDATION_FAILED');
    fails(await volume('v', long(65)), 'createNetworkVolume', 'VALIDATION_FAILED');
    const auth = (name: string, username: string, password: string) =>
      run('mutation A($i: SaveRegistryAuthInput!) { saveRegistryAuth(input: $i) { id } }', {
        i: { name, username, password },
      });
    fails(await auth(long(192), 'u', 'p'), 'saveRegistryAuth', 'VALIDATION_FAILED');
    fails(await auth('bounded', long(1025), 'p'), 'saveRegistryAuth', 'VALIDATION_FAILED');
    fails(await auth('bounded', 'u', long(16_385)), 'saveRegistryAuth', 'VALIDATION_FAILED');
    // At the bounds: accepted.
    const v = ok(await volume(long(191), 'x'.repeat(64)), 'createNetworkVolume');
    const a = ok(await auth('b'.repeat(191), long(1024), long(16_384)), 'saveRegistryAuth');
    // Gone again: the tests below count what exists.
    expect((await t.api('DELETE', `/v1/networkvolumes/${v.id}`)).status).toBe(204);
    expect((await t.api('DELETE', `/v1/containerregistryauth/${a.id}`)).status).toBe(204);
  });

  it('creates, updates, lists and deletes a network volume', async () => {
    const vol = ok(
      await run(
        'mutation { createNetworkVolume(input: {name: "models", size: 10, dataCenterId: "EU-RO-1"}) { id name size dataCenterId dataCenter { id location } } }',
      ),
      'createNetworkVolume',
    );
    expect(vol).toMatchObject({ name: 'models', size: 10, dataCenter: { id: 'EU-RO-1', location: 'Romania' } });
    const grown = ok(
      await run(`mutation { updateNetworkVolume(input: {id: "${vol.id}", size: 20}) { id name size } }`),
      'updateNetworkVolume',
    );
    expect(grown).toEqual({ id: vol.id, name: 'models', size: 20 });
    fails(
      await run(`mutation { updateNetworkVolume(input: {id: "${vol.id}", size: 5}) { id } }`),
      'updateNetworkVolume',
      'VALIDATION_FAILED',
    );
    expect(ok(await run('{ myself { networkVolumes { id size } } }'), 'myself').networkVolumes).toEqual([
      { id: vol.id, size: 20 },
    ]);
    expect(
      ok(await run(`mutation { deleteNetworkVolume(input: {id: "${vol.id}"}) }`), 'deleteNetworkVolume'),
    ).toBeNull();
    fails(
      await run(`mutation { deleteNetworkVolume(input: {id: "${vol.id}"}) }`),
      'deleteNetworkVolume',
      'NETWORK_VOLUME_NOT_FOUND',
    );
  });
});
