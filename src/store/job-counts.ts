import type { JobStatus } from '../domain/index.ts';
import type { JobCounts } from './types.ts';

/** The JobCounts field of each job state (a Record, so a new state cannot be forgotten). */
export const COUNT_OF_STATE: Readonly<Record<JobStatus, Exclude<keyof JobCounts, 'retried'>>> = {
  IN_QUEUE: 'inQueue',
  IN_PROGRESS: 'inProgress',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TIMED_OUT: 'timedOut',
};

/**
 * Fold the `job_counts` rows of one endpoint, summed per status (`n` jobs, `r` of them retried), into JobCounts:
 * both stores read the same table shape. Statuses this build does not know are skipped.
 */
export function jobCountsFrom(rows: Iterable<{ status: string; n: number; r: number }>): JobCounts {
  const c: JobCounts = { inQueue: 0, inProgress: 0, completed: 0, failed: 0, cancelled: 0, timedOut: 0, retried: 0 };
  for (const row of rows) {
    c.retried += row.r;
    const key = COUNT_OF_STATE[row.status as JobStatus] as keyof JobCounts | undefined;
    if (key) c[key] = row.n;
  }
  return c;
}
