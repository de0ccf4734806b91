// Records for store tests and probes: a new job, a worker, an endpoint and a template as a store receives them. No test framework here, so
// that the benchmark probes can use them too (bench/probes/store-writes.ts).
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import {
  ENDPOINT_DEFAULTS,
  TEMPLATE_DEFAULTS,
  type Endpoint,
  type Template,
  type WorkerRecord,
} from '../../src/domain/index.ts';
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

/** An endpoint of user u1 on template t1, version 1. */
export function endpoint(id: string, over: Partial<Endpoint> = {}): Endpoint {
  return {
    ...ENDPOINT_DEFAULTS,
    dataCenterIds: [],
    id,
    userId: 'u1',
    templateId: 't1',
    version: 1,
    createdAt: T0,
    ...over,
  };
}

/** Template t1 of user u1, named `tpl`. */
export function template(over: Partial<Template> = {}): Template {
  return { ...TEMPLATE_DEFAULTS, id: 't1', userId: 'u1', name: 'tpl', imageName: 'file://x', createdAt: T0, ...over };
}

/**
 * Writes pending webhook deliveries into a SQLite store's file past the store, in one transaction (a backlog of any
 * size in moments): [id, owner (null: none), due at] each, due and created at the same time.
 */
export function writePendingDeliveries(path: string, rows: Iterable<readonly [string, string | null, number]>): void {
  const db = new DatabaseSync(path);
  try {
    const insert = db.prepare(
      `INSERT INTO webhook_deliveries (id, job_id, endpoint_id, user_id, url, job, state, next_attempt_at, created_at)
       VALUES (?, ?, 'ep', ?, 'http://127.0.0.1:9/hook', '{}', 'pending', ?, ?)`,
    );
    db.exec('BEGIN');
    for (const [id, owner, at] of rows) insert.run(id, `j-${id}`, owner, at, at);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}
