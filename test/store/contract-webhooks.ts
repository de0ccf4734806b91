/**
 * Store contract for webhook deliveries (src/store/types-webhooks.ts): every backend runs these unchanged.
 * The key property: a final transition of a job with a webhook and its delivery row commit together.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import { newJob, worker } from './contract.ts';
import { endpoint } from './records.ts';

const T0 = 1_700_000_000_000;
const HOOK = 'http://127.0.0.1:9/hook';
const DONE = { status: 'COMPLETED', outputJson: '{"ok":1}', errorJson: null, stopPod: false } as const;

export function webhookStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract (webhooks): ${name}`, () => {
    let store: Store;
    const ep = 'ephooks0000001';

    beforeEach(async () => {
      store = await open();
      await store.migrate();
      await store.createUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0 });
      await store.createEndpoint(endpoint(ep));
    });
    afterEach(async () => {
      await store.close();
    });

    const submitTaken = async (webhook: string | null, workerId = 'w1') => {
      const job = await store.submitJob(
        newJob(ep, { webhook, s3ConfigSealed: '{"accessSecret":"s3cr3t"}', createdAt: T0 }),
      );
      await store.upsertWorker(worker(workerId, ep));
      await store.takeJobs(ep, workerId, 1, T0 + 10);
      return job;
    };

    it('finishJob enqueues one pending delivery with the job as it finished, without input or s3Config', async () => {
      const job = await submitTaken(HOOK);
      await store.finishJob(ep, job.id, 'w1', DONE, T0 + 100);
      const [d, ...rest] = await store.listWebhookDeliveries(ep, job.id);
      expect(rest).toEqual([]);
      expect(d).toMatchObject({
        jobId: job.id,
        endpointId: ep,
        userId: 'u1',
        url: HOOK,
        state: 'pending',
        attempts: 0,
        nextAttemptAt: T0 + 100,
        createdAt: T0 + 100,
        finishedAt: null,
        attemptLog: [],
      });
      expect(d!.job).toMatchObject({ id: job.id, status: 'COMPLETED', outputJson: '{"ok":1}', completedAt: T0 + 100 });
      expect(JSON.stringify(d!.job)).not.toContain('s3cr3t');
      expect(d!.job.inputJson).toBe('null');
      // A refused (stale) second result adds nothing.
      await store.finishJob(ep, job.id, 'w1', DONE, T0 + 200);
      expect(await store.listWebhookDeliveries(ep, job.id)).toHaveLength(1);
    });

    it('jobs without a webhook, progress and requeues enqueue nothing', async () => {
      const plain = await submitTaken(null);
      await store.recordProgress(ep, plain.id, 'w1', '"half"', T0 + 50);
      await store.finishJob(ep, plain.id, 'w1', DONE, T0 + 100);
      expect(await store.listWebhookDeliveries(ep, plain.id)).toEqual([]);
      const hooked = await submitTaken(HOOK, 'w2');
      const sweep = await store.releaseWorkerJobs('w2', T0 + 100, 3, 'lost');
      expect(sweep.requeued.map((j) => j.id)).toEqual([hooked.id]);
      expect(await store.listWebhookDeliveries(ep, hooked.id)).toEqual([]);
    });

    it('cancel, timeout and a lost worker past maxAttempts each enqueue', async () => {
      const queued = await store.submitJob(newJob(ep, { webhook: HOOK }));
      await store.cancelJob(ep, queued.id, T0 + 50);
      await store.cancelJob(ep, queued.id, T0 + 60); // already final: no second delivery
      const timed = await submitTaken(HOOK, 'w1');
      await store.timeoutJobs(T0 + 10 + 60_000, 10);
      const lost = await submitTaken(HOOK, 'w2');
      const sweep = await store.releaseWorkerJobs('w2', T0 + 100, 1, 'lost');
      expect(sweep.failed.map((j) => j.id)).toEqual([lost.id]);
      const lease = await submitTaken(HOOK, 'w3');
      await store.expireWorkerLeases(T0 + 30_000, T0 + 30_000, 1); // before its execution timeout

      const statuses = async (id: string) => (await store.listWebhookDeliveries(ep, id)).map((d) => d.job.status);
      expect(await statuses(queued.id)).toEqual(['CANCELLED']);
      expect(await statuses(timed.id)).toEqual(['TIMED_OUT']);
      expect(await statuses(lost.id)).toEqual(['FAILED']);
      expect(await statuses(lease.id)).toEqual(['FAILED']);
    });

    it('a lost worker leaves a job past its ttl to the ttl sweep: not FAILED, no delivery', async () => {
      const ttlOver = T0 + 3_600_000; // newJob's ttl
      const released = await submitTaken(HOOK, 'w1');
      expect(await store.releaseWorkerJobs('w1', ttlOver, 1, 'lost')).toMatchObject({ requeued: [], failed: [] });
      const leased = await submitTaken(HOOK, 'w2');
      expect(await store.expireWorkerLeases(ttlOver, ttlOver, 1)).toMatchObject({ requeued: [], failed: [] });
      for (const id of [released.id, leased.id]) expect(await store.listWebhookDeliveries(ep, id)).toEqual([]);
      const swept = await store.expireJobs(ttlOver, 10);
      expect(swept.map((s) => [s.job.status, s.stopWorkerId]).sort()).toEqual([
        ['IN_PROGRESS', 'w1'],
        ['IN_PROGRESS', 'w2'],
      ]);
      for (const id of [released.id, leased.id]) expect(await store.listWebhookDeliveries(ep, id)).toEqual([]);
    });

    it('a lost worker leaves a job past its execution timeout to the timeout sweep: TIMED_OUT, not FAILED or requeued', async () => {
      const overdue = T0 + 10 + 60_000; // taken at T0 + 10, newJob's executionTimeout
      const released = await submitTaken(HOOK, 'w1'); // attempts left: would be requeued
      expect(await store.releaseWorkerJobs('w1', overdue, 3, 'lost')).toMatchObject({ requeued: [], failed: [] });
      const pinged = await submitTaken(HOOK, 'w2'); // a ping without the job, on its last attempt
      expect(await store.releaseWorkerJobs('w2', overdue, 1, 'missing', [pinged.id])).toMatchObject({
        requeued: [],
        failed: [],
      });
      const leased = await submitTaken(HOOK, 'w3');
      expect(await store.expireWorkerLeases(overdue, overdue, 1)).toMatchObject({ requeued: [], failed: [] });
      const ids = [released.id, pinged.id, leased.id];
      for (const id of ids) expect(await store.listWebhookDeliveries(ep, id)).toEqual([]);
      const swept = await store.timeoutJobs(overdue, 10);
      expect(swept.map((s) => [s.job.id, s.job.status, s.stopWorkerId]).sort()).toEqual(
        [
          [released.id, 'TIMED_OUT', 'w1'],
          [pinged.id, 'TIMED_OUT', 'w2'],
          [leased.id, 'TIMED_OUT', 'w3'],
        ].sort(),
      );
      for (const id of ids) {
        expect((await store.getJob(ep, id))?.status).toBe('TIMED_OUT');
        expect((await store.listWebhookDeliveries(ep, id)).map((d) => d.job.status)).toEqual(['TIMED_OUT']);
      }
      // One moment before the deadline a lost worker's job is still requeued as before.
      const early = await submitTaken(HOOK, 'w4');
      const sweep = await store.releaseWorkerJobs('w4', overdue - 1, 3, 'lost');
      expect(sweep.requeued.map((j) => j.id)).toEqual([early.id]);
    });

    it('a cancel of a job past its ttl is refused as expired: not CANCELLED, no delivery, left to the ttl sweep', async () => {
      const ttlOver = T0 + 3_600_000; // newJob's ttl
      const running = await submitTaken(HOOK, 'w1');
      const queued = await store.submitJob(newJob(ep, { webhook: HOOK, createdAt: T0 }));
      for (const id of [running.id, queued.id]) {
        expect(await store.cancelJob(ep, id, ttlOver)).toEqual({ outcome: 'gone', reason: 'TTL_EXPIRED' });
        expect(await store.listWebhookDeliveries(ep, id)).toEqual([]);
      }
      expect((await store.getJob(ep, running.id))?.status).toBe('IN_PROGRESS');
      expect((await store.getJob(ep, queued.id))?.status).toBe('IN_QUEUE');
      expect(await store.takeStops('w1', ttlOver)).toEqual([]);
      // One moment before, the cancel is as before.
      expect(await store.cancelJob(ep, queued.id, ttlOver - 1)).toMatchObject({ outcome: 'cancelled' });
      const swept = await store.expireJobs(ttlOver, 10);
      expect(swept.map((s) => [s.job.id, s.stopWorkerId]).sort()).toEqual(
        [
          [running.id, 'w1'],
          [queued.id, null],
        ].sort(),
      );
      expect(await store.listWebhookDeliveries(ep, running.id)).toEqual([]);
    });

    it('a cancel past the execution deadline is refused as overdue: not CANCELLED, no delivery; the timeout follows', async () => {
      const running = await submitTaken(HOOK, 'w1');
      const deadline = T0 + 10 + 60_000; // taken at T0 + 10, newJob's executionTimeout
      expect(await store.cancelJob(ep, running.id, deadline)).toEqual({ outcome: 'overdue' });
      expect((await store.getJob(ep, running.id))?.status).toBe('IN_PROGRESS');
      expect(await store.listWebhookDeliveries(ep, running.id)).toEqual([]);
      expect((await store.timeoutJobs(deadline, 10)).map((s) => s.job.id)).toEqual([running.id]);
      const statuses = (await store.listWebhookDeliveries(ep, running.id)).map((d) => d.job.status);
      expect(statuses).toEqual(['TIMED_OUT']);
      // One moment before, the cancel is as before.
      const other = await submitTaken(HOOK, 'w2');
      expect(await store.cancelJob(ep, other.id, deadline - 1)).toMatchObject({ outcome: 'cancelled' });
    });

    it('a cancel or retry of a finished job past its result retention or ttl is refused as gone, changing nothing', async () => {
      const failed = { status: 'FAILED', outputJson: null, errorJson: '"boom"', stopPod: false } as const;
      const early = await submitTaken(null, 'w1');
      await store.finishJob(ep, early.id, 'w1', failed, T0 + 100);
      const kept = T0 + 100 + 1_800_000; // newJob's retention
      expect(await store.retryJob(ep, early.id, kept)).toEqual({ outcome: 'gone', reason: 'RESULTS_EXPIRED' });
      expect(await store.cancelJob(ep, early.id, kept)).toEqual({ outcome: 'gone', reason: 'RESULTS_EXPIRED' });
      expect((await store.getJob(ep, early.id))?.status).toBe('FAILED');
      // Finished late in its ttl: the ttl ends its results.
      const policy = { executionTimeoutMs: 3_600_000, lowPriority: false, ttlMs: 3_600_000 };
      const late = await store.submitJob(newJob(ep, { policy, createdAt: T0 }));
      await store.upsertWorker(worker('w2', ep));
      await store.takeJobs(ep, 'w2', 1, T0 + 10);
      await store.finishJob(ep, late.id, 'w2', failed, T0 + 3_000_000);
      const ttlOver = T0 + 3_600_000; // newJob's ttl
      expect(await store.retryJob(ep, late.id, ttlOver)).toEqual({ outcome: 'gone', reason: 'TTL_EXPIRED' });
      expect((await store.getJob(ep, late.id))?.status).toBe('FAILED');
      // One moment before, the retry is as before.
      expect(await store.retryJob(ep, late.id, ttlOver - 1)).toMatchObject({ outcome: 'queued' });
    });

    it('a ttl set on a job already gone does not revive it: refused as gone, the ttl unchanged', async () => {
      const ttlOver = T0 + 3_600_000; // newJob's ttl
      const done = await submitTaken(null, 'w1');
      await store.finishJob(ep, done.id, 'w1', DONE, T0 + 100);
      const queued = await store.submitJob(newJob(ep, { createdAt: T0 }));
      expect(await store.setJobTtl(ep, queued.id, 7_200_000, ttlOver)).toEqual({
        outcome: 'gone',
        reason: 'TTL_EXPIRED',
      });
      expect((await store.getJob(ep, queued.id))?.expiresAt).toBe(ttlOver);
      const kept = T0 + 100 + 1_800_000; // newJob's retention
      expect(await store.setJobTtl(ep, done.id, 7_200_000, kept)).toEqual({
        outcome: 'gone',
        reason: 'RESULTS_EXPIRED',
      });
      expect((await store.getJob(ep, done.id))?.expiresAt).toBe(ttlOver);
      // One moment before, the ttl is set as before.
      expect(await store.setJobTtl(ep, queued.id, 7_200_000, ttlOver - 1)).toMatchObject({
        outcome: 'set',
        job: { id: queued.id, expiresAt: T0 + 7_200_000 },
      });
      expect((await store.getJob(ep, queued.id))?.expiresAt).toBe(T0 + 7_200_000);
      expect(await store.setJobTtl(ep, 'nope', 7_200_000, T0)).toEqual({ outcome: 'not_found' });
    });

    it('claims due deliveries under a lease; records attempts fenced by number; prunes finished ones', async () => {
      const job = await submitTaken(HOOK);
      await store.finishJob(ep, job.id, 'w1', DONE, T0 + 100);
      expect(await store.claimWebhookDeliveries(T0 + 99, 10, 1000)).toEqual([]);
      const [d] = await store.claimWebhookDeliveries(T0 + 100, 10, 1000);
      expect(d?.jobId).toBe(job.id);
      // Claimed: not handed out again until the lease lapses.
      expect(await store.claimWebhookDeliveries(T0 + 500, 10, 1000)).toEqual([]);
      expect(await store.claimWebhookDeliveries(T0 + 1100, 10, 1000)).toHaveLength(1);

      const first = { attempt: 1, at: T0 + 1100, durationMs: 5, statusCode: 500, error: 'answered 500' };
      expect(await store.recordWebhookAttempt(d!.id, first, { state: 'pending', nextAttemptAt: T0 + 2000 })).toBe(true);
      expect(await store.recordWebhookAttempt(d!.id, first, { state: 'pending', nextAttemptAt: T0 + 2000 })).toBe(
        false,
      );
      const [again] = await store.claimWebhookDeliveries(T0 + 2000, 10, 1000);
      expect(again?.attempts).toBe(1);
      await store.releaseWebhookDelivery(d!.id, T0 + 2000);
      expect(await store.claimWebhookDeliveries(T0 + 2000, 10, 1000)).toHaveLength(1);
      const second = { attempt: 2, at: T0 + 2000, durationMs: 7, statusCode: 200, error: null };
      expect(await store.recordWebhookAttempt(d!.id, second, { state: 'delivered', nextAttemptAt: null })).toBe(true);
      expect(await store.claimWebhookDeliveries(T0 + 99_000, 10, 1000)).toEqual([]);

      const [log] = await store.listWebhookDeliveries(ep, job.id);
      expect(log).toMatchObject({ state: 'delivered', attempts: 2, finishedAt: T0 + 2007, nextAttemptAt: null });
      expect(log!.attemptLog).toEqual([first, second]);
      expect(await store.pruneWebhookDeliveries(T0 + 2007, 10)).toBe(0);
      expect(await store.pruneWebhookDeliveries(T0 + 2008, 10)).toBe(1);
      expect(await store.listWebhookDeliveries(ep, job.id)).toEqual([]);
    });

    it("a claim can skip some owners' deliveries: the others' are claimed, oldest first; the skipped stay due", async () => {
      await store.createUser({ id: 'u2', name: 'b', isAdmin: false, createdAt: T0 });
      const ep2 = 'ephooks0000002';
      await store.createEndpoint(endpoint(ep2, { userId: 'u2' }));
      const finish = async (endpointId: string, workerId: string, at: number) => {
        const job = await store.submitJob(newJob(endpointId, { webhook: HOOK, createdAt: T0 }));
        await store.upsertWorker(worker(workerId, endpointId));
        await store.takeJobs(endpointId, workerId, 1, T0 + 10);
        await store.finishJob(endpointId, job.id, workerId, DONE, at);
        return job.id;
      };
      const first = await finish(ep, 'w1', T0 + 100);
      const second = await finish(ep, 'w2', T0 + 110);
      const other = await finish(ep2, 'w3', T0 + 120);
      const otherLater = await finish(ep2, 'w4', T0 + 130);

      const skipping = await store.claimWebhookDeliveries(T0 + 200, 1, 1000, ['u1']);
      expect(skipping.map((d) => d.jobId)).toEqual([other]);
      expect(await store.claimWebhookDeliveries(T0 + 200, 10, 1000, ['u1', 'u2'])).toEqual([]);
      expect(await store.claimWebhookDeliveries(T0 + 200, 10, 1000, ['nobody'])).toHaveLength(3);
      const all = await store.claimWebhookDeliveries(T0 + 1300, 10, 1000, []);
      expect(all.map((d) => d.jobId).sort()).toEqual([first, second, other, otherLater].sort());
    });

    it('sets the webhook secret as given, only over the one it replaces when asked, other user fields always kept', async () => {
      expect(await store.setWebhookSecret('nobody', 'whsec_x', null)).toBeNull();
      // Replacing none: set when the user has none yet, and not over one another node set first.
      expect(await store.setWebhookSecret('u1', 'whsec_a', null)).toBe('whsec_a');
      expect(await store.setWebhookSecret('u1', 'whsec_b', null)).toBe('whsec_a');
      // Replacing a given one (a plain secret sealed on first use): not over one a rotation set in between.
      expect(await store.setWebhookSecret('u1', 'sealed:v1:b', 'whsec_x')).toBe('whsec_a');
      expect(await store.setWebhookSecret('u1', 'sealed:v1:b', 'whsec_a')).toBe('sealed:v1:b');
      // Unconditional (a rotation).
      expect(await store.setWebhookSecret('u1', 'whsec_c')).toBe('whsec_c');
      expect(await store.getUser('u1')).toEqual({
        id: 'u1',
        name: 'a',
        isAdmin: false,
        createdAt: T0,
        webhookSecret: 'whsec_c',
      });
    });
  });
}
