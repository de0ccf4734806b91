/**
 * What a server needs from a store that several nodes share (capabilities.multiNode, DESIGN.md §3 "Multi-node"):
 * cross-node wake-ups for long polls, one leader at a time for the singletons (sweeps, autoscaler, webhook delivery),
 * a cluster-wide lock for start-up work, and rate-limit counters every node sees. No driver type appears here.
 */
import type { RateLimiterAbstract } from 'rate-limiter-flexible';

/** The part of the engine's Bus a bridge needs (engine/bus.ts). */
export interface ClusterBus {
  /** Every local publish; `single` when it was meant for one waiter (Bus.publishOne). */
  onPublish(listener: (topic: string, single: boolean) => void): () => void;
  /** Wake local waiters of a topic published on another node: all of them, or `singles` single waiters. */
  deliver(topic: string, singles?: number): void;
  /** Wake every local waiter: after a reconnect, wake-ups sent meanwhile may have been missed. */
  wakeAll(): void;
}

/** The singletons only the leader runs. Called in order, never overlapping. */
export interface LeaderDuties {
  gain(): Promise<void>;
  lose(): Promise<void>;
}

/**
 * The autoscaler's account of one endpoint (fleet/supervisor.ts FleetStatus): workers it wants but cannot start, and
 * why jobs wait. Only the leader runs the autoscaler; it shares these so that every node can show them.
 */
export interface SharedFleetStatus {
  throttled: number;
  /**
   * Workers wanted but held back by the crash-loop backoff (their predecessors failed to start or crashed): /health
   * shows them as unhealthy for as long as the loop lasts, not only while a crashed worker's record is kept.
   */
  unhealthy: number;
  reason: string | null;
  message: string | null;
}

export interface ClusterNode {
  /** Forward local publishes to the other nodes and deliver theirs here (one dedicated connection). */
  bridge(bus: ClusterBus): Promise<void>;
  /** Try for leadership now and every `retryMs`; a node that loses its connection drops leadership at once. */
  elect(duties: LeaderDuties): void;
  readonly isLeader: boolean;
  /** Run `fn` while holding a cluster-wide lock named `name` (first-start bootstrap that two nodes must not race). */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * The leader: replace the fleet statuses every node shows with these. A no-op when nothing changed since this
   * node's last share; resolves whether it wrote.
   */
  shareFleetStatus(statuses: ReadonlyMap<string, SharedFleetStatus>): Promise<boolean>;
  /** The fleet statuses the leader shared last, by endpoint id. */
  sharedFleetStatus(): Promise<Map<string, SharedFleetStatus>>;
  /** A counter shared by every node, with rate-limiter-flexible's API (see http/plugins/rate-limit.ts). */
  rateCounter(opts: { points: number; durationS: number }): RateLimiterAbstract;
  /** Give up leadership (running `lose`), stop listening, close the dedicated connections. Idempotent. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** How often a follower tries for leadership and a leader checks its connection. */
  retryMs?: number;
  /** Reported here, never thrown into a timer. */
  onError?: (error: unknown) => void;
  /** Leadership changed (logs, metrics). */
  onLeaderChange?: (leader: boolean) => void;
}
