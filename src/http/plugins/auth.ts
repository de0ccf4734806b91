import type { FastifyRequest } from 'fastify';
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

export async function authenticate(
  accounts: Accounts,
  request: FastifyRequest,
  allowQuery = false,
): Promise<Principal> {
  const key = keyOf(request, allowQuery);
  if (!key || key.length > 512) throw new WharfError('UNAUTHORIZED');
  const principal = await accounts.resolve(key);
  if (!principal) throw new WharfError('UNAUTHORIZED');
  return principal;
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
