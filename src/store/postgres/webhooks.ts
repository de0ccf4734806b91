import { randomUUID } from 'node:crypto';
import { isTerminal, type Job } from '../../domain/index.ts';
import { toAttempt, toDelivery, type AttemptRow, type DeliveryRow } from '../rows.ts';
import type { WebhookStore } from '../types-webhooks.ts';
import type { Conn, Db } from './db.ts';

/** pg's rows also carry the insertion order (`seq`), and attempts the delivery they belong to. */
type PgDeliveryRow = DeliveryRow & { seq: number };
type PgAttemptRow = AttemptRow & { delivery_id: string };

/**
 * Called inside the transaction of a final transition (contract in types-webhooks.ts), so a finished job and its
 * pending delivery commit together. Jobs without a webhook, or not final, are skipped: callers pass every job a verb
 * changed.
 */
export async function enqueueWebhooks(c: Conn, jobs: Iterable<Job>): Promise<void> {
  for (const job of jobs) {
    if (job.webhook === null || !isTerminal(job.status)) continue;
    const at = job.completedAt ?? 0;
    // Input and s3Config stay out of the copy: not part of the payload, and s3Config carries credentials.
    const snapshot: Job = { ...job, inputJson: 'null', s3ConfigSealed: null, policyJson: null };
    await c.query(
      `INSERT INTO webhook_deliveries (id, job_id, endpoint_id, user_id, url, job, state, next_attempt_at, created_at)
       VALUES ($1, $2, $3, (SELECT user_id FROM endpoints WHERE id = $3), $4, $5, 'pending', $6, $6)`,
      [randomUUID(), job.id, job.endpointId, job.webhook, JSON.stringify(snapshot), at],
    );
  }
}

type WebhookVerbs = WebhookStore;

/**
 * The claim that skips owners ($4) at their share of the slots, reading the owner index owner by owner: every owner
 * with pending deliveries, one index seek each (a loose index scan: the recursive CTE), then at most $2 due
 * deliveries of each owner not skipped (and of none), the $2 oldest of those claimed. A filter on the due index read a
 * skipped owner's whole backlog (a hanging receiver's, which only grows) at every claim.
 */
const CLAIM_SKIPPING = `
WITH RECURSIVE owners AS (
  (SELECT user_id AS u FROM webhook_deliveries WHERE state = 'pending' AND user_id IS NOT NULL ORDER BY user_id LIMIT 1)
  UNION ALL
  SELECT (SELECT user_id FROM webhook_deliveries WHERE state = 'pending' AND user_id > o.u ORDER BY user_id LIMIT 1)
    FROM owners o WHERE o.u IS NOT NULL
),
candidates AS (
  SELECT d.id, d.next_attempt_at FROM owners o
    CROSS JOIN LATERAL (SELECT id, next_attempt_at FROM webhook_deliveries
                         WHERE state = 'pending'
                           AND (user_id, next_attempt_at) >= (o.u, -9223372036854775807::bigint)
                           AND (user_id, next_attempt_at) <= (o.u, $1::bigint)
                         ORDER BY user_id, next_attempt_at LIMIT $2) d
   WHERE o.u IS NOT NULL AND o.u <> ALL($4::text[])
  UNION ALL
  (SELECT id, next_attempt_at FROM webhook_deliveries
    WHERE state = 'pending' AND user_id IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2)
),
due AS (
  SELECT w.id FROM webhook_deliveries w
   WHERE w.id IN (SELECT id FROM candidates ORDER BY next_attempt_at LIMIT $2)
     AND w.state = 'pending' AND w.next_attempt_at <= $1
   ORDER BY w.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d SET next_attempt_at = $3 FROM due WHERE d.id = due.id RETURNING d.*`;

export function webhookVerbs(db: Db): WebhookVerbs {
  return {
    async claimWebhookDeliveries(now, limit, leaseMs, skipUsers = []) {
      // SKIP LOCKED: two nodes claiming at once split the due deliveries instead of waiting on each other.
      const rows =
        skipUsers.length === 0
          ? await db.query<PgDeliveryRow>(
              `WITH due AS (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $1
                            ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
               UPDATE webhook_deliveries d SET next_attempt_at = $3 FROM due WHERE d.id = due.id RETURNING d.*`,
              [now, limit, now + leaseMs],
            )
          : await db.query<PgDeliveryRow>(CLAIM_SKIPPING, [now, limit, now + leaseMs, [...skipUsers]]);
      return rows.sort((a, b) => a.created_at - b.created_at || a.seq - b.seq).map(toDelivery);
    },

    recordWebhookAttempt(deliveryId, a, next) {
      return db.tx(async (c) => {
        const finishedAt = next.state === 'pending' ? null : a.at + a.durationMs;
        const changed = await c.query(
          `UPDATE webhook_deliveries SET attempts = $1, state = $2, next_attempt_at = $3, finished_at = $4
           WHERE id = $5 AND attempts = $6 AND state = 'pending'`,
          [
            a.attempt,
            next.state,
            next.state === 'pending' ? next.nextAttemptAt : null,
            finishedAt,
            deliveryId,
            a.attempt - 1,
          ],
        );
        if (changed.rowCount === 0) return false;
        await c.query(
          `INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms, status_code, error)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [deliveryId, a.attempt, a.at, a.durationMs, a.statusCode, a.error],
        );
        return true;
      });
    },

    async releaseWebhookDelivery(deliveryId, dueAt) {
      await db.query(`UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id = $2 AND state = 'pending'`, [
        dueAt,
        deliveryId,
      ]);
    },

    async listWebhookDeliveries(endpointId, jobId) {
      const rows = await db.query<PgDeliveryRow>(
        'SELECT * FROM webhook_deliveries WHERE job_id = $1 AND endpoint_id = $2 ORDER BY created_at, seq',
        [jobId, endpointId],
      );
      if (rows.length === 0) return [];
      const attempts = await db.query<PgAttemptRow>(
        'SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt',
        [rows.map((r) => r.id)],
      );
      return rows.map((r) => ({
        ...toDelivery(r),
        attemptLog: attempts.filter((a) => a.delivery_id === r.id).map(toAttempt),
      }));
    },

    pruneWebhookDeliveries(before, limit) {
      return db.tx(async (c) => {
        const gone = await c.query<{ id: string }>(
          `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
             WHERE finished_at IS NOT NULL AND finished_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id`,
          [before, limit],
        );
        const ids = gone.rows.map((r) => r.id);
        if (ids.length > 0) await c.query('DELETE FROM webhook_attempts WHERE delivery_id = ANY($1)', [ids]);
        return ids.length;
      });
    },

    setWebhookSecret(userId, secret, replacing) {
      // One field edited in place: other settings in the user's document are never overwritten. Two nodes setting
      // a secret conditionally at once agree on the first: the second UPDATE waits for the first, re-checks its
      // condition and changes nothing; the SELECT after it (a fresh snapshot) reads the winner.
      return db.tx(async (c) => {
        await c.query(
          `UPDATE users SET doc = jsonb_set(doc::jsonb, '{webhookSecret}', to_jsonb($1::text))::text
           WHERE id = $2 AND (NOT $3::boolean OR doc::jsonb->>'webhookSecret' IS NOT DISTINCT FROM $4::text)`,
          [secret, userId, replacing !== undefined, replacing ?? null],
        );
        const rows = await c.query<{ s: string | null }>(
          `SELECT doc::jsonb->>'webhookSecret' AS s FROM users WHERE id = $1`,
          [userId],
        );
        return rows.rows[0]?.s ?? null;
      });
    },
  };
}
