import type { FastifyRequest } from 'fastify';
import type { User } from '../../domain/index.ts';
import type { AppDeps } from '../context.ts';
import { authenticate, requireUser, type Access } from '../plugins/auth.ts';

/** The user behind a management request, if the key's scope allows `access` (restricted keys never do). */
export async function userOf(deps: AppDeps, request: FastifyRequest, access: Access): Promise<User> {
  return requireUser(await authenticate(deps.accounts, request), access).user;
}

/** OpenAPI metadata of a route (read by src/http/openapi.ts). */
export const meta = (operationId: string, summary: string, success = 200) => ({
  openapi: { operationId, summary, success },
});
