import type { Store } from '../store/index.ts';
import { newWebhookSecret } from './signature.ts';

/**
 * The user's webhook secret, created on first use when the user has none yet (users created before secrets
 * existed). Null when the user does not exist.
 */
export async function webhookSecretOf(store: Store, userId: string): Promise<string | null> {
  const user = await store.getUser(userId);
  if (!user) return null;
  if (user.webhookSecret) return user.webhookSecret;
  return store.setWebhookSecret(userId, newWebhookSecret(), true);
}

/** Replace the secret; deliveries signed from now on use the new one. */
export async function rotateWebhookSecret(store: Store, userId: string): Promise<string | null> {
  return store.setWebhookSecret(userId, newWebhookSecret(), false);
}
