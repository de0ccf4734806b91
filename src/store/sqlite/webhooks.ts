import { randomUUID } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { isTerminal, type Job } from '../../domain/index.ts';
import { toAttempt, toDelivery, type AttemptRow, type DeliveryRow } from '../rows.ts';
import type { WebhookAttempt, WebhookDelivery, WebhookDeliveryLog, WebhookDeliveryState } from '../types-webhooks.ts';
import { statementCache } from './statements.ts';

/** Webhook deliveries (store/types-webhooks.ts). Writes run inside the write queue's transaction. */
export class SqliteWebhooks {
  private readonly q: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.q = statementCache(db);
  }

  /**
   * Called in the transaction of a final transition (see the contract in types-webhooks.ts). Jobs without a webhook,
   * or not final, are ignored, so callers can pass every job a verb changed.
   */
  enqueue(job: Job): void {
    if (job.webhook === null || !isTerminal(job.status)) return;
    const at = job.completedAt ?? 0;
    // Input and s3Config stay out of the copy: not part of the payload, and s3Config carries credentials.
    const snapshot: Job = { ...job, inputJson: 'null', s3ConfigSealed: null, policyJson: null };
    this.q(
      `INSERT INTO webhook_deliveries (id, job_id, endpoint_id, user_id, url, job, state, next_attempt_at, created_at)
       VALUES (?, ?, ?, (SELECT user_id FROM endpoints WHERE id = ?), ?, ?, 'pending', ?, ?)`,
    ).run(randomUUID(), job.id, job.endpointId, job.endpointId, job.webhook, JSON.stringify(snapshot), at, at);
  }

  enqueueAll(jobs: Iterable<Job>): void {
    for (const job of jobs) this.enqueue(job);
  }

  /** A plain read, so an idle poll (or one finding only skipped owners' deliveries) never opens a write transaction. */
  anyDue(now: number, skipUsers: readonly string[] = []): boolean {
    if (skipUsers.length === 0) {
      return (
        this.q(`SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? LIMIT 1`).get(now) !==
        undefined
      );
    }
    return this.dueSkipping(now, 1, skipUsers).length > 0;
  }

  claim(now: number, limit: number, leaseMs: number, skipUsers: readonly string[] = []): WebhookDelivery[] {
    let rows: DeliveryRow[];
    if (skipUsers.length === 0) {
      rows = this.q(
        `UPDATE webhook_deliveries SET next_attempt_at = ?
           WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?
                        ORDER BY next_attempt_at LIMIT ?)
           RETURNING *`,
      ).all(now + leaseMs, now, limit) as unknown as DeliveryRow[];
    } else {
      const ids = this.dueSkipping(now, limit, skipUsers);
      if (ids.length === 0) return [];
      rows = this.q(
        `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id IN (SELECT value FROM json_each(?)) RETURNING *`,
      ).all(now + leaseMs, JSON.stringify(ids)) as unknown as DeliveryRow[];
    }
    return rows.map(toDelivery).sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * The ids of the `limit` oldest deliveries due at `now` of every owner but the skipped ones (and of none), read
   * owner by owner from the owner index: an index seek per owner with pending deliveries, then at most `limit` entries
   * of each. A skipped owner's deliveries are never read, nor more than `limit` of anyone's: a filter on the due
   * index walked a skipped owner's whole backlog (a hanging receiver's, which only grows: ~250 ms on the event loop at
   * 400,000), and one range over all other owners sorted every due delivery of theirs.
   */
  private dueSkipping(now: number, limit: number, skipUsers: readonly string[]): string[] {
    const skip = new Set(skipUsers);
    const due: Array<{ id: string; at: number }> = [];
    const take = (rows: unknown[]): void => {
      for (const r of rows as Array<{ id: string; next_attempt_at: number }>)
        due.push({ id: r.id, at: r.next_attempt_at });
    };
    take(
      this.q(
        `SELECT id, next_attempt_at FROM webhook_deliveries INDEXED BY webhook_deliveries_owner_due
           WHERE state = 'pending' AND user_id IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`,
      ).all(now, limit),
    );
    const nextOwner = this.q(
      `SELECT user_id AS u FROM webhook_deliveries INDEXED BY webhook_deliveries_owner_due
         WHERE state = 'pending' AND user_id > ? ORDER BY user_id LIMIT 1`,
    );
    const dueOf = this.q(
      `SELECT id, next_attempt_at FROM webhook_deliveries INDEXED BY webhook_deliveries_owner_due
         WHERE state = 'pending' AND user_id = ? AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`,
    );
    // Every owner with pending deliveries, in index order: '' sorts before every id (ids are never empty).
    for (let owner = nextOwner.get('') as { u: string } | undefined; owner; owner = nextOwner.get(owner.u) as never) {
      if (!skip.has(owner.u)) take(dueOf.all(owner.u, now, limit));
    }
    return due
      .sort((a, b) => a.at - b.at)
      .slice(0, limit)
      .map((d) => d.id);
  }

  record(
    deliveryId: string,
    a: WebhookAttempt,
    next: { state: WebhookDeliveryState; nextAttemptAt: number | null },
  ): boolean {
    const finishedAt = next.state === 'pending' ? null : a.at + a.durationMs;
    const changed = this.q(
      `UPDATE webhook_deliveries SET attempts = ?, state = ?, next_attempt_at = ?, finished_at = ?
       WHERE id = ? AND attempts = ? AND state = 'pending'`,
    ).run(
      a.attempt,
      next.state,
      next.state === 'pending' ? next.nextAttemptAt : null,
      finishedAt,
      deliveryId,
      a.attempt - 1,
    );
    if (Number(changed.changes) === 0) return false;
    this.q(
      `INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms, status_code, error) VALUES (?, ?, ?, ?, ?, ?)`,
    ).run(deliveryId, a.attempt, a.at, a.durationMs, a.statusCode, a.error);
    return true;
  }

  release(deliveryId: string, dueAt: number): void {
    this.q(`UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND state = 'pending'`).run(
      dueAt,
      deliveryId,
    );
  }

  list(endpointId: string, jobId: string): WebhookDeliveryLog[] {
    const rows = this.q(
      'SELECT * FROM webhook_deliveries WHERE job_id = ? AND endpoint_id = ? ORDER BY created_at, rowid',
    ).all(jobId, endpointId) as unknown as DeliveryRow[];
    const attempts = this.q(
      'SELECT attempt, at, duration_ms, status_code, error FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt',
    );
    return rows.map((r) => ({
      ...toDelivery(r),
      attemptLog: (attempts.all(r.id) as unknown as AttemptRow[]).map(toAttempt),
    }));
  }

  prune(before: number, limit: number): number {
    const rows = this.q(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
         WHERE finished_at IS NOT NULL AND finished_at < ? LIMIT ?) RETURNING id`,
    ).all(before, limit) as Array<{ id: string }>;
    const drop = this.q('DELETE FROM webhook_attempts WHERE delivery_id = ?');
    for (const r of rows) drop.run(r.id);
    return rows.length;
  }

  setSecret(userId: string, secret: string, replacing: string | null | undefined): string | null {
    // json_set edits the one field in place: other settings in the user's document are never overwritten. `IS ?`
    // compares with NULL too (no secret yet).
    this.q(
      `UPDATE users SET doc = json_set(doc, '$.webhookSecret', ?)
       WHERE id = ? AND (? = 0 OR json_extract(doc, '$.webhookSecret') IS ?)`,
    ).run(secret, userId, replacing === undefined ? 0 : 1, replacing ?? null);
    const row = this.q(`SELECT json_extract(doc, '$.webhookSecret') AS s FROM users WHERE id = ?`).get(userId) as
      { s: string | null } | undefined;
    return row?.s ?? null;
  }
}
