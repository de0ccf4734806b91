import { lazyChildLoggerFactory } from './plugins/lazy-logger.ts';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { jsonTooDeep, TOO_DEEP } from '../domain/json.ts';
import { WharfError } from '../errors/index.ts';
import type { AppDeps } from './context.ts';
import { registerConsoleRoutes } from './console.ts';
import { collectRoutes, registerOpenApiRoutes } from './openapi.ts';
import { registerGraphqlRoutes } from './graphql/route.ts';
import { registerOpenAiRoutes } from './openai/routes.ts';
import { registerKeyFirst } from './plugins/auth.ts';
import { registerCors, type CorsOrigins } from './plugins/cors.ts';
import { registerErrorHandling, sendClientError, sendError, sendFrameworkError } from './plugins/errors.ts';
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
  /** Extra fields of a ready /readyz answer: in multi-node mode, `{ leader: boolean }` (docs/multinode.md). */
  readyInfo?: () => Record<string, unknown>;
  /** Rate and concurrency limits (plugins/rate-limit.ts); absent = none. */
  rateLimits?: RateLimitSettings;
  /** /metrics needs an admin key (default true); see docs/observability.md. */
  metricsAuth?: boolean;
  /** Slow-client limits (default CLIENT_TIMEOUTS); tests shorten them. */
  clientTimeouts?: typeof CLIENT_TIMEOUTS;
  /** True once a graceful shutdown began: new work is refused (SHUTTING_DOWN), see `registerDrain`. */
  draining?: () => boolean;
  /** Origins whose pages may call the API from a browser (plugins/cors.ts); absent = none. */
  corsOrigins?: CorsOrigins;
}

/**
 * How long a client may take to send its headers, and its whole request with the body; a slower one gets 408 and
 * is disconnected (Node checks every `checkEveryMs`). Neither bounds the answer: a long poll may be held 300 s.
 * 120 s lets a worker post a 20 MB result at about 1.5 Mbit/s.
 */
export const CLIENT_TIMEOUTS = { headersMs: 30_000, requestMs: 120_000, checkEveryMs: 5_000 };

/**
 * The routes that take a body whatever its content type says: worker posts (the official SDK labels its JSON
 * form-urlencoded, spec §1.10) and GraphQL (`application/graphql`, and clients that label JSON as text). Every other
 * route answers a non-empty body that is not labelled JSON with 415.
 */
const ANY_CONTENT_TYPE = /^\/v2\/:endpointId\/(job-done|job-stream)\/|^\/graphql$/;

/**
 * A body sent compressed cannot be read as JSON text: refused by name, rather than reported as malformed JSON with
 * its compressed bytes quoted back. `identity` is no encoding at all.
 */
function encodingRefusal(request: FastifyRequest): WharfError | null {
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return null;
  return new WharfError('UNSUPPORTED_CONTENT_ENCODING', { encoding });
}

/**
 * JSON.parse's reason without the excerpt of the text V8 quotes (`Unexpected token 'h', ..."password":hunter2"... is
 * not valid JSON`): a body that breaks at a registry password, an s3Config secret or an env value would have a piece
 * of it sent back in the error, which clients print as they get it. The reason and position stay.
 */
function withoutExcerpt(reason: string): string {
  return reason.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/**
 * Bodies are read as text and parsed here, for three reasons: worker result posts carry JSON under a
 * form-urlencoded content type (spec §1.10); the raw text is kept for them; and an empty body with a JSON content
 * type (clients send one on /cancel and /purge-queue) is "no body", not an error. Every body loses a leading UTF-8
 * byte order mark here, before anything reads it.
 */
function registerBodyParsers(app: FastifyInstance): void {
  /** Keeps the body's text for the routes that read members as sent, and returns it without a byte order mark. */
  const keep = (request: FastifyRequest, body: string): string => {
    // A UTF-8 byte order mark (EF BB BF, read as U+FEFF) is no part of the JSON: PowerShell and Windows editors
    // write one, and JSON.parse refuses it.
    const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
    (request as FastifyRequest & { rawBody?: string }).rawBody = text;
    return text;
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = keep(request, body as string);
    if (text.trim() === '') return done(null, undefined);
    const refused = encodingRefusal(request);
    if (refused) return done(refused, undefined);
    if (jsonTooDeep(text)) return done(new WharfError('VALIDATION_FAILED', { reason: TOO_DEEP }), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(new WharfError('INVALID_JSON', { reason: withoutExcerpt((error as Error).message) }), undefined);
    }
  });
  // Fastify's own text/plain parser would take those bodies past the check below.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = keep(request, body as string);
    const refused = text === '' ? null : encodingRefusal(request);
    if (refused) return done(refused, undefined);
    if (text.trim() !== '' && !ANY_CONTENT_TYPE.test(request.routeOptions.url ?? '')) {
      const contentType = request.headers['content-type'] ?? 'none';
      return done(new WharfError('UNSUPPORTED_MEDIA_TYPE', { contentType }), undefined);
    }
    done(null, text === '' ? undefined : text);
  });
}

export function buildApp(deps: AppDeps, opts: AppOptions = {}): FastifyInstance {
  const timeouts = opts.clientTimeouts ?? CLIENT_TIMEOUTS;
  const app = Fastify({
    logger: {
      level: opts.logLevel ?? 'info',
      // Keys and worker keys travel in these; they are never logged.
      redact: { paths: ['req.headers.authorization', 'req.query.api_key'], censor: '[redacted]' },
      ...(opts.logStream ? { stream: opts.logStream } : {}),
    },
    logController: new LogController({ disableRequestLogging: true }),
    // Per-request child loggers are built only when a line is written (lazy-logger.ts).
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: 1024 * 1024,
    // Node's request and headers timeouts bound only the receipt of a request, never the answer (long polls).
    requestTimeout: timeouts.requestMs,
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: timeouts.checkEveryMs },
    // No idle-socket timeout: a long poll is silent for up to 300 s while it waits.
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 1024 },
    // Requests during a shutdown are answered by registerDrain, in the one error shape.
    return503OnClosing: false,
    // A bad percent-encoding or an over-long path parameter is refused before routing: same error shape as the rest.
    frameworkErrors: sendFrameworkError,
    // So is a request Node's HTTP parser refuses (malformed, headers too large, too slow).
    clientErrorHandler: sendClientError,
  });
  registerValidation(app);
  registerErrorHandling(app);
  registerBodyParsers(app);
  // Before the rate limits: a refused request's log lines carry its endpoint too.
  const metrics = deps.metrics ?? ownMetrics(app, deps);
  registerRequestObservability(app, metrics);
  // Before the rate limits, the drain and the key checks (hooks run in the order registered): their refusals carry
  // the CORS headers too, so a page can read them, and a preflight (which carries no key) is answered first.
  if (opts.corsOrigins) registerCors(app, opts.corsOrigins);
  if (opts.rateLimits) registerRateLimits(app, deps, opts.rateLimits);
  // The web console's static files (console/dist): registered before the route collector, so not in the OpenAPI.
  registerConsoleRoutes(app);
  // Before any route: every route registered from here on appears in /v1/openapi.json.
  const routes = collectRoutes(app);
  // Every /v1 and /v2 route checks its key before its body or query is looked at (plugins/auth.ts).
  registerKeyFirst(app, deps.accounts);

  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    if (opts.draining?.() === true) reply.header('connection', 'close');
    done(null, payload);
  });
  if (opts.draining) registerDrain(app, opts.draining);

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await opts.ready?.();
      // A node on an older or newer schema than it knows must not take traffic (a rolling upgrade half done).
      const schema = await deps.store.schemaVersion();
      if (schema.current !== schema.latest) {
        throw new SchemaMismatch(
          `the database schema is at version ${schema.current}; this server needs ${schema.latest}`,
        );
      }
      return { status: 'ready', ...opts.readyInfo?.() };
    } catch (error) {
      // Anyone may ask (no key): the store's own error (its address, its user) goes to the log, not to them.
      request.log.warn({ err: error }, 'not ready');
      const reason = error instanceof SchemaMismatch ? error.message : 'the store does not answer (see the server log)';
      return sendError(reply, new WharfError('STORE_UNAVAILABLE', { reason }));
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

/** A /readyz refusal whose message is the operator's to read anywhere: it names no address or account. */
class SchemaMismatch extends Error {}

/** Worker posts that finish running work: results, stream chunks, heartbeats, stop orders. */
const FINISHING = /^\/v2\/[^/]+\/(job-done|job-stream|ping|job-stop)\//;
/** Job takes: refused during a drain, and the refusal held (see registerDrain). */
const TAKE = /^\/v2\/[^/]+\/(job-take|job-take-batch)\//;
/** The longest a take's refusal is held during a drain (the worker routes hold other refusals as long). */
const DRAIN_TAKE_HOLD_MS = 5_000;

/**
 * Graceful shutdown: from the moment it begins, new work is refused with 503 SHUTTING_DOWN (submissions, changes,
 * job takes, /readyz), while workers finishing their jobs can still post results and clients can still read. Every
 * answer then closes its connection, so the server is not kept open by idle keep-alive sockets.
 *
 * A take's refusal is held until the server closes (at most DRAIN_TAKE_HOLD_MS): the official SDK polls again at
 * once after any error status (spec §1.6), so while running jobs finish (up to the shutdown grace) each idle worker
 * would otherwise spin at hundreds of takes a second.
 */
function registerDrain(app: FastifyInstance, draining: () => boolean): void {
  const held = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const release of held) release();
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!draining()) return done();
    reply.header('connection', 'close');
    const path = request.url.split('?')[0]!;
    if (FINISHING.test(path)) return done();
    const take = TAKE.test(path);
    // Reads go on, but for the ones that hand out work (takes) or tell a balancer to send more (/readyz).
    if ((request.method === 'GET' || request.method === 'HEAD') && !take && !path.startsWith('/readyz')) return done();
    if (!take) return done(new WharfError('SHUTTING_DOWN'));
    const release = (): void => {
      clearTimeout(timer);
      held.delete(release);
      done(new WharfError('SHUTTING_DOWN'));
    };
    const timer = setTimeout(release, DRAIN_TAKE_HOLD_MS);
    held.add(release);
  });
  // Every answer during a drain closes its connection: the onSend hook in buildApp adds `connection: close`.
}
