/**
 * Store verbs of webhook delivery (DESIGN.md §3 "Webhooks"). Part of the Store (types.ts).
 *
 * Durability contract for every backend: each transition of a job with a `webhook` into a final state
 * (finishJob, cancelJob, timeoutJobs, and the FAILED jobs of releaseWorkerJobs / expireWorkerLeases) inserts one
 * pending delivery IN THE SAME TRANSACTION as the transition. A crash can therefore never leave a finished job
 * without its delivery, and no scan for "finished but not enqueued" jobs is needed.
 */
import type { Job } from '../domain/index.ts';

export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

export interface WebhookAttempt {
  /** 1, 2, 3: the value of X-Wharf-Attempt. */
  attempt: number;
  /** When the request was sent (ms since the epoch). */
  at: number;
  durationMs: number;
  /** HTTP status of the receiver's answer; null when none came (refused, reset, timed out). */
  statusCode: number | null;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  jobId: string;
  endpointId: string;
  /** Owner of the endpoint when the job finished (whose secret signs); null when the endpoint was already gone. */
  userId: string | null;
  url: string;
  /**
   * The job as it was when it reached its final state; the payload is built from it, so retention, a retry or a
   * deletion of the job cannot change or lose what is delivered. Input and s3Config are not kept (not part of the
   * payload; s3Config holds credentials).
   */
  job: Job;
  state: WebhookDeliveryState;
  /** Attempts recorded so far. */
  attempts: number;
  /** While pending: when the next attempt is due, or when the claim of a running attempt lapses. */
  nextAttemptAt: number | null;
  createdAt: number;
  finishedAt: number | null;
}

export interface WebhookDeliveryLog extends WebhookDelivery {
  attemptLog: WebhookAttempt[];
}

export interface WebhookStore {
  /**
   * Pending deliveries due at `now`, claimed for `leaseMs`: their next attempt moves to now + leaseMs, so another
   * node (or this one after a crash) takes them again only if the claimant never records the attempt. Oldest due
   * first; with `skipUsers`, none of those endpoint owners' (a delivery whose owner is unknown is never skipped).
   */
  claimWebhookDeliveries(
    now: number,
    limit: number,
    leaseMs: number,
    skipUsers?: readonly string[],
  ): Promise<WebhookDelivery[]>;
  /**
   * Record attempt number `a.attempt` and move the delivery on (pending with its next due time, delivered or
   * failed). Fenced: false, and nothing written, when that attempt was already recorded or the delivery is final.
   */
  recordWebhookAttempt(
    deliveryId: string,
    a: WebhookAttempt,
    next: { state: WebhookDeliveryState; nextAttemptAt: number | null },
  ): Promise<boolean>;
  /** Give back a claim without recording an attempt (shutdown interrupted it): due again at `dueAt`. */
  releaseWebhookDelivery(deliveryId: string, dueAt: number): Promise<void>;
  /** Deliveries of one job, oldest first, with every attempt. */
  listWebhookDeliveries(endpointId: string, jobId: string): Promise<WebhookDeliveryLog[]>;
  /** Delete finished deliveries (and their attempts) finished before `before`; returns how many. */
  pruneWebhookDeliveries(before: number, limit: number): Promise<number>;
  /**
   * Set a user's webhook signing secret, stored as given (the caller seals it: webhooks/secrets.ts). With `replacing`
   * it is set only while the stored one is that value (null: none yet), so that two nodes creating one lazily, or
   * re-sealing a plain one, at once agree on the first, and neither undoes a rotation made in between. Returns the
   * secret in effect, or null when the user does not exist.
   */
  setWebhookSecret(userId: string, secret: string, replacing?: string | null): Promise<string | null>;
}
