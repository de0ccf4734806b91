import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Accounts, Principal } from '../../engine/index.ts';
import { WharfError } from '../../errors/index.ts';
import type { Store } from '../../store/index.ts';
import { keyOf } from './auth.ts';

/** Every rate in the interface's table is per 10 seconds. */
export const WINDOW_MS = 10_000;

export const LIMITED_OPERATIONS = [
  'runsync',
  'run',
  'status',
  'stream',
  'cancel',
  'purge-queue',
  'openai',
  'requests',
  'retry',
  'health',
  'webhooks',
] as const;
export type LimitedOperation = (typeof LIMITED_OPERATIONS)[number];

/** Requests per 10 s and requests in flight at once; null = no concurrency cap. */
export interface OperationLimit {
  rate: number;
  concurrent: number | null;
}

/**
 * Interface §8.2, per user per endpoint. Operations the table does not list borrow the closest row: /retry enqueues
 * like /run; /health, /status-sync and the webhook log read like /status.
 */
export const QUEUE_LIMITS: Readonly<Record<LimitedOperation, OperationLimit>> = {
  runsync: { rate: 2000, concurrent: 400 },
  run: { rate: 1000, concurrent: 200 },
  status: { rate: 2000, concurrent: 400 },
  stream: { rate: 2000, concurrent: 400 },
  cancel: { rate: 100, concurrent: 20 },
  'purge-queue': { rate: 2, concurrent: null },
  openai: { rate: 2000, concurrent: 400 },
  requests: { rate: 10, concurrent: 2 },
  retry: { rate: 1000, concurrent: 200 },
  health: { rate: 2000, concurrent: 400 },
  webhooks: { rate: 2000, concurrent: 400 },
};

export interface RateLimitSettings {
  enabled: boolean;
  /** The dynamic rule: effective = max(base, running workers × requestsPerWorker). */
  requestsPerWorker: number;
  /** Per API key on /v1 and /graphql. */
  managementPer10s: number;
  /** `op=rate[/concurrent]` pairs, comma-separated, replacing rows of QUEUE_LIMITS (`purge-queue=5,stream=100/10`). */
  overrides?: string | null;
  /** How long an endpoint's running-worker count is reused. */
  workerCountCacheMs?: number;
  /**
   * Where the counters live: in this process by default. Several nodes share them by passing a store-backed
   * limiter of the same library (RateLimiterPostgres on the shared database, RateLimiterRedis), built with
   * `duration: WINDOW_MS / 1000` and `points: Number.MAX_SAFE_INTEGER` (this module compares counts itself).
   */
  counter?: RateLimiterAbstract;
}

/** Path segment after /v2/{endpointId}/ → operation. Worker-protocol segments are absent on purpose. */
const QUEUE_SEGMENTS: Readonly<Record<string, LimitedOperation>> = {
  runsync: 'runsync',
  run: 'run',
  status: 'status',
  'status-sync': 'status',
  stream: 'stream',
  cancel: 'cancel',
  'purge-queue': 'purge-queue',
  retry: 'retry',
  health: 'health',
  webhooks: 'webhooks',
  openai: 'openai',
  requests: 'requests',
};

type RouteClass = { kind: 'queue'; op: LimitedOperation } | { kind: 'management' };

/**
 * Which limit a route falls under, from its declared path. Unlisted paths are not limited: the worker protocol
 * (job-take, job-done, ping, …: a throttled worker would lose its jobs), /healthz, /readyz and unknown routes.
 */
export function classifyRoute(url: string | undefined): RouteClass | null {
  if (url === undefined) return null;
  if (url === '/v1' || url.startsWith('/v1/') || url === '/graphql' || url.startsWith('/graphql/')) {
    return { kind: 'management' };
  }
  const parts = url.split('/');
  if (parts[1] !== 'v2' || parts[2] !== ':endpointId' || parts[3] === undefined) return null;
  const op = QUEUE_SEGMENTS[parts[3]];
  return op ? { kind: 'queue', op } : null;
}

export function parseOverrides(text: string | null | undefined): Partial<Record<LimitedOperation, OperationLimit>> {
  const out: Partial<Record<LimitedOperation, OperationLimit>> = {};
  if (!text) return out;
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z-]+)=(\d+)(?:\/(\d+))?$/.exec(part);
    const op = m?.[1] as LimitedOperation | undefined;
    if (!m || !op || !LIMITED_OPERATIONS.includes(op)) {
      throw new Error(
        `rate limit override "${part}" must be op=rate[/concurrent] with op one of ${LIMITED_OPERATIONS.join(', ')}`,
      );
    }
    const concurrent = m[3] === undefined ? QUEUE_LIMITS[op].concurrent : Number(m[3]) || null;
    out[op] = { rate: Number(m[2]), concurrent };
  }
  return out;
}

/**
 * Rate limits (interface §8.2, DESIGN.md §3 "Rate limits"). Counting is rate-limiter-flexible's (fixed 10 s windows
 * with atomic increments, and the same API over PostgreSQL or Redis for multi-node); this module decides the key
 * and the effective limit of each request, and keeps the concurrency counters: in-flight requests per key, released
 * when the response closes.
 *
 * Keys: queue routes per user per endpoint per operation; management routes per API key. Requests without a valid
 * key are not counted: the route answers 401, and nobody can spend another user's budget.
 */
export function registerRateLimits(
  app: FastifyInstance,
  deps: { accounts: Accounts; store: Store },
  settings: RateLimitSettings,
): void {
  if (!settings.enabled) return;
  const limits: Record<LimitedOperation, OperationLimit> = { ...QUEUE_LIMITS, ...parseOverrides(settings.overrides) };
  const cacheMs = settings.workerCountCacheMs ?? 1000;
  const inFlight = new Map<string, number>();
  const workerCounts = new Map<string, { at: number; load: Promise<{ ownerId: string | null; running: number }> }>();
  // The limiter only counts (its own cap is never reached); the limit is dynamic, so it is compared here.
  const counter =
    settings.counter ?? new RateLimiterMemory({ points: Number.MAX_SAFE_INTEGER, duration: WINDOW_MS / 1000 });

  /**
   * The endpoint's owner and its workers holding a job (as /health counts `running`), reused for `cacheMs`. The
   * owner is read with the count: only the owner's requests get the dynamic limit, so its header never tells
   * another user whether the endpoint exists or how busy it is (their request answers 404 anyway).
   */
  const endpointLoad = (endpointId: string): Promise<{ ownerId: string | null; running: number }> => {
    const now = Date.now();
    const hit = workerCounts.get(endpointId);
    if (hit && now - hit.at < cacheMs) return hit.load;
    if (workerCounts.size > 10_000) workerCounts.clear();
    const load = Promise.all([deps.store.getEndpoint(null, endpointId), deps.store.runningByWorker(endpointId)])
      .then(([endpoint, running]) => ({ ownerId: endpoint?.userId ?? null, running: Object.keys(running).length }))
      .catch(() => ({ ownerId: null, running: 0 }));
    workerCounts.set(endpointId, { at: now, load });
    return load;
  };

  const effective = async (base: OperationLimit, endpointId: string, userId: string): Promise<OperationLimit> => {
    const { ownerId, running } = await endpointLoad(endpointId);
    if (ownerId !== userId) return base;
    const dynamic = running * settings.requestsPerWorker;
    return {
      rate: Math.max(base.rate, dynamic),
      concurrent: base.concurrent === null ? null : Math.max(base.concurrent, dynamic),
    };
  };

  const principalOf = async (request: FastifyRequest, allowQuery: boolean): Promise<Principal | null> => {
    const key = keyOf(request, allowQuery);
    if (!key || key.length > 512) return null;
    return deps.accounts.resolve(key);
  };

  const acquire = (key: string, cap: number, reply: FastifyReply, operation: string): void => {
    const n = inFlight.get(key) ?? 0;
    if (n >= cap) {
      throw new WharfError(
        'RATE_LIMITED',
        { operation: `${operation} (${cap} concurrent requests)`, retryAfterS: 1 },
        { headers: { 'retry-after': '1' }, details: { limit: cap, kind: 'concurrent' } },
      );
    }
    inFlight.set(key, n + 1);
    // 'close' fires once the response is sent or the client went away: either way the slot is free again.
    reply.raw.once('close', () => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left <= 0) inFlight.delete(key);
      else inFlight.set(key, left);
    });
  };

  app.addHook('onRequest', async (request, reply) => {
    const route = classifyRoute(request.routeOptions.url);
    if (!route) return;
    const principal = await principalOf(request, route.kind === 'management');
    if (!principal) return;
    const who = principal.kind === 'user' ? `u:${principal.user.id}` : `w:${principal.worker.id}`;
    let key: string;
    let limit: OperationLimit;
    let operation: string;
    if (route.kind === 'management') {
      const keyId = principal.kind === 'user' ? `k:${principal.key.id}` : who;
      key = `mgmt|${keyId}`;
      limit = { rate: settings.managementPer10s, concurrent: null };
      operation = 'the management API';
    } else {
      const endpointId = (request.params as { endpointId?: string }).endpointId ?? '';
      key = `${route.op}|${who}|${endpointId}`;
      const userId = principal.kind === 'user' ? principal.user.id : principal.userId;
      limit = await effective(limits[route.op], endpointId, userId);
      operation = `/${route.op}`;
    }
    let used: number | null = null;
    let resetS = WINDOW_MS / 1000;
    try {
      const res = await counter.consume(key);
      used = res.consumedPoints;
      resetS = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    } catch {
      // A shared counter store that is down must not take the API down with it: the request goes through.
    }
    if (used !== null && used > limit.rate) {
      throw new WharfError(
        'RATE_LIMITED',
        { operation, retryAfterS: resetS },
        {
          headers: { 'retry-after': String(resetS), 'x-ratelimit-limit': String(limit.rate) },
          details: { limit: limit.rate, windowSeconds: WINDOW_MS / 1000, kind: 'rate' },
        },
      );
    }
    if (used !== null) {
      reply.header('x-ratelimit-limit', limit.rate);
      reply.header('x-ratelimit-remaining', Math.max(0, limit.rate - used));
      reply.header('x-ratelimit-reset', resetS);
    }
    if (limit.concurrent !== null) acquire(key, limit.concurrent, reply, operation);
  });
}
