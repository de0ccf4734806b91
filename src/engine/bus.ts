/**
 * In-process wake-ups for long polls (DESIGN.md §3 "Long polls"): a waiter is armed BEFORE the store is read, so a
 * change committed between the read and the wait still wakes it (no lost wake-up, no busy polling).
 * Topics: `queue:<endpointId>` (jobs to take), `job:<jobId>` (status/stream changed), `stop:<workerId>` (stop orders).
 * In multi-node mode a bridge forwards publish() to the other nodes.
 */
export interface Waiter {
  /** Resolves true when woken, false on timeout, abort or shutdown. */
  readonly promise: Promise<boolean>;
  /** Stop waiting (idempotent). */
  dispose(): void;
}

export class Bus {
  private readonly topics = new Map<string, Set<(woken: boolean) => void>>();
  private readonly listeners = new Set<(topic: string) => void>();
  private closed = false;

  /** Arm a waiter on a topic. Call before reading the store, then await `promise` if there was nothing. */
  arm(topic: string, timeoutMs: number, signal?: AbortSignal): Waiter {
    if (this.closed || signal?.aborted) return { promise: Promise.resolve(false), dispose: () => {} };
    let settle!: (woken: boolean) => void;
    const promise = new Promise<boolean>((resolve) => {
      let done = false;
      const onAbort = (): void => settle(false);
      const timer = setTimeout(() => settle(false), Math.max(0, timeoutMs));
      settle = (woken) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const set = this.topics.get(topic);
        set?.delete(settle);
        if (set?.size === 0) this.topics.delete(topic);
        resolve(woken);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    let set = this.topics.get(topic);
    if (!set) {
      set = new Set();
      this.topics.set(topic, set);
    }
    set.add(settle);
    return { promise, dispose: () => settle(false) };
  }

  /** Wake every waiter of the topic, here and (through listeners) on other nodes. */
  publish(topic: string): void {
    this.deliver(topic);
    for (const listener of this.listeners) listener(topic);
  }

  /** Deliver a wake-up that came from another node (not echoed to listeners). */
  deliver(topic: string): void {
    const set = this.topics.get(topic);
    if (!set) return;
    for (const settle of [...set]) settle(true);
  }

  /** Wake every waiter without closing (a multi-node bridge reconnected and may have missed wake-ups). */
  wakeAll(): void {
    for (const topic of [...this.topics.keys()]) this.deliver(topic);
  }

  onPublish(listener: (topic: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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

export const topics = {
  queue: (endpointId: string): string => `queue:${endpointId}`,
  job: (jobId: string): string => `job:${jobId}`,
  stop: (workerId: string): string => `stop:${workerId}`,
};
