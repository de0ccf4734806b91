/**
 * Store contract for the observability reads (store/types-requests.ts): the newest-first job list behind
 * /v2/{endpointId}/requests and the schema version behind /readyz. Run inside storeContract, so every backend gets it.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import { newJob } from './contract.ts';

const T0 = 1_700_000_000_000;
const ep = 'ep0000000000001';

export function requestsContract(get: () => Store): void {
  describe('listJobs and schemaVersion', () => {
    it('lists an endpoint’s jobs newest first, with state, worker, error and retries, never another endpoint’s', async () => {
      const store = get();
      const a = await store.submitJob(newJob(ep, { createdAt: T0 }));
      const b = await store.submitJob(newJob(ep, { createdAt: T0 + 1 }));
      const c = await store.submitJob(newJob(ep, { createdAt: T0 + 2 }));
      await store.submitJob(newJob('ep-other', { createdAt: T0 + 3 }));
      await store.takeJobs(ep, 'w1', 1, T0 + 10); // takes a (FIFO)
      await store.finishJob(
        ep,
        a.id,
        'w1',
        { status: 'FAILED', outputJson: null, errorJson: '"boom"', stopPod: false },
        T0 + 20,
      );
      const list = await store.listJobs(ep, { limit: 10 });
      expect(list.map((j) => j.id)).toEqual([c.id, b.id, a.id]);
      expect(list[2]).toMatchObject({
        id: a.id,
        status: 'FAILED',
        createdAt: T0,
        queuedAt: T0,
        startedAt: T0 + 10,
        completedAt: T0 + 20,
        workerId: 'w1',
        errorJson: '"boom"',
        retries: 0,
      });
      expect(list[0]).toMatchObject({ status: 'IN_QUEUE', startedAt: null, completedAt: null, workerId: null });
      expect(await store.listJobs('ep-none', { limit: 10 })).toEqual([]);
    });

    it('pages with a cursor: no job twice, none skipped, ties on createdAt broken by id', async () => {
      const store = get();
      const ids: string[] = [];
      // Five jobs share a timestamp: the cursor must not lose any of them at a page boundary.
      for (let i = 0; i < 12; i++) {
        ids.push((await store.submitJob(newJob(ep, { createdAt: T0 + Math.floor(i / 5) }))).id);
      }
      const seen: string[] = [];
      let before: { createdAt: number; id: string } | null = null;
      for (let page = 0; page < 10; page++) {
        const got = await store.listJobs(ep, { limit: 5, before });
        seen.push(...got.map((j) => j.id));
        if (got.length < 5) break;
        const last = got[got.length - 1]!;
        before = { createdAt: last.createdAt, id: last.id };
      }
      expect(seen).toHaveLength(12);
      expect(new Set(seen).size).toBe(12);
      expect(new Set(seen)).toEqual(new Set(ids));
      const created = seen.map((id) => Math.floor(ids.indexOf(id) / 5));
      expect(created).toEqual([...created].sort((x, y) => y - x));
    });

    it('reports a current schema after migrate', async () => {
      const v = await get().schemaVersion();
      expect(v.current).toBeGreaterThan(0);
      expect(v.current).toBe(v.latest);
    });
  });
}
