/**
 * Cross-origin calls from browsers (CORS), for the origins the operator allows (`--cors-origins`); none by default,
 * so a browser refuses cross-site calls as it would without Wharf. Keys travel in the Authorization header and never
 * in cookies, so allowing an origin (even `*`) lets a page call the API only with a key its user gave it: the
 * answers carry no Access-Control-Allow-Credentials.
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

export type CorsOrigins = '*' | string[];

/** An origin as browsers send it: scheme, host and optional port, nothing after. */
const ORIGIN = /^https?:\/\/[^/\s?#]+$/i;

/** `*`, or a comma-separated list of origins (`https://app.example.com,http://localhost:5173`). */
export function parseCorsOrigins(spec: string): CorsOrigins {
  const trimmed = spec.trim();
  if (trimmed === '*') return '*';
  const origins = trimmed
    .split(',')
    .map((o) => o.trim().replace(/\/$/, ''))
    .filter((o) => o !== '');
  if (origins.length === 0) throw new Error("expected '*' or a comma-separated list of origins");
  const bad = origins.filter((o) => !ORIGIN.test(o));
  if (bad.length > 0) {
    throw new Error(
      `${bad.map((o) => `'${o}'`).join(', ')} ${bad.length === 1 ? 'is no origin' : 'are no origins'}: ` +
        "expected '*' or origins like https://app.example.com (scheme, host, optional port)",
    );
  }
  return origins;
}

export function registerCors(app: FastifyInstance, origins: CorsOrigins): void {
  void app.register(cors, {
    // The preflight is answered in an onRequest hook, before any key check (a preflight carries no key).
    origin: origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    // A browser may read these of an answer: the request id to quote, and the rate limits' hints.
    exposedHeaders: ['x-request-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
    credentials: false,
    maxAge: 600,
  });
}
