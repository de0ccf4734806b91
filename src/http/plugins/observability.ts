import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Accounts } from '../../engine/index.ts';
import { WharfError } from '../../errors/index.ts';
import { WharfMetrics, type MetricsSources } from '../../metrics/index.ts';
import { authenticate, requireUser } from './auth.ts';

/** Routes polled constantly (workers, probes, scrapers): their completion lines are debug, not info. */
const QUIET = /\/(job-take|job-take-batch|job-stop|ping)\/|^\/(metrics|healthz|readyz)$/;

/**
 * Request logs and HTTP metrics (docs/observability.md). Every log line of a request carries Fastify's `reqId`;
 * lines of routes about an endpoint, a job or a worker also carry `endpointId`, `jobId`, `workerId` (child logger
 * bindings from the route's path parameters). One completion line per request names the route pattern and the path
 * without its query string: `?api_key=` never reaches a log, and neither does a header (auth is redacted).
 */
export function registerRequestObservability(app: FastifyInstance, metrics: WharfMetrics): void {
  /** Replies already logged and counted as closed by the client (499): their late 'finish', if any, is not. */
  const abandoned = new WeakSet<FastifyReply>();

  const complete = (request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string): void => {
    const route = request.routeOptions.url ?? '(unmatched)';
    metrics.observeHttp(route, request.method, statusCode, reply.elapsedTime / 1000);
    const level = QUIET.test(route) ? 'debug' : 'info';
    // Fastify's logger type omits it; pino loggers and LazyLogger have it.
    if ((request.log as unknown as { isLevelEnabled(l: string): boolean }).isLevelEnabled(level)) {
      const line = {
        method: request.method,
        route,
        path: request.url.split('?')[0],
        statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
      };
      request.log[level](line, message);
    }
  };

  // Callback-style hooks: they run on every request, and an async hook costs Fastify a promise and a tick each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    const bindings = pathBindings(request);
    if (bindings) bindLog(request, reply, bindings);
    // A response that never finished — the client hung up during a long poll, a /runsync or an SSE stream — gets no
    // onResponse from Fastify: it is logged and counted here, as 499 (client closed request).
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return;
      abandoned.add(reply);
      complete(request, reply, 499, 'request closed by the client');
    });
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    if (!abandoned.has(reply)) complete(request, reply, reply.statusCode, 'request completed');
    done();
  });
}

/** Add bindings to every later log line of this request (the completion line included), e.g. a new job's id. */
export function bindLog(request: FastifyRequest, reply: FastifyReply, bindings: Record<string, string>): void {
  reply.log = request.log = request.log.child(bindings);
}

function pathBindings(request: FastifyRequest): Record<string, string> | null {
  const params = request.params as Record<string, unknown> | undefined;
  if (!params) return null;
  let out: Record<string, string> | null = null;
  for (const key of ['endpointId', 'jobId', 'workerId'] as const) {
    const v = params[key];
    if (typeof v === 'string' && v !== '') (out ??= {})[key] = v.slice(0, 256);
  }
  return out;
}

/** Metrics for an app built without them (tests, embedders): fed by the engine while the app is open. */
export function ownMetrics(app: FastifyInstance, deps: MetricsSources): WharfMetrics {
  const metrics = new WharfMetrics(deps);
  metrics.start();
  app.addHook('onClose', async () => metrics.stop());
  return metrics;
}

export interface MetricsRouteOptions {
  /** Require an admin user's key (scope all or read) on /metrics; false = open (a private scrape network). */
  auth: boolean;
}

/**
 * GET /metrics in the Prometheus text format. Protected by default: the metrics name every tenant's endpoints and
 * their load, which only an administrator may see; a read-only admin key is enough, so a scraper can hold one.
 */
export function registerMetricsRoute(
  app: FastifyInstance,
  accounts: Accounts,
  metrics: WharfMetrics,
  opts: MetricsRouteOptions,
): void {
  app.get('/metrics', async (request, reply) => {
    if (opts.auth) {
      const user = requireUser(await authenticate(accounts, request), 'read');
      if (!user.user.isAdmin || user.key.scope === 'restricted') {
        throw new WharfError('FORBIDDEN', { action: 'read /metrics (admin keys only)' });
      }
    }
    const text = await metrics.scrape();
    return reply.code(200).type(metrics.contentType).send(text);
  });
}
