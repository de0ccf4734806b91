// What one job costs the SQLite store, without HTTP: WAL frames per job by b-tree (what each group commit writes
// and each fsync flushes) and CPU per job, for submit, take and finish, on the real store with real group commits.
//
//   node bench/probes/store-writes.ts            WAL frames per job and b-tree, then CPU per job (median of 5 rounds)
//   PROBE_JOBS_BEFORE=100000 node bench/...      how many finished jobs the table holds first (default 20,000)
//
// Frames are read from the WAL file itself (each frame names its page) and pages are attributed to tables and
// indexes with SQLite's dbstat; a measured phase stays below the automatic checkpoint, so nothing is missed.
// Submits go in groups of 20, takes by four workers of 8, finishes in groups of 20 (like the end-to-end benchmark).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { newJobId } from '../../src/domain/index.ts';
import type { NewJob } from '../../src/store/index.ts';
import { openSqliteStore } from '../../src/store/sqlite/index.ts';
import { worker } from '../../test/store/records.ts';

const GROUP = 20;
const TAKE_BATCH = 8;
const FRAMES_JOBS = 400;
const CPU_JOBS = 4000;
const ENDPOINT = 'ep0000000000001';
const WORKERS = ['wk0000000000001', 'wk0000000000002', 'wk0000000000003', 'wk0000000000004'];

const dir = mkdtempSync(join(tmpdir(), 'wharf-store-writes-'));
const path = join(dir, 'wharf.db');
const store = openSqliteStore({ path });
await store.migrate();
let clock = Date.now();

const newJob = (): NewJob => ({
  id: newJobId('e1', false),
  endpointId: ENDPOINT,
  inputJson: '{"input":{"n":1}}',
  webhook: null,
  policy: { executionTimeoutMs: 600_000, lowPriority: false, ttlMs: 86_400_000 },
  policyGiven: false,
  s3ConfigSealed: null,
  mode: 'async',
  retentionMs: 1_800_000,
  createdAt: clock++,
});
for (const id of WORKERS) await store.upsertWorker(worker(id, ENDPOINT, { createdAt: clock, lastSeenAt: clock }));

interface Taken {
  id: string;
  workerId: string;
}

async function submit(n: number, group: number): Promise<void> {
  for (let i = 0; i < n; i += group) {
    await Promise.all(Array.from({ length: Math.min(group, n - i) }, () => store.submitJob(newJob())));
  }
}

async function take(n: number): Promise<Taken[]> {
  const taken: Taken[] = [];
  while (taken.length < n) {
    const rounds = await Promise.all(
      WORKERS.map(async (workerId) =>
        (await store.takeJobs(ENDPOINT, workerId, TAKE_BATCH, clock++)).map((j) => ({ id: j.id, workerId })),
      ),
    );
    if (rounds.every((r) => r.length === 0)) throw new Error(`only ${taken.length} of ${n} jobs could be taken`);
    for (const r of rounds) taken.push(...r);
  }
  return taken;
}

async function finish(taken: Taken[], group: number): Promise<void> {
  const result = { status: 'COMPLETED', outputJson: '{"ok":true}', errorJson: null, stopPod: false } as const;
  for (let i = 0; i < taken.length; i += group) {
    await Promise.all(
      taken.slice(i, i + group).map((j) => store.finishJob(ENDPOINT, j.id, j.workerId, result, clock++)),
    );
  }
}

const before = Number(process.env['PROBE_JOBS_BEFORE'] ?? 20_000);
for (let done = 0; done < before; done += 2000) {
  await submit(2000, 200);
  await finish(await take(2000), 200);
}

// A second connection reads what the store's connection wrote: the WAL file and dbstat's page owners.
const spy = new DatabaseSync(path);

function walFramesByPage(): Map<number, number> {
  const wal = readFileSync(`${path}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const frames = new Map<number, number>();
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    const page = wal.readUInt32BE(at);
    frames.set(page, (frames.get(page) ?? 0) + 1);
  }
  return frames;
}

async function framesOf(label: string, commits: number, phase: () => Promise<void>): Promise<void> {
  spy.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  await phase();
  const frames = walFramesByPage();
  const owner = new Map<number, string>();
  for (const r of spy.prepare('SELECT name, pageno FROM dbstat').all() as Array<{ name: string; pageno: number }>) {
    owner.set(r.pageno, r.name);
  }
  const byTree = new Map<string, { frames: number; pages: number }>();
  let total = 0;
  for (const [page, n] of frames) {
    const name = owner.get(page) ?? '(free or unattributed)';
    const e = byTree.get(name) ?? { frames: 0, pages: 0 };
    e.frames += n;
    e.pages++;
    byTree.set(name, e);
    total += n;
  }
  console.log(
    `\n${label}: ${FRAMES_JOBS} jobs, ${commits} commits, ${total} WAL frames = ` +
      `${(total / FRAMES_JOBS).toFixed(2)} per job, ${(total / commits).toFixed(1)} per commit`,
  );
  for (const [name, e] of [...byTree].sort((a, b) => b[1].frames - a[1].frames)) {
    console.log(
      `  ${name.padEnd(30)} ${(e.frames / FRAMES_JOBS).toFixed(2).padStart(5)} per job  ` +
        `(${e.frames} frames on ${e.pages} pages)`,
    );
  }
}

let taken: Taken[] = [];
await framesOf(`submit (groups of ${GROUP})`, FRAMES_JOBS / GROUP, () => submit(FRAMES_JOBS, GROUP));
await framesOf(
  `take (${WORKERS.length} workers x ${TAKE_BATCH})`,
  Math.ceil(FRAMES_JOBS / (WORKERS.length * TAKE_BATCH)),
  async () => {
    taken = await take(FRAMES_JOBS);
  },
);
await framesOf(`finish (groups of ${GROUP})`, FRAMES_JOBS / GROUP, () => finish(taken, GROUP));
spy.close();

// CPU: larger rounds (checkpoints included, as in a real run), the median of five.
const cpu: Record<'submit' | 'take' | 'finish', number[]> = { submit: [], take: [], finish: [] };
for (let round = 0; round < 5; round++) {
  let t0 = process.cpuUsage();
  const lap = (): number => {
    const c = process.cpuUsage(t0);
    t0 = process.cpuUsage();
    return (c.user + c.system) / CPU_JOBS;
  };
  await submit(CPU_JOBS, GROUP);
  cpu.submit.push(lap());
  const t = await take(CPU_JOBS);
  cpu.take.push(lap());
  await finish(t, GROUP);
  cpu.finish.push(lap());
}
const median = (xs: number[]): string => [...xs].sort((a, b) => a - b)[2]!.toFixed(1);
console.log(
  `\nCPU µs per job (median of 5 rounds of ${CPU_JOBS}): submit ${median(cpu.submit)}, take ${median(cpu.take)}, ` +
    `finish ${median(cpu.finish)}`,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
