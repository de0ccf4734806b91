import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENDPOINT_DEFAULTS, type Endpoint } from '../../src/domain/index.ts';
import { Bus, JobEngine, SecretBox, type Clock } from '../../src/engine/index.ts';
import { openSqliteStore, type Store } from '../../src/store/index.ts';

/**
 * The engine's cancel against a real SQLite store, on a clock the test moves at each read: a job's ttl runs out between
 * the engine's own check (getJob) and the store's cancel, the moment no HTTP test can hit.
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

describe('engine cancel at the ttl', () => {
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
});
