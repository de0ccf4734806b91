import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { authenticate, requireUser } from '../plugins/auth.ts';
import { clientGone, type AppDeps } from '../context.ts';

const LogQuery = Type.Object({
  workerId: Type.Optional(Type.String({ maxLength: 128 })),
  jobId: Type.Optional(Type.String({ maxLength: 256 })),
  after: Type.Optional(Type.Integer({ minimum: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000 })),
  follow: Type.Optional(Type.Boolean()),
});

/**
 * GET /v1/endpoints/{id}/logs — the endpoint's worker output (a Wharf extension). With `follow=true` the request
 * waits (up to 20 s) for lines after `after`, so a client can tail the log with repeated calls.
 */
export function registerLogRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get<{
    Params: { endpointId: string };
    Querystring: { workerId?: string; jobId?: string; after?: number; limit?: number; follow?: boolean };
  }>(
    '/v1/endpoints/:endpointId/logs',
    {
      schema: {
        params: Type.Object({ endpointId: Type.String({ minLength: 1, maxLength: 64 }) }),
        querystring: LogQuery,
      },
    },
    async (request, reply) => {
      const user = requireUser(await authenticate(deps.accounts, request), 'read');
      const endpoint = await deps.resources.getEndpoint(user.user.id, request.params.endpointId);
      const logs = deps.logs;
      if (!logs) return { lines: [], next: request.query.after ?? 0 };
      let lines = logs.query(endpoint.id, request.query);
      const signal = request.query.follow ? clientGone(request, reply) : null;
      // A client gone already (during the key check or the endpoint read) is not waited for: its signal aborted
      // before this could listen to it.
      if (lines.length === 0 && signal && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, 20_000);
          const off = logs.onAppend((id) => id === endpoint.id && done());
          signal.addEventListener('abort', done, { once: true });
          function done(): void {
            clearTimeout(timer);
            off();
            resolve();
          }
        });
        lines = logs.query(endpoint.id, request.query);
      }
      const next = lines.length > 0 ? lines[lines.length - 1]!.seq : (request.query.after ?? 0);
      return { lines, next };
    },
  );
}
