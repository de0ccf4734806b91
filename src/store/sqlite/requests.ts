import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { JobListCursor, JobSummary, SchemaVersion } from '../types-requests.ts';
import { SUMMARY_COLUMNS, toSummary, type SummaryRow } from '../rows.ts';
import { MIGRATIONS, schemaVersion } from './migrations.ts';
import { statementCache } from './statements.ts';

/** The newest jobs of an endpoint first (exported for the test that checks their query plans). */
export const LIST_JOBS_SQL = `SELECT ${SUMMARY_COLUMNS} FROM jobs WHERE endpoint_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`;
/** The next page after a cursor. */
export const LIST_JOBS_BEFORE_SQL = `SELECT ${SUMMARY_COLUMNS} FROM jobs WHERE endpoint_id = ? AND (created_at, id) < (?, ?)
  ORDER BY created_at DESC, id DESC LIMIT ?`;

/** Observability reads (store/types-requests.ts). Plain reads: they never take the write lock. */
export class SqliteRequests {
  private readonly db: DatabaseSync;
  private readonly q: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.q = statementCache(db);
  }

  /** Keyset pagination on (created_at, id) through the jobs_endpoint_created index: a page costs `limit` rows. */
  list(endpointId: string, limit: number, before: JobListCursor | null): JobSummary[] {
    const rows = (before
      ? this.q(LIST_JOBS_BEFORE_SQL).all(endpointId, before.createdAt, before.id, limit)
      : this.q(LIST_JOBS_SQL).all(endpointId, limit)) as unknown as SummaryRow[];
    return rows.map(toSummary);
  }

  version(): SchemaVersion {
    return { current: schemaVersion(this.db), latest: MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0 };
  }
}
