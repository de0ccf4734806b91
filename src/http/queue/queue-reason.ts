import type { Job } from '../../domain/index.ts';
import type { FleetStatus } from '../../fleet/index.ts';

/**
 * "Why is my job queued?": the /status body of an IN_QUEUE job gains `queueReason: {reason, message}` from the
 * supervisor's view of its endpoint (no-worker-yet, scaling-up, all-workers-busy, max-workers-reached, crash-loop,
 * no-gpu-capacity, never-placeable, low-priority-waiting, max-workers-zero, start-failed). Absent when the job is not
 * queued or nothing here explains the wait (no supervisor on this node, or a worker is about to take it).
 */
export function withQueueReason(
  body: string,
  job: Pick<Job, 'status' | 'endpointId'>,
  fleetStatus: ((endpointId: string) => FleetStatus) | undefined,
): string {
  if (job.status !== 'IN_QUEUE' || !fleetStatus) return body;
  const { reason, message } = fleetStatus(job.endpointId);
  if (!reason) return body;
  return `${body.slice(0, -1)},"queueReason":${JSON.stringify({ reason, message })}}`;
}
