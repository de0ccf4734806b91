// What a webhook claim that skips owners costs the SQLite store (on the event loop, so every request waits for it):
// one owner with a large due backlog, five deliveries of another, a claim of 4 skipping one of the two.
//
//   node bench/probes/webhook-claim.ts           backlog of 400,000
//   PROBE_BACKLOG=1000000 node bench/...         another size
//
// "skipped backlog": the backlog is the skipped owner's (a hanging receiver's, which only grows); "other backlog":
// it is the owner that is not skipped. Either must cost an index seek or two, not a read of the backlog.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/index.ts';
import { writePendingDeliveries } from '../../test/store/records.ts';

const BACKLOG = Number(process.env['PROBE_BACKLOG'] ?? 400_000);
const dir = mkdtempSync(join(tmpdir(), 'wharf-webhook-claim-'));

/** The backlog (due first), then five deliveries of the other owner, due after it. */
function* deliveries(backlogOwner: string, otherOwner: string): Generator<[string, string, number]> {
  for (let i = 0; i < BACKLOG; i++) yield [`d${i}`, backlogOwner, 1000 + i];
  for (let i = 0; i < 5; i++) yield [`o${i}`, otherOwner, 500 + i];
}

async function probe(name: string, backlogOwner: string, otherOwner: string): Promise<void> {
  const path = join(dir, `${name}.db`);
  const store = openSqliteStore({ path });
  await store.migrate();
  writePendingDeliveries(path, deliveries(backlogOwner, otherOwner));
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await store.claimWebhookDeliveries(BACKLOG + 10_000, 4, 0, ['user_skipped']);
    times.push(performance.now() - started);
  }
  await store.close();
  const best = Math.min(...times);
  console.log(`${name}: ${best.toFixed(2)} ms per claim (best of 5; backlog ${BACKLOG.toLocaleString('en')})`);
  console.log(
    JSON.stringify({ probe: 'webhook-claim', case: name, backlog: BACKLOG, bestMs: Number(best.toFixed(2)) }),
  );
}

try {
  await probe('skipped backlog', 'user_skipped', 'user_other');
  await probe('other backlog', 'user_other', 'user_skipped');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
