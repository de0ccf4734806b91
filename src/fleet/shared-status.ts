import type { ClusterNode } from '../store/index.ts';
import { NO_FLEET_STATUS, type FleetStatus } from './supervisor.ts';

/**
 * Multi-node: every node shows the leader's fleet statuses — why an endpoint's jobs wait (/health's `scaling`, a
 * queued job's `queueReason`) and the workers it wants but cannot start (the throttled count). Only the leader runs
 * the autoscaler, which keeps them in memory; every `everyMs` the leader shares them through the cluster (a write only
 * when they changed) and the other nodes read them. A node that is not the leader never shows statuses of its own:
 * its supervisor's are those of an earlier spell as leader.
 */
export class FleetStatusShare {
  private readonly cluster: ClusterNode;
  private readonly local: () => ReadonlyMap<string, FleetStatus>;
  private readonly everyMs: number;
  private readonly onError: (error: unknown) => void;
  private shared = new Map<string, FleetStatus>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    cluster: ClusterNode,
    local: () => ReadonlyMap<string, FleetStatus>,
    opts: { everyMs: number; onError: (error: unknown) => void },
  ) {
    this.cluster = cluster;
    this.local = local;
    this.everyMs = opts.everyMs;
    this.onError = opts.onError;
  }

  status(endpointId: string): FleetStatus {
    return (this.cluster.isLeader ? this.local().get(endpointId) : this.shared.get(endpointId)) ?? NO_FLEET_STATUS;
  }

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async tick(): Promise<void> {
    try {
      if (this.cluster.isLeader) await this.cluster.shareFleetStatus(worthSharing(this.local()));
      else this.shared = await this.cluster.sharedFleetStatus();
    } catch (error) {
      // The database is away: followers keep showing what they read last; the next tick tries again.
      this.onError(error);
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.everyMs);
  }
}

/** Only statuses that say something: an endpoint without one reads as NO_FLEET_STATUS on every node. */
function worthSharing(statuses: ReadonlyMap<string, FleetStatus>): Map<string, FleetStatus> {
  return new Map([...statuses].filter(([, s]) => s.reason !== null || s.throttled > 0));
}
