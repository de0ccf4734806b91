import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../helpers/graphql.ts';
import { request, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * The GraphQL transport (facts §2.1–2.2, DESIGN.md §3 "Errors"): keys and scopes, request errors (400), resolver
 * errors (200), request shapes (POST JSON, application/graphql, GET), operation selection, introspection.
 */

let t: TestServer;
const post = (body: unknown, opts: { key?: string | null; headers?: Record<string, string>; raw?: string } = {}) =>
  request(`${t.url}/graphql`, 'POST', body, { key: opts.key === undefined ? t.key : opts.key, ...opts });

function requestError(res: ApiResponse, status: number, code: string): string {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.json.data).toBeUndefined();
  expect(res.json.errors[0]).toMatchObject({ message: expect.any(String), extensions: { code } });
  return res.json.errors[0].message as string;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('keys and scopes', () => {
  const query = '{ myself { id } }';

  it('accepts Bearer, a bare key and ?api_key=', async () => {
    const me = { data: { myself: { id: t.server.adminUserId } } };
    expect((await post({ query })).json).toEqual(me);
    expect((await post({ query }, { key: null, headers: { authorization: t.key } })).json).toEqual(me);
    const viaQuery = await request(`${t.url}/graphql?api_key=${t.key}`, 'POST', { query });
    expect(viaQuery.json).toEqual(me);
  });

  it('a missing or bad key is 401 with a GraphQL error body', async () => {
    expect(requestError(await post({ query }, { key: null }), 401, 'UNAUTHORIZED')).toMatch(/API key/);
    requestError(await post({ query }, { key: 'wharf_wrong' }), 401, 'UNAUTHORIZED');
    requestError(await request(`${t.url}/graphql?api_key=wharf_wrong`, 'POST', { query }), 401, 'UNAUTHORIZED');
    // The key is checked before the document: a bad key with a bad document is still 401.
    requestError(await post({ query: '{' }, { key: 'wharf_wrong' }), 401, 'UNAUTHORIZED');
    // And before the body is parsed at all: unparsable JSON, or a body over the size limit, without a key is 401.
    requestError(await post(undefined, { raw: '{"query": ', key: null }), 401, 'UNAUTHORIZED');
    requestError(
      await post({ query: `{ myself { id } } #${'x'.repeat(2_000_000)}` }, { key: null }),
      401,
      'UNAUTHORIZED',
    );
  });

  it('a read key may query but not mutate; a restricted key is refused', async () => {
    const { key: readKey } = await t.server.accounts.createKey(t.server.adminUserId, 'ro', 'read');
    expect((await post({ query }, { key: readKey })).status).toBe(200);
    const mutation = 'mutation { updateUserSettings(input: {pubKey: "x"}) { id } }';
    expect(requestError(await post({ query: mutation }, { key: readKey }), 401, 'FORBIDDEN')).toMatch(/read-only/);
    const { key: restricted } = await t.server.accounts.createKey(t.server.adminUserId, 'rs', 'restricted', []);
    requestError(await post({ query }, { key: restricted }), 401, 'FORBIDDEN');
  });
});

describe('request errors are 400 with errors[] (no data)', () => {
  it('a document that does not parse', async () => {
    const message = requestError(await post({ query: 'mutation { saveEndpoint(input: {' }), 400, 'VALIDATION_FAILED');
    expect(message).toMatch(/^Syntax Error/);
  });

  it('unknown fields, unknown input fields, missing required input fields, wrong literal types', async () => {
    expect(requestError(await post({ query: '{ myself { nope } }' }), 400, 'VALIDATION_FAILED')).toBe(
      'Cannot query field "nope" on type "User".',
    );
    const tpl = (fields: string) => `mutation { saveTemplate(input: {${fields}}) { id } }`;
    const base = 'name: "n", imageName: "i", dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: []';
    expect(requestError(await post({ query: tpl(`${base}, templateId: "x"`) }), 400, 'VALIDATION_FAILED')).toBe(
      'Field "templateId" is not defined by type "SaveTemplateInput".',
    );
    expect(
      requestError(await post({ query: tpl(base.replace('dockerArgs: "", ', '')) }), 400, 'VALIDATION_FAILED'),
    ).toBe('Field "SaveTemplateInput.dockerArgs" of required type "String!" was not provided.');
    const wrongType = await post({ query: tpl(base.replace('containerDiskInGb: 1', 'containerDiskInGb: "1"')) });
    expect(requestError(wrongType, 400, 'VALIDATION_FAILED')).toMatch(/Int cannot represent non-integer value/);
    const locations = await post({ query: '{ myself { nope } }' });
    expect(locations.json.errors[0].locations).toEqual([{ line: 1, column: 12 }]);
  });

  it('variables that do not coerce', async () => {
    const query = 'mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id } }';
    const res = await post({ query, variables: { input: { name: 42 } } });
    expect(requestError(res, 400, 'VALIDATION_FAILED')).toMatch(
      /at "input.name"; String cannot represent a non string value\.$/,
    );
    expect(requestError(await post({ query }), 400, 'VALIDATION_FAILED')).toMatch(/"\$input" of required type/);
  });

  it('bodies that are not a GraphQL request', async () => {
    expect(requestError(await post(undefined, { raw: '{"query": ' }), 400, 'INVALID_JSON')).toMatch(/not valid JSON/);
    requestError(await post({ variables: {} }), 400, 'VALIDATION_FAILED');
    requestError(await post([{ query: '{ myself { id } }' }]), 400, 'VALIDATION_FAILED');
    requestError(await post({ query: '{ myself { id } }', variables: [1] }), 400, 'VALIDATION_FAILED');
  });
});

describe('request shapes', () => {
  it('ignores unknown keys (dstack sends a misspelt "variable")', async () => {
    const res = await post({ query: '{ myself { id } }', variable: { x: 1 }, extensions: {} });
    expect(res.status).toBe(200);
  });

  it('takes variables as JSON text and a null operationName', async () => {
    const query = 'query One($id: String!) { podTemplate(id: $id) { id } }';
    const res = await post({ query, variables: JSON.stringify({ id: 'nope' }), operationName: null });
    expect(res.json).toEqual({ data: { podTemplate: null } });
  });

  it('picks the named operation; several without a name are refused', async () => {
    const query = 'query A { myself { id } } query B { serverlessGpuPools { id } }';
    expect((await post({ query, operationName: 'A' })).json.data).toEqual({ myself: { id: t.server.adminUserId } });
    expect(requestError(await post({ query }), 400, 'VALIDATION_FAILED')).toMatch(/operation name/);
    expect(requestError(await post({ query, operationName: 'C' }), 400, 'VALIDATION_FAILED')).toMatch(/"C"/);
  });

  it('accepts application/graphql bodies and GET for queries only', async () => {
    const res = await post(undefined, { raw: '{ myself { id } }', headers: { 'content-type': 'application/graphql' } });
    expect(res.json.data.myself.id).toBe(t.server.adminUserId);
    const get = await request(
      `${t.url}/graphql?query=${encodeURIComponent('{ myself { id } }')}&api_key=${t.key}`,
      'GET',
    );
    expect(get.json.data.myself.id).toBe(t.server.adminUserId);
    const mutation = encodeURIComponent('mutation { updateUserSettings(input: {pubKey: ""}) { id } }');
    const refused = await request(`${t.url}/graphql?query=${mutation}`, 'GET', undefined, { key: t.key });
    expect(requestError(refused, 400, 'VALIDATION_FAILED')).toMatch(/POST/);
  });
});

describe('resolver errors are 200 with errors[{message, path, extensions.code}] and the field null', () => {
  it('keeps the other fields of the operation', async () => {
    const res = await gql(
      t.url,
      t.key,
      'mutation { a: deleteEndpoint(id: "nope") b: deleteTemplate(templateName: "nope") }',
    );
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ a: null, b: null });
    expect(res.json.errors).toEqual([
      {
        message: 'Endpoint nope not found',
        locations: expect.any(Array),
        path: ['a'],
        extensions: { code: 'ENDPOINT_NOT_FOUND' },
      },
      {
        message: 'Template nope not found',
        locations: expect.any(Array),
        path: ['b'],
        extensions: { code: 'TEMPLATE_NOT_FOUND' },
      },
    ]);
  });

  it('carries details naming the field of a validation failure', async () => {
    const res = await gql(
      t.url,
      t.key,
      'mutation { saveEndpoint(input: {name: "x", templateId: "y", idleTimeout: 0}) { id } }',
    );
    expect(res.json.errors[0].extensions).toEqual({
      code: 'VALIDATION_FAILED',
      details: [{ field: 'idleTimeout', message: 'must be between 1 and 3600' }],
    });
  });
});

describe('introspection', () => {
  it('is allowed: the schema is public', async () => {
    const query = '{ __schema { queryType { name } } __type(name: "FlashBootType") { enumValues { name } } }';
    const res = await gql(t.url, t.key, query);
    expect(res.json.data).toEqual({
      __schema: { queryType: { name: 'Query' } },
      __type: { enumValues: [{ name: 'FLASHBOOT' }, { name: 'OFF' }] },
    });
  });
});
