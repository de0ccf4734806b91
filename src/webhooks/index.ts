export { WebhookDeliverer, type WebhookDelivererOptions } from './deliverer.ts';
export { rotateWebhookSecret, webhookSecretOf } from './secrets.ts';
export { newWebhookSecret, signPayload, verifySignature } from './signature.ts';
export { mayReachPrivate, refusal, type PrivateTargets } from './targets.ts';
