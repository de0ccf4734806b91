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
    const skip = sortedOwners(skipUsers);
    return this.q(`SELECT 1 FROM (${dueSkipping(skip.length)}) LIMIT 1`).get(now, ...skip) !== undefined;
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
      const skip = sortedOwners(skipUsers);
      const n = skip.length;
      rows = this.q(
        `UPDATE webhook_deliveries SET next_attempt_at = ?${n + 3}
           WHERE id IN (SELECT id FROM (${dueSkipping(n)}) ORDER BY next_attempt_at LIMIT ?${n + 2})
           RETURNING *`,
      ).all(now, ...skip, limit, now + leaseMs) as unknown as DeliveryRow[];
    }
    return rows.map(toDelivery).sort((a, b) => a.createdAt - b.createdAt);
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

/** Owners as SQLite orders TEXT (BINARY: UTF-8 bytes), without repeats: the bounds of the ranges of dueSkipping. */
function sortedOwners(owners: readonly string[]): string[] {
  return [...new Set(owners)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/**
 * The pending deliveries due at ?1 (id, next_attempt_at) of every owner but the `n` skipped ones (?2 … ?n+1, sorted
 * by sortedOwners), and of none: one range of the owner index per gap between skipped owners. A skipped owner's
 * deliveries are never read: a NOT IN filter on the due index walked every one of them, however many (a hanging
 * receiver's backlog: hundreds of ms on the event loop per pass at a million), on every pass.
 */
function dueSkipping(n: number): string {
  const part = (owners: string): string =>
    `SELECT id, next_attempt_at FROM webhook_deliveries INDEXED BY webhook_deliveries_owner_due
       WHERE state = 'pending' AND ${owners} AND next_attempt_at <= ?1`;
  const parts = [part('user_id IS NULL'), part('user_id < ?2')];
  for (let i = 2; i <= n; i++) parts.push(part(`user_id > ?${i} AND user_id < ?${i + 1}`));
  parts.push(part(`user_id > ?${n + 1}`));
  return parts.join(' UNION ALL ');
}
