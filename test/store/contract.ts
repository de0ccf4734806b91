/**
 * The Store contract: every implementation (SQLite now, PostgreSQL later) runs these same tests unchanged
 * (STYLE.md habit 3). A test that applies to one backend lives in that backend's own file and says why.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LIMITS, MAX_REQUEUES, RETAKE_AFTER_STOP_MS } from '../../src/domain/index.ts';
import {
  isUniqueViolation,
  type EndpointWrite,
  type HandTo,
  type Store,
  type TemplateWrite,
} from '../../src/store/index.ts';
import { endpoint, newJob, T0, template, worker } from './records.ts';

import { countsContract } from './contract-counts.ts';
import { managementContract } from './contract-management.ts';
import { requestsContract } from './contract-requests.ts';

/** A size bound for stream reads that no test chunk reaches. */
const MAX = 1 << 20;

export { newJob, worker } from './records.ts';

const COMPLETED = { status: 'COMPLETED', outputJson: '{"ok":1}', errorJson: null, stopPod: false } as const;

export function storeContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const ep = 'ep0000000000001';

    beforeEach(async () => {
      store = await open();
      await store.migrate();
    });
    afterEach(async () => {
      await store.close();
    });

    describe('submit and take', () => {
      it('hands jobs out in FIFO order, each to one worker, incrementing the attempt', async () => {
        const a = await store.submitJob(newJob(ep, { createdAt: T0 }));
        const b = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        const c = await store.submitJob(newJob(ep, { createdAt: T0 + 2 }));
        const first = await store.takeJobs(ep, 'w1', 2, T0 + 10);
        expect(first.map((j) => j.id)).toEqual([a.id, b.id]);
        expect(first.every((j) => j.status === 'IN_PROGRESS' && j.attempt === 1 && j.workerId === 'w1')).toBe(true);
        const second = await store.takeJobs(ep, 'w2', 5, T0 + 11);
        expect(second.map((j) => j.id)).toEqual([c.id]);
        expect(await store.takeJobs(ep, 'w3', 5, T0 + 12)).toEqual([]);
      });

      it('hands out at most LIMITS.takeBatch jobs per take, in queue order across takes of varying size', async () => {
        const ids: string[] = [];
        for (let i = 0; i < LIMITS.takeBatch + 10; i++) {
          ids.push((await store.submitJob(newJob(ep, { createdAt: T0 + i }))).id);
        }
        const big = await store.takeJobs(ep, 'w1', LIMITS.takeBatch + 100, T0 + 10_000);
        expect(big.map((j) => j.id)).toEqual(ids.slice(0, LIMITS.takeBatch));
        // Batch sizes that change from take to take, with submissions in between, keep the FIFO order.
        const late = await store.submitJob(newJob(ep, { createdAt: T0 + 5_000 }));
        const rest = [...ids.slice(LIMITS.takeBatch), late.id];
        const taken: string[] = [];
        for (const max of [3, 1, 4, 2, 5]) {
          taken.push(...(await store.takeJobs(ep, 'w2', max, T0 + 10_001)).map((j) => j.id));
        }
        expect(taken).toEqual(rest);
      });

      it('hands a retired worker nothing, read in the take itself', async () => {
        const j = await store.submitJob(newJob(ep, { createdAt: T0 }));
        await store.upsertWorker(worker('leaving', ep));
        await store.touchWorker('leaving', T0 + 1, { retired: true, reason: 'idle-timeout' });
        expect(await store.takeJobs(ep, 'leaving', 1, T0 + 2)).toEqual([]);
        expect(await store.takeJobs(ep, 'staying', 1, T0 + 3)).toMatchObject([{ id: j.id }]);
      });

      it('concurrent takes in one batch never hand the same job twice', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 20; i++) ids.add((await store.submitJob(newJob(ep, { createdAt: T0 + i }))).id);
        const takes = await Promise.all(Array.from({ length: 10 }, (_, i) => store.takeJobs(ep, `w${i}`, 3, T0 + 100)));
        const taken = takes.flat().map((j) => j.id);
        expect(new Set(taken).size).toBe(taken.length);
        expect(taken.length).toBe(20);
        for (const id of taken) expect(ids.has(id)).toBe(true);
      });

      it('keeps endpoints apart', async () => {
        await store.submitJob(newJob('other-endpoint'));
        expect(await store.takeJobs(ep, 'w1', 5, T0 + 1)).toEqual([]);
      });

      it('never hands out a job whose ttl ran out', async () => {
        await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 10_000 } }),
        );
        expect(await store.takeJobs(ep, 'w1', 1, T0 + 10_001)).toEqual([]);
      });

      it('stores input, webhook, policy and the sealed s3Config untouched', async () => {
        const j = newJob(ep, {
          inputJson: '{"prompt":"héllo","n":[1,2]}',
          webhook: 'http://127.0.0.1:9/h',
          policyGiven: true,
          s3ConfigSealed: 'sealed:v1:c2VhbGVkIGJ5IHRoZSBlbmdpbmU=',
        });
        await store.submitJob(j);
        const got = await store.getJob(ep, j.id);
        expect(got).toMatchObject({
          inputJson: j.inputJson,
          webhook: j.webhook,
          policyGiven: true,
          s3ConfigSealed: j.s3ConfigSealed,
          status: 'IN_QUEUE',
        });
        expect(got?.expiresAt).toBe(T0 + 3_600_000);
        expect(await store.getJob('other-endpoint', j.id)).toBeNull();
      });
    });

    describe('hand-off: a new job claimed for a waiting take in its own insert', () => {
      const to = (workerId: string, over: Partial<HandTo> = {}): HandTo => ({
        workerId,
        touchLease: false,
        ...over,
      });

      it('claims the job for the worker when nothing is queued: in progress, attempt 1, held like a taken job', async () => {
        await store.upsertWorker(worker('w1', ep));
        const j = await store.submitJob(
          newJob(ep, {
            createdAt: T0 + 5,
            policy: { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 },
          }),
          to('w1'),
        );
        const held = { status: 'IN_PROGRESS', attempt: 1, workerId: 'w1', queuedAt: T0 + 5, startedAt: T0 + 5 };
        expect(j).toMatchObject(held);
        expect(await store.getJob(ep, j.id)).toMatchObject(held);
        expect(await store.jobCounts(ep)).toMatchObject({ inQueue: 0, inProgress: 1 });
        expect(await store.runningByWorker(ep)).toEqual({ w1: 1 });
        expect(await store.takeJobs(ep, 'w2', 5, T0 + 6)).toEqual([]);
        // Its execution timeout runs from the hand-off, as for a take.
        expect(await store.timeoutJobs(T0 + 5_004, 10)).toEqual([]);
        expect(await store.timeoutJobs(T0 + 5_005, 10)).toMatchObject([{ job: { id: j.id }, stopWorkerId: 'w1' }]);
      });

      it('only the holder may post the result', async () => {
        await store.upsertWorker(worker('w1', ep));
        const j = await store.submitJob(newJob(ep), to('w1'));
        expect((await store.finishJob(ep, j.id, 'w2', COMPLETED, T0 + 7)).ok).toBe(false);
        expect((await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 7)).ok).toBe(true);
      });

      it('queues the job instead when an older one waits: FIFO goes first', async () => {
        await store.upsertWorker(worker('w1', ep));
        const older = await store.submitJob(newJob(ep, { createdAt: T0 }));
        const newer = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }), to('w1'));
        expect(newer).toMatchObject({ status: 'IN_QUEUE', attempt: 0, workerId: null, startedAt: null });
        expect((await store.takeJobs(ep, 'w1', 5, T0 + 2)).map((j) => j.id)).toEqual([older.id, newer.id]);
      });

      it("is not held back by a queued job whose ttl ran out, nor by another endpoint's queue", async () => {
        await store.upsertWorker(worker('w1', ep));
        await store.submitJob(newJob(ep, { policy: { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 10 } }));
        await store.submitJob(newJob('other-endpoint'));
        const j = await store.submitJob(newJob(ep, { createdAt: T0 + 10 }), to('w1'));
        expect(j.status).toBe('IN_PROGRESS');
      });

      it('queues the job when the worker may not take work: retired, lease expired, elsewhere, unknown', async () => {
        await store.upsertWorker(worker('retired', ep, { retired: true }));
        await store.upsertWorker(worker('silent', ep, { state: 'unhealthy', reason: 'lease-expired' }));
        await store.upsertWorker(worker('elsewhere', 'other-endpoint'));
        for (const id of ['retired', 'silent', 'elsewhere', 'nobody']) {
          const j = await store.submitJob(newJob(ep), to(id));
          expect({ id, status: j.status, workerId: j.workerId }).toEqual({ id, status: 'IN_QUEUE', workerId: null });
          await store.purgeQueue(ep, T0);
        }
        // A worker unhealthy for another reason (its own report) still gets work, as a take would give it; so does a
        // managed worker of an older endpoint version until its supervisor retires it (rolling update).
        await store.upsertWorker(worker('reported', ep, { state: 'unhealthy', reason: 'fitness-check-failed' }));
        expect((await store.submitJob(newJob(ep), to('reported'))).status).toBe('IN_PROGRESS');
        await store.upsertWorker(worker('old', ep, { managed: true, version: 1 }));
        expect((await store.submitJob(newJob(ep), to('old'))).status).toBe('IN_PROGRESS');
      });

      it("renews the worker's lease with the claim when asked, and only with a claim", async () => {
        await store.upsertWorker(worker('w1', ep, { lastSeenAt: T0 }));
        await store.upsertWorker(worker('retired', ep, { lastSeenAt: T0, retired: true }));
        await store.submitJob(newJob(ep, { createdAt: T0 + 500 }), to('w1', { touchLease: true }));
        expect((await store.getWorker('w1'))?.lastSeenAt).toBe(T0 + 500);
        await store.submitJob(newJob(ep, { createdAt: T0 + 600 }), to('w1'));
        expect((await store.getWorker('w1'))?.lastSeenAt).toBe(T0 + 500);
        await store.submitJob(newJob(ep, { createdAt: T0 + 700 }), to('retired', { touchLease: true }));
        expect((await store.getWorker('retired'))?.lastSeenAt).toBe(T0);
      });
    });

    describe('fenced worker posts', () => {
      it('accepts progress, chunks and the result only from the holder; completes once', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        expect((await store.recordProgress(ep, j.id, 'w2', '"x"', T0 + 6)).ok).toBe(false);
        expect((await store.recordProgress(ep, j.id, 'w1', '{"pct":50}', T0 + 6)).ok).toBe(true);
        expect((await store.getJob(ep, j.id))?.outputJson).toBe('{"pct":50}');
        expect((await store.appendChunks(ep, j.id, 'w2', ['{"output":1}'], T0 + 7)).ok).toBe(false);
        expect((await store.appendChunks(ep, j.id, 'w1', ['{"output":1}', '{"output":2}'], T0 + 7)).ok).toBe(true);
        const done = await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 50);
        expect(done.ok).toBe(true);
        const again = await store.finishJob(ep, j.id, 'w1', { ...COMPLETED, outputJson: '"second"' }, T0 + 60);
        // A refusal carries the job as it ended, which is how a retry of the accepted result is recognised.
        expect(again).toMatchObject({
          ok: false,
          reason: 'stale',
          job: { status: 'COMPLETED', workerId: 'w1', outputJson: '{"ok":1}', errorJson: null, completedAt: T0 + 50 },
        });
        const final = await store.getJob(ep, j.id);
        expect(final).toMatchObject({ status: 'COMPLETED', outputJson: '{"ok":1}', completedAt: T0 + 50 });
        expect((await store.finishJob(ep, 'missing', 'w1', COMPLETED, T0)).ok).toBe(false);
      });

      it('refuses posts for a job past its ttl even before the sweep deleted it', async () => {
        const j = await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 10_000 } }),
        );
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        expect(await store.recordProgress(ep, j.id, 'w1', '1', T0 + 10_000)).toMatchObject({
          ok: false,
          reason: 'not_found',
        });
        expect(await store.appendChunks(ep, j.id, 'w1', ['{"output":1}'], T0 + 10_000)).toMatchObject({ ok: false });
        expect(await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 10_000)).toMatchObject({
          ok: false,
          reason: 'not_found',
        });
        expect((await store.getJob(ep, j.id))?.status).toBe('IN_PROGRESS');
      });

      it('puts undelivered jobs back without using an attempt or counting a retry', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        const back = await store.returnUndelivered('w1', [j.id]);
        expect(back).toMatchObject([{ id: j.id, status: 'IN_QUEUE', attempt: 0, retries: 0, workerId: null }]);
        expect(await store.returnUndelivered('w1', [j.id])).toEqual([]);
        const [again] = await store.takeJobs(ep, 'w2', 1, T0 + 6);
        expect(again).toMatchObject({ id: j.id, attempt: 1 });
      });

      it('gives each consumer the chunks it has not seen yet', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        await store.appendChunks(ep, j.id, 'w1', ['{"output":"a"}'], T0 + 7);
        expect((await store.readChunks(ep, j.id, 'k1', MAX)).chunks).toEqual(['{"output":"a"}']);
        expect((await store.readChunks(ep, j.id, 'k1', MAX)).chunks).toEqual([]);
        await store.appendChunks(ep, j.id, 'w1', ['{"output":"b"}'], T0 + 7);
        expect((await store.readChunks(ep, j.id, 'k1', MAX)).chunks).toEqual(['{"output":"b"}']);
        expect((await store.readChunks(ep, j.id, 'k2', MAX)).chunks).toEqual(['{"output":"a"}', '{"output":"b"}']);
      });

      it('names the attempt that streamed the chunks: a lost worker’s chunks go, the next attempt’s are its own', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        await store.appendChunks(ep, j.id, 'w1', ['{"output":"a"}'], T0 + 7);
        expect(await store.readChunks(ep, j.id, 'k', MAX)).toMatchObject({ chunks: ['{"output":"a"}'], attempt: 1 });
        await store.releaseWorkerJobs('w1', T0 + 8, 3, 'lost');
        await store.takeJobs(ep, 'w2', 1, T0 + 9);
        await store.appendChunks(ep, j.id, 'w2', ['{"output":"a"}'], T0 + 10);
        expect(await store.readChunks(ep, j.id, 'k', MAX)).toMatchObject({ chunks: ['{"output":"a"}'], attempt: 2 });
      });

      it('returns at most the size bound of chunks (always one), and says when more wait', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        const chunk = (n: number) => `{"output":"${String(n).repeat(10)}"}`; // 24 characters each
        await store.appendChunks(ep, j.id, 'w1', [1, 2, 3, 4, 5].map(chunk), T0 + 7);
        expect(await store.readChunks(ep, j.id, 'k', 50)).toEqual({
          chunks: [chunk(1), chunk(2)],
          more: true,
          attempt: 1,
        });
        expect(await store.readChunks(ep, j.id, 'k', 10)).toEqual({ chunks: [chunk(3)], more: true, attempt: 1 });
        expect(await store.readChunks(ep, j.id, 'k', 1000)).toEqual({
          chunks: [chunk(4), chunk(5)],
          more: false,
          attempt: 1,
        });
        expect(await store.readChunks(ep, j.id, 'k', 1000)).toEqual({ chunks: [], more: false, attempt: null });
      });
    });

    describe('cancel, retry, purge', () => {
      it('cancels queued and running jobs; a running one gets a stop order; final jobs are left alone', async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const q = await store.submitJob(newJob(ep, { createdAt: T0 + 2 }));
        const r = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        expect(await store.cancelJob(ep, q.id, T0 + 6)).toMatchObject({ outcome: 'cancelled', stopWorkerId: null });
        expect(await store.cancelJob(ep, r.id, T0 + 6)).toMatchObject({ outcome: 'cancelled', stopWorkerId: 'w1' });
        expect(await store.takeStops('w1', T0 + 7)).toEqual([r.id]);
        expect(await store.takeStops('w1', T0 + 8)).toEqual([]);
        expect(await store.cancelJob(ep, r.id, T0 + 7)).toMatchObject({ outcome: 'final' });
        expect(await store.cancelJob(ep, 'nope', T0 + 7)).toMatchObject({ outcome: 'not_found' });
        expect(await store.takeJobs(ep, 'w2', 5, T0 + 8)).toEqual([]);
        expect((await store.finishJob(ep, r.id, 'w1', COMPLETED, T0 + 9)).ok).toBe(false);
      });

      it('a fetched stop order can be armed again (its answer was lost); only fetched orders of that worker', async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const a = await store.submitJob(newJob(ep, { createdAt: T0 }));
        const b = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        await store.takeJobs(ep, 'w1', 2, T0 + 5);
        await store.cancelJob(ep, a.id, T0 + 6);
        await store.cancelJob(ep, b.id, T0 + 6);
        expect((await store.takeStops('w1', T0 + 7)).sort()).toEqual([a.id, b.id].sort());
        // Another worker's id, an unknown job and a job with no order arm nothing.
        expect(await store.rearmStops('w2', [a.id], T0 + 8)).toEqual([]);
        expect(await store.rearmStops('w1', ['nope'], T0 + 8)).toEqual([]);
        expect(await store.rearmStops('w1', [a.id], T0 + 8)).toEqual([a.id]);
        // Armed once: a second call (the order not fetched since) changes nothing.
        expect(await store.rearmStops('w1', [a.id], T0 + 9)).toEqual([]);
        expect(await store.takeStops('w1', T0 + 10)).toEqual([a.id]);
        expect(await store.takeStops('w1', T0 + 11)).toEqual([]);
        // Armed anew, the order is made anew: kept RETAKE_AFTER_STOP_MS from then, not from the cancel.
        expect(await store.rearmStops('w1', [a.id], T0 + 20_000)).toEqual([a.id]);
        expect(await store.takeStops('w1', T0 + 20_001)).toEqual([a.id]);
        expect(await store.takeStops('w1', T0 + 6 + RETAKE_AFTER_STOP_MS + 1)).toEqual([]);
        // b's order is gone by now (fetched and older than RETAKE_AFTER_STOP_MS); a's is still kept.
        expect(await store.rearmStops('w1', [a.id, b.id], T0 + 6 + RETAKE_AFTER_STOP_MS + 2)).toEqual([a.id]);
      });

      it('retries only FAILED and TIMED_OUT jobs, with the same id and input and cleared results', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        await store.appendChunks(ep, j.id, 'w1', ['{"output":1}'], T0 + 7);
        await store.finishJob(
          ep,
          j.id,
          'w1',
          { status: 'FAILED', outputJson: '"partial"', errorJson: '"boom"', stopPod: false },
          T0 + 6,
        );
        const res = await store.retryJob(ep, j.id, T0 + 7);
        expect(res).toMatchObject({ outcome: 'queued' });
        const after = await store.getJob(ep, j.id);
        expect(after).toMatchObject({
          status: 'IN_QUEUE',
          outputJson: null,
          errorJson: null,
          inputJson: j.inputJson,
          queuedAt: T0 + 7,
          // A retry asked for by the client is not an automatic retry after a lost worker.
          retries: 0,
        });
        expect((await store.readChunks(ep, j.id, 'k', MAX)).chunks).toEqual([]);
        const [again] = await store.takeJobs(ep, 'w2', 1, T0 + 8);
        // The lost-worker bound counts hand-outs since the retry.
        expect(again).toMatchObject({ id: j.id, attempt: 1 });
        await store.finishJob(ep, j.id, 'w2', COMPLETED, T0 + 9);
        expect(await store.retryJob(ep, j.id, T0 + 10)).toMatchObject({ outcome: 'not_retryable' });
      });

      it('does not hand a job back to a worker that has not fetched the stop order of its earlier attempt', async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const short = { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 };
        const j = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 1);
        await store.timeoutJobs(T0 + 5_002, 10);
        expect(await store.retryJob(ep, j.id, T0 + 5_003)).toMatchObject({ outcome: 'queued' });
        const other = await store.submitJob(newJob(ep, { createdAt: T0 + 5_004 }));
        // w1 gets the next job instead, and not the retried one for RETAKE_AFTER_STOP_MS after the order, fetched or
        // not (its old attempt may still be winding down).
        expect((await store.takeJobs(ep, 'w1', 5, T0 + 5_005)).map((x) => x.id)).toEqual([other.id]);
        expect(await store.takeStops('w1', T0 + 5_006)).toEqual([j.id]);
        expect(await store.takeStops('w1', T0 + 5_007)).toEqual([]);
        expect(await store.takeJobs(ep, 'w1', 5, T0 + 5_008)).toEqual([]);
        const unblocked = T0 + 5_002 + RETAKE_AFTER_STOP_MS + 1;
        expect((await store.takeJobs(ep, 'w1', 5, unblocked)).map((x) => x.id)).toEqual([j.id]);

        // A worker that never fetches the order gets the job back RETAKE_AFTER_STOP_MS later; a second order for the
        // same job (the fetched one still kept) starts the wait again.
        const second = unblocked + 5_001;
        await store.timeoutJobs(second, 10);
        expect(await store.retryJob(ep, j.id, second + 1)).toMatchObject({ outcome: 'queued' });
        expect(await store.takeJobs(ep, 'w1', 5, second + 2)).toEqual([]);
        const later = second + RETAKE_AFTER_STOP_MS + 1;
        expect((await store.takeJobs(ep, 'w1', 5, later)).map((x) => x.id)).toEqual([j.id]);

        // Another worker is not held back by w1's order.
        await store.timeoutJobs(later + 5_001, 10);
        expect(await store.retryJob(ep, j.id, later + 5_002)).toMatchObject({ outcome: 'queued' });
        expect((await store.takeJobs(ep, 'w2', 5, later + 5_003)).map((x) => x.id)).toEqual([j.id]);
      });

      it('keeps no stop order for a worker with no record: a worker registering later under that id takes at once', async () => {
        const short = { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 };
        const j = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 }));
        const k = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 + 1 }));
        // w1's record is deleted while it holds j (a worker that exited); w2 never had one.
        await store.upsertWorker(worker('w1', ep));
        await store.takeJobs(ep, 'w1', 1, T0 + 2);
        await store.takeJobs(ep, 'w2', 1, T0 + 3);
        await store.deleteWorker('w1');
        const swept = await store.timeoutJobs(T0 + 5_003, 10);
        expect(swept.map((s) => s.job.id).sort()).toEqual([j.id, k.id].sort());
        expect(await store.retryJob(ep, j.id, T0 + 5_004)).toMatchObject({ outcome: 'queued' });
        expect(await store.retryJob(ep, k.id, T0 + 5_005)).toMatchObject({ outcome: 'queued' });
        // Pod ids are reused: new workers under both ids get no stop order, and are not held back from the jobs
        // for RETAKE_AFTER_STOP_MS.
        await store.upsertWorker(worker('w1', ep, { createdAt: T0 + 5_006, lastSeenAt: T0 + 5_006 }));
        await store.upsertWorker(worker('w2', ep, { createdAt: T0 + 5_006, lastSeenAt: T0 + 5_006 }));
        expect(await store.takeStops('w1', T0 + 5_007)).toEqual([]);
        expect(await store.takeStops('w2', T0 + 5_007)).toEqual([]);
        expect((await store.takeJobs(ep, 'w1', 1, T0 + 5_008)).map((x) => x.id)).toEqual([j.id]);
        expect((await store.takeJobs(ep, 'w2', 1, T0 + 5_008)).map((x) => x.id)).toEqual([k.id]);
      });

      it('purges queued jobs only', async () => {
        const running = await store.submitJob(newJob(ep, { createdAt: T0 }));
        await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        await store.submitJob(newJob(ep, { createdAt: T0 + 2 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        expect(await store.purgeQueue(ep, T0 + 6)).toBe(2);
        expect((await store.getJob(ep, running.id))?.status).toBe('IN_PROGRESS');
        expect(await store.jobCounts(ep)).toMatchObject({ inQueue: 0, inProgress: 1 });
      });

      it("does not count queued jobs past their ttl as removed: they are the sweep's, with their tombstones", async () => {
        const short = { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 10_000 };
        const expired = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 }));
        await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        expect(await store.purgeQueue(ep, T0 + 10_000)).toBe(1);
        expect((await store.expireJobs(T0 + 10_001, 100)).map((s) => s.job.id)).toEqual([expired.id]);
        expect(await store.getTombstone(ep, expired.id)).toBe('TTL_EXPIRED');
      });
    });

    describe('sweeps', () => {
      it('expires jobs by ttl whatever their state, with a tombstone and a stop order for the runner', async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const short = { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 10_000 };
        const queued = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 + 1 }));
        const running = await store.submitJob(newJob(ep, { policy: short, createdAt: T0 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        expect(await store.expireJobs(T0 + 9_999, 100)).toEqual([]);
        const swept = await store.expireJobs(T0 + 10_001, 100);
        expect(swept.map((s) => s.job.id).sort()).toEqual([queued.id, running.id].sort());
        expect(swept.find((s) => s.job.id === running.id)?.stopWorkerId).toBe('w1');
        expect(await store.getJob(ep, running.id)).toBeNull();
        expect(await store.getTombstone(ep, running.id)).toBe('TTL_EXPIRED');
        expect(await store.takeStops('w1', T0 + 10_002)).toEqual([running.id]);
        expect(await store.pruneTombstones(T0 + 20_000)).toBe(2);
        expect(await store.getTombstone(ep, running.id)).toBeNull();
      });

      it('deletes results after retention, never later than the ttl', async () => {
        const j = await store.submitJob(newJob(ep, { retentionMs: 60_000 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 5);
        await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 10);
        expect(await store.expireResults(T0 + 60_009, 100)).toBe(0);
        expect(await store.expireResults(T0 + 60_010, 100)).toBe(1);
        expect(await store.getTombstone(ep, j.id)).toBe('RESULTS_EXPIRED');
      });

      it('times out attempts past their execution timeout and orders the worker to stop', async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const j = await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 } }),
        );
        await store.takeJobs(ep, 'w1', 1, T0 + 100);
        expect(await store.timeoutJobs(T0 + 5_099, 10)).toEqual([]);
        const swept = await store.timeoutJobs(T0 + 5_100, 10);
        expect(swept).toMatchObject([{ job: { id: j.id, status: 'TIMED_OUT' }, stopWorkerId: 'w1' }]);
        expect(await store.takeStops('w1', T0 + 5_101)).toEqual([j.id]);
        expect((await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 5_200)).ok).toBe(false);
        expect(await store.retryJob(ep, j.id, T0 + 5_300)).toMatchObject({ outcome: 'queued' });
      });

      it('does not time out an attempt whose ttl ran out first: the job is the ttl sweep’s, deleted, not TIMED_OUT', async () => {
        // ttl 10 s from T0; taken at T0 + 6 s with a 5 s timeout, so the deadline (T0 + 11 s) comes after the ttl.
        const j = await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 10_000 } }),
        );
        await store.takeJobs(ep, 'w1', 1, T0 + 6_000);
        // No sweep ran in between (a read noticing the deadline times out overdue attempts: engine peekJob).
        expect(await store.timeoutJobs(T0 + 11_000, 10)).toEqual([]);
        expect((await store.getJob(ep, j.id))?.status).toBe('IN_PROGRESS');
        expect(await store.expireJobs(T0 + 11_000, 10)).toMatchObject([{ job: { id: j.id }, stopWorkerId: 'w1' }]);
        expect(await store.getTombstone(ep, j.id)).toBe('TTL_EXPIRED');
      });

      it("refuses a worker's posts once its attempt is past the execution timeout, before any sweep", async () => {
        const j = await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 } }),
        );
        await store.takeJobs(ep, 'w1', 1, T0 + 100);
        expect((await store.recordProgress(ep, j.id, 'w1', '"p"', T0 + 5_099)).ok).toBe(true);
        expect(await store.recordProgress(ep, j.id, 'w1', '"p"', T0 + 5_100)).toMatchObject({
          ok: false,
          reason: 'stale',
        });
        expect(await store.appendChunks(ep, j.id, 'w1', ['{"output":1}'], T0 + 5_100)).toMatchObject({
          ok: false,
          reason: 'stale',
        });
        expect(await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 5_100)).toMatchObject({
          ok: false,
          reason: 'stale',
        });
        expect(await store.timeoutJobs(T0 + 5_200, 10)).toMatchObject([{ job: { id: j.id, status: 'TIMED_OUT' } }]);
      });

      it("a retry starts the lost-worker count afresh; the last attempt's stop order stays for its worker", async () => {
        // Stop orders are kept only for a worker with a record.
        await store.upsertWorker(worker('w1', ep));
        const j = await store.submitJob(
          newJob(ep, { policy: { executionTimeoutMs: 5_000, lowPriority: false, ttlMs: 3_600_000 } }),
        );
        await store.takeJobs(ep, 'w1', 1, T0 + 100);
        await store.timeoutJobs(T0 + 5_100, 10);
        // w1 never fetches its stop order; the job is retried and w1 takes it again (RETAKE_AFTER_STOP_MS later).
        expect(await store.retryJob(ep, j.id, T0 + 5_200)).toMatchObject({ outcome: 'queued' });
        const later = T0 + 5_100 + RETAKE_AFTER_STOP_MS + 1;
        const [again] = await store.takeJobs(ep, 'w1', 1, later);
        expect(again).toMatchObject({ id: j.id, attempt: 1 });
        // The store keeps it (w1 may still run the timed-out attempt); WorkerGateway.stops leaves out jobs w1 holds.
        expect(await store.takeStops('w1', later + 1)).toEqual([j.id]);
        // With two hand-outs allowed, losing w1 now is the first loss: back to the queue, not FAILED.
        const lost = await store.releaseWorkerJobs('w1', later + 700, 2, 'test');
        expect(lost.requeued.map((x) => x.id)).toEqual([j.id]);
        expect(lost.failed).toEqual([]);
      });

      it('gives the jobs of a silent worker back to the queue, then fails them after maxAttempts', async () => {
        const j = await store.submitJob(newJob(ep));
        await store.upsertWorker(worker('w1', ep, { lastSeenAt: T0 }));
        await store.upsertWorker(worker('w2', ep, { lastSeenAt: T0 + 10_000 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 1);
        const sweep = await store.expireWorkerLeases(T0 + 5_000, T0 + 6_000, 2);
        expect(sweep.workerIds).toEqual(['w1']);
        expect(sweep.requeued.map((x) => x.id)).toEqual([j.id]);
        expect(await store.getWorker('w1')).toMatchObject({ state: 'unhealthy', reason: 'lease-expired' });
        expect(await store.jobCounts(ep)).toMatchObject({ inQueue: 1, retried: 1 });
        // The superseded attempt is fenced out.
        expect((await store.finishJob(ep, j.id, 'w1', COMPLETED, T0 + 6_001)).ok).toBe(false);
        // w1 may still be running it (its pings lost, not its process): if it comes back it is told to stop, and
        // its takes pass over the job meanwhile.
        expect(await store.takeJobs(ep, 'w1', 1, T0 + 6_002)).toEqual([]);
        expect(await store.takeStops('w1', T0 + 6_003)).toEqual([j.id]);
        await store.takeJobs(ep, 'w2', 1, T0 + 7_000);
        const second = await store.releaseWorkerJobs('w2', T0 + 8_000, 2, 'test');
        expect(second.failed.map((x) => x.id)).toEqual([j.id]);
        const failed = await store.getJob(ep, j.id);
        expect(failed?.status).toBe('FAILED');
        expect(JSON.parse(failed?.errorJson ?? '""')).toContain('w2');
      });

      it('counts as retries only the requeues: the loss that fails a job is not one, nor is a client retry', async () => {
        await store.upsertWorker(worker('w1', ep, { lastSeenAt: T0 }));
        // Failed on its first loss (one hand-out allowed): never run again, so no retry, whichever path lost it.
        const once = await store.submitJob(newJob(ep, { createdAt: T0 }));
        await store.takeJobs(ep, 'w1', 1, T0 + 1);
        const swept = await store.expireWorkerLeases(T0 + 5_000, T0 + 6_000, 1);
        expect(swept.failed).toEqual([expect.objectContaining({ id: once.id, status: 'FAILED', retries: 0 })]);
        expect(await store.getJob(ep, once.id)).toMatchObject({ status: 'FAILED', retries: 0 });
        const pinged = await store.submitJob(newJob(ep, { createdAt: T0 + 2 }));
        await store.takeJobs(ep, 'w2', 1, T0 + 6_001);
        const lost = await store.releaseWorkerJobs('w2', T0 + 6_002, 1, 'missing from pings', [pinged.id]);
        expect(lost.failed).toEqual([expect.objectContaining({ id: pinged.id, retries: 0 })]);
        expect(await store.jobCounts(ep)).toMatchObject({ failed: 2, retried: 0 });
        expect((await store.listJobs(ep, { limit: 10 })).map((s) => s.retries)).toEqual([0, 0]);
        // Requeued once, then failed on its last attempt: one retry.
        const twice = await store.submitJob(newJob(ep, { createdAt: T0 + 3 }));
        await store.takeJobs(ep, 'w3', 1, T0 + 6_003);
        expect((await store.releaseWorkerJobs('w3', T0 + 6_004, 2, 'lost')).requeued).toEqual([
          expect.objectContaining({ id: twice.id, retries: 1 }),
        ]);
        expect(await store.jobCounts(ep)).toMatchObject({ inQueue: 1, retried: 1 });
        await store.takeJobs(ep, 'w4', 1, T0 + 6_005);
        expect((await store.releaseWorkerJobs('w4', T0 + 6_006, 2, 'lost')).failed).toEqual([
          expect.objectContaining({ id: twice.id, retries: 1 }),
        ]);
        expect(await store.getJob(ep, twice.id)).toMatchObject({ status: 'FAILED', retries: 1 });
        expect(await store.jobCounts(ep)).toMatchObject({ failed: 3, retried: 1 });
        // A client's /retry starts the job again but is not counted in `retries` (nor in `retried`): it keeps its count.
        expect(await store.retryJob(ep, once.id, T0 + 6_007)).toMatchObject({ outcome: 'queued', job: { retries: 0 } });
        expect(await store.retryJob(ep, twice.id, T0 + 6_008)).toMatchObject({
          outcome: 'queued',
          job: { retries: 1 },
        });
        expect(await store.jobCounts(ep)).toMatchObject({ inQueue: 2, failed: 1, retried: 1 });
      });

      it('leaves a managed worker still starting to the supervisor: no lease runs out before its first request', async () => {
        await store.upsertWorker(worker('pulling', ep, { managed: true, state: 'initializing', lastSeenAt: T0 }));
        await store.upsertWorker(worker('outside', ep, { state: 'idle', lastSeenAt: T0 }));
        expect((await store.expireWorkerLeases(T0 + 5_000, T0 + 6_000, 2)).workerIds).toEqual(['outside']);
        expect(await store.getWorker('pulling')).toMatchObject({ state: 'initializing' });
      });

      it("a release that is the server's own doing uses up no attempt; only MAX_REQUEUES requeues fail the job", async () => {
        const j = await store.submitJob(newJob(ep));
        for (let n = 0; n < 4; n++) {
          const [taken] = await store.takeJobs(ep, `w${n}`, 1, T0 + 10 * n + 1);
          expect(taken).toMatchObject({ id: j.id, attempt: 1 });
          const sweep = await store.releaseWorkerJobs(`w${n}`, T0 + 10 * n + 2, null, 'server restarted');
          expect(sweep.failed).toEqual([]);
          expect(sweep.requeued).toEqual([expect.objectContaining({ id: j.id, attempt: 0, retries: n + 1 })]);
        }
        expect(await store.getJob(ep, j.id)).toMatchObject({ status: 'IN_QUEUE', attempt: 0, retries: 4 });
        // But not forever (a job that brings the server down each time): once requeued MAX_REQUEUES times, the next
        // release fails it. That final release is no requeue: `retries` stays MAX_REQUEUES, as the error says.
        for (let n = 4; n < MAX_REQUEUES; n++) {
          await store.takeJobs(ep, `v${n}`, 1, T0 + 50 + n);
          expect((await store.releaseWorkerJobs(`v${n}`, T0 + 60 + n, null, 'server restarted')).failed).toEqual([]);
        }
        expect(await store.getJob(ep, j.id)).toMatchObject({ status: 'IN_QUEUE', retries: MAX_REQUEUES });
        await store.takeJobs(ep, 'last', 1, T0 + 90);
        const last = await store.releaseWorkerJobs('last', T0 + 91, null, 'server restarted');
        expect(last.failed).toEqual([expect.objectContaining({ id: j.id, retries: MAX_REQUEUES })]);
        expect(JSON.parse(last.failed[0]!.errorJson!)).toContain(`requeued ${MAX_REQUEUES} times`);
        expect(await store.getJob(ep, j.id)).toMatchObject({ status: 'FAILED', retries: MAX_REQUEUES });
        await store.retryJob(ep, j.id, T0 + 92);
        expect((await store.getJob(ep, j.id))?.status).toBe('IN_QUEUE');
        // A real loss still counts: with one hand-out allowed, the next lost worker fails it.
        await store.takeJobs(ep, 'w9', 1, T0 + 100);
        expect((await store.releaseWorkerJobs('w9', T0 + 101, 1, 'lease expired')).failed.map((x) => x.id)).toEqual([
          j.id,
        ]);
      });

      it('tells when each worker of an endpoint last finished a job, from a given time on', async () => {
        const [a, b, c] = [
          await store.submitJob(newJob(ep, { createdAt: T0 })),
          await store.submitJob(newJob(ep, { createdAt: T0 + 1 })),
          await store.submitJob(newJob(ep, { createdAt: T0 + 2 })),
        ];
        await store.takeJobs(ep, 'w1', 2, T0 + 3);
        await store.takeJobs(ep, 'w2', 1, T0 + 3);
        expect(await store.lastFinishByWorker(ep, T0)).toEqual({}); // running is not finished
        await store.finishJob(ep, a.id, 'w1', COMPLETED, T0 + 10);
        await store.finishJob(ep, b.id, 'w1', COMPLETED, T0 + 20);
        await store.finishJob(ep, c.id, 'w2', COMPLETED, T0 + 15);
        expect(await store.lastFinishByWorker(ep, T0)).toEqual({ w1: T0 + 20, w2: T0 + 15 });
        expect(await store.lastFinishByWorker(ep, T0 + 16)).toEqual({ w1: T0 + 20 });
        expect(await store.lastFinishByWorker('other-endpoint', T0)).toEqual({});
      });

      it('releases only the named jobs of a worker', async () => {
        const a = await store.submitJob(newJob(ep, { createdAt: T0 }));
        const b = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
        await store.takeJobs(ep, 'w1', 2, T0 + 2);
        expect(await store.runningByWorker(ep)).toEqual({ w1: 2 });
        const sweep = await store.releaseWorkerJobs('w1', T0 + 3, 3, 'missing from pings', [b.id]);
        expect(sweep.requeued.map((x) => x.id)).toEqual([b.id]);
        expect(await store.workerJobIds('w1')).toEqual([a.id]);
      });
    });

    describe('counts and snapshots', () => {
      it('reports queue depth, low-priority jobs and the oldest queued job', async () => {
        await store.submitJob(newJob(ep, { createdAt: T0 + 5 }));
        await store.submitJob(
          newJob(ep, {
            createdAt: T0 + 1,
            policy: { executionTimeoutMs: 60_000, lowPriority: true, ttlMs: 3_600_000 },
          }),
        );
        await store.submitJob(newJob(ep, { createdAt: T0 + 3 }));
        expect(await store.queueSnapshot(ep)).toEqual({
          inQueue: 2,
          inQueueLowPriority: 1,
          inProgress: 0,
          inProgressLowPriority: 0,
          oldestQueuedAt: T0 + 3,
        });
        expect(await store.activeEndpointIds()).toEqual([ep]);
        // Taken in queue order: the low-priority job (the oldest) runs with one normal job.
        await store.takeJobs(ep, 'w1', 2, T0 + 10);
        expect(await store.queueSnapshot(ep)).toMatchObject({
          inQueue: 1,
          inProgress: 2,
          inProgressLowPriority: 1,
        });
      });
    });

    describe('workers', () => {
      it('upserts, touches, finds by key hash and deletes', async () => {
        await store.upsertWorker(worker('w1', ep, { keyHash: 'h1', managed: true }));
        await store.touchWorker('w1', T0 + 100, { state: 'unhealthy', reason: 'crash' });
        expect(await store.getWorker('w1')).toMatchObject({
          lastSeenAt: T0 + 100,
          state: 'unhealthy',
          reason: 'crash',
        });
        await store.touchWorker('w1', T0 + 50);
        expect((await store.getWorker('w1'))?.lastSeenAt).toBe(T0 + 100);
        expect((await store.findWorkerByKeyHash('h1'))?.id).toBe('w1');
        expect((await store.listWorkers(ep)).map((w) => w.id)).toEqual(['w1']);
        await store.deleteWorker('w1');
        expect(await store.getWorker('w1')).toBeNull();
      });

      it('keeps when a worker was retired, and clears it when the worker is taken back', async () => {
        await store.upsertWorker(worker('w1', ep));
        await store.touchWorker('w1', T0 + 100, { retired: true, reason: 'stopPod' });
        expect(await store.getWorker('w1')).toMatchObject({ retired: true, retiredAt: T0 + 100 });
        await store.touchWorker('w1', T0 + 200);
        expect((await store.getWorker('w1'))?.retiredAt).toBe(T0 + 100);
        await store.touchWorker('w1', T0 + 300, { retired: false });
        expect(await store.getWorker('w1')).toMatchObject({ retired: false, retiredAt: null });
      });

      it('marks a worker retired or unhealthy without renewing its lease', async () => {
        await store.upsertWorker(worker('w1', ep, { lastSeenAt: T0 }));
        await store.markWorker('w1', T0 + 100, { retired: true, reason: 'rolling-update' });
        expect(await store.getWorker('w1')).toMatchObject({
          lastSeenAt: T0,
          retired: true,
          retiredAt: T0 + 100,
          reason: 'rolling-update',
        });
        await store.markWorker('w1', T0 + 200, { state: 'unhealthy' });
        expect(await store.getWorker('w1')).toMatchObject({ lastSeenAt: T0, state: 'unhealthy', retiredAt: T0 + 100 });
      });

      it('takes over an abandoned worker id only while the record is as judged, with its stop orders', async () => {
        const other = `${ep}-other`;
        await store.upsertWorker(worker('w1', other, { lastSeenAt: T0 }));
        const held = await store.submitJob(newJob(other, { createdAt: T0 }));
        await store.takeJobs(other, 'w1', 1, T0 + 1);
        const mine = worker('w1', ep, { createdAt: T0 + 9_000, lastSeenAt: T0 + 9_000 });
        // Holding a job: never.
        expect(await store.takeOverWorker(mine, { endpointId: other, lastSeenAt: T0 })).toBe(false);
        expect(await store.cancelJob(other, held.id, T0 + 2)).toMatchObject({ stopWorkerId: 'w1' });
        // Seen since it was judged abandoned (or another taker moved it): no.
        expect(await store.takeOverWorker(mine, { endpointId: other, lastSeenAt: T0 - 1 })).toBe(false);
        expect(await store.takeOverWorker(mine, { endpointId: 'elsewhere', lastSeenAt: T0 })).toBe(false);
        expect((await store.getWorker('w1'))?.endpointId).toBe(other);
        expect(await store.takeOverWorker(mine, { endpointId: other, lastSeenAt: T0 })).toBe(true);
        expect(await store.getWorker('w1')).toMatchObject({ endpointId: ep, lastSeenAt: T0 + 9_000, managed: false });
        // The earlier holder's stop order (another endpoint's job) is gone with it; a second taker loses.
        expect(await store.takeStops('w1', T0 + 9_001)).toEqual([]);
        expect(await store.takeOverWorker(mine, { endpointId: other, lastSeenAt: T0 })).toBe(false);
        // A managed worker's id is never taken over.
        await store.upsertWorker(worker('m1', other, { managed: true, lastSeenAt: T0 }));
        expect(await store.takeOverWorker({ ...mine, id: 'm1' }, { endpointId: other, lastSeenAt: T0 })).toBe(false);
      });
    });

    describe('accounts and resources', () => {
      it('stores users and keys by hash; revocation sticks', async () => {
        await store.createUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0 });
        await store.createApiKey({
          id: 'k1',
          userId: 'u1',
          hash: 'abc',
          prefix: 'wharf_',
          name: 'k',
          scope: 'all',
          endpointIds: [],
          createdAt: T0,
          revokedAt: null,
        });
        expect((await store.findApiKeyByHash('abc'))?.userId).toBe('u1');
        expect(await store.revokeApiKey('u1', 'k1', T0 + 1)).toBe(true);
        expect(await store.revokeApiKey('u1', 'k1', T0 + 2)).toBe(false);
        expect((await store.findApiKeyByHash('abc'))?.revokedAt).toBe(T0 + 1);
        await expect(
          store.createApiKey({
            id: 'k2',
            userId: 'u1',
            hash: 'abc',
            prefix: '',
            name: '',
            scope: 'all',
            endpointIds: [],
            createdAt: T0,
            revokedAt: null,
          }),
        ).rejects.toThrow();
      });

      it('keeps templates and endpoints per user and deletes an endpoint with its jobs', async () => {
        const t = template();
        await store.createTemplate(t);
        // The same name again: a unique violation, which the engine turns into NAME_TAKEN (engine/resource-rules.ts).
        const taken = await store.createTemplate({ ...t, id: 't2' }).catch((e: unknown) => e);
        expect(isUniqueViolation(taken), String(taken)).toBe(true);
        await store.createTemplate({ ...t, id: 't2', name: 'tpl-2' });
        const renamed = await store.updateTemplate({ ...t, id: 't2', name: 'tpl' }).catch((e: unknown) => e);
        expect(isUniqueViolation(renamed), String(renamed)).toBe(true);
        await store.deleteTemplate('u1', 't2');
        expect(await store.getTemplate('u2', 't1')).toBeNull();
        const e = endpoint(ep);
        await store.createEndpoint(e);
        expect(await store.endpointsUsingTemplate('u1', 't1')).toEqual([ep]);
        expect(await store.getEndpoint('u2', ep)).toBeNull();
        expect((await store.getEndpoint(null, ep))?.userId).toBe('u1');
        await store.updateEndpoint({ ...e, workersMax: 7 });
        expect((await store.getEndpoint('u1', ep))?.workersMax).toBe(7);
        // The worker routes' combined read: the endpoint as getEndpoint sees it, the worker by id whatever its
        // endpoint, nothing for another owner.
        await store.upsertWorker(worker('w-own', ep));
        await store.upsertWorker(worker('w-other', 'another-endpoint'));
        const both = await store.getEndpointAndWorker('u1', ep, 'w-own');
        expect(both.endpoint?.workersMax).toBe(7);
        expect(both.worker).toMatchObject({ id: 'w-own', endpointId: ep });
        expect((await store.getEndpointAndWorker(null, ep, 'w-other')).worker?.endpointId).toBe('another-endpoint');
        expect((await store.getEndpointAndWorker('u1', ep, 'w-missing')).worker).toBeNull();
        expect(await store.getEndpointAndWorker('u2', ep, 'w-own')).toEqual({ endpoint: null, worker: null });
        expect(await store.getEndpointAndWorker('u1', 'no-such-endpoint', 'w-own')).toEqual({
          endpoint: null,
          worker: null,
        });
        const j = await store.submitJob(newJob(ep));
        expect(await store.deleteEndpoint('u2', ep)).toBe(false);
        expect(await store.deleteEndpoint('u1', ep)).toBe(true);
        expect(await store.getJob(ep, j.id)).toBeNull();
        expect(await store.listEndpoints('u1')).toEqual([]);
      });

      it('writes a template with its endpoints in one transaction: all of it, or none when one write is refused', async () => {
        const t = template();
        const e = endpoint;
        const refused = (template: TemplateWrite | null, endpoints: EndpointWrite[]) =>
          store.saveTemplateAndEndpoints(template, endpoints).then(
            () => null,
            (error: unknown) => error,
          );
        await store.saveTemplateAndEndpoints({ create: t }, [{ create: e('ep-a') }, { create: e('ep-b') }]);
        expect(await store.endpointsUsingTemplate('u1', 't1')).toEqual(['ep-a', 'ep-b']);
        // A change with the version bumps it makes, the last write refused (an endpoint id that exists, made again):
        // neither the template nor the first bump is written.
        const changed = { ...t, imageName: 'file://y' };
        const last = await refused({ update: changed }, [{ update: e('ep-a', { version: 2 }) }, { create: e('ep-b') }]);
        expect(isUniqueViolation(last), String(last)).toBe(true);
        expect(await store.getTemplate('u1', 't1')).toEqual(t);
        expect((await store.getEndpoint('u1', 'ep-a'))?.version).toBe(1);
        // A template made under a name another holds, with its endpoint: neither is written.
        const taken = await refused({ create: { ...t, id: 't2' } }, [{ create: e('ep-c', { templateId: 't2' }) }]);
        expect(isUniqueViolation(taken), String(taken)).toBe(true);
        expect(await store.getEndpoint('u1', 'ep-c')).toBeNull();
        // Written whole.
        await store.saveTemplateAndEndpoints({ update: changed }, [
          { update: e('ep-a', { version: 2 }) },
          { update: e('ep-b', { version: 2 }) },
        ]);
        expect(await store.getTemplate('u1', 't1')).toEqual(changed);
        expect((await store.listEndpoints('u1')).map((x) => [x.id, x.version])).toEqual([
          ['ep-a', 2],
          ['ep-b', 2],
        ]);
        // Endpoints deleted (with their jobs) with the template they leave.
        const j = await store.submitJob(newJob('ep-b'));
        await store.saveTemplateAndEndpoints({ delete: changed }, [{ delete: e('ep-a') }, { delete: e('ep-b') }]);
        expect(await store.listTemplates('u1')).toEqual([]);
        expect(await store.listEndpoints('u1')).toEqual([]);
        expect(await store.getJob('ep-b', j.id)).toBeNull();
      });
    });

    it('one failing operation does not take concurrent ones down with it', async () => {
      const j = newJob(ep);
      const results = await Promise.allSettled([store.submitJob(j), store.submitJob(j), store.submitJob(newJob(ep))]);
      // The two submissions of one id race (on PostgreSQL over separate pooled connections): either may be the one
      // refused, but exactly one is, and the unrelated third is not.
      expect(
        results
          .slice(0, 2)
          .map((r) => r.status)
          .sort(),
      ).toEqual(['fulfilled', 'rejected']);
      expect(results[2].status).toBe('fulfilled');
      expect((await store.jobCounts(ep)).inQueue).toBe(2);
    });

    managementContract(() => store);
    requestsContract(() => store);
    countsContract(() => store);

    it('migrate is idempotent', async () => {
      await store.migrate();
      await store.ping();
    });
  });
}
