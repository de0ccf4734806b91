import { isSealed, type SecretBox } from '../engine/index.ts';
import type { Store } from '../store/index.ts';
import { newWebhookSecret } from './signature.ts';

/*
 * A user's webhook secret is stored sealed with the server's secret key, bound to the user (the store keeps the text
 * it is given). It is created on first use: users are made without one, and users of versions before secrets existed
 * have none. A secret an earlier version stored in plain text (`whsec_…`) is sealed on its first use: users are
 * long-lived, and it would otherwise stay in plain text for good.
 */

const aad = (userId: string): string => `webhookSecret/${userId}`;
const what = (userId: string): string => `the webhook secret of user ${userId}`;
const seal = (box: SecretBox, userId: string, secret: string): string => box.sealText(secret, aad(userId));

/**
 * The user's webhook secret (for its owner's eyes and for signing), null when the user does not exist. Throws a
 * SecretUnreadableError when it was sealed with another secret key (a rotation replaces it).
 */
export async function webhookSecretOf(store: Store, box: SecretBox, userId: string): Promise<string | null> {
  const user = await store.getUser(userId);
  if (!user) return null;
  const current = user.webhookSecret ?? null;
  let stored = current;
  if (!current || !isSealed(current)) {
    // None yet (an empty one is none: it would sign with an empty key), or plain: sealed now, unless another node (or
    // a rotation) changed it first; then that one is in effect.
    stored = await store.setWebhookSecret(userId, seal(box, userId, current || newWebhookSecret()), current);
  }
  return stored === null ? null : box.openText(stored, aad(userId), what(userId));
}

/** Replace the secret; deliveries signed from now on use the new one. Null when the user does not exist. */
export async function rotateWebhookSecret(store: Store, box: SecretBox, userId: string): Promise<string | null> {
  const stored = await store.setWebhookSecret(userId, seal(box, userId, newWebhookSecret()));
  return stored === null ? null : box.openText(stored, aad(userId), what(userId));
}
