import type { ObservabilityStore } from '../types-requests.ts';
import { SUMMARY_COLUMNS, toSummary, type SummaryRow } from '../rows.ts';
import type { Db } from './db.ts';
import { LATEST, schemaVersion } from './migrations.ts';

/** Observability reads (store/types-requests.ts). */
export function requestVerbs(db: Db): ObservabilityStore {
  return {
    /** Keyset pagination on (created_at, id) through the jobs_endpoint_created index: a page costs `limit` rows. */
    async listJobs(endpointId, page) {
      const before = page.before ?? null;
      const rows = before
        ? await db.query<SummaryRow>(
            `SELECT ${SUMMARY_COLUMNS} FROM jobs WHERE endpoint_id = $1 AND (created_at, id) < ($2, $3)
             ORDER BY created_at DESC, id DESC LIMIT $4`,
            [endpointId, before.createdAt, before.id, page.limit],
          )
        : await db.query<SummaryRow>(
            `SELECT ${SUMMARY_COLUMNS} FROM jobs WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
            [endpointId, page.limit],
          );
      return rows.map(toSummary);
    },

    async schemaVersion() {
      return { current: await schemaVersion(db), latest: LATEST };
    },
  };
}
