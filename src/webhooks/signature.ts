import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (docs/webhooks.md): `X-Wharf-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, keyed
 * with the user's webhook secret (its UTF-8 text, prefix included). The timestamp is inside the signed text, so a
 * captured delivery cannot be replayed later with a fresh timestamp.
 */
export function signPayload(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The receiver's check, as documented; constant-time so the comparison leaks nothing. */
export function verifySignature(secret: string, timestamp: string | number, body: string, header: string): boolean {
  const expected = Buffer.from(signPayload(secret, Number(timestamp), body));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** A new secret: `whsec_` and 32 random bytes, base64url. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}
