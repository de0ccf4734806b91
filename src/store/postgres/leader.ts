import type pg from 'pg';
import type { LeaderDuties } from '../types-cluster.ts';
import { compactJobCounts } from './counts.ts';
import type { Db } from './db.ts';

/**
 * The advisory-lock key of a role, per schema: two deployments (or test runs) in one database elect separately.
 * Session-level locks belong to the connection: when the node dies, PostgreSQL ends its session and frees the lock.
 */
export const LOCK_KEY_SQL = `hashtextextended('wharf.' || $1::text || '.' || current_schema(), 0)`;

/** Expired rate-limit counters are deleted by the leader this often (rate-limiter-flexible's own timer is off). */
const PRUNE_EVERY_MS = 5 * 60_000;
/** The job counters' per-backend rows are folded together this often (counts.ts compactJobCounts). */
const COMPACT_EVERY_MS = 60_000;

export interface ElectorOptions {
  retryMs: number;
  onError: (error: unknown) => void;
  onChange: (leader: boolean) => void;
}

/**
 * One leader at a time, chosen with `pg_try_advisory_lock` on a dedicated connection. A follower tries every
 * `retryMs`; the leader checks its connection as often and, the moment the check fails, stops its duties (the lock
 * went with the connection, so another node may already lead). gain/lose run strictly in turn, never overlapping.
 *
 * Hand-over after a leader dies: its session ends when the kernel closes the socket (at once for a killed process,
 * after TCP keepalive for a vanished machine), then the next follower's try — within `retryMs` — wins.
 */
export class LeaderElector {
  private readonly db: Db;
  private readonly duties: LeaderDuties;
  private readonly o: ElectorOptions;
  private client: pg.Client | null = null;
  private broken = false;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastPrune = 0;
  private lastCompact = 0;
  /** The last step failed: an outage is reported once, not every retryMs. */
  private failing = false;

  constructor(db: Db, duties: LeaderDuties, opts: ElectorOptions) {
    this.db = db;
    this.duties = duties;
    this.o = opts;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.schedule(0);
  }

  /** Run the duties' `lose`, release the lock (so a follower takes over within retryMs) and close. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (this.leading) await this.demote();
    const client = this.client;
    this.client = null;
    if (client && !this.broken)
      await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY_SQL})`, ['leader']).catch(() => {});
    await client?.end().catch(() => {});
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.step()
        .then(() => {
          this.failing = false;
        })
        .catch((error: unknown) => {
          if (!this.failing) this.o.onError(error);
          this.failing = true;
        })
        .finally(() => {
          this.running = undefined;
          this.schedule(this.o.retryMs);
        });
    }, delay);
  }

  private async step(): Promise<void> {
    try {
      const client = await this.connection();
      if (!this.leading) {
        const r = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LOCK_KEY_SQL}) AS ok`, ['leader']);
        if (r.rows[0]?.ok && !this.stopped) await this.promote();
      } else {
        // Still connected means still holding the lock; a failure here is caught below.
        await client.query('SELECT 1');
        await this.housekeeping();
      }
    } catch (error) {
      this.discard();
      if (this.leading) await this.demote();
      throw error;
    }
  }

  private async connection(): Promise<pg.Client> {
    if (this.client && !this.broken) return this.client;
    this.discard();
    // A short query timeout: a leader cut off from its database must notice within seconds, not after TCP gives up.
    const client = this.db.client({ query_timeout: Math.max(2000, this.o.retryMs * 2) });
    client.on('error', () => {
      this.broken = true;
    });
    this.broken = false;
    this.client = client;
    await client.connect();
    return client;
  }

  private discard(): void {
    const client = this.client;
    this.client = null;
    this.broken = false;
    client?.end().catch(() => {});
  }

  private async promote(): Promise<void> {
    this.leading = true;
    this.o.onChange(true);
    try {
      await this.duties.gain();
    } catch (error) {
      // Half-started duties are stopped again and the lock given up; the next try starts over.
      this.o.onError(error);
      await this.demote();
      this.discard();
    }
  }

  private async demote(): Promise<void> {
    this.leading = false;
    this.o.onChange(false);
    try {
      await this.duties.lose();
    } catch (error) {
      this.o.onError(error);
    }
  }

  private async housekeeping(): Promise<void> {
    const now = Date.now();
    if (now - this.lastCompact >= COMPACT_EVERY_MS) {
      this.lastCompact = now;
      await compactJobCounts(this.db).catch(() => {});
    }
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.db.query('DELETE FROM rate_limits WHERE expire < $1', [now - 3_600_000]).catch(() => {});
  }
}
