import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.ts';
import { keyPrefix } from '../../src/domain/index.ts';
import { hashKey } from '../../src/engine/accounts.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/** `/v1/keys` and `/v1/users`: keys shown once, scopes, immediate revocation, admin-only users and discounts. */

let t: TestServer;
let ep: string;
beforeAll(async () => {
  t = await startTestServer();
  ep = await createEndpoint(t);
});
afterAll(async () => {
  await t.close();
});

function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.code).toBe(code);
  if (field) expect(res.json.details.map((d: { field: string }) => d.field)).toContain(field);
}

describe('API keys', () => {
  it('create returns the key once; the listing never shows a key or hash', async () => {
    const res = await t.api('POST', '/v1/keys', { name: 'ci' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      name: 'ci',
      scope: 'all',
      revokedAt: null,
      key: expect.stringMatching(/^wharf_/),
    });
    expect(res.json.prefix).toBe(res.json.key.slice(0, 10));
    const list = await t.api('GET', '/v1/keys');
    expect(list.status).toBe(200);
    const listed = list.json.find((k: { id: string }) => k.id === res.json.id);
    expect(Object.keys(listed).sort()).toEqual([
      'createdAt',
      'endpointIds',
      'id',
      'name',
      'prefix',
      'revokedAt',
      'scope',
    ]);
    expect(list.text).not.toContain(res.json.key);
    expect((await t.api('GET', '/v1/endpoints', undefined, { key: res.json.key })).status).toBe(200);
  });

  it("a listing (which a read key may see) shows 4 characters of an operator's own key, not half of it", async () => {
    // WHARF_ADMIN_KEY may be as short as 20 characters, and need not look like a generated key.
    const chosen = 'correct-horse-battery-staple';
    const dir = mkdtempSync(join(tmpdir(), 'wharf-prefix-'));
    const own = await startTestServer({ dataDir: dir, adminKey: chosen });
    try {
      const reader = (await own.api('POST', '/v1/keys', { name: 'dashboard', scope: 'read' }, { key: chosen })).json;
      expect(reader.prefix).toBe(reader.key.slice(0, 10)); // a generated key: `wharf_` and 4 of its 40 characters
      const list = await own.api('GET', '/v1/keys', undefined, { key: reader.key });
      expect(list.status).toBe(200);
      const admin = list.json.find((k: { name: string }) => k.name === 'admin (WHARF_ADMIN_KEY)');
      expect(admin.prefix).toBe('corr');
      expect(list.text).not.toContain(chosen.slice(0, 5));
      // Nor does the store hold more of it.
      const stored = await own.server.store.listApiKeys(own.server.adminUserId);
      expect(stored.find((k) => k.name === admin.name)?.prefix).toBe('corr');
    } finally {
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bad input → 400 naming the field', async () => {
    expectError(await t.api('POST', '/v1/keys', { name: 'x', scope: 'god' }), 400, 'VALIDATION_FAILED', 'scope');
    expectError(
      await t.api('POST', '/v1/keys', { name: 'x', scope: 'restricted' }),
      400,
      'VALIDATION_FAILED',
      'endpointIds',
    );
    expectError(
      await t.api('POST', '/v1/keys', { name: 'x', scope: 'restricted', endpointIds: ['nosuchendpoint'] }),
      400,
      'VALIDATION_FAILED',
      'endpointIds',
    );
    expectError(
      await t.api('POST', '/v1/keys', { name: 'x', endpointIds: [ep] }),
      400,
      'VALIDATION_FAILED',
      'endpointIds',
    );
    expectError(await t.api('POST', '/v1/keys', {}), 400, 'VALIDATION_FAILED', 'name');
  });

  it('revocation works at once, on every API; a revoked key is listed with revokedAt', async () => {
    const { json } = await t.api('POST', '/v1/keys', { name: 'short' });
    const as = (m: string, p: string) => t.api(m, p, undefined, { key: json.key });
    expect((await as('GET', `/v2/${ep}/health`)).status).toBe(200);
    expect((await as('GET', '/v1/templates')).status).toBe(200);
    const del = await t.api('DELETE', `/v1/keys/${json.id}`);
    expect(del.status).toBe(204);
    expectError(await as('GET', `/v2/${ep}/health`), 401, 'UNAUTHORIZED');
    expectError(await as('GET', '/v1/templates'), 401, 'UNAUTHORIZED');
    const listed = (await t.api('GET', '/v1/keys')).json.find((k: { id: string }) => k.id === json.id);
    expect(listed.revokedAt).toEqual(expect.any(String));
    expect((await t.api('DELETE', `/v1/keys/${json.id}`)).status).toBe(204);
    expectError(await t.api('DELETE', '/v1/keys/nosuchkey000'), 404, 'API_KEY_NOT_FOUND');
  });

  it('a read key reads but cannot create or revoke keys (401); a restricted key cannot use any of it', async () => {
    const read = (await t.api('POST', '/v1/keys', { name: 'reader', scope: 'read' })).json;
    expect((await t.api('GET', '/v1/keys', undefined, { key: read.key })).status).toBe(200);
    expectError(await t.api('POST', '/v1/keys', { name: 'more' }, { key: read.key }), 401, 'FORBIDDEN');
    expectError(await t.api('DELETE', `/v1/keys/${read.id}`, undefined, { key: read.key }), 401, 'FORBIDDEN');
    const restricted = (await t.api('POST', '/v1/keys', { name: 'ci', scope: 'restricted', endpointIds: [ep] })).json;
    expect(restricted.endpointIds).toEqual([ep]);
    expect((await t.api('GET', `/v2/${ep}/health`, undefined, { key: restricted.key })).status).toBe(200);
    for (const [m, p] of [
      ['GET', '/v1/keys'],
      ['POST', '/v1/keys'],
      ['GET', '/v1/endpoints'],
      ['GET', `/v1/endpoints/${ep}`],
    ] as const) {
      expectError(
        await t.api(m, p, m === 'POST' ? { name: 'x' } : undefined, { key: restricted.key }),
        401,
        'FORBIDDEN',
      );
    }
  });

  it("keys belong to their user: another user's key id is not found", async () => {
    const user = await t.server.accounts.createUser('mallory');
    const { key } = await t.server.accounts.createKey(user.id, 'm', 'all');
    const mine = (await t.api('POST', '/v1/keys', { name: 'mine' })).json;
    expectError(await t.api('DELETE', `/v1/keys/${mine.id}`, undefined, { key }), 404, 'API_KEY_NOT_FOUND');
    expect((await t.api('GET', '/v1/keys', undefined, { key })).json.map((k: any) => k.id)).not.toContain(mine.id);
    expect((await t.api('GET', '/v1/endpoints', undefined, { key: mine.key })).status).toBe(200);
  });
});

describe('users (admin only)', () => {
  it('create returns the user and a first key; list; get; the webhook secret is never shown', async () => {
    const res = await t.api('POST', '/v1/users', { name: 'erin' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: expect.stringMatching(/^user_/),
      name: 'erin',
      isAdmin: false,
      serverlessDiscount: null,
      key: expect.stringMatching(/^wharf_/),
      apiKey: { scope: 'all' },
    });
    expect(res.text).not.toContain('webhookSecret');
    expect((await t.api('GET', '/v1/templates', undefined, { key: res.json.key })).json).toEqual([]);
    // The user's secret (made on first use), read by the user: the user views still do not show it.
    const secret = await t.api('GET', '/v1/webhook-secret', undefined, { key: res.json.key });
    expect(secret.json.secret).toMatch(/^whsec_/);
    const list = await t.api('GET', '/v1/users');
    expect(list.json.map((u: any) => u.name)).toEqual(expect.arrayContaining(['admin', 'erin']));
    expect(list.text).not.toContain('whsec_');
    expect(list.text).not.toContain('webhookSecret');
    const one = await t.api('GET', `/v1/users/${res.json.id}`);
    expect(one.json.name).toBe('erin');
    expect(one.text).not.toContain('webhookSecret');
    expectError(await t.api('GET', '/v1/users/user_nosuchuser'), 404, 'USER_NOT_FOUND');
  });

  it('PATCH sets and clears serverlessDiscount; bad values → 400', async () => {
    const { json: u } = await t.api('POST', '/v1/users', { name: 'frank' });
    const discount = { discountFactor: 0.8, type: 'SERVERLESS', expirationDate: '2030-01-01T00:00:00Z' };
    const set = await t.api('PATCH', `/v1/users/${u.id}`, { serverlessDiscount: discount });
    expect(set.status).toBe(200);
    expect(set.json.serverlessDiscount).toEqual(discount);
    expect((await t.server.store.getUser(u.id))?.serverlessDiscount).toEqual(discount);
    expect(
      (await t.api('PATCH', `/v1/users/${u.id}`, { serverlessDiscount: null })).json.serverlessDiscount,
    ).toBeNull();
    expectError(
      await t.api('PATCH', `/v1/users/${u.id}`, { serverlessDiscount: { ...discount, discountFactor: 2 } }),
      400,
      'VALIDATION_FAILED',
    );
    expectError(await t.api('PATCH', '/v1/users/user_nosuchuser', { serverlessDiscount: null }), 404, 'USER_NOT_FOUND');
  });

  it('non-admins get 401 FORBIDDEN on every user route', async () => {
    const { json: u } = await t.api('POST', '/v1/users', { name: 'grace' });
    for (const [m, p, body] of [
      ['POST', '/v1/users', { name: 'x' }],
      ['GET', '/v1/users', undefined],
      ['GET', `/v1/users/${u.id}`, undefined],
      ['PATCH', `/v1/users/${u.id}`, { serverlessDiscount: null }],
    ] as const) {
      expectError(await t.api(m, p, body, { key: u.key }), 401, 'FORBIDDEN');
    }
  });
});

describe('WHARF_ADMIN_KEY', () => {
  it('a new value replaces the one set before (the old key is revoked at the restart); a short one is refused', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-admin-key-'));
    const oldKey = 'wharf_admin_before_rotation_0001';
    const newKey = 'wharf_admin_after_rotation_00002';
    try {
      const first = await startTestServer({ dataDir, adminKey: oldKey });
      const extra = await first.api('POST', '/v1/keys', { name: 'kept' }, { key: oldKey });
      expect(extra.status).toBe(200);
      await first.close();

      const second = await startTestServer({ dataDir, adminKey: newKey });
      try {
        expect((await second.api('GET', '/v1/keys', undefined, { key: oldKey })).status).toBe(401);
        const keys = await second.api('GET', '/v1/keys', undefined, { key: newKey });
        expect(keys.status).toBe(200);
        // Only the variable's own key is replaced: keys made with it stay.
        expect((await second.api('GET', '/v1/endpoints', undefined, { key: extra.json.key })).status).toBe(200);
        const byName = (name: string) => keys.json.filter((k: { name: string }) => k.name === name);
        expect(byName('admin (WHARF_ADMIN_KEY)').map((k: { revokedAt: unknown }) => k.revokedAt !== null)).toEqual([
          true,
          false,
        ]);
      } finally {
        await second.close();
      }
      // Set back to the earlier, revoked value: refused at start with a reason, not a server nobody can log in to.
      await expect(startTestServer({ dataDir, adminKey: oldKey })).rejects.toThrow(/revoked/);
      expect(() => loadConfig({ argv: [], env: { WHARF_ADMIN_KEY: 'short-key' } })).toThrow(/at least 20 characters/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a rotation cut off after the new key was stored still revokes the old one at the next start', async () => {
    // The start that rotates stores the new key, then revokes the old one: a crash (or a store failure) in between
    // left the old key valid, and every later start found the new key stored and never revoked it.
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-admin-key-'));
    const oldKey = 'wharf_admin_before_cutoff_000001';
    const newKey = 'wharf_admin_after_cutoff_0000002';
    try {
      const first = await startTestServer({ dataDir, adminKey: oldKey });
      await first.close();
      // What the cut-off start left: the new key stored beside the old one, not yet revoked.
      const store = openSqliteStore({ path: join(dataDir, 'wharf.db') });
      try {
        const admin = (await store.listUsers()).find((u) => u.isAdmin)!;
        const [old] = await store.listApiKeys(admin.id);
        await store.createApiKey({
          ...old!,
          id: 'cutoffrotatio',
          hash: hashKey(newKey),
          prefix: keyPrefix(newKey),
          createdAt: Date.now(),
        });
      } finally {
        await store.close();
      }

      const second = await startTestServer({ dataDir, adminKey: newKey });
      try {
        expect((await second.api('GET', '/v1/keys', undefined, { key: newKey })).status).toBe(200);
        expect((await second.api('GET', '/v1/keys', undefined, { key: oldKey })).status).toBe(401);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
