import type { DatabaseSync } from 'node:sqlite';
import { WharfError } from '../../errors/index.ts';

interface PendingWrite {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit (DESIGN.md §1 principle 2). Writes issued in the same event-loop turn are applied in one transaction
 * and made durable by one fsync, then all their promises resolve. Nothing resolves before its COMMIT returned, so an
 * acknowledged write survives kill -9; throughput comes from sharing the commit, never from skipping it.
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

  constructor(db: DatabaseSync, maxBatch = 2000) {
    this.db = db;
    this.maxBatch = maxBatch;
  }

  run<T>(fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new WharfError('STORE_UNAVAILABLE', { reason: 'the store is closed' }));
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate, not a microtask: lets every request parsed in this I/O turn join the batch.
        setImmediate(() => this.flush());
      }
    });
  }

  /** Apply everything queued now (used by close()). */
  flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.commitBatch(batch);
    }
  }

  close(): void {
    this.flush();
    this.closed = true;
  }

  private commitBatch(batch: PendingWrite[]): void {
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
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
    batch.forEach((w, i) => {
      const r = results[i]!;
      if (r.ok) w.resolve(r.value);
      else w.reject(r.error);
    });
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
