import { performance } from 'node:perf_hooks';
import { SecretUnreadableError, statusBody, type Clock, type JobEngine } from '../engine/index.ts';
import { coerceError } from '../errors/index.ts';
import type { Store, WebhookDelivery, WebhookDeliveryState } from '../store/index.ts';
import { webhookSecretOf } from './secrets.ts';
import { signPayload } from './signature.ts';
import { BlockedTargetError, mayReachPrivate, postWebhook, type PrivateTargets } from './targets.ts';

export interface WebhookDelivererOptions {
  /** Pause between a failed attempt and the next (interface §6: 10 s). */
  retryDelayMs: number;
  /** A receiver that has not answered by then is cut off; the attempt counts as failed. */
  timeoutMs: number;
  /** Attempts in flight at once, over all receivers. */
  concurrency: number;
  /** First attempt plus retries (interface §6: up to 2 more). */
  maxAttempts?: number;
  /** How often the store is polled for due deliveries (retries, other nodes' jobs, deliveries left by a restart). */
  pollMs?: number;
  /** How long finished deliveries stay readable in the delivery log. */
  keepMs?: number;
  /** Whose webhooks may go to private addresses (targets.ts); default admins. */
  privateTargets?: PrivateTargets;
}

/** A claim outlives the attempt's timeout by this much, so a live claimant always records before it lapses. */
const CLAIM_MARGIN_MS = 5000;
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 500;

/**
 * Delivers webhooks from the store's delivery table (rows written in the same transaction as the job's final state,
 * see store/types-webhooks.ts). Runs beside the engine, never on a request path: a terminal transition only nudges
 * it. Attempts run with bounded concurrency and a hard timeout, so slow or hanging receivers cost a slot each for at
 * most `timeoutMs` and never hold up the engine or each other beyond that.
 */
export class WebhookDeliverer {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly engine: JobEngine;
  private readonly opts: Required<WebhookDelivererOptions>;
  private stopped = true;
  private stopping: Promise<void> | undefined;
  private abort = new AbortController();
  private unsubscribe: (() => void) | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Each delivery in flight: its attempt, and its endpoint's owner (null: unknown) for the fair share (pass). */
  private readonly inFlight = new Map<string, { run: Promise<void>; owner: string | null }>();
  private lastPrune = 0;
  /** Errors are reported here, never thrown into a timer. */
  onError: (error: unknown) => void = () => {};
  /** Called after every recorded attempt (metrics). Must not throw. */
  onAttempt: (endpointId: string, state: WebhookDeliveryState) => void = () => {};

  constructor(engine: JobEngine, opts: WebhookDelivererOptions) {
    this.engine = engine;
    this.store = engine.store;
    this.clock = engine.clock;
    this.opts = {
      maxAttempts: 3,
      pollMs: Math.min(1000, Math.max(10, opts.retryDelayMs)),
      keepMs: 24 * 3_600_000,
      privateTargets: 'admins',
      ...opts,
    };
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopping = undefined;
    this.abort = new AbortController();
    // The row is committed before the listener fires; the nudge only saves waiting for the next poll.
    this.unsubscribe = this.engine.onTerminal((job) => {
      if (job.webhook !== null) this.nudge();
    });
    this.nudge();
  }

  /**
   * Stop claiming; give attempts in flight up to `timeoutMs` to finish, then cut them off. A cut-off attempt is not
   * recorded: its delivery is handed back, due at once, and runs again after the restart. Idempotent.
   */
  stop(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.stopping) return this.stopping;
    if (this.stopped) return Promise.resolve();
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearTimeout(this.pollTimer);
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.stopping = (async () => {
      await this.ticking;
      const settled = Promise.allSettled(this.runsInFlight()).then(() => true);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), opts.timeoutMs ?? 5000);
      });
      const finished = await Promise.race([settled, late]);
      clearTimeout(timer);
      if (!finished) {
        this.abort.abort();
        await Promise.allSettled(this.runsInFlight());
      }
    })();
    return this.stopping;
  }

  /** Look for due deliveries now (coalesced with a pass already running). */
  nudge(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.again = false;
    this.ticking = this.pass()
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.ticking = undefined;
        if (this.stopped) return;
        if (this.again) this.nudge();
        else this.schedulePoll();
      });
  }

  private schedulePoll(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => this.nudge(), this.opts.pollMs);
  }

  private later(ms: number): void {
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      this.nudge();
    }, ms);
    this.retryTimers.add(t);
  }

  /**
   * Claim as many due deliveries as there are free slots and start them. Owners whose attempts already hold their
   * fair share of the slots go last: other owners' due deliveries are claimed first, then, for slots still free, the
   * oldest due of anyone's. So one user's slow or hanging receivers (and their growing backlog) make another user's
   * delivery wait for the next slot to come free, never behind that backlog; a lone user still gets every slot.
   */
  private async pass(): Promise<void> {
    const now = this.clock.now();
    const leaseMs = this.opts.timeoutMs + CLAIM_MARGIN_MS;
    let free = this.opts.concurrency - this.inFlight.size;
    const busy = this.ownersAtShare();
    if (free > 0 && busy.length > 0) {
      const claimed = await this.store.claimWebhookDeliveries(now, free, leaseMs, busy);
      for (const d of claimed) this.launch(d);
      free -= claimed.length;
    }
    if (free > 0) {
      const claimed = await this.store.claimWebhookDeliveries(now, free, leaseMs);
      for (const d of claimed) this.launch(d);
    }
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      const pruned = await this.store.pruneWebhookDeliveries(now - this.opts.keepMs, PRUNE_BATCH);
      // A full batch: more are due (a busy server finishes more than a batch a minute). The next pass prunes again
      // at once, a batch per write transaction, as the sweeper does, until the backlog is gone.
      if (pruned === PRUNE_BATCH) {
        this.lastPrune = 0;
        this.again = true;
      }
    }
  }

  /** Owners whose attempts in flight hold their share of the slots (a quarter, at least one). */
  private ownersAtShare(): string[] {
    const share = Math.max(1, Math.floor(this.opts.concurrency / 4));
    const counts = new Map<string, number>();
    for (const { owner } of this.inFlight.values()) {
      if (owner !== null) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    return [...counts].filter(([, n]) => n >= share).map(([owner]) => owner);
  }

  private runsInFlight(): Array<Promise<void>> {
    return [...this.inFlight.values()].map((f) => f.run);
  }

  private launch(d: WebhookDelivery): void {
    const run = this.attempt(d)
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.inFlight.delete(d.id);
        // A slot came free: take the next due delivery, if any.
        this.nudge();
      });
    this.inFlight.set(d.id, { run, owner: d.userId });
  }

  private async attempt(d: WebhookDelivery): Promise<void> {
    const attempt = d.attempts + 1;
    const at = this.clock.now();
    let secret: string | null;
    try {
      secret = d.userId === null ? null : await webhookSecretOf(this.store, this.engine.secrets, d.userId);
    } catch (thrown) {
      if (!(thrown instanceof SecretUnreadableError)) throw thrown;
      // Sealed with another secret key: not sent (unsigned, as below, would teach receivers to skip checks). An
      // attempt like any other, retried (the key may be restored, the secret rotated) and then given up.
      const state = attempt >= this.opts.maxAttempts ? 'failed' : 'pending';
      await this.finish(d, attempt, at, 0, null, `${thrown.message}; not sent`, state);
      return;
    }
    if (secret === null) {
      // Nobody can verify a delivery without the owner's secret; sending it unsigned would teach receivers to skip checks.
      await this.finish(d, attempt, at, 0, null, 'the endpoint owner no longer exists; not sent', 'failed');
      return;
    }
    const body = statusBody(d.job, d.job.completedAt ?? d.createdAt);
    // The system clock's, not the server's (`at`, anchored at start so that a clock step cannot expire jobs): the
    // receiver checks it against its own clock, which follows a step (an NTP correction after boot) at once.
    const timestamp = Math.floor(Date.now() / 1000);
    const publicOnly =
      d.job.policy.webhookPublicOnly === true ||
      !mayReachPrivate(this.opts.privateTargets, await this.ownerIsAdmin(d.userId));
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    // A refused target (private address, blocked port) stays refused: no retry.
    let refused = false;
    try {
      statusCode = await postWebhook({
        url: d.url,
        publicOnly,
        signal: AbortSignal.any([timeout, this.abort.signal]),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Wharf-Webhooks/1',
          'x-wharf-job-id': d.jobId,
          'x-wharf-delivery-id': d.id,
          'x-wharf-attempt': String(attempt),
          'x-wharf-timestamp': String(timestamp),
          'x-wharf-signature': signPayload(secret, timestamp, body),
        },
        body,
      });
      if (statusCode !== 200) {
        error =
          statusCode >= 300 && statusCode < 400
            ? `answered ${statusCode}; redirects are not followed`
            : `answered ${statusCode}; only 200 ends delivery`;
      }
    } catch (thrown) {
      if (this.abort.signal.aborted && !timeout.aborted) {
        // Shutdown cut it off: not the receiver's fault, so not an attempt. Due again at once after the restart.
        await this.store.releaseWebhookDelivery(d.id, this.clock.now());
        return;
      }
      error = timeout.aborted ? `no answer within ${this.opts.timeoutMs} ms` : describe(thrown);
      refused = thrown instanceof BlockedTargetError;
    }
    const durationMs = Math.round(performance.now() - started);
    const state: WebhookDeliveryState =
      statusCode === 200 ? 'delivered' : refused || attempt >= this.opts.maxAttempts ? 'failed' : 'pending';
    await this.finish(d, attempt, at, durationMs, statusCode, error, state);
  }

  private async ownerIsAdmin(userId: string | null): Promise<boolean> {
    if (this.opts.privateTargets !== 'admins' || userId === null) return false;
    return (await this.store.getUser(userId))?.isAdmin === true;
  }

  private async finish(
    d: WebhookDelivery,
    attempt: number,
    at: number,
    durationMs: number,
    statusCode: number | null,
    error: string | null,
    state: WebhookDeliveryState,
  ): Promise<void> {
    const nextAttemptAt = state === 'pending' ? this.clock.now() + this.opts.retryDelayMs : null;
    await this.store.recordWebhookAttempt(
      d.id,
      { attempt, at, durationMs, statusCode, error },
      { state, nextAttemptAt },
    );
    try {
      this.onAttempt(d.endpointId, state);
    } catch {
      // Observers never break delivery.
    }
    if (state === 'pending' && !this.stopped) this.later(this.opts.retryDelayMs);
  }
}

/** A network error, with its cause when it has one. */
function describe(thrown: unknown): string {
  // Every address of a host failed (happy eyeballs): Node throws an AggregateError with an empty message.
  if (thrown instanceof AggregateError && thrown.message === '') {
    return [...new Set(thrown.errors.map((e) => coerceError(e).message))].join('; ').slice(0, 500);
  }
  const error = coerceError(thrown);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  const detail = cause?.message ?? cause?.code;
  return (detail ? `${error.message}: ${detail}` : error.message).slice(0, 500);
}
