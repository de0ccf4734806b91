import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.ts';
import { LIST_JOBS_BEFORE_SQL, LIST_JOBS_SQL } from '../../src/store/sqlite/requests.ts';
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

  it('the database and its WAL are readable by the owner only, in a directory open to all, and one made 0644', async () => {
    const open = mkdtempSync(join(dir, 'open-'));
    chmodSync(open, 0o755);
    const path = join(open, 'wharf.db');
    const before = join(open, 'before.db');
    writeFileSync(before, '', { mode: 0o644 });
    chmodSync(before, 0o644);
    for (const p of [path, before]) {
      const store = openSqliteStore({ path: p });
      await store.migrate();
      await store.submitJob(newJob('ep'));
      for (const f of [p, `${p}-wal`, `${p}-shm`]) expect((statSync(f).mode & 0o777).toString(8), f).toBe('600');
      await store.close();
    }
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

  it('migration 6 counts the jobs already there, as the queries it replaced did', async () => {
    const path = join(dir, 'counts-backfill.db');
    const db = new DatabaseSync(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER)');
    for (const m of MIGRATIONS.filter((m) => m.version <= 5)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
    }
    const insert = db.prepare(
      `INSERT INTO jobs (id, endpoint_id, status, input, policy, policy_given, low_priority, execution_timeout_ms,
         ttl_ms, mode, retention_ms, created_at, queued_at, expires_at, retries)
       VALUES (?, ?, ?, '{}', '{}', 0, ?, 60000, 3600000, 'async', 1800000, ?, ?, ?, ?)`,
    );
    const statuses = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
    const eps = ['ep-a', 'ep-b', 'ep-c'];
    const t0 = 1_700_000_000_000;
    for (let i = 0; i < 60; i++) {
      insert.run(`old-${i}`, eps[i % 3]!, statuses[i % 6]!, i % 5 === 0 ? 1 : 0, t0 + i, t0 + i, t0 + i, i % 7 ? 0 : 1);
    }
    const store = openSqliteStore({ path });
    await store.migrate();
    for (const ep of eps) {
      const byStatus = db
        .prepare('SELECT status, COUNT(*) AS n, SUM(retries > 0) AS r FROM jobs WHERE endpoint_id = ? GROUP BY status')
        .all(ep) as Array<{ status: string; n: number; r: number }>;
      const n = (status: string) => byStatus.find((r) => r.status === status)?.n ?? 0;
      expect(await store.jobCounts(ep)).toEqual({
        inQueue: n('IN_QUEUE'),
        inProgress: n('IN_PROGRESS'),
        completed: n('COMPLETED'),
        failed: n('FAILED'),
        cancelled: n('CANCELLED'),
        timedOut: n('TIMED_OUT'),
        retried: byStatus.reduce((sum, r) => sum + r.r, 0),
      });
      const q = db
        .prepare(
          `SELECT SUM(low_priority = 0) AS normal, SUM(low_priority = 1) AS low,
             MIN(CASE WHEN low_priority = 0 THEN queued_at END) AS oldest
           FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE'`,
        )
        .get(ep) as { normal: number | null; low: number | null; oldest: number | null };
      expect(await store.queueSnapshot(ep)).toEqual({
        inQueue: q.normal ?? 0,
        inQueueLowPriority: q.low ?? 0,
        inProgress: n('IN_PROGRESS'),
        inProgressLowPriority: (
          db
            .prepare(
              `SELECT COUNT(*) AS n FROM jobs WHERE endpoint_id = ? AND status = 'IN_PROGRESS' AND low_priority = 1`,
            )
            .get(ep) as { n: number }
        ).n,
        oldestQueuedAt: q.oldest,
      });
    }
    const active = db
      .prepare(`SELECT DISTINCT endpoint_id FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') ORDER BY 1`)
      .all() as Array<{ endpoint_id: string }>;
    expect((await store.activeEndpointIds()).sort()).toEqual(active.map((r) => r.endpoint_id));
    expect(active.length).toBe(2);
    db.close();
    await store.close();
  });

  it('lists jobs newest first by walking jobs_endpoint_created, never sorting the endpoint’s jobs', async () => {
    // Migration 8 made the index ascending (cheaper to append to); the listing must still read it in order, backwards,
    // so that a page costs `limit` rows at any depth instead of a sort of every job of the endpoint.
    const path = join(dir, 'listing-plan.db');
    const store = openSqliteStore({ path });
    await store.migrate();
    await store.close();
    const db = new DatabaseSync(path);
    const plan = (sql: string, ...params: Array<string | number>): string =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join('; ');
    for (const p of [plan(LIST_JOBS_SQL, 'ep', 10), plan(LIST_JOBS_BEFORE_SQL, 'ep', 1, 'id', 10)]) {
      expect(p).toMatch(/USING INDEX jobs_endpoint_created \(endpoint_id=\?/);
      expect(p).not.toMatch(/TEMP B-TREE/);
    }
    db.close();
  });
});
