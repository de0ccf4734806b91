import { topics, type Bus, type Waiter } from '../engine/index.ts';
import type { ClusterNode } from '../store/index.ts';
import { NO_FLEET_STATUS, type FleetStatus } from './supervisor.ts';

export interface FleetStatusShareOptions {
  /** How often the leader compares its statuses with what it shared last (it writes only when they changed). */
  everyMs: number;
  /** How often a follower reads them without having been told of a change (a wake-up lost with a connection). */
  readEveryMs?: number;
  onError: (error: unknown) => void;
}

/**
 * Multi-node: every node shows the leader's fleet statuses — why an endpoint's jobs wait (/health's `scaling`, a
 * queued job's `queueReason`) and the workers it wants but cannot start (the throttled count). Only the leader runs
 * the autoscaler, which keeps them in memory; every `everyMs` the leader shares them through the cluster, and when
 * that wrote something it publishes `fleet-status` on the bus, which the cluster bridge carries to the other nodes
 * (LISTEN/NOTIFY): they read the table at once instead of on their next poll. Followers still read every
 * `readEveryMs`, since a wake-up sent while their listening connection was down is lost. A node that is not the
 * leader never shows statuses of its own: its supervisor's are those of an earlier spell as leader.
 */
export class FleetStatusShare {
  private readonly cluster: ClusterNode;
  private readonly bus: Bus;
  private readonly local: () => ReadonlyMap<string, FleetStatus>;
  private readonly o: Required<FleetStatusShareOptions>;
  private shared = new Map<string, FleetStatus>();
  private timer: NodeJS.Timeout | undefined;
  private waiter: Waiter | undefined;
  private stopped = false;

  constructor(
    cluster: ClusterNode,
    bus: Bus,
    local: () => ReadonlyMap<string, FleetStatus>,
    opts: FleetStatusShareOptions,
  ) {
    this.cluster = cluster;
    this.bus = bus;
    this.local = local;
    this.o = { readEveryMs: 10_000, ...opts };
  }

  status(endpointId: string): FleetStatus {
    return (this.cluster.isLeader ? this.local().get(endpointId) : this.shared.get(endpointId)) ?? NO_FLEET_STATUS;
  }

  start(): void {
    this.stopped = false;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.waiter?.dispose();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.cluster.isLeader) {
        await this.attempt(async () => {
          if (await this.cluster.shareFleetStatus(worthSharing(this.local()))) this.bus.publish(topics.fleetStatus);
        });
        await this.sleep(this.o.everyMs);
      } else {
        // Armed before the read: a share that lands while the table is read still wakes the next one.
        const changed = this.bus.arm(topics.fleetStatus, this.o.readEveryMs);
        this.waiter = changed;
        await this.attempt(async () => {
          this.shared = await this.cluster.sharedFleetStatus();
        });
        await this.awaitChange(changed);
      }
    }
  }

  /** The database is away: followers keep showing what they read last; the next round tries again. */
  private async attempt(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.o.onError(error);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timer = setTimeout(resolve, ms);
    });
  }

  /**
   * A follower waits for the leader's word that the statuses changed, or `readEveryMs` (the waiter's own limit); it
   * looks up every `everyMs` in between, so that a node that became the leader starts sharing without waiting.
   */
  private async awaitChange(changed: Waiter): Promise<void> {
    let settled = false;
    void changed.promise.then(() => {
      settled = true;
    });
    // A closed bus (shutdown) answers at once: sleep instead of spinning until stop() comes.
    if (this.bus.isClosed) await this.sleep(this.o.everyMs);
    while (!this.stopped && !this.cluster.isLeader && !settled) {
      await Promise.race([changed.promise, this.sleep(this.o.everyMs)]);
      clearTimeout(this.timer);
    }
    changed.dispose();
  }
}

/** Only statuses that say something: an endpoint without one reads as NO_FLEET_STATUS on every node. */
function worthSharing(statuses: ReadonlyMap<string, FleetStatus>): Map<string, FleetStatus> {
  return new Map([...statuses].filter(([, s]) => s.reason !== null || s.throttled > 0 || s.unhealthy > 0));
}
