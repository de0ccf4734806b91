import type { JobStore } from '../types.ts';
import type { Db } from './db.ts';
import { toWorker, type WorkerRow } from './rows.ts';

type WorkerVerbs = Pick<
  JobStore,
  'upsertWorker' | 'getWorker' | 'findWorkerByKeyHash' | 'listWorkers' | 'touchWorker' | 'deleteWorker'
>;

export function workerVerbs(db: Db): WorkerVerbs {
  return {
    async upsertWorker(w) {
      await db.query(
        `INSERT INTO workers (id, endpoint_id, key_hash, version, managed, state, reason, gpu_type_id, gpu_count,
           created_at, last_seen_at, retired)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (id) DO UPDATE SET endpoint_id = EXCLUDED.endpoint_id, key_hash = EXCLUDED.key_hash,
           version = EXCLUDED.version, managed = EXCLUDED.managed, state = EXCLUDED.state, reason = EXCLUDED.reason,
           gpu_type_id = EXCLUDED.gpu_type_id, gpu_count = EXCLUDED.gpu_count, last_seen_at = EXCLUDED.last_seen_at,
           retired = EXCLUDED.retired`,
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
        ],
      );
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

    async touchWorker(id, now, patch = {}) {
      // GREATEST: pings handled out of order by two nodes never move the lease backwards.
      await db.query(
        `UPDATE workers SET last_seen_at = GREATEST(last_seen_at, $1),
           state = COALESCE($2::text, state),
           reason = CASE WHEN $3::boolean THEN $4::text ELSE reason END,
           retired = COALESCE($5::boolean, retired)
         WHERE id = $6`,
        [now, patch.state ?? null, patch.reason !== undefined, patch.reason ?? null, patch.retired ?? null, id],
      );
    },

    deleteWorker(id) {
      return db.tx(async (c) => {
        await c.query('DELETE FROM workers WHERE id = $1', [id]);
        await c.query('DELETE FROM job_stops WHERE worker_id = $1', [id]);
      });
    },
  };
}
