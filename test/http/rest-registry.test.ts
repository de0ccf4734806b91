import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** `/v1/containerregistryauth`: credentials encrypted at rest, never shown; ids, names and in-use rules. */

const PASSWORD = 'hunter2-Sup3r-S3cret-registry-password';
const USERNAME = 'registry-user-9f8e7d';

let t: TestServer;
let bob: TestServer['api'];
const seen: string[] = [];
beforeAll(async () => {
  t = await startTestServer();
  const user = await t.server.accounts.createUser('bob');
  const { key } = await t.server.accounts.createKey(user.id, 'bob', 'all');
  bob = (m, p, b, o = {}) => t.api(m, p, b, { ...o, key });
});
afterAll(async () => {
  await t.close();
});

/** Every response of this file is kept, to check that no credential ever appears in one. */
async function call(...args: Parameters<TestServer['api']>): Promise<ApiResponse> {
  const res = await t.api(...args);
  seen.push(res.text);
  return res;
}

function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.code).toBe(code);
  if (field) expect(res.json.details.map((d: { field: string }) => d.field)).toContain(field);
}

describe('container registry auths', () => {
  let id: string;

  it('create 200 returns only id and name; list is a bare array; get', async () => {
    const res = await call('POST', '/v1/containerregistryauth', {
      name: 'ghcr',
      username: USERNAME,
      password: PASSWORD,
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id: expect.stringMatching(/^c[a-z0-9]{24}$/), name: 'ghcr' });
    id = res.json.id;
    const list = await call('GET', '/v1/containerregistryauth');
    expect(list.json).toEqual([{ id, name: 'ghcr' }]);
    expect((await call('GET', `/v1/containerregistryauth/${id}`)).json).toEqual({ id, name: 'ghcr' });
  });

  it('the service decrypts for executors; the key file is 0600', async () => {
    expect(await t.server.registryAuths.credentials(t.server.adminUserId, id)).toEqual({
      username: USERNAME,
      password: PASSWORD,
    });
    expect(statSync(join(t.dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
    const updated = await t.server.registryAuths.update(t.server.adminUserId, id, { username: 'u2', password: 'p2' });
    expect(updated).toEqual({ id, name: 'ghcr' });
    expect(await t.server.registryAuths.credentials(t.server.adminUserId, id)).toEqual({
      username: 'u2',
      password: 'p2',
    });
    await t.server.registryAuths.update(t.server.adminUserId, id, { username: USERNAME, password: PASSWORD });
  });

  it('400 naming the field, 409 for a taken name, 400 malformed id vs 404 unknown id', async () => {
    expectError(
      await call('POST', '/v1/containerregistryauth', { name: 'x', username: 'u' }),
      400,
      'VALIDATION_FAILED',
      'password',
    );
    expectError(
      await call('POST', '/v1/containerregistryauth', { name: '', username: 'u', password: 'p' }),
      400,
      'VALIDATION_FAILED',
      'name',
    );
    expectError(
      await call('POST', '/v1/containerregistryauth', { name: 'ghcr', username: 'u', password: 'p' }),
      409,
      'NAME_TAKEN',
    );
    expectError(
      await call('GET', '/v1/containerregistryauth/not-an-id'),
      400,
      'VALIDATION_FAILED',
      'containerRegistryAuthId',
    );
    expectError(
      await call('DELETE', '/v1/containerregistryauth/not-an-id'),
      400,
      'VALIDATION_FAILED',
      'containerRegistryAuthId',
    );
    const unknown = `c${'0'.repeat(24)}`;
    expectError(await call('GET', `/v1/containerregistryauth/${unknown}`), 404, 'REGISTRY_AUTH_NOT_FOUND');
    expectError(await call('DELETE', `/v1/containerregistryauth/${unknown}`), 404, 'REGISTRY_AUTH_NOT_FOUND');
    // Names are unique per user, not globally.
    expect(
      (await bob('POST', '/v1/containerregistryauth', { name: 'ghcr', username: 'b', password: 'b' })).status,
    ).toBe(200);
  });

  it("templates must name one of the user's registry auths; one in use cannot be deleted", async () => {
    const theirs = (await bob('GET', '/v1/containerregistryauth')).json[0].id as string;
    const base = { imageName: 'file://./examples/echo-ts', dockerStartCmd: ['node', 'worker.ts'] };
    expectError(
      await call('POST', '/v1/templates', { ...base, name: 't-bad', containerRegistryAuthId: theirs }),
      400,
      'VALIDATION_FAILED',
      'containerRegistryAuthId',
    );
    const tpl = await call('POST', '/v1/templates', { ...base, name: 't-good', containerRegistryAuthId: id });
    expect(tpl.status).toBe(200);
    expect(tpl.json.containerRegistryAuthId).toBe(id);
    expectError(
      await call('PATCH', `/v1/templates/${tpl.json.id}`, { containerRegistryAuthId: theirs }),
      400,
      'VALIDATION_FAILED',
      'containerRegistryAuthId',
    );
    const refusal = await call('DELETE', `/v1/containerregistryauth/${id}`);
    expectError(refusal, 409, 'RESOURCE_IN_USE');
    expect(refusal.json.message).toContain(tpl.json.id);
    // "" takes it away: stored as none (null, as GraphQL stores it), so the auth can go; "" again changes nothing.
    const cleared = await call('PATCH', `/v1/templates/${tpl.json.id}`, { containerRegistryAuthId: '' });
    expect(cleared.status).toBe(200);
    expect(cleared.json.containerRegistryAuthId ?? null).toBeNull();
    expect((await call('GET', `/v1/templates/${tpl.json.id}`)).json.containerRegistryAuthId ?? null).toBeNull();
    const empty = await call('POST', '/v1/templates', { ...base, name: 't-empty', containerRegistryAuthId: '' });
    expect(empty.json.containerRegistryAuthId ?? null).toBeNull();
    await call('PATCH', `/v1/templates/${tpl.json.id}`, { containerRegistryAuthId: id });
    expectError(await bob('DELETE', `/v1/containerregistryauth/${id}`), 404, 'REGISTRY_AUTH_NOT_FOUND');
    expectError(await bob('GET', `/v1/containerregistryauth/${id}`), 404, 'REGISTRY_AUTH_NOT_FOUND');
    expect((await call('DELETE', `/v1/templates/${tpl.json.id}`)).status).toBe(204);
  });

  it('never appears in plain text: not in any response, not in the database files', async () => {
    const { json: second } = await call('POST', '/v1/containerregistryauth', {
      name: 'second',
      username: USERNAME,
      password: PASSWORD,
    });
    for (const text of seen) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(USERNAME);
    }
    // The WAL holds recent writes before a checkpoint: read every file of the database.
    const files = readdirSync(t.dataDir).filter((f) => f.startsWith('wharf.db'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = readFileSync(join(t.dataDir, f));
      expect(bytes.includes(Buffer.from(PASSWORD))).toBe(false);
      expect(bytes.includes(Buffer.from(USERNAME))).toBe(false);
      expect(bytes.includes(Buffer.from(Buffer.from(PASSWORD).toString('base64')))).toBe(false);
    }
    expect((await call('DELETE', `/v1/containerregistryauth/${second.id}`)).status).toBe(204);
    expect((await call('DELETE', `/v1/containerregistryauth/${id}`)).status).toBe(204);
    expect((await call('GET', '/v1/containerregistryauth')).json).toEqual([]);
  });
});
