import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebhookDeliveryLog } from '../../store/index.ts';
import { rotateWebhookSecret, webhookSecretOf } from '../../webhooks/index.ts';
import { WharfError } from '../../errors/index.ts';
import { authenticate, requireUser } from '../plugins/auth.ts';
import type { AppDeps } from '../context.ts';
import { JobParams } from '../queue/schemas.ts';

type JP = { endpointId: string; jobId: string };

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function deliveryView(d: WebhookDeliveryLog) {
  return {
    id: d.id,
    url: d.url,
    jobStatus: d.job.status,
    state: d.state,
    createdAt: iso(d.createdAt),
    nextAttemptAt: d.state === 'pending' ? iso(d.nextAttemptAt) : null,
    finishedAt: iso(d.finishedAt),
    attempts: d.attemptLog.map((a) => ({
      attempt: a.attempt,
      at: iso(a.at),
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      error: a.error,
    })),
  };
}

/**
 * Wharf extensions for webhooks (docs/webhooks.md): the delivery log of a job, for its owner, and the user's
 * signing secret. The secret needs a key of scope `all`: whoever holds it can forge deliveries.
 */
export function registerWebhookRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { accounts, resources, store, engine } = deps;

  app.get<{ Params: JP }>('/v2/:endpointId/webhooks/:jobId', { schema: { params: JobParams } }, async (request) => {
    const { endpointId, jobId } = request.params;
    const user = requireUser(await authenticate(accounts, request), 'read', endpointId);
    const endpoint = await resources.getEndpoint(user.user.id, endpointId);
    const deliveries = await store.listWebhookDeliveries(endpoint.id, jobId);
    // No delivery yet: say why the job is unknown (never existed, expired), or list nothing for a job still running.
    if (deliveries.length === 0) await engine.getJob(endpoint.id, jobId);
    return { jobId, deliveries: deliveries.map(deliveryView) };
  });

  const secretOwner = async (request: FastifyRequest) =>
    requireUser(await authenticate(accounts, request), 'write').user;

  app.get('/v1/webhook-secret', async (request) => {
    const user = await secretOwner(request);
    const secret = await webhookSecretOf(store, engine.secrets, user.id);
    if (secret === null) throw new WharfError('UNAUTHORIZED');
    return { secret, algorithm: 'HMAC-SHA256' };
  });

  app.post('/v1/webhook-secret', async (request) => {
    const user = await secretOwner(request);
    const secret = await rotateWebhookSecret(store, engine.secrets, user.id);
    if (secret === null) throw new WharfError('UNAUTHORIZED');
    return { secret, algorithm: 'HMAC-SHA256' };
  });
}
