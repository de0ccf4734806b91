import { RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ClusterBus, ClusterNode, ClusterOptions, LeaderDuties, SharedFleetStatus } from '../types-cluster.ts';
import type { Db } from './db.ts';
import { LeaderElector, LOCK_KEY_SQL } from './leader.ts';
import { NotifyBridge } from './notify.ts';

/** Multi-node operation on the shared PostgreSQL (types-cluster.ts): LISTEN/NOTIFY, advisory locks, shared counters. */
export class PgCluster implements ClusterNode {
  private readonly db: Db;
  private readonly o: Required<ClusterOptions>;
  private bridgeOf: NotifyBridge | undefined;
  private elector: LeaderElector | undefined;
  private stopping: Promise<void> | undefined;
  /** What this node shared last (JSON per endpoint), so that an unchanged tick writes nothing; null: not yet. */
  private shared: Map<string, string> | null = null;

  constructor(db: Db, opts: ClusterOptions = {}) {
    this.db = db;
    this.o = { retryMs: 1000, onError: () => {}, onLeaderChange: () => {}, ...opts };
  }

  get isLeader(): boolean {
    return this.elector?.isLeader ?? false;
  }

  /** One channel per schema: deployments sharing a database never wake each other. */
  private get channel(): string {
    return `wharf.${this.db.schema ?? 'public'}`;
  }

  async bridge(bus: ClusterBus): Promise<void> {
    if (this.bridgeOf) return;
    this.bridgeOf = new NotifyBridge(this.db, this.channel, bus, this.o.onError, this.o.retryMs);
    await this.bridgeOf.start();
  }

  elect(duties: LeaderDuties): void {
    if (this.elector) return;
    this.elector = new LeaderElector(this.db, duties, {
      retryMs: this.o.retryMs,
      onError: this.o.onError,
      onChange: this.o.onLeaderChange,
    });
    this.elector.start();
  }

  async exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const client = this.db.client();
    client.on('error', () => {});
    await client.connect();
    try {
      await client.query(`SELECT pg_advisory_lock(${LOCK_KEY_SQL})`, [name]);
      return await fn();
    } finally {
      // Ending the session releases the lock even if the unlock itself cannot be sent.
      await client.end().catch(() => {});
    }
  }

  async shareFleetStatus(statuses: ReadonlyMap<string, SharedFleetStatus>): Promise<boolean> {
    const next = new Map(
      [...statuses].map(([id, s]) => [id, JSON.stringify([s.throttled, s.unhealthy, s.reason, s.message])]),
    );
    const changed = [...next].filter(([id, json]) => this.shared?.get(id) !== json).map(([id]) => id);
    const gone = this.shared === null || [...this.shared.keys()].some((id) => !next.has(id));
    if (changed.length === 0 && !gone) return false;
    await this.db.tx(async (c) => {
      // The first share of a new leader also clears what an earlier leader shared about endpoints gone since.
      if (gone) await c.query('DELETE FROM fleet_status WHERE NOT (endpoint_id = ANY($1))', [[...next.keys()]]);
      if (changed.length === 0) return;
      const rows = changed.map((id) => statuses.get(id)!);
      await c.query(
        `INSERT INTO fleet_status (endpoint_id, throttled, unhealthy, reason, message)
         SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[])
         ON CONFLICT (endpoint_id) DO UPDATE
           SET throttled = excluded.throttled, unhealthy = excluded.unhealthy, reason = excluded.reason,
             message = excluded.message`,
        [
          changed,
          rows.map((s) => s.throttled),
          rows.map((s) => s.unhealthy),
          rows.map((s) => s.reason),
          rows.map((s) => s.message),
        ],
      );
    });
    this.shared = next;
    return true;
  }

  async sharedFleetStatus(): Promise<Map<string, SharedFleetStatus>> {
    // A node that shares again after a spell as a follower starts from what is in the table, not from its old memory.
    this.shared = null;
    const rows = await this.db.query<{
      endpoint_id: string;
      throttled: number;
      unhealthy: number;
      reason: string | null;
      message: string | null;
    }>('SELECT endpoint_id, throttled, unhealthy, reason, message FROM fleet_status');
    return new Map(
      rows.map((r) => [
        r.endpoint_id,
        { throttled: r.throttled, unhealthy: r.unhealthy, reason: r.reason, message: r.message },
      ]),
    );
  }

  rateCounter(opts: { points: number; durationS: number }): RateLimiterAbstract {
    return new RateLimiterPostgres({
      storeClient: this.db.pool,
      storeType: 'pool',
      tableName: 'rate_limits',
      ...(this.db.schema ? { schemaName: this.db.schema } : {}),
      // The table comes from the migrations (no CREATE race between nodes); the leader prunes it (leader.ts).
      tableCreated: true,
      clearExpiredByTimeout: false,
      points: opts.points,
      duration: opts.durationS,
    });
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.elector?.stop();
      await this.bridgeOf?.stop();
    })();
    return this.stopping;
  }
}
