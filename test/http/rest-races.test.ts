// Bad input and racing requests on both stores: writes that lose a race on a unique name, and text PostgreSQL cannot
// store, are 4xx answers in the one error shape, never a 500 (DESIGN.md: a 5xx from bad input is a bug).

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { gql } from '../helpers/graphql.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

const unavailable = await pgUnavailable('REST races on PostgreSQL');
const servers: Record<string, TestServer> = {};
/** A second node on the postgres server's database: the races below also run across nodes. */
let otherNode: TestServer | undefined;
beforeAll(async () => {
  servers['sqlite'] = await startTestServer();
  if (unavailable === null) {
    const store = schemaUrl(newSchema());
    const secretKey = randomBytes(32).toString('base64');
    servers['postgres'] = await startTestServer({ store, secretKey });
    otherNode = await startTestServer({ store, secretKey });
  }
});
afterAll(async () => {
  for (const t of Object.values(servers)) await t.close();
  await otherNode?.close();
  await dropSchemas();
});

const stores = unavailable === null ? ['sqlite', 'postgres'] : ['sqlite'];

/** Eight requests sent at once: one wins the name, the rest are told it is taken. */
function expectOneWinner(answers: ApiResponse[], codeOf: (r: ApiResponse) => string): void {
  expect(answers.map(codeOf).sort()).toEqual(
    ['NAME_TAKEN', ...Array(answers.length - 1).fill('NAME_TAKEN')].with(0, 'ok').sort(),
  );
}

describe.each(stores)('%s store', (store) => {
  it('templates and registry auths created at once under one name: one is made, the others get NAME_TAKEN', async () => {
    const t = servers[store]!;
    const rest = (r: ApiResponse) => (r.status === 200 ? 'ok' : r.status === 409 ? r.json.code : `HTTP ${r.status}`);
    const graphql = (r: ApiResponse) => r.json?.errors?.[0]?.extensions?.code ?? (r.json?.data ? 'ok' : r.text);

    const name = `dup-${randomBytes(3).toString('hex')}`;
    const viaRest = await Promise.all(
      Array.from({ length: 8 }, () => t.api('POST', '/v1/templates', { name, imageName: 'file://./examples/echo-ts' })),
    );
    expectOneWinner(viaRest, rest);

    const doc = `mutation { saveTemplate(input: {name: "${name}-gql", imageName: "img", dockerArgs: "", containerDiskInGb: 1, volumeInGb: 0, env: []}) { id } }`;
    expectOneWinner(await Promise.all(Array.from({ length: 8 }, () => gql(t.url, t.key, doc))), graphql);

    const auths = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.api('POST', '/v1/containerregistryauth', { name, username: 'u', password: 'secret-password' }),
      ),
    );
    expectOneWinner(auths, rest);

    // A rename onto a name another rename takes at the same moment.
    const ids = await Promise.all(
      ['a', 'b', 'c', 'd'].map(
        async (n) =>
          (await t.api('POST', '/v1/templates', { name: `${name}-${n}`, imageName: 'img' })).json.id as string,
      ),
    );
    const renames = await Promise.all(ids.map((id) => t.api('PATCH', `/v1/templates/${id}`, { name: `${name}-z` })));
    expectOneWinner(renames, rest);
  });
});

describe.each(stores)('%s store: an endpoint made while what it names is deleted', (store) => {
  // Either the endpoint is made and the delete refused (in use), or the delete wins and the endpoint is refused:
  // never an endpoint naming a template or volume that is gone.
  it('on one node, and (PostgreSQL) across two', async () => {
    const t = servers[store]!;
    const deleter = store === 'postgres' ? otherNode! : t;
    for (let i = 0; i < 12; i++) {
      const tpl = (await t.api('POST', '/v1/templates', { name: `race-${store}-${i}`, imageName: 'img' })).json.id;
      const vol = (await t.api('POST', '/v1/networkvolumes', { name: 'rv', size: 1, dataCenterId: 'EU-RO-1' })).json.id;
      const [made, gone, volGone] = await Promise.all([
        t.api('POST', '/v1/endpoints', { templateId: tpl, workersMax: 0, networkVolumeId: vol }),
        deleter.api('DELETE', `/v1/templates/${tpl}`),
        deleter.api('DELETE', `/v1/networkvolumes/${vol}`),
      ]);
      if (made.status === 200) {
        expect([gone.status, volGone.status], made.text).toEqual([409, 409]);
        const e = await t.api('GET', `/v1/endpoints/${made.json.id}`);
        expect((await t.api('GET', `/v1/templates/${e.json.templateId}`)).status).toBe(200);
        expect((await t.api('GET', `/v1/networkvolumes/${e.json.networkVolumeId}`)).status).toBe(200);
        expect((await t.api('DELETE', `/v1/endpoints/${made.json.id}`)).status).toBe(204);
      } else {
        expect(made.status, made.text).toBe(400);
        expect(gone.status === 204 || volGone.status === 204).toBe(true);
      }
    }
  });
});

describe.skipIf(unavailable !== null)('postgres store: management locks', () => {
  it('many users changing resources at once on a two-connection pool all get through, and jobs still run', async () => {
    const small = await startTestServer({
      store: schemaUrl(newSchema(), 2),
      secretKey: randomBytes(32).toString('base64'),
    });
    try {
      const keys = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => (await small.api('POST', '/v1/users', { name: `u${i}` })).json.key),
      );
      const as = (key: string) => ({ key });
      const made = await Promise.all(
        keys.map((key, i) =>
          small.api('POST', '/v1/templates', { name: `t${i}`, imageName: 'img' }, as(key as string)),
        ),
      );
      expect(made.map((r) => r.status)).toEqual(Array(8).fill(200));
      const ep = await createEndpoint(small);
      expect((await small.api('POST', `/v2/${ep}/run`, { input: {} })).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe.skipIf(unavailable !== null)('postgres store: text with U+0000', () => {
  it('in a name, an id in a path or a GraphQL argument is a 400 that says so, not a 500', async () => {
    const t = servers['postgres']!;
    const ep = await createEndpoint(t);
    const answers = [
      await t.api('POST', '/v1/templates', { name: 'a\u0000b', imageName: 'img' }),
      await t.api('POST', '/v1/containerregistryauth', { name: 'r\u0000', username: 'u', password: 'p' }),
      await t.api('GET', '/v1/templates/a%00b'),
      await t.api('GET', `/v2/${ep}/status/a%00b`),
    ];
    for (const r of answers) {
      expect(r.status, r.text).toBe(400);
      expect(r.json).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('U+0000') });
    }
    const viaGraphql = await gql(t.url, t.key, '{ podTemplate(id: "a\\u0000b") { id } }');
    expect(viaGraphql.json.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    // Inputs are stored as JSON text, where the character is escaped: a job may carry one.
    expect((await t.api('POST', `/v2/${ep}/run`, { input: { s: 'a\u0000b' } })).status).toBe(200);
  });
});
