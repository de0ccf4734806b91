import type { Job } from '../domain/index.ts';
import type { NewJob } from './types.ts';

/**
 * The job a submission creates, as both stores return it: queued, or — handed straight to a waiting take
 * (HandTo) — claimed for `handedTo` at its creation: IN_PROGRESS, attempt 1, started at once.
 */
export function newJobRecord(j: NewJob, handedTo: string | null): Job {
  const handed = handedTo !== null;
  return {
    id: j.id,
    endpointId: j.endpointId,
    status: handed ? 'IN_PROGRESS' : 'IN_QUEUE',
    inputJson: j.inputJson,
    webhook: j.webhook,
    policy: j.policy,
    policyGiven: j.policyGiven,
    policyJson: j.policyJson ?? null,
    s3ConfigSealed: j.s3ConfigSealed,
    mode: j.mode,
    retentionMs: j.retentionMs,
    createdAt: j.createdAt,
    queuedAt: j.createdAt,
    startedAt: handed ? j.createdAt : null,
    completedAt: null,
    expiresAt: j.createdAt + j.policy.ttlMs,
    attempt: handed ? 1 : 0,
    retries: 0,
    workerId: handedTo,
    outputJson: null,
    errorJson: null,
  };
}
