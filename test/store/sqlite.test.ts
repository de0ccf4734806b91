import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { newJob, storeContract } from './contract.ts';

const dir = mkdtempSync(join(tmpdir(), 'wharf-store-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

storeContract('sqlite', async () => openSqliteStore({ path: join(dir, `contract-${n++}.db`) }));

// SQLite-only: these concern the file on disk and the ledger table, which PostgreSQL handles in its own file.
describe('sqlite specifics', () => {
  it('a committed job is on disk when submitJob resolves (reopened by a second connection)', async () => {
    const path = join(dir, 'durable.db');
    const store = openSqliteStore({ path });
    await store.migrate();
    const job = await store.submitJob(newJob('ep'));
    // Read through an independent connection without closing the first: what it sees is what a crash would leave.
    const other = new DatabaseSync(path);
    const row = other.prepare('SELECT id FROM jobs WHERE id = ?').get(job.id);
    other.close();
    expect(row).toEqual({ id: job.id });
    await store.close();
  });

  it('records migrations in a ledger and refuses a schema newer than it knows', async () => {
    const path = join(dir, 'ledger.db');
    const store = openSqliteStore({ path });
    await store.migrate();
    await store.close();
    const db = new DatabaseSync(path);
    const versions = db.prepare('SELECT version FROM schema_migrations').all();
    expect(versions.length).toBeGreaterThan(0);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, ?, 0)').run('future');
    db.close();
    const again = openSqliteStore({ path });
    await expect(again.migrate()).rejects.toThrow(/newer|9999/);
    await again.close();
  });
});
