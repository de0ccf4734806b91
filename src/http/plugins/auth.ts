import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Accounts, Principal } from '../../engine/accounts.ts';
import { WharfError } from '../../errors/index.ts';

/** The key of a request: `Authorization: Bearer <key>`, a bare `Authorization: <key>`, or `?api_key=`. */
export function keyOf(request: FastifyRequest, allowQuery: boolean): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.trim() !== '') {
    const trimmed = header.trim();
    return /^bearer\s+/i.test(trimmed) ? trimmed.replace(/^bearer\s+/i, '').trim() : trimmed;
  }
  if (allowQuery) {
    const q = (request.query as Record<string, unknown> | undefined)?.['api_key'];
    if (typeof q === 'string' && q !== '') return q;
  }
  return null;
}

/** Who sent a request, once known: the key is resolved once per request, by keyFirst or the route. */
const principals = new WeakMap<FastifyRequest, Principal>();

export async function authenticate(
  accounts: Accounts,
  request: FastifyRequest,
  allowQuery = false,
): Promise<Principal> {
  const known = principals.get(request);
  if (known) return known;
  const key = keyOf(request, allowQuery);
  if (!key || key.length > 512) throw new WharfError('UNAUTHORIZED');
  const principal = await accounts.resolve(key);
  if (!principal) throw new WharfError('UNAUTHORIZED');
  principals.set(request, principal);
  return principal;
}

/**
 * An onRequest hook: the key is checked before the body is read or anything is validated, so a caller without a
 * valid key gets 401 whatever it sent (never a validation error that describes the route's schema) and cannot make
 * the server parse megabytes of JSON. buildApp puts it on every route that needs a key (app.ts); /graphql, which
 * also takes `?api_key=`, puts it on its route itself.
 */
export function keyFirst(accounts: Accounts, allowQuery = false): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    await authenticate(accounts, request, allowQuery);
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route checks the key in an onRequest hook of its own: registerKeyFirst leaves it alone. */
    ownKeyCheck?: boolean;
  }
}

/** The API routes: every one needs a key, but these, which describe the API itself. */
const KEYED = /^\/v[12]\//;
const PUBLIC = /^\/v1\/(openapi\.json|docs)$/;

/** Put keyFirst in front of the onRequest hooks of every API route registered from now on (call before them). */
export function registerKeyFirst(app: FastifyInstance, accounts: Accounts): void {
  const hook = keyFirst(accounts);
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!KEYED.test(route.url) || PUBLIC.test(route.url)) return;
    // A route that checks the key in an onRequest hook of its own (the worker polls hold their refusals).
    if (route.config?.ownKeyCheck) return;
    const own =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [hook, ...own];
  });
}

export type Access = 'read' | 'write';

/** A user principal allowed to do `access` (optionally on one endpoint's queue); workers are refused. */
export function requireUser(
  principal: Principal,
  access: Access,
  endpointId?: string,
): Extract<Principal, { kind: 'user' }> {
  if (principal.kind !== 'user') throw new WharfError('FORBIDDEN', { action: 'use this route with a worker key' });
  const { scope, endpointIds } = principal.key;
  switch (scope) {
    case 'all':
      return principal;
    case 'read':
      if (access === 'read') return principal;
      throw new WharfError('FORBIDDEN', { action: 'change anything (read-only key)' });
    case 'restricted':
      if (endpointId !== undefined && endpointIds.includes(endpointId)) return principal;
      throw new WharfError('FORBIDDEN', {
        action: endpointId ? `use endpoint ${endpointId}` : 'use the management API (restricted key)',
      });
    default: {
      const unreachable: never = scope;
      return unreachable;
    }
  }
}

export function requireAdmin(principal: Principal): Extract<Principal, { kind: 'user' }> {
  const user = requireUser(principal, 'write');
  if (!user.user.isAdmin) throw new WharfError('FORBIDDEN', { action: 'manage users (admin only)' });
  return user;
}
