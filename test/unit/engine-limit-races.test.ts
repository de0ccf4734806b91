import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENDPOINT_DEFAULTS, RETENTION, type Endpoint } from '../../src/domain/index.ts';
import { Bus, JobEngine, SecretBox, type Clock } from '../../src/engine/index.ts';
import { openSqliteStore, type Store } from '../../src/store/index.ts';
import { worker } from '../store/records.ts';

/**
 * The engine's cancel and retry against a real SQLite store, on a clock the test moves at each read: a limit (ttl,
 * execution timeout, result retention) passes between the engine's own check (getJob) and the store's write, the
 * moment no HTTP test can hit.
 */

const T0 = 1_700_000_000_000;

/** Answers `planned` values in turn, then `at`. */
class PlannedClock implements Clock {
  at = T0;
  planned: number[] = [];
  now(): number {
    return this.planned.shift() ?? this.at;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'wharf-engine-cancel-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('engine cancel and retry at a limit', () => {
  let store: Store;
  let engine: JobEngine;
  const clock = new PlannedClock();
  const ep: Endpoint = {
    ...ENDPOINT_DEFAULTS,
    dataCenterIds: [],
    id: 'epcancelttl001',
    userId: 'u1',
    templateId: 't1',
    version: 1,
    createdAt: T0,
  };

  beforeEach(async () => {
    store = openSqliteStore({ path: join(dir, `engine-${n++}.db`) });
    await store.migrate();
    await store.createUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0 });
    await store.createEndpoint(ep);
    engine = new JobEngine(store, new Bus(), clock, new SecretBox(randomBytes(32)), {
      nodeId: 'n1',
      streamWaitMs: 1000,
      statusSyncWaitMs: 1000,
    });
  });
  afterEach(async () => {
    await store.close();
  });

  it('a ttl that runs out between the check and the cancel: JOB_EXPIRED, not CANCELLED, no webhook', async () => {
    clock.at = T0;
    const job = await engine.submit(
      ep,
      { input: {}, webhook: 'http://127.0.0.1:9/hook', policy: { ttl: 10_000 } },
      'async',
    );
    const finals: string[] = [];
    engine.onTerminal((j) => finals.push(j.status));
    // The engine's check reads the clock one ms before the ttl; the store's cancel, at it.
    clock.planned = [T0 + 9_999, T0 + 10_000];
    await expect(engine.cancel(ep.id, job.id)).rejects.toMatchObject({ code: 'JOB_EXPIRED' });
    expect(finals).toEqual([]);
    expect(await store.listWebhookDeliveries(ep.id, job.id)).toEqual([]);
    expect((await store.getJob(ep.id, job.id))?.status).toBe('IN_QUEUE'); // the ttl sweep's to delete
  });

  it('an execution timeout that passes between the check and the cancel: TIMED_OUT, not CANCELLED', async () => {
    clock.at = T0;
    const job = await engine.submit(
      ep,
      { input: {}, webhook: 'http://127.0.0.1:9/hook', policy: { executionTimeout: 5000 } },
      'async',
    );
    await store.upsertWorker(worker('w1', ep.id));
    expect((await store.takeJobs(ep.id, 'w1', 1, T0)).map((j) => j.id)).toEqual([job.id]);
    const finals: string[] = [];
    engine.onTerminal((j) => finals.push(j.status));
    // The engine's check one ms before the deadline; the store's cancel, and all after, at it.
    clock.at = T0 + 5000;
    clock.planned = [T0 + 4999];
    expect(await engine.cancel(ep.id, job.id)).toMatchObject({ id: job.id, status: 'TIMED_OUT' });
    expect(finals).toEqual(['TIMED_OUT']);
    const statuses = (await store.listWebhookDeliveries(ep.id, job.id)).map((d) => d.job.status);
    expect(statuses).toEqual(['TIMED_OUT']);
  });

  it('results that expire between the check and the retry: JOB_RESULTS_EXPIRED, the job not queued again', async () => {
    clock.at = T0;
    const job = await engine.submit(ep, { input: {} }, 'async');
    await store.upsertWorker(worker('w1', ep.id));
    await store.takeJobs(ep.id, 'w1', 1, T0);
    const failed = { status: 'FAILED', outputJson: null, errorJson: '"boom"', stopPod: false } as const;
    expect((await store.finishJob(ep.id, job.id, 'w1', failed, T0 + 100)).ok).toBe(true);
    const kept = T0 + 100 + RETENTION.async;
    clock.planned = [kept - 1, kept];
    await expect(engine.retry(ep.id, job.id)).rejects.toMatchObject({ code: 'JOB_RESULTS_EXPIRED' });
    expect((await store.getJob(ep.id, job.id))?.status).toBe('FAILED');
  });

  it('a ttl that runs out between the check and a new ttl: JOB_EXPIRED, the job not revived', async () => {
    clock.at = T0;
    const job = await engine.submit(ep, { input: {}, policy: { ttl: 10_000 } }, 'async');
    clock.planned = [T0 + 9_999, T0 + 10_000];
    await expect(engine.setTtl(ep.id, job.id, 60_000)).rejects.toMatchObject({ code: 'JOB_EXPIRED' });
    expect((await store.getJob(ep.id, job.id))?.expiresAt).toBe(T0 + 10_000);
  });
});
