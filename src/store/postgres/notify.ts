import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { ClusterBus } from '../types-cluster.ts';
import type { Db } from './db.ts';

/** NOTIFY payloads are capped at 8000 bytes by PostgreSQL; stay well under it. */
const MAX_PAYLOAD = 7000;
/** In `pending`: the topic was published for every waiter (else the value counts single wake-ups). */
const ALL = -1;

/**
 * Bridges the engine's Bus across nodes with LISTEN/NOTIFY (DESIGN.md §3 "Long polls").
 *
 * Payload: `<sender>\n<topic>\n<topic>…` — the topics themselves (`queue:<endpointId>`, `job:<jobId>`, …), never job
 * data: a wake-up only tells waiters to re-read the store, which stays the single source of truth. The sender id lets
 * a node skip its own echo (it already delivered locally in Bus.publish). A topic published for single waiters
 * (Bus.publishOne: one per new job) follows a line `=<n>`: the receiver wakes n single waiters instead of all. A node
 * of an older version, which does not know the marker, finds no waiter on it and wakes every waiter of the topic, as
 * it always did, so a cluster in the middle of a rolling upgrade loses no wake-up.
 *
 * Bursts coalesce: topics published while a NOTIFY is in flight are collected (duplicates merge, single wake-ups add
 * up, a wake-up for all wins) and sent together by the next one, so a thousand submissions to one endpoint cost a
 * handful of NOTIFYs, not a thousand.
 * Sends go through the pool; listening uses one dedicated connection, re-established (and LISTEN re-issued) when it
 * drops. After a reconnect every local waiter is woken once, since wake-ups sent meanwhile were lost. A connection
 * that falls silent without closing (a NAT or a partition dropped it: no FIN, and TCP keepalive tells only after hours)
 * would leave the node deaf to the others' wake-ups, so it is checked every `checkMs` with a query, as the leader
 * checks its own, and replaced when the answer does not come in time.
 */
export class NotifyBridge {
  private readonly db: Db;
  private readonly channel: string;
  private readonly bus: ClusterBus;
  private readonly onError: (error: unknown) => void;
  private readonly sender = randomBytes(6).toString('hex');
  /** Topics to send: how many single wake-ups, or ALL. */
  private readonly pending = new Map<string, number>();
  private sending: Promise<void> | undefined;
  private client: pg.Client | null = null;
  private connecting: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;
  private everConnected = false;
  private readonly checkMs: number;
  private check: NodeJS.Timeout | undefined;

  constructor(db: Db, channel: string, bus: ClusterBus, onError: (error: unknown) => void, checkMs = 1000) {
    this.db = db;
    this.channel = channel;
    this.bus = bus;
    this.onError = onError;
    this.checkMs = checkMs;
  }

  /** Subscribe to local publishes and start listening; a database that is down now is retried in the background. */
  async start(): Promise<void> {
    this.unsubscribe = this.bus.onPublish((topic, single) => this.send(topic, single));
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.retry);
    clearTimeout(this.check);
    await this.connecting;
    await this.sending;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private connect(): Promise<void> {
    this.connecting ??= this.dial().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async dial(): Promise<void> {
    if (this.stopped || this.client) return;
    // The query timeout bounds the check (below): an answer that does not come means a connection that is gone.
    const client = this.db.client({ query_timeout: Math.max(2000, this.checkMs * 2) });
    client.on('error', () => this.dropped(client));
    client.on('end', () => this.dropped(client));
    client.on('notification', (msg) => {
      if (msg.channel === this.channel && msg.payload) this.received(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch {
      await client.end().catch(() => {});
      this.later();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    if (this.everConnected) this.bus.wakeAll();
    this.everConnected = true;
    this.checkLater(client);
  }

  /** Ask the listening connection for an answer every checkMs; one that fails or does not come replaces it. */
  private checkLater(client: pg.Client): void {
    this.check = setTimeout(() => {
      if (this.client !== client) return;
      client.query('SELECT 1').then(
        () => this.checkLater(client),
        () => this.dropped(client),
      );
    }, this.checkMs);
  }

  private dropped(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    clearTimeout(this.check);
    client.end().catch(() => {});
    this.later();
  }

  private later(): void {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.connect().catch((error: unknown) => this.onError(error));
    }, 1000);
  }

  private received(payload: string): void {
    const [sender, ...lines] = payload.split('\n');
    if (sender === this.sender) return;
    let singles: number | undefined;
    for (const line of lines) {
      if (line.startsWith('=')) {
        const n = Number(line.slice(1));
        singles = Number.isSafeInteger(n) && n > 0 ? n : undefined;
        continue;
      }
      if (line) this.bus.deliver(line, singles);
      singles = undefined;
    }
  }

  private send(topic: string, single: boolean): void {
    if (this.stopped) return;
    const had = this.pending.get(topic);
    this.pending.set(topic, !single || had === ALL ? ALL : (had ?? 0) + 1);
    this.sending ??= this.flush().finally(() => {
      this.sending = undefined;
    });
  }

  private async flush(): Promise<void> {
    // One turn of the event loop first: everything published by the requests handled in this turn joins the batch.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.pending.size > 0) {
      const entries = [...this.pending].map(([topic, n]) => (n === ALL ? topic : `=${n}\n${topic}`));
      this.pending.clear();
      const payloads: string[] = [];
      let current = this.sender;
      let bytes = current.length;
      for (const t of entries) {
        const size = Buffer.byteLength(t) + 1;
        if (bytes + size > MAX_PAYLOAD) {
          payloads.push(current);
          current = this.sender;
          bytes = current.length;
        }
        current += `\n${t}`;
        bytes += size;
      }
      payloads.push(current);
      try {
        await this.db.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [this.channel, payloads]);
      } catch {
        // The database is down: nothing committed that these would announce could have happened meanwhile, and the
        // other nodes wake everyone when their LISTEN reconnects. Dropping them is safe.
      }
    }
  }
}
