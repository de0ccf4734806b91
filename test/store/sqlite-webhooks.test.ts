import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { webhookStoreContract } from './contract-webhooks.ts';
import { writePendingDeliveries } from './records.ts';

const dir = mkdtempSync(join(tmpdir(), 'wharf-store-hooks-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

webhookStoreContract('sqlite', async () => openSqliteStore({ path: join(dir, `hooks-${n++}.db`) }));

// SQLite-only: the claim that skips owners reads the owner index owner by owner (src/store/sqlite/webhooks.ts), so
// that neither a skipped owner's backlog nor another's is read whole on the event loop (measured, not asserted here:
// 400,000 due deliveries took 250 ms to skip by a filter and 95 ms to sort in one range, against 1–2 ms now).
describe('sqlite webhook claims that skip owners', () => {
  it('take the oldest due of every other owner and of none, up to the limit, and nothing not yet due', async () => {
    // A large backlog of the skipped owner, older than everything else; three other owners and an ownerless one.
    const others: Array<[string, string | null, number]> = [
      ['a1', 'user_a', 7000],
      ['a2', 'user_a', 7003],
      ['b1', 'user_b', 7001],
      ['n1', null, 7002],
      ['c1', 'user_c', 7004],
      ['later', 'user_a', 9999], // not due at 8000
    ];
    // Each claim on a fresh copy: a claim moves what it took to the end of its lease.
    let copies = 0;
    const ids = async (limit: number, skip: string[]) => {
      const path = join(dir, `owners-${copies++}.db`);
      const store = openSqliteStore({ path });
      await store.migrate();
      const backlog = Array.from({ length: 2000 }, (_, i) => [`busy${i}`, 'user_busy', 1000 + i] as const);
      writePendingDeliveries(path, [...backlog, ...others]);
      try {
        return (await store.claimWebhookDeliveries(8000, limit, 1000, skip)).map((d) => d.id).sort();
      } finally {
        await store.close();
      }
    };
    expect(await ids(10, ['user_busy'])).toEqual(['a1', 'a2', 'b1', 'c1', 'n1']);
    expect(await ids(3, ['user_busy'])).toEqual(['a1', 'b1', 'n1']); // the three oldest
    expect(await ids(10, ['user_busy', 'user_a', 'user_c'])).toEqual(['b1', 'n1']);
    expect(await ids(10, ['user_a', 'user_b', 'user_c', 'user_busy'])).toEqual(['n1']); // the ownerless never skipped
    // Unskipped, the oldest due come first as always: the busy owner's.
    expect(await ids(2, [])).toEqual(['busy0', 'busy1']);
  });
});
