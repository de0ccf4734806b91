/**
 * Read-only store verbs for observability (docs/observability.md): the recent-requests list of an endpoint and the
 * schema version for /readyz. Part of the Store (types.ts).
 */
import type { JobStatus } from '../domain/index.ts';

/** Position in an endpoint's job list, newest first: the last job of a page. Ties on createdAt break on id. */
export interface JobListCursor {
  createdAt: number;
  id: string;
}

/** What /requests shows of a job: no input, output or stream (they can be megabytes each). */
export interface JobSummary {
  id: string;
  status: JobStatus;
  createdAt: number;
  /** Submission or retry time: the start of the current delayTime. */
  queuedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  workerId: string | null;
  /** The worker's error as JSON text, when the job failed. */
  errorJson: string | null;
  retries: number;
}

export interface SchemaVersion {
  /** The newest migration applied to the database. */
  current: number;
  /** The newest migration this code knows. */
  latest: number;
}

export interface ObservabilityStore {
  /**
   * Jobs of an endpoint, newest first (createdAt, then id, both descending), at most `limit`, strictly after
   * `before` in that order when given. Jobs deleted by ttl or retention are gone from the list too.
   */
  listJobs(endpointId: string, page: { limit: number; before?: JobListCursor | null }): Promise<JobSummary[]>;
  /** The schema version applied and the one this code expects (/readyz is ready only when they agree). */
  schemaVersion(): Promise<SchemaVersion>;
}
