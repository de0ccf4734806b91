/**
 * In-process wake-ups for long polls (DESIGN.md §3 "Long polls"): a waiter is armed BEFORE the store is read, so a
 * change committed between the read and the wait still wakes it (no lost wake-up, no busy polling).
 * Topics: `queue:<endpointId>` (jobs to take), `job:<jobId>` (status/stream changed), `stop:<workerId>` (stop orders),
 * `released:<workerId>` (a retired worker's polls answer now).
 * In multi-node mode a bridge forwards publish() and publishOne() to the other nodes.
 *
 * Most wake-ups go to every waiter of a topic. One new job is different: waking every idle take of its endpoint
 * would have each of them read the queue for one job (64 idle workers cost the server about twice the CPU per job
 * of one), so publishOne() wakes a single waiter — the longest-waiting of those armed with `single` — and a take
 * that was woken that way and does not answer the wake-up with a look at the queue hands it on (WorkerGateway.take).
 */
export interface Waiter {
  /** Resolves true when woken, false on timeout, abort or shutdown. */
  readonly promise: Promise<boolean>;
  /** Whether it was woken (so far): a take that returns while this is true may owe a single wake-up to another. */
  readonly woken: boolean;
  /** Stop waiting (idempotent). */
  dispose(): void;
}

type Settle = (woken: boolean) => void;
/** Told of every publish: `single` for a publishOne(). */
export type PublishListener = (topic: string, single: boolean) => void;
/** Told of every wake-up of a topic, published here or delivered from another node. */
export type WakeListener = (topic: string) => void;

export class Bus {
  private readonly topics = new Map<string, Set<Settle>>();
  /** The waiters a single wake-up may go to, per topic, in the order they were armed (a subset of `topics`). */
  private readonly singles = new Map<string, Set<Settle>>();
  private readonly listeners = new Set<PublishListener>();
  private readonly wakeListeners = new Set<WakeListener>();
  /** Standing handlers per topic (subscribe): called on every wake-up of the topic, never settled. */
  private readonly handlers = new Map<string, Set<() => void>>();
  private closed = false;

  /**
   * Arm a waiter on a topic. Call before reading the store, then await `promise` if there was nothing. `single`:
   * publishOne() may pick this waiter (a take that would look at the queue when woken).
   */
  arm(topic: string, timeoutMs: number, signal?: AbortSignal, single = false): Waiter {
    if (this.closed || signal?.aborted) return { promise: Promise.resolve(false), woken: false, dispose: () => {} };
    let settle!: Settle;
    let woken = false;
    const promise = new Promise<boolean>((resolve) => {
      let done = false;
      const onAbort = (): void => settle(false);
      const timer = setTimeout(() => settle(false), Math.max(0, timeoutMs));
      settle = (wake) => {
        if (done) return;
        done = true;
        woken = wake;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        removeFromSetOf(this.topics, topic, settle);
        if (single) removeFromSetOf(this.singles, topic, settle);
        resolve(wake);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    addToSetOf(this.topics, topic, settle);
    if (single) addToSetOf(this.singles, topic, settle);
    return {
      promise,
      get woken() {
        return woken;
      },
      dispose: () => settle(false),
    };
  }

  /** Wake every waiter of the topic, here and (through listeners) on other nodes. */
  publish(topic: string): void {
    this.deliverHere(topic);
    for (const listener of this.wakeListeners) listener(topic);
    for (const listener of this.listeners) listener(topic, false);
  }

  /**
   * Wake one `single` waiter of the topic — the one armed longest ago — here and (through listeners) on each other
   * node.
   */
  publishOne(topic: string): void {
    this.wakeOne(topic);
    for (const listener of this.wakeListeners) listener(topic);
    for (const listener of this.listeners) listener(topic, true);
  }

  /**
   * Wake the `single` waiter of the topic armed longest ago, here only (a take handing on a wake-up it owes); false
   * when there was none.
   */
  wakeOne(topic: string): boolean {
    const first = this.singles.get(topic)?.values().next();
    if (first === undefined || first.done === true) return false;
    first.value(true);
    return true;
  }

  /**
   * Deliver a wake-up that came from another node (not echoed to listeners): to every waiter, or to `singles` single
   * waiters (that many publishOne() calls there, coalesced into one notification).
   */
  deliver(topic: string, singles?: number): void {
    this.deliverHere(topic, singles);
    for (const listener of this.wakeListeners) listener(topic);
  }

  private deliverHere(topic: string, singles?: number): void {
    for (const handler of this.handlers.get(topic) ?? []) handler();
    if (singles !== undefined) {
      for (let i = 0; i < singles && this.wakeOne(topic); i++);
      return;
    }
    const set = this.topics.get(topic);
    if (!set) return;
    for (const settle of [...set]) settle(true);
  }

  /** Wake every waiter without closing (a multi-node bridge reconnected and may have missed wake-ups). */
  wakeAll(): void {
    for (const topic of new Set([...this.topics.keys(), ...this.handlers.keys()])) this.deliverHere(topic);
  }

  /**
   * Call `handler` at every wake-up of `topic`, from this node or another, and at every wakeAll (a bridge that may
   * have missed some): for state that must follow a change at once, such as cached API keys after a revocation.
   */
  subscribe(topic: string, handler: () => void): () => void {
    addToSetOf(this.handlers, topic, handler);
    return () => removeFromSetOf(this.handlers, topic, handler);
  }

  /** Told of every publish on this node (a multi-node bridge forwards them to the others). */
  onPublish(listener: PublishListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Told of every wake-up of every topic, published on this node or delivered from another (not of a wakeAll): for
   * what follows all topics of a kind wherever they are published, such as the leader's autoscaler, which starts a
   * worker at once for a job queued on any node at an endpoint that has none.
   */
  onWake(listener: WakeListener): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  waiterCount(): number {
    let n = 0;
    for (const set of this.topics.values()) n += set.size;
    return n;
  }

  /** Release every waiter (shutdown): long polls answer at once. */
  close(): void {
    this.closed = true;
    // Not woken (false): a long poll answers with what it has now and takes nothing new, e.g. a job-take returns
    // empty instead of handing a queued job to a worker while the server stops.
    for (const set of [...this.topics.values()]) for (const settle of [...set]) settle(false);
  }

  /** Whether close() ran: long polls then return at once. */
  get isClosed(): boolean {
    return this.closed;
  }
}

/** Add to the set of a key, creating it (a Set keeps insertion order: oldest first). */
export function addToSetOf<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(value);
}

/** Remove from the set of a key, dropping the set once empty. */
export function removeFromSetOf<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set?.delete(value) && set.size === 0) map.delete(key);
}

const RELEASED = 'released:';

/** The worker a `released:` topic names, or null for any other topic. */
export const releasedWorkerOf = (topic: string): string | null =>
  topic.startsWith(RELEASED) ? topic.slice(RELEASED.length) : null;

export const topics = {
  queue: (endpointId: string): string => `queue:${endpointId}`,
  job: (jobId: string): string => `job:${jobId}`,
  stop: (workerId: string): string => `stop:${workerId}`,
  /** The worker was retired: its waiting take and stop polls answer now (WorkerGateway.release). */
  released: (workerId: string): string => `${RELEASED}${workerId}`,
  /** Multi-node: the leader shared new fleet statuses (fleet/shared-status.ts). */
  fleetStatus: 'fleet-status',
  /** A key was revoked, a worker removed or a user changed: cached key resolutions are forgotten on every node. */
  accounts: 'accounts',
  /** The user created a secret, on any node: the leader retries the starts that lacked one (fleet/supervisor.ts). */
  secrets: (userId: string): string => `secrets:${userId}`,
};
