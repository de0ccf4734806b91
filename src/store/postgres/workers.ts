import type { WorkerState } from '../../domain/index.ts';
import type { JobStore } from '../types.ts';
import type { Db } from './db.ts';
import { toWorker, type WorkerRow } from './rows.ts';

type WorkerVerbs = Pick<
  JobStore,
  | 'upsertWorker'
  | 'takeOverWorker'
  | 'getWorker'
  | 'findWorkerByKeyHash'
  | 'listWorkers'
  | 'touchWorker'
  | 'markWorker'
  | 'deleteWorker'
>;

export function workerVerbs(db: Db): WorkerVerbs {
  /** `renew` false: the patch only (markWorker), the lease stays where it is. */
  const updateWorker = async (
    id: string,
    now: number,
    patch: { state?: WorkerState; reason?: string | null; retired?: boolean },
    renew: boolean,
  ): Promise<void> => {
    // GREATEST: pings handled out of order by two nodes never move the lease backwards.
    await db.query(
      `UPDATE workers SET last_seen_at = CASE WHEN $7::boolean THEN GREATEST(last_seen_at, $1) ELSE last_seen_at END,
         state = COALESCE($2::text, state),
         reason = CASE WHEN $3::boolean THEN $4::text ELSE reason END,
         retired = COALESCE($5::boolean, retired),
         retired_at = CASE $5::boolean WHEN TRUE THEN $1 WHEN FALSE THEN NULL ELSE retired_at END
       WHERE id = $6`,
      [now, patch.state ?? null, patch.reason !== undefined, patch.reason ?? null, patch.retired ?? null, id, renew],
    );
  };
  return {
    async upsertWorker(w) {
      await db.query(
        `INSERT INTO workers (id, endpoint_id, key_hash, version, managed, state, reason, gpu_type_id, gpu_count,
           created_at, last_seen_at, retired, retired_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (id) DO UPDATE SET endpoint_id = EXCLUDED.endpoint_id, key_hash = EXCLUDED.key_hash,
           version = EXCLUDED.version, managed = EXCLUDED.managed, state = EXCLUDED.state, reason = EXCLUDED.reason,
           gpu_type_id = EXCLUDED.gpu_type_id, gpu_count = EXCLUDED.gpu_count, last_seen_at = EXCLUDED.last_seen_at,
           retired = EXCLUDED.retired, retired_at = EXCLUDED.retired_at`,
        [
          w.id,
          w.endpointId,
          w.keyHash,
          w.version,
          w.managed,
          w.state,
          w.reason,
          w.gpuTypeId,
          w.gpuCount,
          w.createdAt,
          w.lastSeenAt,
          w.retired,
          w.retired ? w.retiredAt : null,
        ],
      );
    },

    // As the SQLite store's takeOver: one conditional write, so two nodes (or the worker coming back) cannot both
    // win. The row lock taken by the UPDATE holds until the stop orders are gone.
    takeOverWorker(w, from) {
      return db.tx(async (c) => {
        const { rowCount } = await c.query(
          `UPDATE workers SET endpoint_id = $1, key_hash = NULL, version = $2, managed = FALSE, state = $3,
             reason = NULL, gpu_type_id = NULL, gpu_count = 0, created_at = $4, last_seen_at = $5, retired = FALSE,
             retired_at = NULL
           WHERE id = $6 AND endpoint_id = $7 AND last_seen_at = $8 AND NOT managed
             AND NOT EXISTS (SELECT 1 FROM jobs WHERE worker_id = $6 AND status = 'IN_PROGRESS')`,
          [w.endpointId, w.version, w.state, w.createdAt, w.lastSeenAt, w.id, from.endpointId, from.lastSeenAt],
        );
        if (!rowCount) return false;
        await c.query('DELETE FROM job_stops WHERE worker_id = $1', [w.id]);
        return true;
      });
    },

    async getWorker(id) {
      const [r] = await db.query<WorkerRow>('SELECT * FROM workers WHERE id = $1', [id]);
      return r ? toWorker(r) : null;
    },

    async findWorkerByKeyHash(hash) {
      const [r] = await db.query<WorkerRow>('SELECT * FROM workers WHERE key_hash = $1', [hash]);
      return r ? toWorker(r) : null;
    },

    async listWorkers(endpointId) {
      const rows =
        endpointId === undefined
          ? await db.query<WorkerRow>('SELECT * FROM workers ORDER BY created_at, seq')
          : await db.query<WorkerRow>('SELECT * FROM workers WHERE endpoint_id = $1 ORDER BY created_at, seq', [
              endpointId,
            ]);
      return rows.map(toWorker);
    },

    touchWorker(id, now, patch = {}) {
      return updateWorker(id, now, patch, true);
    },

    markWorker(id, now, patch) {
      return updateWorker(id, now, patch, false);
    },

    deleteWorker(id) {
      return db.tx(async (c) => {
        await c.query('DELETE FROM workers WHERE id = $1', [id]);
        await c.query('DELETE FROM job_stops WHERE worker_id = $1', [id]);
      });
    },
  };
}
