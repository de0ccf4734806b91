import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { WharfError } from '../errors/index.ts';
import type { AppDeps } from './context.ts';
import { collectRoutes, registerOpenApiRoutes } from './openapi.ts';
import { registerGraphqlRoutes } from './graphql/route.ts';
import { registerOpenAiRoutes } from './openai/routes.ts';
import { registerErrorHandling, sendError } from './plugins/errors.ts';
import { ownMetrics, registerMetricsRoute, registerRequestObservability } from './plugins/observability.ts';
import { registerRateLimits, type RateLimitSettings } from './plugins/rate-limit.ts';
import { registerValidation } from './plugins/validation.ts';
import { registerRequestsRoute } from './queue/requests.ts';
import { registerQueueRoutes } from './queue/routes.ts';
import { registerLogRoutes } from './rest/logs.ts';
import { registerManagementRoutes } from './rest/management.ts';
import { registerRestRoutes } from './rest/routes.ts';
import { registerWebhookRoutes } from './webhooks/routes.ts';
import { registerWorkerRoutes } from './worker/routes.ts';

export interface AppOptions {
  logLevel?: string;
  /** Where log lines go (default stdout); tests read them here. */
  logStream?: { write(line: string): void };
  /** Called by /readyz: resolves when the store answers and its schema is current. */
  ready?: () => Promise<void>;
  /** Rate and concurrency limits (plugins/rate-limit.ts); absent = none. */
  rateLimits?: RateLimitSettings;
  /** /metrics needs an admin key (default true); see docs/observability.md. */
  metricsAuth?: boolean;
}

/**
 * Bodies are read as text and parsed here, for three reasons: worker result posts carry JSON under a
 * form-urlencoded content type (spec §1.10); the raw text is kept for them; and an empty body with a JSON content
 * type (clients send one on /cancel and /purge-queue) is "no body", not an error.
 */
function registerBodyParsers(app: FastifyInstance): void {
  const keep = (request: FastifyRequest, body: string): void => {
    (request as FastifyRequest & { rawBody?: string }).rawBody = body;
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    keep(request, text);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(new WharfError('INVALID_JSON', { reason: (error as Error).message }), undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    keep(request, text);
    done(null, text === '' ? undefined : text);
  });
}

export function buildApp(deps: AppDeps, opts: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: {
      level: opts.logLevel ?? 'info',
      // Keys and worker keys travel in these; they are never logged.
      redact: { paths: ['req.headers.authorization', 'req.query.api_key'], censor: '[redacted]' },
      ...(opts.logStream ? { stream: opts.logStream } : {}),
    },
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
    // Long polls hold requests for up to ~90 s (runsync up to 300 s); the server-side timeouts must outlast them.
    requestTimeout: 0,
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 1024 },
    return503OnClosing: true,
  });
  registerValidation(app);
  registerErrorHandling(app);
  registerBodyParsers(app);
  // Before the rate limits: a refused request's log lines carry its endpoint too.
  const metrics = deps.metrics ?? ownMetrics(app, deps);
  registerRequestObservability(app, metrics);
  if (opts.rateLimits) registerRateLimits(app, deps, opts.rateLimits);
  // Before any route: every route registered from here on appears in /v1/openapi.json.
  const routes = collectRoutes(app);

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    return payload;
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await opts.ready?.();
      // A node on an older or newer schema than it knows must not take traffic (a rolling upgrade half done).
      const schema = await deps.store.schemaVersion();
      if (schema.current !== schema.latest) {
        throw new Error(`the database schema is at version ${schema.current}; this server needs ${schema.latest}`);
      }
      return { status: 'ready' };
    } catch (error) {
      return sendError(
        reply,
        new WharfError('STORE_UNAVAILABLE', { reason: (error as Error).message }, { cause: error }),
      );
    }
  });

  registerQueueRoutes(app, deps);
  registerRequestsRoute(app, deps);
  registerOpenAiRoutes(app, deps);
  registerMetricsRoute(app, deps.accounts, metrics, { auth: opts.metricsAuth ?? true });
  registerWorkerRoutes(app, deps);
  registerRestRoutes(app, deps);
  registerLogRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerManagementRoutes(app, deps);
  registerOpenApiRoutes(app, routes);
  registerGraphqlRoutes(app, deps);
  return app;
}
