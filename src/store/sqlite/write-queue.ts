import { closeSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { WharfError } from '../../errors/index.ts';

interface PendingWrite {
  fn: () => unknown;
  /** Resolve only once the commit is on disk (fsynced), not merely committed. */
  durable: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface SyncWaiter {
  /** The commit sequence number that must be on disk. */
  seq: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * How commits reach the disk.
 * - `wal-fsync`: the connection runs `synchronous=NORMAL` (COMMIT appends WAL frames without syncing) and the queue
 *   fdatasyncs the WAL file itself on libuv's thread pool, one sync for every commit made since the last one
 *   started. A durable write resolves after the sync that covers its commit; the event loop never waits for the disk.
 * - `none`: nothing waits for an fsync (`:memory:` databases, or `synchronous=NORMAL` by choice: crash-safe, not
 *   power-loss-safe).
 */
export type SyncMode =
  | {
      kind: 'wal-fsync';
      walPath: string;
      /** fs.fdatasync unless given: tests hold the callback to see what waits for the disk. */
      fdatasync?: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
    }
  | { kind: 'none' };

/**
 * Group commit (DESIGN.md §1 principle 2). Writes issued in the same event-loop turn are applied in one transaction,
 * then made durable by a WAL fsync shared with every other commit made meanwhile (group fsync, off the event loop).
 * A durable write resolves only after the fsync that covers its COMMIT, so an acknowledged write survives kill -9 and
 * power loss; throughput comes from sharing the commit and the sync, never from skipping them.
 *
 * Writes whose loss in a power cut only means redoing work (a take, a lease renewal, a stream cursor) may ask for
 * `durable: false`: they resolve at COMMIT, and the next sync (every durable write's) makes them durable too, in
 * order, because the WAL is one sequential file.
 *
 * Each write runs inside its own SAVEPOINT so that one failing operation (a constraint, a bug) is rolled back alone
 * and does not take its batch neighbours with it.
 */
export class WriteQueue {
  private pending: PendingWrite[] = [];
  private scheduled = false;
  private readonly db: DatabaseSync;
  private readonly maxBatch: number;
  private closed = false;
  private readonly sync: SyncMode;
  /** Commits made so far, and how many of them an fsync has covered. */
  private committedSeq = 0;
  private durableSeq = 0;
  private syncing = false;
  private syncWaiters: SyncWaiter[] = [];
  private walFd: number | null = null;
  private changesStmt: StatementSync | null = null;

  constructor(db: DatabaseSync, opts: { maxBatch?: number; sync?: SyncMode } = {}) {
    this.db = db;
    this.maxBatch = opts.maxBatch ?? 2000;
    this.sync = opts.sync ?? { kind: 'none' };
  }

  run<T>(fn: () => T, opts: { durable?: boolean } = {}): Promise<T> {
    if (this.closed) return Promise.reject(new WharfError('STORE_UNAVAILABLE', { reason: 'the store is closed' }));
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, durable: opts.durable ?? true, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate, not a microtask: lets every request parsed in this I/O turn join the batch.
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Apply what is queued. While an fsync is running, writes stay queued and are committed as one group the moment it
   * ends, right before the next fsync starts: durable writes would wait for that next fsync anyway, and soft ones
   * wait no longer than they would if SQLite synced inside COMMIT, while the event loop stays free (parsing requests,
   * answering reads). One commit per fsync keeps the groups large and the WAL small.
   */
  flush(all = false): void {
    if (!all && this.syncing) return; // the sync's callback flushes
    this.scheduled = false;
    const ready = this.pending;
    this.pending = [];
    for (let i = 0; i < ready.length; i += this.maxBatch) this.commitBatch(ready.slice(i, i + this.maxBatch));
  }

  /** Resolves once every write committed so far is on disk (at once when it already is). */
  whenDurable(): Promise<void> {
    if (this.sync.kind === 'none' || this.durableSeq >= this.committedSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.syncWaiters.push({ seq: this.committedSeq, resolve, reject });
      this.startSync();
    });
  }

  close(): void {
    this.flush(true);
    this.closed = true;
    // What is still waiting for its fsync gets it now, synchronously: close() must leave nothing unsynced behind.
    if (this.syncWaiters.length > 0 || this.durableSeq < this.committedSeq) {
      const target = this.committedSeq;
      const waiters = this.syncWaiters;
      this.syncWaiters = [];
      try {
        const fd = this.sync.kind === 'wal-fsync' ? this.openWal() : null;
        if (fd !== null) fdatasyncSync(fd);
        this.durableSeq = target;
        for (const w of waiters) w.resolve();
      } catch (error) {
        for (const w of waiters) w.reject(unavailable(error));
      }
    }
    // An fdatasync still running on the thread pool uses the descriptor: its callback closes it instead.
    if (!this.syncing) this.closeWal();
  }

  private closeWal(): void {
    if (this.walFd === null) return;
    closeSync(this.walFd);
    this.walFd = null;
  }

  /** The WAL's descriptor, or null while there is no WAL file (nothing was ever written: nothing to sync). */
  private openWal(): number | null {
    if (this.sync.kind !== 'wal-fsync') return null;
    // Read-only is enough for fdatasync on Linux. SQLite removes the WAL only when the last connection closes, so the
    // descriptor stays valid for the store's lifetime.
    if (this.walFd === null) {
      try {
        this.walFd = openSync(this.sync.walPath, 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    }
    return this.walFd;
  }

  /** One fdatasync at a time; it covers every commit made before it started. Commits made meanwhile wait for the next. */
  private startSync(): void {
    if (this.syncing || this.syncWaiters.length === 0) return;
    let fd: number | null;
    try {
      fd = this.openWal();
    } catch (error) {
      this.failWaiters(this.syncWaiters.splice(0), error);
      return;
    }
    const target = this.committedSeq;
    if (fd === null) {
      this.durableSeq = target;
      for (const w of this.syncWaiters.splice(0)) w.resolve();
      return;
    }
    this.syncing = true;
    const sync = (this.sync.kind === 'wal-fsync' && this.sync.fdatasync) || fdatasync;
    sync(fd, (error) => {
      this.syncing = false;
      const covered: SyncWaiter[] = [];
      const later: SyncWaiter[] = [];
      for (const w of this.syncWaiters) (w.seq <= target ? covered : later).push(w);
      this.syncWaiters = later;
      if (error) {
        // After a failed fsync the kernel may have dropped the dirty pages: the outcome of those writes is unknown,
        // so they are answered 503 (the caller may retry; an id that was never returned cannot be relied upon).
        this.failWaiters(covered, error);
      } else {
        if (target > this.durableSeq) this.durableSeq = target;
        for (const w of covered) w.resolve();
      }
      if (this.closed) {
        this.closeWal();
        return;
      }
      // The writes held while this sync ran: commit them now (commitBatch starts the next sync).
      if (this.pending.length > 0) this.flush();
      this.startSync();
    });
  }

  private failWaiters(waiters: SyncWaiter[], error: unknown): void {
    const failure = unavailable(error);
    for (const w of waiters) w.reject(failure);
  }

  /** Rows changed by this connection so far: a group that changed none wrote nothing to the WAL. */
  private totalChanges(): number {
    this.changesStmt ??= this.db.prepare('SELECT total_changes() AS n');
    return (this.changesStmt.get() as { n: number }).n;
  }

  private commitBatch(batch: PendingWrite[]): void {
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const changesBefore = this.totalChanges();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      for (const w of batch) w.reject(unavailable(error));
      return;
    }
    for (const w of batch) {
      this.db.exec('SAVEPOINT w');
      try {
        const value = w.fn();
        this.db.exec('RELEASE w');
        results.push({ ok: true, value });
      } catch (error) {
        try {
          this.db.exec('ROLLBACK TO w');
          this.db.exec('RELEASE w');
        } catch {
          // The transaction itself is broken (I/O error); COMMIT below fails and rejects everyone.
        }
        results.push({ ok: false, error: storageError(error) });
      }
    }
    try {
      this.db.exec('COMMIT');
    } catch (error) {
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // Already rolled back by SQLite after the failed commit.
      }
      for (const w of batch) w.reject(unavailable(error));
      return;
    }
    // A group that changed nothing (a take that found nothing, only failed writes) adds nothing to sync; its durable
    // writes still wait for earlier commits to be synced, as their results may rest on them.
    if (this.totalChanges() !== changesBefore) this.committedSeq++;
    const seq = this.committedSeq;
    const mustSync = this.sync.kind === 'wal-fsync' && this.durableSeq < seq;
    batch.forEach((w, i) => {
      const r = results[i]!;
      if (!r.ok) w.reject(r.error);
      else if (!w.durable || !mustSync) w.resolve(r.value);
      else this.syncWaiters.push({ seq, resolve: () => w.resolve(r.value), reject: w.reject });
    });
    if (this.sync.kind === 'none') this.durableSeq = seq;
    this.startSync();
  }
}

/** Disk full, read-only file system, I/O errors: the store cannot take writes right now. */
const UNAVAILABLE_CODES =
  /SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|LOCKED|CORRUPT)|disk I\/O|database or disk is full|readonly/i;

function unavailable(error: unknown): WharfError {
  const message = error instanceof Error ? error.message : String(error);
  return new WharfError(
    'STORE_UNAVAILABLE',
    { reason: `${message}${HINTS.find(([re]) => re.test(message))?.[1] ?? ''}` },
    { cause: error },
  );
}

/** What an operator should know about SQLite's terse messages (the server recovers by itself once fixed). */
const HINTS: Array<[RegExp, string]> = [
  [/disk is full/i, ' (free space in the data directory; writes resume by themselves)'],
  [/disk I\/O error/i, " (the data directory's file system may be read-only or failing)"],
  [/readonly/i, ' (the data directory is read-only)'],
];

function storageError(error: unknown): unknown {
  if (error instanceof WharfError) return error;
  const text = error instanceof Error ? `${(error as { code?: string }).code ?? ''} ${error.message}` : String(error);
  return UNAVAILABLE_CODES.test(text) ? unavailable(error) : error;
}
