// PostgreSQL-only behaviour (STYLE.md habit 3: why these are not in the contract): the migration ledger shared by
// nodes that start together, connection loss mapped to STORE_UNAVAILABLE with recovery, and the multi-node pieces
// that only a shared database has — LISTEN/NOTIFY wake-ups and advisory-lock leader election.

import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Bus } from '../../src/engine/index.ts';
import { WharfError } from '../../src/errors/index.ts';
import { FleetStatusShare, type FleetStatus } from '../../src/fleet/index.ts';
import {
  openPostgresStore,
  type ClusterNode,
  type PostgresStore,
  type SharedFleetStatus,
} from '../../src/store/index.ts';
import { dropSchemas, newSchema, PG_URL, pgUnavailable, startPgProxy, type PgProxy } from '../helpers/postgres.ts';
import { newJob, worker } from './contract.ts';

const unavailable = await pgUnavailable('PostgreSQL store specifics');
const open: PostgresStore[] = [];
const proxies: PgProxy[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});
afterAll(dropSchemas);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const T0 = 1_700_000_000_000;
const ep = 'eppg0000000001';

function store(schema: string, url = PG_URL): PostgresStore {
  const s = openPostgresStore({ url, schema, poolSize: 4 });
  open.push(s);
  return s;
}

async function proxy(): Promise<PgProxy> {
  const p = await startPgProxy();
  proxies.push(p);
  return p;
}

/** Two nodes on one schema with their buses bridged: A directly, B through a proxy the test can cut or stall. */
async function bridgedThroughProxy() {
  const p = await proxy();
  const schema = newSchema();
  const a = store(schema);
  await a.migrate();
  const b = store(schema, p.url(schema));
  const [busA, busB] = [new Bus(), new Bus()];
  await a.cluster().bridge(busA);
  await b.cluster().bridge(busB);
  return { p, busA, busB };
}

async function until(pred: () => boolean, ms: number, what: string): Promise<number> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`timed out: ${what}`);
    await sleep(10);
  }
  return Date.now() - start;
}

describe.skipIf(unavailable !== null)('postgres specifics', () => {
  it('nodes migrating one schema at once apply each migration once; a newer schema is refused', async () => {
    const schema = newSchema();
    const stores = Array.from({ length: 5 }, () => store(schema));
    await Promise.all(stores.map((s) => s.migrate()));
    const v = await stores[0]!.schemaVersion();
    expect(v.current).toBe(v.latest);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const rows = await client.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      expect(rows.rows.map((r) => r.version)).toEqual(Array.from({ length: v.latest }, (_, i) => i + 1));
      await client.query(`INSERT INTO "${schema}".schema_migrations VALUES (9999, 'future', 0)`);
    } finally {
      await client.end();
    }
    await expect(store(schema).migrate()).rejects.toThrow(/newer|9999/);
  });

  it('a lost database is STORE_UNAVAILABLE, nothing is half-applied, and the store recovers when it returns', async () => {
    const p = await proxy();
    const schema = newSchema();
    const s = store(schema, p.url(schema));
    await s.migrate();
    await s.createUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0 });
    await s.upsertWorker(worker('w1', ep));
    const jobs = [];
    for (let i = 0; i < 40; i++) jobs.push(await s.submitJob(newJob(ep, { webhook: 'http://127.0.0.1:9/h' })));
    await s.takeJobs(ep, 'w1', 40, T0 + 1);

    // Finishing (job row + webhook delivery row, one transaction each) while the connection is cut.
    const done = { status: 'COMPLETED', outputJson: '1', errorJson: null, stopPod: false } as const;
    const finishing = Promise.allSettled(jobs.map((j) => s.finishJob(ep, j.id, 'w1', done, T0 + 2)));
    await sleep(5);
    await p.cut();
    const settled = await finishing;
    const refused = settled.filter((r) => r.status === 'rejected');
    for (const r of refused) expect((r.reason as WharfError).code).toBe('STORE_UNAVAILABLE');

    const down = await s.getJob(ep, jobs[0]!.id).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(WharfError);
    expect(down).toMatchObject({ code: 'STORE_UNAVAILABLE', status: 503 });
    await expect(s.submitJob(newJob(ep))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(s.ping()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });

    await p.restore();
    await s.ping();
    for (const j of jobs) {
      const job = await s.getJob(ep, j.id);
      const hooks = await s.listWebhookDeliveries(ep, j.id);
      // Either both the final state and its delivery committed, or neither did.
      expect(hooks.length, j.id).toBe(job?.status === 'COMPLETED' ? 1 : 0);
      if (job?.status !== 'COMPLETED') expect((await s.finishJob(ep, j.id, 'w1', done, T0 + 3)).ok).toBe(true);
    }
    expect((await s.jobCounts(ep)).completed).toBe(40);
  });

  it('a stop order made while a lease sweep holds its worker waits for no lock (no deadlock with the sweep)', async () => {
    // addStop holds the worker's record FOR KEY SHARE after its caller locked the job (cancelJob, timeoutJobs,
    // expireJobs: job, then worker), while expireWorkerLeases locks the worker, then its jobs. Had the sweep's lock on
    // the worker been FOR UPDATE, the cancel would wait for the sweep, and the sweep for the cancel's job: a deadlock
    // that PostgreSQL breaks only after deadlock_timeout, failing one of them (retried).
    const schema = newSchema();
    const s = store(schema);
    await s.migrate();
    await s.upsertWorker(worker('w1', ep));
    const a = await s.submitJob(newJob(ep));
    const b = await s.submitJob(newJob(ep, { createdAt: T0 + 1 }));
    expect((await s.takeJobs(ep, 'w1', 2, T0 + 2)).map((j) => j.id).sort()).toEqual([a.id, b.id].sort());

    const raw = new pg.Client({ connectionString: PG_URL });
    await raw.connect();
    const holder = new pg.Client({ connectionString: PG_URL });
    await holder.connect();
    // The backends that wait for a lock `pid` holds (exact whatever else runs on this server).
    const waitingFor = async (pid: number): Promise<number[]> =>
      (
        await raw.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
          [pid],
        )
      ).rows.map((r) => r.pid);
    try {
      // The sweep gets the worker, then waits for job a (held here) before it reaches job b.
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [a.id]);
      const sweep = s.expireWorkerLeases(T0 + 1000, T0 + 2000, 5);
      let sweepPid: number | undefined;
      for (let i = 0; sweepPid === undefined; i++) {
        if (i > 500) throw new Error('the lease sweep never waited for job a');
        await sleep(10);
        sweepPid = (await waitingFor(holderPid))[0];
      }
      const sweeper = sweepPid;
      // Cancelling b locks b, then makes w1's stop order: it must not wait for the sweep's lock on w1.
      const cancel = s.cancelJob(ep, b.id, T0 + 2000);
      let settled = false;
      const outcome = await Promise.race([
        cancel.then((c) => c.outcome),
        (async () => {
          while (!settled && (await waitingFor(sweeper)).length === 0) await sleep(10);
          return 'waits for the sweep';
        })(),
      ]);
      settled = true;
      await holder.query('ROLLBACK');
      await cancel;
      const swept = await sweep;
      expect(outcome).toBe('cancelled');
      // The sweep requeued a; b was cancelled meanwhile. w1 has an order for each.
      expect(swept.requeued.map((j) => j.id)).toEqual([a.id]);
      expect((await s.takeStops('w1', T0 + 2001)).sort()).toEqual([a.id, b.id].sort());
    } finally {
      await holder.end().catch(() => {});
      await raw.end().catch(() => {});
    }
  });

  it('LISTEN/NOTIFY wakes waiters on another node, and again after its connection came back', async () => {
    const { p, busA, busB } = await bridgedThroughProxy();

    // Armed for 10 s: the wake-up must come well before the wait would end by itself.
    const woken = busB.arm('job:x', 10_000);
    const started = Date.now();
    busA.publish('job:x');
    expect(await woken.promise).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);

    // B's LISTEN connection drops: a waiter armed meanwhile is woken once it is back (wake-ups may have been lost)...
    await p.cut();
    const during = busB.arm('job:y', 10_000);
    await p.restore();
    expect(await during.promise).toBe(true);
    // ...and wake-ups from A reach B again.
    const after = busB.arm('job:z', 5000);
    busA.publish('job:z');
    expect(await after.promise).toBe(true);
    busA.close();
    busB.close();
  });

  it('a LISTEN connection that falls silent without closing (a NAT or a partition dropped it) is noticed and replaced', async () => {
    // No FIN, no RST: the kernel's keepalive would tell after two hours or more. Meanwhile the node would be deaf to
    // every other node's wake-ups: a /runsync here whose job finishes there would answer only when its wait ran out.
    const { p, busA, busB } = await bridgedThroughProxy();
    const first = busB.arm('job:x', 10_000);
    busA.publish('job:x');
    expect(await first.promise).toBe(true);

    p.stall();
    try {
      // A waiter armed while B is deaf is woken once B listens again (wake-ups may have been lost meanwhile)...
      const during = busB.arm('job:y', 15_000);
      const stalledAt = Date.now();
      expect(await during.promise).toBe(true);
      expect(Date.now() - stalledAt).toBeLessThan(8000);
      // ...and wake-ups from A reach B again.
      const after = busB.arm('job:z', 5000);
      busA.publish('job:z');
      expect(await after.promise).toBe(true);
    } finally {
      busA.close();
      busB.close();
      // The stalled connections end only when their sockets go (closing them would wait for an answer forever).
      await p.cut();
    }
  });

  it('a single wake-up (one per new job) wakes as many single waiters on another node, in a form older nodes read as a wake-up for all', async () => {
    const schema = newSchema();
    const a = store(schema);
    await a.migrate();
    const b = store(schema);
    const [busA, busB] = [new Bus(), new Bus()];
    await a.cluster().bridge(busA);
    await b.cluster().bridge(busB);
    // What goes over the wire, as a node of any version would receive it.
    const raw = new pg.Client({ connectionString: PG_URL });
    await raw.connect();
    const payloads: string[] = [];
    raw.on('notification', (msg) => payloads.push(msg.payload ?? ''));
    await raw.query(`LISTEN "wharf.${schema}"`);
    try {
      const passive = busB.arm('queue:q1', 10_000);
      const singles = [1, 2, 3].map(() => busB.arm('queue:q1', 10_000, undefined, true));
      const woken = () => singles.filter((w) => w.woken).length;
      busA.publishOne('queue:q1');
      busA.publishOne('queue:q1');
      await until(() => woken() === 2, 5000, 'two single wake-ups on B');
      await sleep(200);
      expect(singles.map((w) => w.woken)).toEqual([true, true, false]);
      expect(passive.woken).toBe(false);
      // Each payload names the topic on a line of its own, after the `=<n>` marker an older node ignores.
      const lines = payloads.flatMap((p) => p.split('\n').slice(1));
      expect(lines.filter((l) => l === 'queue:q1').length).toBeGreaterThanOrEqual(1);
      expect(lines.filter((l) => l.startsWith('=')).reduce((sum, l) => sum + Number(l.slice(1)), 0)).toBe(2);
      // A wake-up for all still reaches everyone.
      busA.publish('queue:q1');
      expect(await passive.promise).toBe(true);
      expect(await singles[2]!.promise).toBe(true);
      // A payload from an older node (topics only) wakes every waiter; so does a marker with a count that is no count.
      for (const payload of ['oldnode\nqueue:q2', 'oldnode\n=x\nqueue:q2']) {
        const waiters = [busB.arm('queue:q2', 10_000, undefined, true), busB.arm('queue:q2', 10_000, undefined, true)];
        await raw.query('SELECT pg_notify($1, $2)', [`wharf.${schema}`, payload]);
        expect(await Promise.all(waiters.map((w) => w.promise))).toEqual([true, true]);
      }
    } finally {
      await raw.end();
      busA.close();
      busB.close();
    }
  });

  it('elects one leader; hands over when the leader loses its connection or stops', async () => {
    const schema = newSchema();
    await store(schema).migrate();
    const ps = await Promise.all([proxy(), proxy(), proxy()]);
    const log: string[] = [];
    const nodes: ClusterNode[] = ps.map((p, i) => {
      const node = store(schema, p.url(schema)).cluster({ retryMs: 100 });
      node.elect({
        gain: async () => void log.push(`gain ${i}`),
        lose: async () => void log.push(`lose ${i}`),
      });
      return node;
    });
    const leaders = () => nodes.filter((n) => n.isLeader);
    await until(() => leaders().length === 1, 5000, 'a leader');
    await sleep(300);
    expect(leaders()).toHaveLength(1);

    // The leader's database connection is cut: it steps down at once and another node leads.
    const first = nodes.indexOf(leaders()[0]!);
    await ps[first]!.cut();
    const handOver = await until(() => leaders().length === 1 && !nodes[first]!.isLeader, 5000, 'a hand-over');
    expect(log).toContain(`lose ${first}`);
    expect(handOver).toBeLessThan(3000);
    await ps[first]!.restore();
    await sleep(500);
    expect(leaders()).toHaveLength(1);

    // A leader that stops gives the lock back: the next one leads within a retry or two.
    const second = leaders()[0]!;
    await second.stop();
    // The stopped leader unlocks: a follower's next try (every 100 ms) wins, not some later clean-up; 3 s for a busy machine.
    expect(await until(() => leaders().length === 1, 10_000, 'the next leader')).toBeLessThan(3000);
    expect(second.isLeader).toBe(false);
  });

  it('fleet statuses shared by one node are what every node reads; a share replaces the last, unchanged ones write nothing', async () => {
    const schema = newSchema();
    const [a, b] = [store(schema), store(schema)];
    await a.migrate();
    const [one, two] = [a.cluster(), b.cluster()];
    // Row versions (xmin) change with every write to a row.
    const versions = async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        return (await client.query(`SELECT endpoint_id, xmin FROM "${schema}".fleet_status ORDER BY 1`)).rows;
      } finally {
        await client.end();
      }
    };
    const busy: SharedFleetStatus = { throttled: 2, unhealthy: 0, reason: 'no-gpu-capacity', message: 'no GPU free' };
    const idle: SharedFleetStatus = { throttled: 0, unhealthy: 0, reason: null, message: null };
    const looping: SharedFleetStatus = { throttled: 0, unhealthy: 2, reason: 'crash-loop', message: 'boom' };
    await one.shareFleetStatus(
      new Map([
        ['ep1', busy],
        ['ep2', idle],
      ]),
    );
    expect(await two.sharedFleetStatus()).toEqual(
      new Map([
        ['ep1', busy],
        ['ep2', idle],
      ]),
    );
    const before = await versions();
    expect(
      await one.shareFleetStatus(
        new Map([
          ['ep1', busy],
          ['ep2', idle],
        ]),
      ),
    ).toBe(false);
    expect(await versions()).toEqual(before);
    // ep2 is gone (an endpoint deleted), ep1 changed.
    expect(await one.shareFleetStatus(new Map([['ep1', idle]]))).toBe(true);
    expect(await two.sharedFleetStatus()).toEqual(new Map([['ep1', idle]]));
    // The workers a crash loop holds back are shared too.
    expect(await one.shareFleetStatus(new Map([['ep1', looping]]))).toBe(true);
    expect(await two.sharedFleetStatus()).toEqual(new Map([['ep1', looping]]));
    expect(await one.shareFleetStatus(new Map([['ep1', { ...looping, unhealthy: 1 }]]))).toBe(true);
    expect((await two.sharedFleetStatus()).get('ep1')?.unhealthy).toBe(1);
    // Another node leads now: its first share replaces everything, including what it never knew about.
    await two.shareFleetStatus(new Map([['ep3', busy]]));
    expect(await one.sharedFleetStatus()).toEqual(new Map([['ep3', busy]]));
    await Promise.all([one.stop(), two.stop()]);
  });

  it('a follower shows a new fleet status as soon as the leader shares it (NOTIFY), not at its next poll', async () => {
    const schema = newSchema();
    const [a, b] = [store(schema), store(schema)];
    await a.migrate();
    const [busA, busB] = [new Bus(), new Bus()];
    const [one, two] = [a.cluster({ retryMs: 100 }), b.cluster({ retryMs: 100 })];
    await one.bridge(busA);
    await two.bridge(busB);
    one.elect({ gain: async () => {}, lose: async () => {} });
    await until(() => one.isLeader, 5000, 'node one leads');
    two.elect({ gain: async () => {}, lose: async () => {} });

    const leaderStatuses = new Map<string, FleetStatus>();
    // The follower's own poll is a minute away: only the leader's wake-up can bring the change within the test.
    const opts = { everyMs: 100, readEveryMs: 60_000, onError: (e: unknown) => void errors.push(e) };
    const errors: unknown[] = [];
    const leader = new FleetStatusShare(one, busA, () => leaderStatuses, opts);
    const follower = new FleetStatusShare(two, busB, () => new Map(), opts);
    leader.start();
    follower.start();
    try {
      await sleep(300);
      expect(follower.status('ep1').reason).toBeNull();
      const busy: FleetStatus = { throttled: 1, unhealthy: 2, reason: 'crash-loop', message: 'boom' };
      leaderStatuses.set('ep1', busy);
      const took = await until(() => follower.status('ep1').reason !== null, 5000, 'the follower shows it');
      expect(follower.status('ep1')).toEqual(busy);
      expect(took).toBeLessThan(3000);
      // And back: the reason is gone on the leader, so it is gone on the follower.
      leaderStatuses.delete('ep1');
      await until(() => follower.status('ep1').reason === null, 5000, 'the follower clears it');
      expect(errors).toEqual([]);
    } finally {
      leader.stop();
      follower.stop();
      busA.close();
      busB.close();
      await Promise.all([one.stop(), two.stop()]);
    }
  });
});
