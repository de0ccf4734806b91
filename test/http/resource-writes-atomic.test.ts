// A change of templates and endpoints lands whole or not at all, on both stores: a template change with the version
// bumps that roll the endpoints using it, an endpoint saved with its inline template, an endpoint that leaves (or is
// deleted with) the template bound to it. A real fault in the real database (a trigger, created past Wharf, that
// refuses one write) fails the call half way; once the fault is gone, nothing of the change is left behind and the
// same call, retried, does all of it. Written as several store writes, the template changed and the retry rolled
// nothing, or an inline template was left behind holding its name (the retry refused with NAME_TAKEN).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { gql } from '../helpers/graphql.ts';
import { dropSchemas, newSchema, PG_URL, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

const unavailable = await pgUnavailable('atomic resource writes on PostgreSQL');
const stores = unavailable === null ? ['sqlite', 'postgres'] : ['sqlite'];
afterAll(dropSchemas);

type Table = 'templates' | 'endpoints';
type Op = 'INSERT' | 'UPDATE' | 'DELETE';

/** Writes the database refuses until cleared: triggers made through a connection of the test's own. */
interface Faults {
  /** Every `op` on `table` fails from now on; with `id`, only those of that row. */
  inject(table: Table, op: Op, id?: string): Promise<void>;
  clear(): Promise<void>;
}

function sqliteFaults(path: string): Faults {
  const names: string[] = [];
  const exec = (sql: string): void => {
    const db = new DatabaseSync(path);
    try {
      db.exec('PRAGMA busy_timeout = 10000');
      db.exec(sql);
    } finally {
      db.close();
    }
  };
  return {
    async inject(table, op, id) {
      const name = `inject_${names.length}`;
      const row = op === 'INSERT' ? 'NEW' : 'OLD';
      const when = id === undefined ? '' : `WHEN ${row}.id = '${id}'`;
      exec(`CREATE TRIGGER ${name} BEFORE ${op} ON ${table} ${when} BEGIN SELECT RAISE(ABORT, 'injected'); END`);
      names.push(name);
    },
    async clear() {
      for (const name of names.splice(0)) exec(`DROP TRIGGER ${name}`);
    },
  };
}

function postgresFaults(schema: string): Faults {
  const names: Array<[string, Table]> = [];
  const exec = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    async inject(table, op, id) {
      const name = `inject_${names.length}`;
      const row = op === 'INSERT' ? 'NEW' : 'OLD';
      const when = id === undefined ? '' : `WHEN (${row}.id = '${id}')`;
      await exec(`CREATE OR REPLACE FUNCTION "${schema}".inject() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$`);
      await exec(
        `CREATE TRIGGER ${name} BEFORE ${op} ON "${schema}".${table} FOR EACH ROW ${when}
         EXECUTE FUNCTION "${schema}".inject()`,
      );
      names.push([name, table]);
    },
    async clear() {
      for (const [name, table] of names.splice(0)) await exec(`DROP TRIGGER ${name} ON "${schema}".${table}`);
    },
  };
}

describe.each(stores)('%s store', (store) => {
  let t: TestServer;
  let faults: Faults;
  let dataDir: string | undefined;

  beforeAll(async () => {
    if (store === 'sqlite') {
      dataDir = mkdtempSync(join(tmpdir(), 'wharf-atomic-'));
      t = await startTestServer({ dataDir });
      faults = sqliteFaults(join(dataDir, 'wharf.db'));
    } else {
      const schema = newSchema();
      t = await startTestServer({ store: schemaUrl(schema, 4), secretKey: randomBytes(32).toString('base64') });
      faults = postgresFaults(schema);
    }
  });
  afterEach(() => faults.clear());
  afterAll(async () => {
    await t?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const run = (query: string, variables?: Record<string, unknown>) => gql(t.url, t.key, query, variables);
  const endpoint = async (id: string) => (await t.api('GET', `/v1/endpoints/${id}`)).json;
  const template = (id: string) => t.api('GET', `/v1/templates/${id}`);
  const templateNames = async (): Promise<string[]> =>
    (await t.api('GET', '/v1/templates?includeEndpointBoundTemplates=true')).json.map((x: { name: string }) => x.name);
  /** The database refused a write: a server fault, not the caller's (the store is not away either). */
  const refusedRest = (res: ApiResponse) => {
    expect(res.status, res.text).toBe(500);
    expect(res.json).toMatchObject({ code: 'INTERNAL' });
  };
  const refusedGql = (res: ApiResponse, root: string) => {
    expect(res.status, res.text).toBe(200);
    expect(res.json.data?.[root] ?? null, res.text).toBeNull();
    expect(res.json.errors?.[0], res.text).toMatchObject({ path: [root], extensions: { code: 'INTERNAL' } });
  };
  const okGql = (res: ApiResponse, root: string) => {
    expect(res.status, res.text).toBe(200);
    expect(res.json.errors, res.text).toBeUndefined();
    return res.json.data[root];
  };
  /** The endpoint a template is bound to (GraphQL's podTemplate; REST does not show it). */
  const boundTo = async (id: string): Promise<string | null> =>
    okGql(await run(`{ podTemplate(id: "${id}") { boundEndpointId } }`), 'podTemplate').boundEndpointId;
  const inlineTemplate = (name: string, imageName: string) => ({
    name,
    imageName,
    containerDiskInGb: 5,
    dockerArgs: '',
    env: [],
  });
  const SAVE = 'mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id templateId version } }';

  it('a template change is written with the version bumps of every endpoint using it, or not at all', async () => {
    const first = await createEndpoint(t, { name: 'roll-a' });
    const tplId = (await endpoint(first)).templateId as string;
    const second = (await t.api('POST', '/v1/endpoints', { name: 'roll-b', templateId: tplId, workersMax: 0 })).json
      .id as string;
    const before = { image: (await template(tplId)).json.imageName, first: 1, second: 1 };
    // The first endpoint's bump is written, the second's refused.
    await faults.inject('endpoints', 'UPDATE', second);
    refusedRest(await t.api('PATCH', `/v1/templates/${tplId}`, { imageName: 'img:rolled' }));
    await faults.clear();
    expect((await template(tplId)).json.imageName).toBe(before.image);
    expect((await endpoint(first)).version).toBe(before.first);
    expect((await endpoint(second)).version).toBe(before.second);
    // The same change again rolls both (it did not: the template already said so, "no change").
    const retry = await t.api('PATCH', `/v1/templates/${tplId}`, { imageName: 'img:rolled' });
    expect(retry.status, retry.text).toBe(200);
    expect((await template(tplId)).json.imageName).toBe('img:rolled');
    expect((await endpoint(first)).version).toBe(before.first + 1);
    expect((await endpoint(second)).version).toBe(before.second + 1);
  });

  it('saveEndpoint with its bound inline template: the template, its other users and the endpoint together', async () => {
    const name = `bound-${store}`;
    const ep = okGql(
      await run(SAVE, { input: { name: 'bound', workersMax: 0, template: inlineTemplate(name, 'img:1') } }),
      'saveEndpoint',
    );
    // Another endpoint set to use the bound template rolls with it.
    const other = (await t.api('POST', '/v1/endpoints', { name: 'other', templateId: ep.templateId, workersMax: 0 }))
      .json.id as string;
    // The other endpoint's bump is written first; the saved endpoint's own write is refused.
    await faults.inject('endpoints', 'UPDATE', ep.id);
    const save = { input: { id: ep.id, name: 'bound', workersMax: 0, template: inlineTemplate(name, 'img:2') } };
    refusedGql(await run(SAVE, save), 'saveEndpoint');
    await faults.clear();
    expect((await template(ep.templateId)).json.imageName).toBe('img:1');
    expect((await endpoint(ep.id)).version).toBe(1);
    expect((await endpoint(other)).version).toBe(1);
    expect(okGql(await run(SAVE, save), 'saveEndpoint')).toEqual({ id: ep.id, templateId: ep.templateId, version: 2 });
    expect((await template(ep.templateId)).json.imageName).toBe('img:2');
    expect((await endpoint(other)).version).toBe(2);
  });

  it('saveEndpoint with an inline template for an endpoint on a shared one: the new template and the endpoint together', async () => {
    const ep = await createEndpoint(t, { name: 'shared' });
    const shared = (await endpoint(ep)).templateId as string;
    const name = `inline-${store}`;
    // The endpoint's write is refused, and so is the delete that cleaned up the template made for it.
    await faults.inject('endpoints', 'UPDATE', ep);
    await faults.inject('templates', 'DELETE');
    const save = { input: { id: ep, name: 'shared', workersMax: 0, template: inlineTemplate(name, 'img:1') } };
    refusedGql(await run(SAVE, save), 'saveEndpoint');
    await faults.clear();
    expect(await templateNames()).not.toContain(name);
    expect(await endpoint(ep)).toMatchObject({ templateId: shared, version: 1 });
    // Left behind, the template held its name: the retry was refused with NAME_TAKEN.
    const saved = okGql(await run(SAVE, save), 'saveEndpoint');
    expect(saved).toMatchObject({ id: ep, version: 2 });
    expect((await template(saved.templateId)).json).toMatchObject({ name, imageName: 'img:1' });
    expect((await template(shared)).status).toBe(200);
  });

  it('saveEndpoint creating an endpoint with an inline template: both or neither', async () => {
    const name = `created-${store}`;
    await faults.inject('endpoints', 'INSERT');
    await faults.inject('templates', 'DELETE');
    const save = { input: { name: 'created', workersMax: 0, template: inlineTemplate(name, 'img:1') } };
    refusedGql(await run(SAVE, save), 'saveEndpoint');
    await faults.clear();
    expect(await templateNames()).not.toContain(name);
    const made = okGql(await run(SAVE, save), 'saveEndpoint');
    expect((await template(made.templateId)).json.name).toBe(name);
    expect(await boundTo(made.templateId)).toBe(made.id);
  });

  it('an endpoint leaves, or is deleted with, its bound template in the same transaction', async () => {
    const shared = (await endpoint(await createEndpoint(t))).templateId as string;
    const make = async (name: string) =>
      okGql(
        await run(SAVE, { input: { name, workersMax: 0, template: inlineTemplate(name, 'img:1') } }),
        'saveEndpoint',
      );

    // Moved to a shared template: its bound one is deleted with the move (its delete refused, neither happens).
    const moved = await make(`moved-${store}`);
    await faults.inject('templates', 'DELETE');
    refusedRest(await t.api('PATCH', `/v1/endpoints/${moved.id}`, { templateId: shared }));
    await faults.clear();
    expect((await endpoint(moved.id)).templateId).toBe(moved.templateId);
    expect(await boundTo(moved.templateId)).toBe(moved.id);
    const retry = await t.api('PATCH', `/v1/endpoints/${moved.id}`, { templateId: shared });
    expect(retry.status, retry.text).toBe(200);
    expect((await template(moved.templateId)).status).toBe(404);

    // Deleted: its bound template goes with it, or neither goes (left behind, it held its name, hidden from lists).
    const deleted = await make(`deleted-${store}`);
    await faults.inject('templates', 'DELETE');
    refusedRest(await t.api('DELETE', `/v1/endpoints/${deleted.id}`));
    await faults.clear();
    expect((await t.api('GET', `/v1/endpoints/${deleted.id}`)).status).toBe(200);
    expect((await template(deleted.templateId)).status).toBe(200);
    expect((await t.api('DELETE', `/v1/endpoints/${deleted.id}`)).status).toBe(204);
    expect((await template(deleted.templateId)).status).toBe(404);

    // Moved while another endpoint uses it: unbound with the move, or neither.
    const kept = await make(`kept-${store}`);
    await t.api('POST', '/v1/endpoints', { name: 'user', templateId: kept.templateId, workersMax: 0 });
    await faults.inject('templates', 'UPDATE');
    refusedRest(await t.api('PATCH', `/v1/endpoints/${kept.id}`, { templateId: shared }));
    await faults.clear();
    expect((await endpoint(kept.id)).templateId).toBe(kept.templateId);
    expect((await t.api('PATCH', `/v1/endpoints/${kept.id}`, { templateId: shared })).status).toBe(200);
    expect(await boundTo(kept.templateId)).toBeNull();
  });
});
