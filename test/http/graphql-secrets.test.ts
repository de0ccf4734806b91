// Secrets (RunPod "Secrets") over GraphQL, on both stores and a real server on loopback: `secretCreate`,
// `myself { secrets }` and `secretDelete`; names unique per user and validated; the value never comes back from any
// API and is never written in plain text; another user's secret is "not found", as an unknown one.

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { gql } from '../helpers/graphql.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { postgresRaw, sqliteRaw, type RawDb } from '../helpers/raw-db.ts';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

const unavailable = await pgUnavailable('GraphQL secrets on PostgreSQL');
const stores = unavailable === null ? ['sqlite', 'postgres'] : ['sqlite'];
afterAll(dropSchemas);

const CREATE = `mutation Create($input: SecretCreateInput!) { secretCreate(input: $input) { id name description } }`;
const LIST = `{ myself { secrets { id name description createdAt } } }`;
const DELETE = `mutation Delete($id: String!) { secretDelete(id: $id) }`;

function data(res: ApiResponse, root: string): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data[root];
}
function refused(res: ApiResponse, root: string, code: string): { message: string } {
  expect(res.status, res.text).toBe(200);
  expect(res.json.data?.[root], res.text).toBeNull();
  expect(res.json.errors?.[0]?.extensions.code, res.text).toBe(code);
  return res.json.errors[0];
}

describe.each(stores)('%s store', (store) => {
  let t: TestServer;
  let raw: RawDb;
  let bobKey: string;
  const asAdmin = (query: string, variables?: Record<string, unknown>) => gql(t.url, t.key, query, variables);
  const asBob = (query: string, variables?: Record<string, unknown>) => gql(t.url, bobKey, query, variables);

  beforeAll(async () => {
    if (store === 'sqlite') {
      t = await startTestServer();
      raw = sqliteRaw(t.dataDir);
    } else {
      const schema = newSchema();
      t = await startTestServer({ store: schemaUrl(schema, 4), secretKey: randomBytes(32).toString('base64') });
      raw = postgresRaw(schema);
    }
    const bob = await t.server.accounts.createUser('bob');
    bobKey = (await t.server.accounts.createKey(bob.id, 'bob', 'all')).key;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, lists and deletes a secret; the value is never returned nor stored in plain text', async () => {
    const value = `hf_${randomBytes(16).toString('hex')}`;
    const created = data(
      await asAdmin(CREATE, { input: { name: 'hf', value, description: 'Hugging Face read token' } }),
      'secretCreate',
    );
    expect(created).toEqual({
      id: expect.stringMatching(/^c[a-z0-9]{24}$/),
      name: 'hf',
      description: 'Hugging Face read token',
    });
    // runpod's own shape: {value, name} only; description defaults to empty.
    const other = data(
      await asAdmin(`mutation { secretCreate(input: {value: "v2", name: "api-key_2"}) { id description } }`),
      'secretCreate',
    );
    expect(other.description).toBe('');

    const listed = await asAdmin(LIST);
    expect(data(listed, 'myself').secrets).toEqual([
      { ...created, createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      { id: other.id, name: 'api-key_2', description: '', createdAt: expect.any(String) },
    ]);
    expect(listed.text).not.toContain(value);
    // There is no field to read the value with.
    const asked = await asAdmin('{ myself { secrets { id value } } }');
    expect(asked.status).toBe(400);
    expect(asked.text).not.toContain(value);

    const doc = await raw.column('secrets', 'doc', created.id);
    expect(doc).not.toBeNull();
    expect(doc).toContain('"name":"hf"');
    expect(doc).not.toContain(value);
    expect(await raw.holds(value), `${store} holds the value`).toBe(false);

    expect(data(await asAdmin(DELETE, { id: created.id }), 'secretDelete')).toBeNull();
    expect(data(await asAdmin(LIST), 'myself').secrets.map((s: any) => s.name)).toEqual(['api-key_2']);
    expect(await raw.column('secrets', 'doc', created.id)).toBeNull();
    // Gone: deleting again is not found, and the name is free again.
    refused(await asAdmin(DELETE, { id: created.id }), 'secretDelete', 'SECRET_NOT_FOUND');
    data(await asAdmin(CREATE, { input: { name: 'hf', value: 'again' } }), 'secretCreate');
  });

  it('refuses a duplicate name (409 NAME_TAKEN), per user', async () => {
    data(await asAdmin(CREATE, { input: { name: 'dup', value: 'a' } }), 'secretCreate');
    const e = refused(await asAdmin(CREATE, { input: { name: 'dup', value: 'b' } }), 'secretCreate', 'NAME_TAKEN');
    expect(e.message).toBe('A secret named dup already exists');
    // Bob has his own namespace.
    expect(data(await asBob(CREATE, { input: { name: 'dup', value: 'bob' } }), 'secretCreate').name).toBe('dup');
  });

  it('refuses bad names, empty or oversized values and descriptions (VALIDATION_FAILED naming the field)', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: '', value: 'v' }, /name must not be empty/],
      [{ name: 'has space', value: 'v' }, /name .*letters, digits, _ and -/],
      [{ name: 'dot.ted', value: 'v' }, /name .*letters, digits, _ and -/],
      [{ name: '{{x}}', value: 'v' }, /name .*letters, digits, _ and -/],
      [{ name: 'x'.repeat(65), value: 'v' }, /name must have at most 64 characters/],
      [{ name: 'ok', value: '' }, /value must not be empty/],
      // No environment variable can hold one: the start would fail, with an error quoting the value.
      [{ name: 'ok', value: 'a\u0000b' }, /value must not contain NUL characters/],
      [{ name: 'ok', value: 'é'.repeat(40_000) }, /value must have at most 65536 bytes/],
      [{ name: 'ok', value: 'v', description: 'd'.repeat(1025) }, /description must have at most 1024 characters/],
    ];
    for (const [input, message] of cases) {
      const e = refused(await asAdmin(CREATE, { input }), 'secretCreate', 'VALIDATION_FAILED');
      expect(e.message, JSON.stringify(input).slice(0, 80)).toMatch(message);
    }
    expect(data(await asAdmin(LIST), 'myself').secrets.map((s: any) => s.name)).not.toContain('ok');
    // The longest name and value are taken.
    data(await asAdmin(CREATE, { input: { name: 'N'.repeat(64), value: 'v'.repeat(65_536) } }), 'secretCreate');
    // A malformed id is a 400 naming the field, as for registry auths; the absent argument too.
    refused(await asAdmin(DELETE, { id: 'not an id' }), 'secretDelete', 'VALIDATION_FAILED');
    refused(await asAdmin('mutation { secretDelete }'), 'secretDelete', 'VALIDATION_FAILED');
  });

  it("another user's secret is not listed and cannot be deleted: the same not-found as an unknown id", async () => {
    const mine = data(await asAdmin(CREATE, { input: { name: 'private', value: 'admin-only' } }), 'secretCreate');
    expect(data(await asBob(LIST), 'myself').secrets.map((s: any) => s.id)).not.toContain(mine.id);
    const theirs = refused(await asBob(DELETE, { id: mine.id }), 'secretDelete', 'SECRET_NOT_FOUND');
    const unknown = refused(
      await asBob(DELETE, { id: 'c000000000000000000000000' }),
      'secretDelete',
      'SECRET_NOT_FOUND',
    );
    expect(theirs.message).toBe(`Secret ${mine.id} not found`);
    expect(unknown.message).toBe('Secret c000000000000000000000000 not found');
    expect(data(await asAdmin(LIST), 'myself').secrets.map((s: any) => s.id)).toContain(mine.id);
  });
});
