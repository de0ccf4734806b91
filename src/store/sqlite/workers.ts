import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { WorkerRecord, WorkerState } from '../../domain/index.ts';
import { toWorker, type WorkerRow } from './rows.ts';
import { statementCache } from './statements.ts';

/** Enough for any real fleet; a flood of made-up worker ids only empties the cache, it never grows past this. */
const CACHE_MAX = 10_000;

export class SqliteWorkers {
  private readonly q: (sql: string) => StatementSync;
  /**
   * Worker records by id. Every job-done and take reads its worker (~5% of a job's server CPU before this cache).
   * The SQLite store is single-node and the only writer, so every change to the workers table passes through this
   * class or a store method that calls `forgetAll`; reads never run inside a write transaction, so the
   * cache only ever holds committed rows. A rolled-back change only costs a re-read.
   */
  private readonly cache = new Map<string, WorkerRecord>();

  constructor(db: DatabaseSync) {
    this.q = statementCache(db);
  }

  forgetAll(): void {
    this.cache.clear();
  }

  upsert(w: WorkerRecord): void {
    this.cache.delete(w.id);
    this.q(
      `INSERT INTO workers (id, endpoint_id, key_hash, version, managed, state, reason, gpu_type_id, gpu_count,
         created_at, last_seen_at, retired, retired_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET endpoint_id = excluded.endpoint_id, key_hash = excluded.key_hash,
         version = excluded.version, managed = excluded.managed, state = excluded.state, reason = excluded.reason,
         gpu_type_id = excluded.gpu_type_id, gpu_count = excluded.gpu_count, last_seen_at = excluded.last_seen_at,
         retired = excluded.retired, retired_at = excluded.retired_at`,
    ).run(
      w.id,
      w.endpointId,
      w.keyHash,
      w.version,
      w.managed ? 1 : 0,
      w.state,
      w.reason,
      w.gpuTypeId,
      w.gpuCount,
      w.createdAt,
      w.lastSeenAt,
      w.retired ? 1 : 0,
      w.retired ? w.retiredAt : null,
    );
  }

  /**
   * Give a worker id held by another endpoint's abandoned outside worker to `w`, if it is still as the caller saw
   * it (`from`: same endpoint, not seen since, holding no job): one conditional write, so a worker that came back
   * meanwhile, or another taker, wins instead. The earlier holder's stop orders go with it.
   */
  takeOver(w: WorkerRecord, from: { endpointId: string; lastSeenAt: number }): boolean {
    this.cache.delete(w.id);
    const { changes } = this.q(
      `UPDATE workers SET endpoint_id = ?, key_hash = NULL, version = ?, managed = 0, state = ?, reason = NULL,
         gpu_type_id = NULL, gpu_count = 0, created_at = ?, last_seen_at = ?, retired = 0, retired_at = NULL
       WHERE id = ? AND endpoint_id = ? AND last_seen_at = ? AND managed = 0
         AND NOT EXISTS (SELECT 1 FROM jobs WHERE worker_id = ? AND status = 'IN_PROGRESS')`,
    ).run(w.endpointId, w.version, w.state, w.createdAt, w.lastSeenAt, w.id, from.endpointId, from.lastSeenAt, w.id);
    if (changes === 0) return false;
    this.q('DELETE FROM job_stops WHERE worker_id = ?').run(w.id);
    return true;
  }

  get(id: string): WorkerRecord | null {
    const cached = this.cache.get(id);
    if (cached) return { ...cached };
    const r = this.q('SELECT * FROM workers WHERE id = ?').get(id) as WorkerRow | undefined;
    if (!r) return null;
    const worker = toWorker(r);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(id, worker);
    return { ...worker };
  }

  byKeyHash(hash: string): WorkerRecord | null {
    const r = this.q('SELECT * FROM workers WHERE key_hash = ?').get(hash) as WorkerRow | undefined;
    return r ? toWorker(r) : null;
  }

  list(endpointId?: string): WorkerRecord[] {
    const rows = (endpointId === undefined
      ? this.q('SELECT * FROM workers ORDER BY created_at').all()
      : this.q('SELECT * FROM workers WHERE endpoint_id = ? ORDER BY created_at').all(
          endpointId,
        )) as unknown as WorkerRow[];
    return rows.map(toWorker);
  }

  /** `renew` false: the patch only (markWorker), the lease stays where it is. */
  touch(
    id: string,
    now: number,
    patch: { state?: WorkerState; reason?: string | null; retired?: boolean } = {},
    renew = true,
  ): void {
    this.cache.delete(id);
    this.q(
      `UPDATE workers SET last_seen_at = MAX(last_seen_at, ?),
         state = COALESCE(?, state),
         reason = CASE WHEN ? THEN ? ELSE reason END,
         retired = COALESCE(?, retired),
         retired_at = CASE ? WHEN 1 THEN ? WHEN 0 THEN NULL ELSE retired_at END
       WHERE id = ?`,
    ).run(
      renew ? now : 0,
      patch.state ?? null,
      patch.reason !== undefined ? 1 : 0,
      patch.reason ?? null,
      patch.retired === undefined ? null : patch.retired ? 1 : 0,
      patch.retired === undefined ? null : patch.retired ? 1 : 0,
      now,
      id,
    );
  }

  /**
   * Workers whose lease ran out and that still count as alive, or that were already marked lease-expired but have
   * since been handed a job (a take long poll that outlived the lease): those jobs must not stay held forever.
   * Not a managed worker still starting: it has no lease yet (an image pull may outlast one); the supervisor's init
   * timeout is its limit.
   */
  silentSince(silentSince: number): string[] {
    const rows = this.q(
      `SELECT id FROM workers w WHERE last_seen_at < ? AND NOT (managed = 1 AND state = 'initializing')
         AND (state <> 'unhealthy'
           OR EXISTS (SELECT 1 FROM jobs j WHERE j.worker_id = w.id AND j.status = 'IN_PROGRESS'))`,
    ).all(silentSince) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  /** The sweeper gave up on its lease. A worker already known dead keeps the reason it died with (exit code, line). */
  markLeaseExpired(id: string): void {
    this.cache.delete(id);
    this.q(
      `UPDATE workers SET reason = CASE WHEN state = 'unhealthy' THEN reason ELSE 'lease-expired' END,
         state = 'unhealthy' WHERE id = ?`,
    ).run(id);
  }

  remove(id: string): void {
    this.cache.delete(id);
    this.q('DELETE FROM workers WHERE id = ?').run(id);
    this.q('DELETE FROM job_stops WHERE worker_id = ?').run(id);
  }
}
