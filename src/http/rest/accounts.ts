import type { FastifyInstance } from 'fastify';
import type { KeyScope, ServerlessDiscount } from '../../domain/index.ts';
import { invalidField, WharfError } from '../../errors/index.ts';
import type { AppDeps } from '../context.ts';
import { authenticate, requireAdmin } from '../plugins/auth.ts';
import { meta, userOf } from './common.ts';
import { IdParams } from './schemas.ts';
import { KeyCreateInput, UserCreateInput, UserUpdateInput } from './schemas-management.ts';
import { keyView, userView } from './views-management.ts';

/**
 * API keys of the caller (`/v1/keys`) and, for admins, users (`/v1/users`) — Wharf extensions. A key is shown once,
 * when it is created; listings show its prefix. Revocation works at once (the auth cache is cleared).
 * A read key cannot create or revoke keys; a restricted key cannot use any of this.
 */
export function registerAccountRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { accounts } = deps;
  const admin = async (request: Parameters<typeof authenticate>[1]) =>
    requireAdmin(await authenticate(accounts, request)).user;

  app.post<{ Body: { name: string; scope?: KeyScope; endpointIds?: string[] } }>(
    '/v1/keys',
    { schema: { body: KeyCreateInput }, config: meta('CreateKey', 'Create an API key (shown once)') },
    async (request) => {
      const user = await userOf(deps, request, 'write');
      const { name, scope = 'all', endpointIds = [] } = request.body;
      if (scope !== 'restricted' && endpointIds.length > 0) {
        throw invalidField('endpointIds', 'endpointIds applies to restricted keys only');
      }
      if (scope === 'restricted' && endpointIds.length === 0) {
        throw invalidField('endpointIds', 'a restricted key needs the endpoints it may use');
      }
      for (const id of endpointIds) {
        if (!(await deps.store.getEndpoint(user.id, id)))
          throw invalidField('endpointIds', `${id} is not one of your endpoints`);
      }
      const { key, record } = await accounts.createKey(user.id, name, scope, endpointIds);
      return { ...keyView(record), key };
    },
  );
  app.get('/v1/keys', { config: meta('ListKeys', 'List your API keys (never the keys)') }, async (request) => {
    const user = await userOf(deps, request, 'read');
    return (await accounts.listKeys(user.id)).map(keyView);
  });
  app.delete<{ Params: { keyId: string } }>(
    '/v1/keys/:keyId',
    { schema: { params: IdParams('keyId') }, config: meta('RevokeKey', 'Revoke an API key at once', 204) },
    async (request, reply) => {
      const user = await userOf(deps, request, 'write');
      const { keyId } = request.params;
      if (!(await accounts.listKeys(user.id)).some((k) => k.id === keyId)) {
        throw new WharfError('API_KEY_NOT_FOUND', { keyId });
      }
      await accounts.revokeKey(user.id, keyId);
      return reply.code(204).send();
    },
  );

  app.post<{ Body: { name: string } }>(
    '/v1/users',
    { schema: { body: UserCreateInput }, config: meta('CreateUser', 'Create a user and its first key (admin)') },
    async (request) => {
      await admin(request);
      const user = await accounts.createUser(request.body.name);
      const { key, record } = await accounts.createKey(user.id, 'first key', 'all');
      return { ...userView(user), key, apiKey: keyView(record) };
    },
  );
  app.get('/v1/users', { config: meta('ListUsers', 'List users (admin)') }, async (request) => {
    await admin(request);
    return (await accounts.listUsers()).map(userView);
  });
  const userParams = IdParams('userId');
  app.get<{ Params: { userId: string } }>(
    '/v1/users/:userId',
    { schema: { params: userParams }, config: meta('GetUser', 'Get a user (admin)') },
    async (request) => {
      await admin(request);
      return userView(await accounts.getUser(request.params.userId));
    },
  );
  app.patch<{ Params: { userId: string }; Body: { serverlessDiscount?: ServerlessDiscount | null } }>(
    '/v1/users/:userId',
    {
      schema: { params: userParams, body: UserUpdateInput },
      config: meta('UpdateUser', "Set a user's serverlessDiscount (admin)"),
    },
    async (request) => {
      await admin(request);
      const { userId } = request.params;
      const { serverlessDiscount } = request.body;
      if (serverlessDiscount === undefined) return userView(await accounts.getUser(userId));
      return userView(await accounts.setServerlessDiscount(userId, serverlessDiscount));
    },
  );
}
