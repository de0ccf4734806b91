/**
 * Store contract for the aggregate reads behind /health, the autoscaler and metrics (jobCounts, queueSnapshot,
 * activeEndpointIds). The stores keep them in counters rather than counting the jobs table; these tests drive every
 * verb that adds, removes or moves a job and compare the reads, after each step, with the same aggregates computed
 * from the jobs themselves. Run inside storeContract, so every backend gets it.
 */
import { describe, expect, it } from 'vitest';
import type { JobPolicy } from '../../src/domain/index.ts';
import type { JobCounts, QueueSnapshot, Store } from '../../src/store/index.ts';
import { newJob, worker } from './contract.ts';
import { endpoint } from './records.ts';

const T0 = 1_700_000_000_000;
const A = 'ep0000000000001';
const B = 'ep0000000000002';
const NORMAL: JobPolicy = { executionTimeoutMs: 60_000, lowPriority: false, ttlMs: 3_600_000 };
const LOW: JobPolicy = { ...NORMAL, lowPriority: true };
const SHORT_TTL: JobPolicy = { ...NORMAL, ttlMs: 10_000 };
const DONE = { status: 'COMPLETED', outputJson: '1', errorJson: null, stopPod: false } as const;
const FAILED = { status: 'FAILED', outputJson: null, errorJson: '"boom"', stopPod: false } as const;

interface Expected {
  counts: JobCounts;
  snapshot: QueueSnapshot;
}

/** The aggregates computed job by job, from the list and each job's policy. */
async function fromJobs(store: Store, endpointId: string): Promise<Expected> {
  const counts: JobCounts = {
    inQueue: 0,
    inProgress: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    timedOut: 0,
    retried: 0,
  };
  const snapshot: QueueSnapshot = {
    inQueue: 0,
    inQueueLowPriority: 0,
    inProgress: 0,
    inProgressLowPriority: 0,
    oldestQueuedAt: null,
  };
  const key = {
    IN_QUEUE: 'inQueue',
    IN_PROGRESS: 'inProgress',
    COMPLETED: 'completed',
    FAILED: 'failed',
    CANCELLED: 'cancelled',
    TIMED_OUT: 'timedOut',
  } as const;
  for (const s of await store.listJobs(endpointId, { limit: 1000 })) {
    const job = (await store.getJob(endpointId, s.id))!;
    counts[key[job.status]]++;
    if (job.retries > 0) counts.retried++;
    if (job.status === 'IN_PROGRESS') snapshot.inProgress++;
    if (job.status === 'IN_PROGRESS' && job.policy.lowPriority) snapshot.inProgressLowPriority++;
    if (job.status !== 'IN_QUEUE') continue;
    if (job.policy.lowPriority) {
      snapshot.inQueueLowPriority++;
    } else {
      snapshot.inQueue++;
      snapshot.oldestQueuedAt = Math.min(snapshot.oldestQueuedAt ?? Infinity, job.queuedAt);
    }
  }
  return { counts, snapshot };
}

/** The reads agree exactly with the jobs (this store only ever holds jobs of endpoints A and B). */
async function expectExact(store: Store): Promise<Record<string, Expected>> {
  const expected: Record<string, Expected> = {};
  const active: string[] = [];
  for (const e of [A, B]) {
    const x = await fromJobs(store, e);
    expected[e] = x;
    expect(await store.jobCounts(e)).toEqual(x.counts);
    expect(await store.queueSnapshot(e)).toEqual(x.snapshot);
    if (x.counts.inQueue + x.counts.inProgress > 0) active.push(e);
  }
  expect((await store.activeEndpointIds()).sort()).toEqual(active);
  return expected;
}

export function countsContract(get: () => Store): void {
  describe('counts stay exact through every transition', () => {
    it('submit, take, progress, finish, cancel, retry, release, return, timeout, ttl, retention, purge', async () => {
      const store = get();
      const submit = (endpointId: string, createdAt: number, policy = NORMAL) =>
        store.submitJob(newJob(endpointId, { createdAt, policy }));
      await store.upsertWorker(worker('w1', A, { lastSeenAt: T0 }));
      const low1 = await submit(A, T0, LOW);
      const a1 = await submit(A, T0 + 1);
      const a2 = await submit(A, T0 + 2);
      const a3 = await submit(A, T0 + 3);
      await submit(A, T0 + 4);
      await submit(A, T0 + 5, LOW);
      await submit(B, T0 + 7);
      await submit(B, T0 + 8, LOW);
      // A failed insert counts nothing.
      await expect(store.submitJob(newJob(A, { id: a1.id, createdAt: T0 + 9 }))).rejects.toThrow();
      let x = await expectExact(store);
      expect(x[A]!.snapshot).toEqual({
        inQueue: 4,
        inQueueLowPriority: 2,
        inProgress: 0,
        inProgressLowPriority: 0,
        oldestQueuedAt: T0 + 1,
      });
      expect(x[B]!.counts).toMatchObject({ inQueue: 2, inProgress: 0 });

      // FIFO over both priorities: the low-priority job and a1.
      expect((await store.takeJobs(A, 'w1', 2, T0 + 10)).map((j) => j.id)).toEqual([low1.id, a1.id]);
      x = await expectExact(store);
      expect(x[A]!.snapshot).toEqual({
        inQueue: 3,
        inQueueLowPriority: 1,
        inProgress: 2,
        inProgressLowPriority: 1,
        oldestQueuedAt: T0 + 2,
      });

      // Writes that change no status count nothing.
      expect((await store.recordProgress(A, a1.id, 'w1', '{"pct":5}', T0 + 11)).ok).toBe(true);
      expect(await store.setJobTtl(A, a2.id, 7_200_000, T0 + 11)).toMatchObject({ outcome: 'set' });
      await store.appendChunks(A, a1.id, 'w1', ['{"output":1}'], T0 + 11);
      await expectExact(store);

      expect((await store.finishJob(A, a1.id, 'w1', DONE, T0 + 12)).ok).toBe(true);
      expect((await store.finishJob(A, low1.id, 'w1', FAILED, T0 + 12)).ok).toBe(true);
      // A refused post (stale) counts nothing.
      expect((await store.finishJob(A, a1.id, 'w1', FAILED, T0 + 13)).ok).toBe(false);
      await expectExact(store);

      // Cancel a queued job and a running one.
      expect(await store.cancelJob(A, a2.id, T0 + 14)).toMatchObject({ outcome: 'cancelled' });
      expect((await store.takeJobs(A, 'w1', 1, T0 + 15)).map((j) => j.id)).toEqual([a3.id]);
      expect(await store.cancelJob(A, a3.id, T0 + 16)).toMatchObject({ outcome: 'cancelled' });
      expect(await store.cancelJob(A, a3.id, T0 + 16)).toMatchObject({ outcome: 'final' });
      await expectExact(store);

      // A client retry puts a FAILED job back in the queue.
      expect(await store.retryJob(A, low1.id, T0 + 17)).toMatchObject({ outcome: 'queued' });
      await expectExact(store);

      // Lost workers: back to the queue as retried, then failed after maxAttempts; undelivered jobs go back as not.
      await store.takeJobs(A, 'w1', 2, T0 + 18);
      expect((await store.releaseWorkerJobs('w1', T0 + 19, 3, 'test')).requeued).toHaveLength(2);
      x = await expectExact(store);
      expect(x[A]!.counts.retried).toBe(2);
      await store.takeJobs(A, 'w1', 1, T0 + 20);
      expect((await store.releaseWorkerJobs('w1', T0 + 21, 1, 'test')).failed).toHaveLength(1);
      await expectExact(store);
      const [undelivered] = await store.takeJobs(A, 'w2', 1, T0 + 22);
      expect(await store.returnUndelivered('w2', [undelivered!.id])).toHaveLength(1);
      await expectExact(store);
      await store.takeJobs(A, 'w1', 1, T0 + 23);
      expect((await store.expireWorkerLeases(T0 + 1_000, T0 + 24, 3)).requeued).toHaveLength(1);
      await expectExact(store);

      // Execution timeout, then a client retry of the timed-out job.
      const [b1] = await store.takeJobs(B, 'w3', 1, T0 + 25);
      expect(await store.timeoutJobs(T0 + 25 + 60_000, 10)).toHaveLength(1);
      await expectExact(store);
      expect(await store.retryJob(B, b1!.id, T0 + 60_026)).toMatchObject({ outcome: 'queued' });
      await expectExact(store);

      // Past its ttl a queued job is never handed out but still counts until the sweep deletes it (as it always has).
      const short = await submit(A, T0 + 26, SHORT_TTL);
      const taken = await store.takeJobs(A, 'w4', 100, T0 + 20_000);
      expect(taken.length).toBeGreaterThan(0);
      expect(taken.map((j) => j.id)).not.toContain(short.id);
      x = await expectExact(store);
      expect(x[A]!.snapshot).toEqual({
        inQueue: 1,
        inQueueLowPriority: 0,
        inProgress: taken.length,
        inProgressLowPriority: taken.filter((j) => j.policy.lowPriority).length,
        oldestQueuedAt: T0 + 26,
      });
      expect((await store.expireJobs(T0 + 20_000, 100)).map((s) => s.job.id)).toEqual([short.id]);
      x = await expectExact(store);
      expect(x[A]!.snapshot).toMatchObject({ inQueue: 0, oldestQueuedAt: null });

      // Retention deletes final jobs; a purge deletes the queued ones.
      expect(await store.expireResults(T0 + 1_900_000, 100)).toBeGreaterThan(0);
      await expectExact(store);
      await submit(A, T0 + 1_900_001);
      await submit(A, T0 + 1_900_002, LOW);
      expect(await store.purgeQueue(A, T0 + 1_900_003)).toBeGreaterThan(0);
      x = await expectExact(store);
      expect(x[A]!.snapshot).toMatchObject({ inQueue: 0, inQueueLowPriority: 0, oldestQueuedAt: null });
    });

    it('deleting an endpoint takes its counts with it; the others keep theirs', async () => {
      const store = get();
      await store.createEndpoint(endpoint(B));
      for (let i = 0; i < 3; i++) await store.submitJob(newJob(B, { createdAt: T0 + i }));
      await store.submitJob(newJob(A, { createdAt: T0 + 5 }));
      await store.takeJobs(B, 'w1', 1, T0 + 10);
      await store.upsertWorker(worker('w1', B));
      expect(await store.deleteEndpoint('u1', B)).toBe(true);
      const x = await expectExact(store);
      expect(x[B]!.counts).toEqual({
        inQueue: 0,
        inProgress: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        timedOut: 0,
        retried: 0,
      });
      expect(await store.activeEndpointIds()).toEqual([A]);
      // A new endpoint under the same id starts from zero.
      await store.submitJob(newJob(B, { createdAt: T0 + 20 }));
      expect((await expectExact(store))[B]!.counts.inQueue).toBe(1);
    });

    it('stays exact under concurrent submits, takes and results', async () => {
      const store = get();
      const policies = [NORMAL, LOW];
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          store.submitJob(newJob(i % 3 === 0 ? B : A, { createdAt: T0 + i, policy: policies[i % 2]! })),
        ),
      );
      await expectExact(store);
      const taken = await Promise.all(
        Array.from({ length: 8 }, (_, w) => store.takeJobs(w % 2 === 0 ? A : B, `w${w}`, 4, T0 + 100)),
      );
      await Promise.all([
        ...taken.flatMap((jobs, w) =>
          jobs.map((j, k) => store.finishJob(j.endpointId, j.id, `w${w}`, k % 2 === 0 ? DONE : FAILED, T0 + 101)),
        ),
        ...Array.from({ length: 10 }, (_, i) => store.submitJob(newJob(A, { createdAt: T0 + 200 + i }))),
        store.releaseWorkerJobs('w7', T0 + 102, 3, 'test'),
        store.purgeQueue(B, T0 + 103),
      ]);
      await expectExact(store);
    });
  });
}
