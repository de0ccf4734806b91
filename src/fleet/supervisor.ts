import { randomBytes } from 'node:crypto';
import { cpuWorkerSize, newWorkerId, type Endpoint, type Template, type WorkerRecord } from '../domain/index.ts';
import { coerceError } from '../errors/index.ts';
import {
  hashKey,
  MissingSecretsError,
  topics,
  usageOf,
  type Accounts,
  type Clock,
  type JobEngine,
  type WorkerGateway,
} from '../engine/index.ts';
import type { SharedFleetStatus, Store } from '../store/index.ts';
import { decideScaling, surgeAllowance, type ScalingDecision, type StopReason, type WorkerView } from './autoscaler.ts';
import { decideBackoff, healthyFrom, recordFailure, type BackoffDecision, type StartHistory } from './backoff.ts';
import type { Executor, RunningWorker } from './executors/types.ts';
import { parseGpuIds, type GpuInventory, type GpuRequest } from './gpus.ts';
import type { LogBook } from './logs.ts';
import { secretReferences, workerEnv } from './worker-env.ts';

export interface SupervisorOptions {
  publicUrl: string;
  pingIntervalMs: number;
  /** SIGTERM → SIGKILL grace when stopping a worker. */
  graceMs: number;
  /** A worker that made no request this long after it was started is replaced. */
  initTimeoutMs: number;
  tickMs: number;
  dataCenterId: string;
  maxAttempts: number;
  /** Where network volumes live (process executor), for RUNPOD_VOLUME_PATH. */
  volumeDir: (volumeId: string) => string;
  /** The node's memory cap per worker in MiB (`--worker-memory-mb`; 0 or absent: none), for RUNPOD_MEM_GB. */
  workerMemoryMb?: number;
}

export interface SupervisorDeps {
  store: Store;
  engine: JobEngine;
  gateway: WorkerGateway;
  accounts: Accounts;
  executor: Executor;
  inventory: GpuInventory;
  logs: LogBook;
  clock: Clock;
  /** Decrypts a template's container registry auth for executors that pull images (Docker, Kubernetes). */
  registryAuths?: { credentials(userId: string, id: string): Promise<{ username: string; password: string }> };
  /**
   * The owner's secret values by name, for `{{ RUNPOD_SECRET_<name> }}` in template and endpoint env; rejects naming
   * the secrets the owner does not have. Absent: every reference is missing.
   */
  secrets?: { values(userId: string, names: Iterable<string>): Promise<Map<string, string>> };
}

/**
 * Why an endpoint's queued jobs wait, machine-readable (and a message for people), and the workers wanted but not
 * started. The shape the cluster shares between nodes (store/types-cluster.ts).
 */
export type FleetStatus = SharedFleetStatus;

/** Nothing to explain: no status for the endpoint. */
export const NO_FLEET_STATUS: FleetStatus = Object.freeze({ throttled: 0, unhealthy: 0, reason: null, message: null });

/** The supervisor's view of one worker it started: a small state machine (STYLE.md habit 11). */
interface Managed {
  id: string;
  endpointId: string;
  version: number;
  /** Null until the executor's start resolved (an image pull may take minutes), or for good if it failed. */
  handle: RunningWorker | null;
  startedAt: number;
  /** When the executor's start resolved: the init timeout counts from here, not from before an image pull. */
  launchedAt: number | null;
  /** The executor's start while it runs (never rejects); a stop waits for it, to stop the process it makes. */
  launching: Promise<void> | null;
  readyAt: number | null;
  idleSince: number | null;
  stopping: boolean;
  standby: boolean;
  /** Since when it is a FlashBoot standby (null when not one): the oldest makes way first. */
  standbySince: number | null;
  gpuTypeId: string;
  lastLines: string[];
  /** A rolling update's replacement: the outdated worker it takes over from once it is up. */
  replaces: string | null;
}

const DEAD_RECORD_KEEP_MS = 30_000;
/** The stop reason of a server shutdown (shown on the worker record and in the requeued jobs). */
const SHUTTING_DOWN = 'server shutting down';

/** How often the polls of a worker being stopped are answered (stopWorker). */
const RELEASE_EVERY_MS = 1000;

/**
 * Starts and stops workers so that each endpoint has what the autoscaler decides: scale from zero on demand,
 * workersMin kept warm, workersMax respected, idle workers stopped after idleTimeout, crash loops backed off,
 * outdated workers rolled. Workers are only started and stopped here; everything else goes through the protocol.
 */
export class Supervisor {
  private readonly d: SupervisorDeps;
  private readonly o: SupervisorOptions;
  private readonly managed = new Map<string, Managed>();
  private readonly history = new Map<string, StartHistory>();
  /** The endpoint version each history belongs to: a changed endpoint (a fixed template) starts with a clean slate. */
  private readonly historyVersion = new Map<string, number>();
  /** Endpoints whose last start failed for a missing secret → the owner, whose next secret retries them. */
  private readonly lackingSecret = new Map<string, string>();
  /** Per such owner, the subscription to their secret creations (topics.secrets), on any node. */
  private readonly secretSubscriptions = new Map<string, () => void>();
  private readonly statuses = new Map<string, FleetStatus>();
  /** Per endpoint, the most serving workers it has had since its version last changed (decideScaling's memory). */
  private readonly largestServing = new Map<string, { version: number; count: number }>();
  private readonly dirty = new Set<string>();
  /**
   * Cold endpoints whose last pass found normal jobs queued and still left them without a live worker (no capacity, a
   * crash backoff, workersMax 0, a missing secret). One more job changes none of that, so its queue wake-up starts no
   * pass: a stream of them ran full passes back to back. What does change it pokes by itself (a stop, an endpoint
   * change, a secret), the clock has the periodic pass, and every pass reconciles endpoints with jobs.
   */
  private readonly coldWaiting = new Set<string>();
  /** Stops begun by a pass and not over yet (stopSoon); shutdown waits for them. */
  private readonly pendingStops = new Set<Promise<void>>();
  /** Per endpoint, why its last executor start failed, until a pass reports it. */
  private readonly launchErrors = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private immediate = false;
  private stopped = true;
  /** Between start() and stop(): both are idempotent, as a multi-node leader may gain and lose the role repeatedly. */
  private active = false;
  private unsubscribe: (() => void) | undefined;
  onError: (error: unknown) => void = () => {};
  /** A started worker made its first request `ms` after it was started (metrics). Must not throw. */
  onColdStart: (endpointId: string, ms: number) => void = () => {};

  constructor(deps: SupervisorDeps, opts: SupervisorOptions) {
    this.d = deps;
    this.o = opts;
  }

  /** Clean up what a previous run left (processes and records), then start reconciling. */
  async start(): Promise<void> {
    if (this.active) return;
    this.active = true;
    // From an earlier spell as leader (multi-node): stale until this one's passes describe the endpoints again.
    this.statuses.clear();
    this.coldWaiting.clear();
    await this.d.executor.cleanupOrphans();
    for (const w of await this.d.store.listWorkers()) {
      if (!w.managed) continue;
      this.d.gateway.announce(
        // Not the job's fault, nor the worker's: a crash loop of the server must not use up the jobs' attempts.
        await this.d.store.releaseWorkerJobs(w.id, this.d.clock.now(), null, 'server restarted'),
      );
      await this.d.store.recordUsageEnd(w.id, w.lastSeenAt); // billing: a previous run's worker ended unseen
      await this.d.store.deleteWorker(w.id);
    }
    this.stopped = false;
    // Jobs queued on any node: a job submitted on another node than the leader's comes as a delivered wake-up.
    this.unsubscribe = this.d.engine.bus.onWake((topic) => {
      if (!topic.startsWith('queue:')) return;
      const endpointId = topic.slice('queue:'.length);
      // Only a cold endpoint needs an immediate pass; warm workers pick the job up themselves.
      if (!this.coldWaiting.has(endpointId) && this.liveCount(endpointId) === 0) this.poke(endpointId);
    });
    this.schedule(0);
  }

  /** Stop every worker (SIGTERM, then SIGKILL after the grace), hand back their jobs, forget them. */
  async stop(): Promise<void> {
    if (!this.active) return;
    this.active = false;
    this.stopped = true;
    this.unsubscribe?.();
    this.lackingSecret.clear();
    this.unsubscribeSecretsNoneLacks();
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    // Every process is stopped even when the store cannot record it (a leader that lost its database), one still
    // starting once the executor's start settles.
    const stops = await Promise.allSettled(
      [...this.managed.values()].map((m) => this.stopWorker(m, SHUTTING_DOWN, { serverShutdown: true })),
    );
    await this.d.executor.stopAll({ graceMs: this.o.graceMs });
    // Stops begun by passes before this one (their bookkeeping: jobs handed back, usage closed).
    await Promise.allSettled([...this.pendingStops]);
    for (const r of stops) if (r.status === 'rejected') this.onError(r.reason);
  }

  status(endpointId: string): FleetStatus {
    return this.statuses.get(endpointId) ?? NO_FLEET_STATUS;
  }

  /** Every endpoint's status as of the last passes (shared with the other nodes: fleet/shared-status.ts). */
  allStatuses(): ReadonlyMap<string, FleetStatus> {
    return this.statuses;
  }

  /**
   * The user created a secret (on any node: the bus topic crosses nodes): their endpoints whose last start failed for
   * a missing secret have their failures forgiven and are reconciled now, instead of after a backoff of up to a
   * minute. Failures for any other cause keep their backoff.
   */
  private secretCreated(userId: string): void {
    for (const [endpointId, owner] of this.lackingSecret) {
      if (owner !== userId) continue;
      this.lackingSecret.delete(endpointId);
      this.history.delete(endpointId);
      this.poke(endpointId);
    }
    this.unsubscribeSecretsNoneLacks();
  }

  /** The endpoint no longer waits for a secret (it failed otherwise, changed, or is gone). */
  private stopWaitingForSecret(endpointId: string): void {
    this.lackingSecret.delete(endpointId);
    this.unsubscribeSecretsNoneLacks();
  }

  /** Drop the subscriptions to secret creations of users none of whose endpoints lacks a secret any more. */
  private unsubscribeSecretsNoneLacks(): void {
    const owners = new Set(this.lackingSecret.values());
    for (const [owner, unsubscribe] of this.secretSubscriptions) {
      if (owners.has(owner)) continue;
      unsubscribe();
      this.secretSubscriptions.delete(owner);
    }
  }

  /** Reconcile an endpoint now (an endpoint changed, a job arrived at a cold endpoint). */
  poke(endpointId: string): void {
    this.dirty.add(endpointId);
    if (this.immediate || this.stopped) return;
    this.immediate = true;
    setImmediate(() => {
      this.immediate = false;
      if (!this.running) this.schedule(0);
    });
  }

  private liveCount(endpointId: string): number {
    let n = 0;
    for (const m of this.managed.values()) if (m.endpointId === endpointId && !m.stopping) n++;
    return n;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick()
        .catch((error: unknown) => this.onError(error))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.dirty.size > 0 ? 0 : this.o.tickMs);
        });
    }, delay);
  }

  private async tick(): Promise<void> {
    const ids = new Set<string>(this.dirty);
    this.dirty.clear();
    for (const m of this.managed.values()) ids.add(m.endpointId);
    for (const id of await this.d.store.activeEndpointIds()) ids.add(id);
    for (const e of await this.d.store.listEndpoints(null)) if (e.workersMin > 0) ids.add(e.id);
    // Workers wanted at the last pass (for jobs since cancelled, purged or expired): one more pass says they are not.
    for (const [id, s] of this.statuses) if (s.throttled > 0 || s.unhealthy > 0) ids.add(id);
    for (const id of ids) {
      try {
        await this.reconcile(id);
      } catch (error) {
        this.onError(error);
      }
    }
    await this.pruneDeadRecords();
  }

  private async reconcile(endpointId: string): Promise<void> {
    const now = this.d.clock.now();
    const endpoint = await this.d.store.getEndpoint(null, endpointId);
    const mine = [...this.managed.values()].filter((m) => m.endpointId === endpointId && !m.stopping);
    if (!endpoint) {
      this.forget(endpointId, mine);
      return;
    }
    // Failures of the previous version say nothing about this one: without the reset, fixing a crash-looping
    // template would still wait out the backoff (up to 60 s) and report the old crash loop for 30 s more.
    if (this.historyVersion.get(endpointId) !== endpoint.version) {
      this.history.delete(endpointId);
      this.historyVersion.set(endpointId, endpoint.version);
      this.stopWaitingForSecret(endpointId);
    }
    const [snapshot, load, records] = await Promise.all([
      this.d.store.queueSnapshot(endpointId),
      this.d.store.runningByWorker(endpointId),
      this.d.store.listWorkers(endpointId),
    ]);
    const request = gpuRequest(endpoint);
    // Placement limits are checked when a worker starts (allocate) and, as the endpoint may have changed since, at
    // every pass for the workers already running: the same rule.
    const refusal = this.d.inventory.placementRefusal(request);
    const views = await this.viewsOf(endpoint, mine, records, load, now, refusal);
    // A standby of this endpoint holds its GPUs for this endpoint's next start (startPlanned serves with it first).
    const ownStandbys = mine.filter((m) => m.standby && !m.stopping && m.version === endpoint.version).map((m) => m.id);
    const capacity = this.d.inventory.capacityFor(request, new Set(ownStandbys));
    // Workers still stopping hold their process (and GPU) until they are gone: workersMax counts them.
    let stopping = 0;
    for (const m of this.managed.values()) if (m.endpointId === endpointId && m.stopping) stopping++;
    const decision = decideScaling(
      {
        workersMin: endpoint.workersMin,
        workersMax: endpoint.workersMax,
        idleTimeoutS: endpoint.idleTimeout,
        scalerType: endpoint.scalerType,
        scalerValue: endpoint.scalerValue,
        version: endpoint.version,
      },
      {
        inQueue: snapshot.inQueue,
        inQueueLowPriority: snapshot.inQueueLowPriority,
        inProgress: snapshot.inProgress,
        inProgressLowPriority: snapshot.inProgressLowPriority,
        oldestQueuedAgeMs: snapshot.oldestQueuedAt === null ? null : now - snapshot.oldestQueuedAt,
      },
      views,
      capacity,
      { holding: stopping, largestServing: this.noteServing(endpoint, views) },
    );
    await this.applyLeaves(endpoint, mine, decision, now);
    const started = await this.startPlanned(endpoint, request, mine, views, decision, now);
    if (started.throttled > 0 && refusal === null) this.standbysMakeWay(endpoint.id, request);
    if (snapshot.inQueue > 0 && this.liveCount(endpointId) === 0) this.coldWaiting.add(endpointId);
    else this.coldWaiting.delete(endpointId);
    this.statuses.set(
      endpointId,
      this.describe(
        endpoint,
        snapshot.inQueue + snapshot.inQueueLowPriority,
        views,
        started,
        started.backoff,
        started.startError,
        refusal,
        capacity,
        request,
        snapshot.inQueue === 0 && snapshot.inQueueLowPriority > 0,
      ),
    );
  }

  /** A deleted endpoint: its workers stop; once the last is gone, what was kept about it goes too. */
  private forget(endpointId: string, mine: Managed[]): void {
    this.coldWaiting.delete(endpointId);
    for (const m of mine) this.stopSoon(m, 'endpoint deleted');
    // Once the last stop is over (each ends with another pass): a stopped worker's last lines are in by then, and
    // nobody can ask for them any more.
    if ([...this.managed.values()].some((m) => m.endpointId === endpointId)) return;
    this.d.logs.drop(endpointId);
    this.statuses.delete(endpointId);
    this.largestServing.delete(endpointId);
    this.history.delete(endpointId);
    this.historyVersion.delete(endpointId);
    this.stopWaitingForSecret(endpointId);
  }

  /**
   * The autoscaler's view of this node's workers of the endpoint. On the way, workers that must go whatever the
   * autoscaler decides are stopped: retired ones without jobs, ready ones silent past their lease, unwanted standbys;
   * and those the endpoint's placement limits no longer allow here (`refusal`) are retired.
   */
  private async viewsOf(
    endpoint: Endpoint,
    mine: Managed[],
    records: WorkerRecord[],
    load: Record<string, number>,
    now: number,
    refusal: string | null,
  ): Promise<WorkerView[]> {
    const byId = new Map(records.map((r) => [r.id, r]));
    const views: WorkerView[] = [];
    for (const m of mine) {
      let record = byId.get(m.id);
      const running = load[m.id] ?? 0;
      await this.observe(m, record, running, now);
      if (m.stopping) continue;
      if (record?.retired && refusal === null && m.version === endpoint.version && retiredForPlacement(record)) {
        await this.reinstate(m, now);
        record = { ...record, retired: false, retiredAt: null, reason: null };
      }
      if (record?.retired && running === 0) {
        this.stopSoon(m, record.reason ?? 'retired');
        continue;
      }
      if (m.readyAt !== null && record?.state === 'unhealthy' && record.reason === 'lease-expired') {
        // Alive as a process but silent past its lease (hung, stopped, deadlocked): the sweeper gave its jobs back,
        // and it would hold its slot (and GPU) for good. Stopped, so that a replacement can start.
        this.stopSoon(m, 'lease-expired: the worker stopped renewing its lease');
        continue;
      }
      if (m.standby) {
        // A standby is kept only while it could serve the endpoint as it is now; otherwise nothing would ever stop
        // it (it is not among the workers the autoscaler sees).
        const unwanted =
          m.version !== endpoint.version ? 'outdated-version' : (neverPlaceable(refusal) ?? standbyUnwanted(endpoint));
        if (unwanted) this.stopSoon(m, unwanted);
        continue;
      }
      let retiring = record?.retired === true;
      if (!retiring && refusal !== null) {
        await this.retireMisplaced(m, refusal, now);
        retiring = true;
      }
      views.push({
        id: m.id,
        state: m.readyAt === null ? 'initializing' : running > 0 ? 'running' : 'idle',
        version: m.version,
        idleForMs: m.readyAt !== null && running === 0 && m.idleSince !== null ? now - m.idleSince : 0,
        runningJobs: running,
        retiring,
        ...(retiring && record !== undefined && retiredAboveMax(record) ? { retiredFor: 'above-max' as const } : {}),
        replaces: m.replaces,
      });
    }
    return views;
  }

  /**
   * A worker whose endpoint no longer allows this node (its dataCenterIds or CUDA limits were changed) takes no new
   * job; its jobs finish, and the pass that sees it without jobs stops it. Not a new version: workers the change
   * still allows keep running, and the autoscaler starts no replacement here (capacity is 0 while refused).
   */
  private async retireMisplaced(m: Managed, refusal: string, now: number): Promise<void> {
    const reason = `${neverPlaceable(refusal)}; finishing its jobs`.slice(0, 500);
    await this.d.store.markWorker(m.id, now, { retired: true, reason });
  }

  /**
   * A retired worker whose retirement no longer holds serves again: one retired by retireMisplaced whose endpoint
   * allows this node again, or one the autoscaler retired beyond workersMax that has room again (decision.reinstate),
   * both while it finished its jobs. A restart would cost a cold start (a model load) for nothing.
   */
  private async reinstate(m: Managed, now: number): Promise<void> {
    await this.d.store.markWorker(m.id, now, { retired: false, reason: null });
    // Its take, if one waits, looked at the worker while it was retired: woken, it reads it again and takes jobs.
    this.d.engine.bus.publish(topics.queue(m.endpointId));
  }

  /** The most serving workers the endpoint has had since its version last changed, this pass's included. */
  private noteServing(endpoint: Endpoint, views: WorkerView[]): number {
    const servingNow = views.filter((v) => !v.retiring).length;
    const largest = this.largestServing.get(endpoint.id);
    const count = largest?.version === endpoint.version ? Math.max(largest.count, servingNow) : servingNow;
    this.largestServing.set(endpoint.id, { version: endpoint.version, count });
    return count;
  }

  /** Stops (or FlashBoot standbys) and retirements the decision names. */
  private async applyLeaves(
    endpoint: Endpoint,
    mine: Managed[],
    decision: ScalingDecision,
    now: number,
  ): Promise<void> {
    // A pass sees a worker's running jobs, not the ones it served between two passes: one taking a short job every
    // few seconds would look idle all along, and be stopped and cold-started again every idleTimeout.
    const idleMs = endpoint.idleTimeout * 1000;
    const finished = decision.stop.some((s) => s.reason === 'idle-timeout')
      ? await this.d.store.lastFinishByWorker(endpoint.id, now - idleMs)
      : {};
    for (const s of decision.stop) {
      const m = this.managed.get(s.workerId);
      if (!m) continue;
      const lastJob = finished[m.id];
      if (s.reason === 'idle-timeout' && lastJob !== undefined && lastJob > (m.idleSince ?? 0)) {
        m.idleSince = lastJob; // idle since its last job: the timeout starts again from there
        continue;
      }
      const keepAsStandby =
        endpoint.flashboot &&
        s.reason === 'idle-timeout' &&
        !mine.some((x) => x.standby && x.version === endpoint.version) &&
        m.version === endpoint.version;
      if (keepAsStandby) await this.toStandby(m);
      else this.stopSoon(m, s.reason, { ifIdle: true });
    }
    // Retired workers (outdated, or busy beyond workersMax) take no new job from now on; the pass that sees one without
    // jobs stops it.
    for (const r of decision.retire) {
      await this.d.store.markWorker(r.workerId, now, { retired: true, reason: retiredReason(r.reason) });
    }
    for (const id of decision.reinstate) {
      const m = this.managed.get(id);
      if (m && !m.stopping) await this.reinstate(m, now);
    }
  }

  /** The starts the decision asks for, as far as standbys, workersMax, the backoff and probing allow. */
  private async startPlanned(
    endpoint: Endpoint,
    request: GpuRequest,
    mine: Managed[],
    views: WorkerView[],
    decision: ScalingDecision,
    now: number,
  ): Promise<{
    throttled: number;
    held: number;
    unhealthy: number;
    startError: string | null;
    backoff: BackoffDecision;
  }> {
    // Plain starts, then surge starts each naming the outdated worker it replaces.
    const plan: Array<string | null> = [
      ...Array.from({ length: decision.start - decision.surge }, () => null),
      ...decision.surgeFor,
    ];
    // FlashBoot: a standby of the current version becomes a worker again instead of a cold start.
    for (const m of mine) {
      if (plan.length === 0) break;
      if (m.standby && m.version === endpoint.version) {
        m.replaces = plan.shift() ?? null;
        await this.fromStandby(m);
      }
    }
    // The decision counted the stopping workers; this only guards against a stop that began during this pass.
    let alive = 0;
    for (const m of this.managed.values()) if (m.endpointId === endpoint.id && !m.standby) alive++;
    const surgeRoom = decision.surge > 0 ? surgeAllowance(endpoint.workersMax) : 0;
    const room = Math.max(0, endpoint.workersMax + surgeRoom - alive);
    const held = decision.held + Math.max(0, plan.length - room);
    plan.splice(room);
    const backoff = decideBackoff(this.historyOf(endpoint.id), now);
    let throttled = decision.throttled;
    // Starts the backoff holds back (failures since the last healthy worker): shown as unhealthy, not throttled.
    let unhealthy = 0;
    let startError: string | null = null;
    // After start failures, while no worker of this version is up, one probe at a time: a broken image then costs
    // one process per backoff window, not workersMax of them. Once one is up, the image works: starts are free again
    // (a crash of a worker that had served for hours must not hold a burst to one start at a time).
    const up = views.some((v) => v.state !== 'initializing' && v.version === endpoint.version);
    const probing = backoff.consecutiveFailures > 0 && !up;
    const probeInFlight = probing && views.some((v) => v.state === 'initializing' && v.version === endpoint.version);
    if (plan.length > 0 && backoff.allowed && !probeInFlight) {
      const starts = probing ? 1 : plan.length;
      unhealthy += plan.length - starts;
      for (let i = 0; i < starts; i++) {
        const result = await this.startWorker(endpoint, request, plan[i] ?? null);
        if (result !== 'ok') {
          throttled += starts - i;
          startError = result;
          break;
        }
      }
    } else {
      // Not allowed by the backoff, or a probe is starting: either way after failures.
      unhealthy += plan.length;
    }
    // A start that failed in the executor since the last pass (launch) is reported once, as one made now would be.
    startError ??= this.launchErrors.get(endpoint.id) ?? null;
    this.launchErrors.delete(endpoint.id);
    return { throttled, held, unhealthy, startError, backoff };
  }

  /** Track readiness and idleness of a managed worker from its record and its running jobs. */
  private async observe(m: Managed, record: WorkerRecord | undefined, running: number, now: number): Promise<void> {
    if (m.stopping) return;
    if (m.readyAt === null && record && record.lastSeenAt > record.createdAt) {
      m.readyAt = now;
      m.idleSince = now;
      this.onColdStart(m.endpointId, record.lastSeenAt - m.startedAt);
      const h = this.historyOf(m.endpointId);
      this.history.set(m.endpointId, healthyFrom(h, now));
      if (record.state === 'initializing') await this.d.store.touchWorker(m.id, record.lastSeenAt, { state: 'idle' });
    }
    if (m.readyAt === null && m.launchedAt !== null && now - m.launchedAt > this.o.initTimeoutMs) {
      this.fail(
        m.endpointId,
        `worker ${m.id} did not become ready within ${Math.round(this.o.initTimeoutMs / 1000)} s`,
        now,
      );
      this.stopSoon(m, 'initialization timeout');
      return;
    }
    if (running > 0) {
      m.idleSince = null;
      if (m.standby) await this.fromStandby(m);
    } else if (m.idleSince === null) {
      m.idleSince = now;
    }
  }

  private async startWorker(endpoint: Endpoint, request: GpuRequest, replaces: string | null): Promise<'ok' | string> {
    const template = await this.d.store.getTemplate(endpoint.userId, endpoint.templateId);
    if (!template) return `template ${endpoint.templateId} of endpoint ${endpoint.id} no longer exists`;
    // The owner as well as the image: a setting that trusted every user may have been taken back since.
    const owner = await this.d.store.getUser(endpoint.userId);
    const problem = this.d.executor.validateImage(template.imageName, { isAdmin: owner?.isAdmin ?? false });
    if (problem) return problem;
    const id = newWorkerId();
    const gpu = this.d.inventory.allocate(id, request);
    if (!gpu.ok) return gpu.message;
    const now = this.d.clock.now();
    const key = `wharfw_${randomBytes(24).toString('base64url')}`;
    const record: WorkerRecord = {
      id,
      endpointId: endpoint.id,
      keyHash: hashKey(key),
      version: endpoint.version,
      managed: true,
      state: 'initializing',
      reason: null,
      gpuTypeId: gpu.gpuTypeId || null,
      gpuCount: gpu.indices.length,
      createdAt: now,
      lastSeenAt: now,
      retired: false,
      retiredAt: null,
    };
    try {
      await this.d.store.upsertWorker(record);
      await this.d.store.recordUsageStart(usageOf(endpoint, template, record, this.o.dataCenterId)); // billing
    } catch (error) {
      // No worker will run on these GPUs: without this they stay held by an id that never ran, until a restart.
      this.d.inventory.release(id);
      throw error;
    }
    const m: Managed = {
      id,
      endpointId: endpoint.id,
      version: endpoint.version,
      handle: null,
      startedAt: now,
      launchedAt: null,
      launching: null,
      readyAt: null,
      idleSince: null,
      stopping: false,
      standby: false,
      standbySince: null,
      gpuTypeId: gpu.gpuTypeId,
      lastLines: [],
      replaces,
    };
    this.managed.set(id, m);
    // Beside the pass, as stops are: an image pull may take minutes, and every other endpoint's scaling (and this
    // one's stops) would wait for it.
    const launch = this.launch(m, endpoint, template, key, gpu)
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        m.launching = null;
        this.poke(endpoint.id);
      });
    m.launching = launch;
    return 'ok';
  }

  /** The executor's part of a start; a failure is counted against the endpoint and reported by its next pass. */
  private async launch(
    m: Managed,
    endpoint: Endpoint,
    template: Template,
    key: string,
    gpu: { gpuTypeId: string; indices: string[] },
  ): Promise<void> {
    const id = m.id;
    const volumeId = endpoint.networkVolumeId ?? endpoint.networkVolumeIds[0];
    const cpu = cpuWorkerSize(endpoint);
    try {
      const authId = template.containerRegistryAuthId;
      const registryAuth =
        authId && this.d.registryAuths ? await this.d.registryAuths.credentials(endpoint.userId, authId) : undefined;
      // Resolved at every start: a missing secret fails this start, counted by the backoff like a crash.
      const referenced = secretReferences(template.env, endpoint.env);
      const secrets =
        referenced.size > 0 && this.d.secrets ? await this.d.secrets.values(endpoint.userId, referenced) : undefined;
      const handle = await this.d.executor.start(
        {
          workerId: id,
          endpointId: endpoint.id,
          imageName: template.imageName,
          entrypoint: template.dockerEntrypoint,
          startCmd: template.dockerStartCmd,
          env: workerEnv({
            publicUrl: this.o.publicUrl,
            endpoint,
            template,
            workerId: id,
            workerKey: key,
            pingIntervalMs: this.o.pingIntervalMs,
            gpuTypeId: gpu.gpuTypeId,
            gpuIndices: gpu.indices,
            dataCenterId: this.o.dataCenterId,
            memoryCapMb: this.o.workerMemoryMb,
            volumePath: volumeId ? this.o.volumeDir(volumeId) : undefined,
            secrets,
          }),
          gpuIndices: gpu.indices,
          ...(cpu ? { cpu } : {}),
          ...(volumeId ? { volumePath: this.o.volumeDir(volumeId), volumeId } : {}),
          ...(registryAuth ? { registryAuth } : {}),
          containerDiskInGb: template.containerDiskInGb,
          flashboot: endpoint.flashboot,
          gpuTypeId: gpu.gpuTypeId,
          dataCenterIds: endpoint.dataCenterIds,
          allowedCudaVersions: endpoint.allowedCudaVersions,
          minCudaVersion: endpoint.minCudaVersion,
        },
        {
          onLog: (stream, line) => {
            this.d.logs.append(endpoint.id, id, stream, line);
            if (stream === 'stderr' || m.lastLines.length < 5) {
              m.lastLines.push(line);
              if (m.lastLines.length > 5) m.lastLines.shift();
            }
          },
          onExit: (info) => {
            this.exited(m, info).catch((error: unknown) => this.onError(error));
          },
        },
      );
      m.handle = handle;
      m.launchedAt = this.d.clock.now();
    } catch (error) {
      // Stopped meanwhile (endpoint deleted, server shutting down): stopWorker does the bookkeeping, and a start
      // given up on says nothing about the image.
      if (m.stopping) return;
      const now = this.d.clock.now();
      const message = coerceError(error).message;
      // Counted before the worker leaves `managed`, as in exited(): a pass in between must see one or the other.
      this.fail(endpoint.id, message, now, error instanceof MissingSecretsError ? endpoint.userId : undefined);
      this.launchErrors.set(endpoint.id, message);
      this.managed.delete(id);
      this.d.inventory.release(id);
      await this.d.store.recordUsageEnd(id, now); // billing
      await this.d.store.touchWorker(id, now, {
        state: 'unhealthy',
        reason: `failed to start: ${message}`.slice(0, 500),
      });
    }
  }

  /** A worker process ended. Unless we stopped it, that is a crash: its jobs go back to the queue, backoff counts it. */
  private async exited(m: Managed, info: { code: number | null; signal: string | null }): Promise<void> {
    this.d.inventory.release(m.id);
    const now = this.d.clock.now();
    await this.d.store.recordUsageEnd(m.id, now); // billing: the process is gone, stopped or not
    const h = this.historyOf(m.endpointId);
    if (h.lastHealthy && h.lastHealthy.untilMs === null)
      this.history.set(m.endpointId, { ...h, lastHealthy: { ...h.lastHealthy, untilMs: now } });
    if (m.stopping) return;
    // A clean exit after stopPod/refresh_worker is the worker recycling itself, not a failure. Read the record
    // before our own update below marks it retired too.
    const record = await this.d.store.getWorker(m.id);
    // The supervisor saw the retirement meanwhile and stopped the worker itself: stopWorker did the bookkeeping.
    if (m.stopping) return;
    const how = info.signal ? `was killed by ${info.signal}` : `exited with code ${info.code}`;
    const last = m.lastLines[m.lastLines.length - 1];
    const reason = `worker ${how}${last ? `: ${last}` : ''}`.slice(0, 500);
    // Counted before the worker leaves `managed`: a pass in between would otherwise see neither the worker nor the
    // failure, and start a replacement at once, bypassing the backoff.
    if (!(info.code === 0 && record?.retired)) this.fail(m.endpointId, reason, now);
    this.managed.delete(m.id);
    await this.d.store.touchWorker(m.id, now, { state: 'unhealthy', reason, retired: true });
    this.d.gateway.announce(await this.d.store.releaseWorkerJobs(m.id, now, this.o.maxAttempts, reason));
    this.poke(m.endpointId);
  }

  /**
   * Stop a worker without holding up the pass: a stop may wait out the shutdown grace (a job finishing, a process
   * that ignores SIGTERM), and every other endpoint's scaling would wait with it. The worker counts as stopping at
   * once; when it is gone, its endpoint gets another pass (a replacement, the logs of a deleted endpoint).
   */
  private stopSoon(m: Managed, reason: string, how: { ifIdle?: boolean } = {}): void {
    const stop = this.stopWorker(m, reason, how)
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.pendingStops.delete(stop);
        this.poke(m.endpointId);
      });
    this.pendingStops.add(stop);
  }

  /**
   * `serverShutdown`: the server's own doing (a deploy), so the jobs it interrupts keep their attempts. `ifIdle`: the
   * autoscaler chose it as idle from the pass's snapshot; a job handed to it since then is finished first (retired,
   * it takes no other, and the pass that sees it without jobs stops it).
   */
  private async stopWorker(
    m: Managed,
    reason: string,
    how: { serverShutdown?: boolean; ifIdle?: boolean } = {},
  ): Promise<void> {
    if (m.stopping) return;
    m.stopping = true;
    if (how.ifIdle === true) {
      let busy: boolean;
      try {
        await this.d.store.markWorker(m.id, this.d.clock.now(), { retired: true, reason });
        // Retired first: a take cannot hand it a job after this read (store takeJobs reads the flag in its write).
        busy = (await this.d.store.workerJobIds(m.id)).length > 0;
      } catch (error) {
        m.stopping = false; // not stopped: the next pass decides again
        throw error;
      }
      if (busy) {
        m.stopping = false;
        return;
      }
    }
    try {
      if (how.ifIdle !== true) await this.d.store.markWorker(m.id, this.d.clock.now(), { retired: true, reason });
      // Still starting: the process exists once the executor's start settles (its GPUs stay held until then).
      if (m.launching) await m.launching;
      const stopped = m.handle?.stop({ graceMs: this.o.graceMs, keep: reason === 'idle-timeout' });
      // The official SDK exits on SIGTERM only once its in-flight long polls have returned (spec §1.3): held to their
      // end (takeWaitMs), they would outlast the grace and the worker be killed. They are answered now, and each
      // second until it is gone, as a poll it sent before the signal reached it is held again.
      this.d.gateway.release(m.id);
      const releasing = setInterval(() => this.d.gateway.release(m.id), RELEASE_EVERY_MS);
      try {
        await stopped;
      } finally {
        clearInterval(releasing);
      }
    } finally {
      this.managed.delete(m.id);
      this.d.inventory.release(m.id);
      // Jobs still held (the worker died before posting) go back to the queue rather than wait for the lease.
      this.d.gateway.announce(
        await this.d.store.releaseWorkerJobs(
          m.id,
          this.d.clock.now(),
          // A job that outlived the grace of a server shutdown (a deploy) is not charged an attempt for it.
          how.serverShutdown === true ? null : this.o.maxAttempts,
          `worker stopped (${reason})`,
        ),
      );
      await this.d.store.recordUsageEnd(m.id, this.d.clock.now()); // billing (when exited() did not already)
      await this.d.store.deleteWorker(m.id);
      this.d.gateway.forget(m.id);
      this.d.accounts.invalidate();
    }
  }

  /**
   * A FlashBoot standby holds its GPUs for a faster next start of its endpoint, not against other endpoints: when a
   * start waits for GPUs that standbys of other endpoints hold, the oldest of them stop, as few as make room for one
   * start (none when even all of them would not). Their GPUs come free when they are gone; the pass after starts.
   */
  private standbysMakeWay(endpointId: string, request: GpuRequest): void {
    const all = [...this.managed.values()];
    // Standbys already stopping free their GPUs soon: wait for them rather than stop more.
    if (all.some((m) => m.standby && m.stopping)) return;
    const standbys = all
      .filter(
        (m) => m.standby && !m.stopping && m.endpointId !== endpointId && this.d.inventory.holdsFor(m.id, request),
      )
      .sort((a, b) => (a.standbySince ?? 0) - (b.standbySince ?? 0));
    const freed = new Set<string>();
    for (const m of standbys) {
      freed.add(m.id);
      if (this.d.inventory.capacityFor(request, freed) > 0) {
        for (const id of freed) {
          const standby = this.managed.get(id);
          if (standby) this.stopSoon(standby, `flashboot standby making way: endpoint ${endpointId} needs its GPU`);
        }
        return;
      }
    }
  }

  private async toStandby(m: Managed): Promise<void> {
    m.standby = true;
    m.standbySince = this.d.clock.now();
    await this.d.store.recordUsageEnd(m.id, this.d.clock.now()); // billing: a standby is not billed
    await this.d.store.touchWorker(m.id, this.d.clock.now(), { state: 'standby', reason: 'flashboot standby' });
  }

  private async fromStandby(m: Managed): Promise<void> {
    m.standby = false;
    m.standbySince = null;
    await this.d.store.recordUsageResume(m.id, this.d.clock.now()); // billing
    m.idleSince = this.d.clock.now();
    await this.d.store.touchWorker(m.id, this.d.clock.now(), { state: 'idle', reason: null });
  }

  private historyOf(endpointId: string): StartHistory {
    return this.history.get(endpointId) ?? { failures: [], lastHealthy: null };
  }

  /**
   * Count a failed start or a crash toward the backoff. `secretOwner`: the start failed for a missing secret of this
   * user, whose next secret retries it at once (secretCreated); any other failure waits out the backoff.
   */
  private fail(endpointId: string, error: string, now: number, secretOwner?: string): void {
    this.history.set(endpointId, recordFailure(this.historyOf(endpointId), { atMs: now, error }));
    if (secretOwner === undefined) return this.stopWaitingForSecret(endpointId);
    this.lackingSecret.set(endpointId, secretOwner);
    if (!this.secretSubscriptions.has(secretOwner)) {
      const unsubscribe = this.d.engine.bus.subscribe(topics.secrets(secretOwner), () =>
        this.secretCreated(secretOwner),
      );
      this.secretSubscriptions.set(secretOwner, unsubscribe);
    }
  }

  /** Dead managed workers stay visible (unhealthy, with their reason) for a while, then their records go. */
  private async pruneDeadRecords(): Promise<void> {
    const now = this.d.clock.now();
    for (const w of await this.d.store.listWorkers()) {
      if (w.managed && !this.managed.has(w.id) && w.state === 'unhealthy' && now - w.lastSeenAt > DEAD_RECORD_KEEP_MS) {
        await this.d.store.deleteWorker(w.id);
        this.d.gateway.forget(w.id); // as stopWorker does: the gateway's per-worker memory would grow by one per crash
      }
    }
  }

  private describe(
    endpoint: Endpoint,
    queued: number,
    views: WorkerView[],
    starts: { throttled: number; held: number; unhealthy: number },
    backoff: BackoffDecision,
    startError: string | null,
    refusal: string | null,
    capacity: number,
    request: GpuRequest,
    onlyLowPriority = false,
  ): FleetStatus {
    const { throttled, held } = starts;
    // Held starts count as throttled workers too (wanted, not running); the reason tells them apart. Starts the
    // backoff holds back are unhealthy ones: their predecessors crashed or failed to start.
    const s = (reason: string | null, message: string | null): FleetStatus => ({
      throttled: throttled + held,
      unhealthy: starts.unhealthy,
      reason,
      message,
    });
    if (backoff.crashLoop) return s('crash-loop', `workers keep failing: ${backoff.lastError ?? 'unknown error'}`);
    if (refusal !== null) return s('never-placeable', refusal);
    if (request.count > 0 && capacity === 0 && views.length === 0) {
      const placeable = this.d.inventory.allocate('__probe__', request);
      this.d.inventory.release('__probe__');
      if (!placeable.ok)
        return s(placeable.reason === 'never-placeable' ? 'never-placeable' : 'no-gpu-capacity', placeable.message);
    }
    if (startError) return s('start-failed', startError);
    if (queued === 0) return s(null, null);
    if (endpoint.workersMax === 0)
      return s('max-workers-zero', 'workersMax is 0: no worker will start; raise workersMax');
    // lowPriority jobs never make the autoscaler start a worker: without one they wait for other work to bring one.
    if (views.length === 0 && onlyLowPriority)
      return s('low-priority-waiting', 'only lowPriority jobs are queued and no worker runs; they do not start one');
    if (views.length === 0) return s('no-worker-yet', 'no worker is running yet; one is being started');
    if (views.some((v) => v.state === 'initializing')) return s('scaling-up', 'workers are starting');
    if (throttled > 0) return s('no-gpu-capacity', 'more workers are wanted but no GPU of the requested types is free');
    if (held > 0) {
      return s(
        'workers-stopping',
        'workersMax is taken by workers that are stopping or finishing their last jobs; the next starts when one is gone',
      );
    }
    if (views.length >= endpoint.workersMax)
      return s('max-workers-reached', `all ${endpoint.workersMax} workers are busy (workersMax reached)`);
    return s('all-workers-busy', 'all workers are busy');
  }
}

function standbyUnwanted(e: Endpoint): string | null {
  if (!e.flashboot) return 'flashboot turned off';
  if (e.workersMax === 0) return 'workersMax is 0';
  return null;
}

/** The reason a worker is retired (a standby stopped) with when its endpoint's placement limits forbid this node. */
function neverPlaceable(refusal: string | null): string | null {
  return refusal === null ? null : `${NEVER_PLACEABLE}${refusal}`;
}
const NEVER_PLACEABLE = 'never-placeable: ';

/** The record's reason of a worker the autoscaler retired (it finishes its jobs first). */
const retiredReason = (reason: StopReason): string => `${reason}: finishing its jobs`;

/**
 * Retired by the autoscaler beyond workersMax: busy when chosen (applyLeaves), or chosen idle and handed a job
 * meanwhile (stopWorker's ifIdle).
 */
const retiredAboveMax = (record: WorkerRecord): boolean =>
  record.reason === retiredReason('above-max') || record.reason === 'above-max';

/** Retired by retireMisplaced, for placement alone (not asked to be recycled, not outdated). */
const retiredForPlacement = (record: WorkerRecord): boolean => record.reason?.startsWith(NEVER_PLACEABLE) === true;

/** What a worker of the endpoint needs from this node; a CPU worker no GPU, but its data centers still apply. */
function gpuRequest(e: Endpoint): GpuRequest {
  if (e.computeType === 'CPU') return { count: 0, acceptableTypes: [], dataCenterIds: e.dataCenterIds };
  const types = e.gpuIds ? parseGpuIds(e.gpuIds) : e.gpuTypeIds;
  return {
    count: e.gpuCount,
    acceptableTypes: types,
    dataCenterIds: e.dataCenterIds,
    allowedCudaVersions: e.allowedCudaVersions,
    minCudaVersion: e.minCudaVersion,
  };
}
