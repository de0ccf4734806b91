// The SQLite write queue's group fsync (src/store/sqlite/write-queue.ts): COMMIT appends to the WAL without syncing
// and the queue fdatasyncs the WAL off the event loop. What must hold: a durable write resolves only after an fsync
// that started after its COMMIT; a soft write resolves at COMMIT; one fsync covers every commit made before it
// started; a failed fsync answers STORE_UNAVAILABLE. The fsync is held in the test (the `fdatasync` seam) so that
// "not yet" can be observed; the last case uses the real fs.fdatasync.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setImmediate as tick } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { WriteQueue } from '../../src/store/sqlite/write-queue.ts';
import { newJob } from './contract.ts';

const dir = mkdtempSync(join(tmpdir(), 'wharf-fsync-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Done = (error: NodeJS.ErrnoException | null) => void;

function open(): { db: DatabaseSync; path: string } {
  const path = join(dir, `q-${n++}.db`);
  const db = new DatabaseSync(path);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  return { db, path };
}

/** A queue whose fsyncs wait until the test releases them, in order. */
function heldQueue() {
  const { db, path } = open();
  const held: Done[] = [];
  const syncedFds: number[] = [];
  const queue = new WriteQueue(db, {
    sync: {
      kind: 'wal-fsync',
      walPath: `${path}-wal`,
      fdatasync: (fd, done) => {
        syncedFds.push(fd);
        held.push(done);
      },
    },
  });
  const insert = (v: number, durable = true) =>
    queue.run(() => db.prepare('INSERT INTO t VALUES (?)').run(v), { durable });
  return { db, queue, held, syncedFds, insert };
}

function watch<T>(p: Promise<T>): { settled: () => boolean; value: Promise<T> } {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { settled: () => settled, value: p };
}

describe('sqlite group fsync off the event loop', () => {
  it('a durable write resolves only after the fsync that follows its commit; a soft write at commit', async () => {
    const { db, queue, held, insert } = heldQueue();
    const durable = watch(insert(1));
    const soft = watch(insert(2, false));
    await tick();
    await tick();
    // Both are committed (visible to another connection), one fsync is in flight.
    expect(db.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 2 });
    expect(held).toHaveLength(1);
    expect(soft.settled()).toBe(true);
    expect(durable.settled()).toBe(false);
    held.shift()!(null);
    await durable.value;
    expect(durable.settled()).toBe(true);
    queue.close();
    db.close();
  });

  it('writes made while a sync runs are held, committed as one group, and synced by the next one', async () => {
    const { db, queue, held, insert } = heldQueue();
    const first = watch(insert(1));
    await tick();
    await tick();
    expect(held).toHaveLength(1);
    // Three more commits (separate turns) while the first fsync is still running: none may ride on it.
    const later = [watch(insert(2))];
    await tick();
    later.push(watch(insert(3)));
    await tick();
    later.push(watch(insert(4)));
    await tick();
    expect(held).toHaveLength(1);
    // Held, not committed: they are committed together when the running fsync ends, right before the next one.
    expect(db.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 1 });
    // A soft write is held too (as it would be behind a COMMIT that syncs), but resolves at that group's commit.
    const soft = watch(insert(5, false));
    await tick();
    expect(soft.settled()).toBe(false);
    held.shift()!(null);
    await first.value;
    await tick();
    expect(db.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 5 });
    expect(soft.settled()).toBe(true);
    expect(later.every((w) => !w.settled())).toBe(true);
    // The next sync started at once and covers all three.
    expect(held).toHaveLength(1);
    held.shift()!(null);
    await Promise.all(later.map((w) => w.value));
    expect(held).toHaveLength(0);
    queue.close();
    db.close();
  });

  it('whenDurable waits for unsynced commits (soft ones included) and is immediate when there are none', async () => {
    const { db, queue, held, insert } = heldQueue();
    await insert(1, false);
    const durable = watch(queue.whenDurable());
    await tick();
    expect(durable.settled()).toBe(false);
    expect(held).toHaveLength(1);
    held.shift()!(null);
    await durable.value;
    const again = watch(queue.whenDurable());
    await tick();
    expect(again.settled()).toBe(true);
    expect(held).toHaveLength(0);
    queue.close();
    db.close();
  });

  it('a group that changed nothing needs no fsync, unless earlier commits are still unsynced', async () => {
    const { db, queue, held, insert } = heldQueue();
    const noop = () => queue.run(() => db.prepare('UPDATE t SET v = v WHERE 0').run());
    const alone = watch(noop());
    await tick();
    await tick();
    expect(alone.settled()).toBe(true);
    expect(held).toHaveLength(0);
    await insert(1, false); // committed, not synced
    const after = watch(noop());
    await tick();
    await tick();
    expect(after.settled()).toBe(false); // its answer may rest on the unsynced insert
    expect(held).toHaveLength(1);
    held.shift()!(null);
    await after.value;
    queue.close();
    db.close();
  });

  it('a failed fsync answers STORE_UNAVAILABLE to the writes it covered, and the queue goes on', async () => {
    const { db, queue, held, insert } = heldQueue();
    const failing = insert(1);
    await tick();
    await tick();
    held.shift()!(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(failing).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    const next = insert(2);
    await tick();
    await tick();
    held.shift()!(null);
    await expect(next).resolves.toBeDefined();
    queue.close();
    db.close();
  });

  it('close() syncs what is still waiting, synchronously', async () => {
    const { db, path } = open();
    const queue = new WriteQueue(db, { sync: { kind: 'wal-fsync', walPath: `${path}-wal` } });
    const pending = queue.run(() => db.prepare('INSERT INTO t VALUES (1)').run());
    queue.close();
    await expect(pending).resolves.toBeDefined();
    db.close();
  });

  it('close() while an fsync runs: everything is synced at once, later writes are refused', async () => {
    const { db, queue, held, insert } = heldQueue();
    const first = insert(1);
    await tick();
    await tick();
    expect(held).toHaveLength(1);
    const second = insert(2);
    queue.close();
    await expect(first).resolves.toBeDefined();
    await expect(second).resolves.toBeDefined();
    expect(db.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 2 });
    held.shift()!(null); // the fsync that was running when close() came ends now
    await tick();
    expect(held).toHaveLength(0);
    await expect(insert(3)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    db.close();
  });

  it('with the real fdatasync, every durable write resolves and the rows are on disk', async () => {
    const { db, path } = open();
    const queue = new WriteQueue(db, { sync: { kind: 'wal-fsync', walPath: `${path}-wal` } });
    const writes = Array.from({ length: 200 }, (_, i) =>
      queue.run(() => db.prepare('INSERT INTO t VALUES (?)').run(i), { durable: i % 3 !== 0 }),
    );
    await Promise.all(writes);
    await queue.whenDurable();
    const other = new DatabaseSync(path);
    expect(other.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 200 });
    other.close();
    queue.close();
    db.close();
  });

  it('the store: an async submit resolves after its fsync, a /runsync submit and a take at commit', async () => {
    const held: Done[] = [];
    const store = openSqliteStore({ path: join(dir, `store-${n++}.db`), fdatasync: (_fd, done) => held.push(done) });
    await store.migrate();
    const release = async () => {
      while (held.length > 0) held.shift()!(null);
      await tick();
    };
    await release();
    const asyncJob = watch(store.submitJob(newJob('ep')));
    const syncJob = watch(store.submitJob({ ...newJob('ep'), mode: 'sync' }));
    await tick();
    await tick();
    expect(syncJob.settled()).toBe(true);
    expect(asyncJob.settled()).toBe(false);
    await release();
    await asyncJob.value;
    const taken = watch(store.takeJobs('ep', 'w1', 10, newJob('ep').createdAt + 1000));
    await tick();
    await tick();
    expect(taken.settled()).toBe(true);
    expect(await taken.value).toHaveLength(2);
    const durable = watch(store.whenDurable());
    await tick();
    expect(durable.settled()).toBe(false);
    await release();
    await durable.value;
    await store.close();
  });
});
