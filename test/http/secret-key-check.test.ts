// The secret key a server starts with must be the one the store's secrets were sealed with. A server given another
// key (a node of a cluster with a different WHARF_SECRET_KEY, a data directory whose secret.key was replaced) would
// fail every secret sealed before, and seal new ones that the other nodes cannot open: it refuses to start, saying
// why, before it serves anything. `--accept-new-secret-key` is the way on when the old key is lost for good. On both
// stores.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { gql } from '../helpers/graphql.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const unavailable = await pgUnavailable('the secret key check on PostgreSQL');
afterAll(dropSchemas);

const newKey = (): string => randomBytes(32).toString('base64');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'wharf-keycheck-'));
  dirs.push(d);
  return d;
}

async function createSecret(t: TestServer, name: string): Promise<void> {
  const res = await gql(t.url, t.key, 'mutation ($input: SecretCreateInput) { secretCreate(input: $input) { id } }', {
    input: { name, value: `value-of-${name}` },
  });
  expect(res.json.errors, res.text).toBeUndefined();
}

const REFUSAL = /the secret key \(.*\) is not the one the secrets in this store were sealed with/;

describe('sqlite store', () => {
  it("refuses a key other than the data directory's, and a replaced secret.key; starts again with the right one", async () => {
    const dir = dataDir();
    const first = await startTestServer({ dataDir: dir });
    await createSecret(first, 'hf');
    await first.close();

    // Another key given on the command line.
    await expect(startTestServer({ dataDir: dir, secretKey: newKey() })).rejects.toThrow(REFUSAL);
    // secret.key deleted: a new one is generated, and refused the same way, naming the way out.
    const original = readFileSync(join(dir, 'secret.key'), 'utf8');
    unlinkSync(join(dir, 'secret.key'));
    await expect(startTestServer({ dataDir: dir })).rejects.toThrow(/restore .*secret\.key.*--accept-new-secret-key/s);

    // The original key back: it starts, and the secret sealed before still reaches the API.
    writeFileSync(join(dir, 'secret.key'), original, { mode: 0o600 });
    const again = await startTestServer({ dataDir: dir });
    const list = await gql(again.url, again.key, '{ myself { secrets { name } } }');
    expect(list.json.data.myself.secrets).toEqual([{ name: 'hf' }]);
    await again.close();
  });

  it('--accept-new-secret-key starts with a new key once the old one is lost, which is then the key checked', async () => {
    const dir = dataDir();
    const first = await startTestServer({ dataDir: dir });
    await createSecret(first, 'old');
    await first.close();

    const lost = newKey();
    const accepted = await startTestServer({ dataDir: dir, secretKey: lost, acceptNewSecretKey: true });
    // A secret made now works; the old key's secrets are still listed (their values unreadable until recreated).
    await createSecret(accepted, 'new');
    await accepted.close();
    // From then on the new key is the one checked: it starts without the flag, the old key is refused.
    const next = await startTestServer({ dataDir: dir, secretKey: lost });
    await next.close();
    await expect(startTestServer({ dataDir: dir })).rejects.toThrow(REFUSAL);
  });
});

describe.skipIf(unavailable !== null)('postgres store', () => {
  it('a node with another WHARF_SECRET_KEY than the nodes before it refuses to start', async () => {
    const store = schemaUrl(newSchema(), 4);
    const key = newKey();
    const a = await startTestServer({ store, secretKey: key, dataDir: dataDir() });
    await createSecret(a, 'shared');
    await expect(startTestServer({ store, secretKey: newKey(), dataDir: dataDir() })).rejects.toThrow(REFUSAL);
    // The same key: a second node joins.
    const b = await startTestServer({ store, secretKey: key, dataDir: dataDir() });
    const list = await gql(b.url, b.key, '{ myself { secrets { name } } }');
    expect(list.json.data.myself.secrets).toEqual([{ name: 'shared' }]);
    await b.close();
    await a.close();
  });
});
