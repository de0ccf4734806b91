import type { JobStatus } from '../../domain/index.ts';
import type { ObservabilityStore } from '../types-requests.ts';
import type { Db } from './db.ts';
import { LATEST, schemaVersion } from './migrations.ts';

interface SummaryRow {
  id: string;
  status: string;
  created_at: number;
  queued_at: number;
  started_at: number | null;
  completed_at: number | null;
  worker_id: string | null;
  error: string | null;
  retries: number;
}

const COLUMNS = 'id, status, created_at, queued_at, started_at, completed_at, worker_id, error, retries';

/** Observability reads (store/types-requests.ts). */
export function requestVerbs(db: Db): ObservabilityStore {
  return {
    /** Keyset pagination on (created_at, id) through the jobs_endpoint_created index: a page costs `limit` rows. */
    async listJobs(endpointId, page) {
      const before = page.before ?? null;
      const rows = before
        ? await db.query<SummaryRow>(
            `SELECT ${COLUMNS} FROM jobs WHERE endpoint_id = $1 AND (created_at, id) < ($2, $3)
             ORDER BY created_at DESC, id DESC LIMIT $4`,
            [endpointId, before.createdAt, before.id, page.limit],
          )
        : await db.query<SummaryRow>(
            `SELECT ${COLUMNS} FROM jobs WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
            [endpointId, page.limit],
          );
      return rows.map((r) => ({
        id: r.id,
        status: r.status as JobStatus,
        createdAt: r.created_at,
        queuedAt: r.queued_at,
        startedAt: r.started_at,
        completedAt: r.completed_at,
        workerId: r.worker_id,
        errorJson: r.error,
        retries: r.retries,
      }));
    },

    async schemaVersion() {
      return { current: await schemaVersion(db), latest: LATEST };
    },
  };
}
