import { jobTimes, type Job } from '../domain/index.ts';

/**
 * Response bodies built as JSON text: payloads are stored serialised and passed through untouched
 * (a worker's output is never parsed and re-serialised on the hot path).
 */

/** The /status and /runsync body: id, status, delayTime, executionTime, output, error, workerId, retries. */
export function statusBody(job: Job, now: number): string {
  const times = jobTimes(job, now);
  let body = `{"id":${JSON.stringify(job.id)},"status":"${job.status}"`;
  if (times.delayTime !== undefined) body += `,"delayTime":${times.delayTime}`;
  if (times.executionTime !== undefined && job.status !== 'IN_QUEUE') body += `,"executionTime":${times.executionTime}`;
  if (job.outputJson !== null) body += `,"output":${job.outputJson}`;
  if (job.errorJson !== null) body += `,"error":${job.errorJson}`;
  if (job.workerId !== null) body += `,"workerId":${JSON.stringify(job.workerId)}`;
  if (job.retries > 0) body += `,"retries":${job.retries}`;
  return body + '}';
}

/**
 * A job as the worker that takes it gets it (WorkerGateway.take): with its s3Config opened, as the JSON text the
 * submitter gave. Absent when the job has none (the job as the store returned it, no copy made).
 */
export interface TakenJob extends Job {
  s3ConfigJson?: string;
}

/** The job object a worker takes: id and input, plus webhook, policy and s3Config when the submitter gave them. */
export function workerJobBody(job: TakenJob): string {
  let body = `{"id":${JSON.stringify(job.id)},"input":${job.inputJson}`;
  if (job.webhook !== null) body += `,"webhook":${JSON.stringify(job.webhook)}`;
  if (job.policyJson) {
    body += `,"policy":${job.policyJson}`;
  } else if (job.policyGiven) {
    // A job stored without its submitted text: the resolved policy.
    body += `,"policy":${JSON.stringify({
      executionTimeout: job.policy.executionTimeoutMs,
      lowPriority: job.policy.lowPriority,
      ttl: job.policy.ttlMs,
    })}`;
  }
  if (job.s3ConfigJson !== undefined) body += `,"s3Config":${job.s3ConfigJson}`;
  return body + '}';
}

export function streamBody(status: string, chunks: string[]): string {
  return `{"status":"${status}","stream":[${chunks.join(',')}]}`;
}
