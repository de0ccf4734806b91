// Records for store tests and probes: a new job and a worker as a store receives them. No test framework here, so
// that the benchmark probes can use them too (bench/probes/store-writes.ts).
import { randomUUID } from 'node:crypto';
import type { WorkerRecord } from '../../src/domain/index.ts';
import type { NewJob } from '../../src/store/index.ts';

export const T0 = 1_700_000_000_000;

export function newJob(endpointId: string, over: Partial<NewJob> = {}): NewJob {
  return {
    id: `${randomUUID()}-t`,
    endpointId,
    inputJson: JSON.stringify({ n: Math.random() }),
    webhook: null,
    policy: { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 3_600_000 },
    policyGiven: false,
    s3ConfigSealed: null,
    mode: 'async',
    retentionMs: 1_800_000,
    createdAt: T0,
    ...over,
  };
}

export function worker(id: string, endpointId: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id,
    endpointId,
    keyHash: null,
    version: 1,
    managed: false,
    state: 'idle',
    reason: null,
    gpuTypeId: null,
    gpuCount: 0,
    createdAt: T0,
    lastSeenAt: T0,
    retired: false,
    retiredAt: null,
    ...over,
  };
}
