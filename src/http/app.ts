import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { WharfError } from '../errors/index.ts';
import type { AppDeps } from './context.ts';
import { registerErrorHandling, sendError } from './plugins/errors.ts';
import { registerValidation } from './plugins/validation.ts';
import { registerQueueRoutes } from './queue/routes.ts';
import { registerLogRoutes } from './rest/logs.ts';
import { registerRestRoutes } from './rest/routes.ts';
import { registerWorkerRoutes } from './worker/routes.ts';

export interface AppOptions {
  logLevel?: string;
  /** Called by /readyz: resolves when the store answers and its schema is current. */
  ready?: () => Promise<void>;
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

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    return payload;
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await opts.ready?.();
      return { status: 'ready' };
    } catch (error) {
      return sendError(
        reply,
        new WharfError('STORE_UNAVAILABLE', { reason: (error as Error).message }, { cause: error }),
      );
    }
  });

  registerQueueRoutes(app, deps);
  registerWorkerRoutes(app, deps);
  registerRestRoutes(app, deps);
  registerLogRoutes(app, deps);
  return app;
}
