// PostgreSQL-only behaviour of the job counters (migration 6, store/postgres/counts.ts), not in the contract because
// only a shared database has it: every backend adds to rows of its own, so concurrent transactions never wait on
// each other for a counter; the leader's compaction folds the rows together without waiting for writers; and the
// migration counts the jobs already there (and a TRUNCATE clears them). Each check compares the store's reads with the queries they replaced.

import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openPostgresStore, type JobCounts, type PostgresStore } from '../../src/store/index.ts';
import { compactJobCounts } from '../../src/store/postgres/counts.ts';
import { Db, parseTarget } from '../../src/store/postgres/db.ts';
import { MIGRATIONS } from '../../src/store/postgres/migrations.ts';
import { dropSchemas, newSchema, PG_URL, pgUnavailable } from '../helpers/postgres.ts';
import { newJob } from './contract.ts';

const unavailable = await pgUnavailable('PostgreSQL job counters');
const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});
afterAll(dropSchemas);

const T0 = 1_700_000_000_000;
const EPS = ['eppgc000000001', 'eppgc000000002', 'eppgc000000003'];
const LOW = { executionTimeoutMs: 60_000, lowPriority: true, ttlMs: 3_600_000 };
const DONE = { status: 'COMPLETED', outputJson: '1', errorJson: null, stopPod: false } as const;

function openStore(schema: string, poolSize = 8): PostgresStore {
  const s = openPostgresStore({ url: PG_URL, schema, poolSize });
  closing.push(() => s.close());
  return s;
}

function openDb(schema: string): Db {
  const db = new Db(parseTarget(PG_URL, schema), 2);
  closing.push(() => db.close());
  return db;
}

async function client(schema: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await c.connect();
  closing.push(() => c.end());
  return c;
}

/** The store's three reads equal what the original queries over the jobs table return. */
async function expectSameAsJobs(store: PostgresStore, c: pg.Client): Promise<void> {
  for (const ep of EPS) {
    const rows = await c.query<{ status: string; n: string; r: string }>(
      `SELECT status, COUNT(*) AS n, COUNT(*) FILTER (WHERE retries > 0) AS r FROM jobs WHERE endpoint_id = $1
       GROUP BY status`,
      [ep],
    );
    const counts: JobCounts = {
      inQueue: 0,
      inProgress: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      timedOut: 0,
      retried: 0,
    };
    const key: Record<string, keyof JobCounts> = {
      IN_QUEUE: 'inQueue',
      IN_PROGRESS: 'inProgress',
      COMPLETED: 'completed',
      FAILED: 'failed',
      CANCELLED: 'cancelled',
      TIMED_OUT: 'timedOut',
    };
    for (const r of rows.rows) {
      counts[key[r.status]!] = Number(r.n);
      counts.retried += Number(r.r);
    }
    expect(await store.jobCounts(ep)).toEqual(counts);
    const [s] = (
      await c.query<{ normal: string; low: string; oldest: string | null; running: string; running_low: string }>(
        `SELECT COUNT(*) FILTER (WHERE status = 'IN_QUEUE' AND NOT low_priority) AS normal,
                COUNT(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority) AS low,
                MIN(queued_at) FILTER (WHERE status = 'IN_QUEUE' AND NOT low_priority) AS oldest,
                COUNT(*) FILTER (WHERE status = 'IN_PROGRESS') AS running,
                COUNT(*) FILTER (WHERE status = 'IN_PROGRESS' AND low_priority) AS running_low
         FROM jobs WHERE endpoint_id = $1 AND status IN ('IN_QUEUE', 'IN_PROGRESS')`,
        [ep],
      )
    ).rows;
    expect(await store.queueSnapshot(ep)).toEqual({
      inQueue: Number(s!.normal),
      inQueueLowPriority: Number(s!.low),
      inProgress: Number(s!.running),
      inProgressLowPriority: Number(s!.running_low),
      oldestQueuedAt: s!.oldest === null ? null : Number(s!.oldest),
    });
  }
  const active = await c.query<{ endpoint_id: string }>(
    `SELECT DISTINCT endpoint_id FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') ORDER BY 1`,
  );
  expect((await store.activeEndpointIds()).sort()).toEqual(active.rows.map((r) => r.endpoint_id));
}

/** A job inserted by hand on another connection (its transaction left open by the caller). */
const INSERT_JOB = `INSERT INTO jobs (id, endpoint_id, status, input, policy, policy_given, low_priority,
  execution_timeout_ms, ttl_ms, mode, retention_ms, created_at, queued_at, expires_at, retries)
  VALUES ($1, $2, $3, '{}', '{}', false, $4, 60000, 3600000, 'async', 1800000, $5::bigint, $5, $5 + 3600000, $6)`;

describe.skipIf(unavailable !== null)('postgres job counters', () => {
  it('stay exact while many connections write and the leader compacts at the same time', async () => {
    const schema = newSchema();
    const store = openStore(schema);
    await store.migrate();
    const db = openDb(schema);
    const c = await client(schema);
    let t = T0;
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          store.submitJob(newJob(EPS[i % 3]!, { createdAt: t++, ...(i % 4 === 0 ? { policy: LOW } : {}) })),
        ),
      );
      const taken = await Promise.all(EPS.map((ep, w) => store.takeJobs(ep, `w${round}-${w}`, 6, t)));
      await Promise.all([
        ...taken.flatMap((jobs, w) => jobs.map((j) => store.finishJob(j.endpointId, j.id, `w${round}-${w}`, DONE, t))),
        store.releaseWorkerJobs(`w${round}-1`, t, 3, 'test'),
        ...Array.from({ length: 10 }, (_, i) => store.submitJob(newJob(EPS[0]!, { createdAt: t + i }))),
        compactJobCounts(db),
        round === 2 ? store.purgeQueue(EPS[2]!, t) : Promise.resolve(),
        compactJobCounts(db),
      ]);
      await expectSameAsJobs(store, c);
    }
    await compactJobCounts(db);
    const rows = await c.query<{ backend: number; n: string }>('SELECT backend, n FROM job_counts');
    expect(rows.rows.every((r) => r.backend === 0 && Number(r.n) !== 0)).toBe(true);
    await expectSameAsJobs(store, c);
  });

  it('a submit never waits for another transaction holding its counter; nor does the compaction', async () => {
    const schema = newSchema();
    const store = openStore(schema);
    await store.migrate();
    const db = openDb(schema);
    const other = await client(schema);
    const c = await client(schema);
    const ep = EPS[0]!;
    await store.submitJob(newJob(ep, { createdAt: T0 }));
    // Another node's submit to the same endpoint, same key, not committed yet: it holds its counter row.
    await other.query('BEGIN');
    await other.query(INSERT_JOB, ['held-1', ep, 'IN_QUEUE', false, T0 + 1, 0]);
    const within = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('blocked')), 3000))]);
    await within(store.submitJob(newJob(ep, { createdAt: T0 + 2 })));
    await within(compactJobCounts(db));
    // The compaction skipped the row the open transaction holds.
    const held = await other.query<{ n: string }>('SELECT n FROM job_counts WHERE backend = pg_backend_pid()');
    expect(held.rows.map((r) => Number(r.n))).toEqual([1]);
    expect((await store.jobCounts(ep)).inQueue).toBe(2);
    await other.query('COMMIT');
    expect((await store.jobCounts(ep)).inQueue).toBe(3);
    await expectSameAsJobs(store, c);
    // A rolled-back change leaves no trace.
    await other.query('BEGIN');
    await other.query(INSERT_JOB, ['held-2', ep, 'IN_QUEUE', true, T0 + 3, 1]);
    await other.query(`UPDATE jobs SET status = 'IN_PROGRESS' WHERE id = 'held-1'`);
    await other.query('ROLLBACK');
    await compactJobCounts(db);
    await expectSameAsJobs(store, c);
  });

  it('migration 6 counts the jobs already there', async () => {
    const schema = newSchema();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    closing.push(() => c.end());
    await c.query(`CREATE SCHEMA "${schema}"; SET search_path = "${schema}"`);
    await c.query(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT)',
    );
    for (const m of MIGRATIONS.filter((m) => m.version <= 5)) {
      await c.query(m.sql);
      await c.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name]);
    }
    const statuses = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
    for (let i = 0; i < 60; i++) {
      await c.query(INSERT_JOB, [`old-${i}`, EPS[i % 3], statuses[i % 6], i % 5 === 0, T0 + i, i % 7 === 0 ? 1 : 0]);
    }
    const store = openStore(schema);
    await store.migrate();
    expect((await store.jobCounts(EPS[0]!)).inQueue).toBeGreaterThan(0);
    await expectSameAsJobs(store, c);
    // A session whose search_path is elsewhere still counts in this schema.
    const outside = new pg.Client({ connectionString: PG_URL });
    await outside.connect();
    closing.push(() => outside.end());
    await outside.query(INSERT_JOB.replace('INSERT INTO jobs', `INSERT INTO "${schema}".jobs`), [
      'outside-1',
      EPS[2],
      'IN_QUEUE',
      false,
      T0,
      0,
    ]);
    await expectSameAsJobs(store, c);
    // An operator's TRUNCATE (Wharf never issues one) leaves nothing counted.
    await c.query('TRUNCATE jobs');
    expect(await store.activeEndpointIds()).toEqual([]);
    await expectSameAsJobs(store, c);
  });
});
