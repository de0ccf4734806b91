import { RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ClusterBus, ClusterNode, ClusterOptions, LeaderDuties } from '../types-cluster.ts';
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
    this.bridgeOf = new NotifyBridge(this.db, this.channel, bus, this.o.onError);
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
