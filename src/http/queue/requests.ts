import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { JobListCursor, JobSummary } from '../../store/index.ts';
import { WharfError } from '../../errors/index.ts';
import { authenticate, requireUser } from '../plugins/auth.ts';
import { sendJson, type AppDeps } from '../context.ts';
import { EndpointParams } from './schemas.ts';

const RequestsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: 'nextCursor of the previous page' })),
});

/** The cursor is opaque to clients: base64url of `[createdAt, id]` of the last job of the previous page. */
export function encodeCursor(c: JobListCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');
}

export function decodeCursor(text: string): JobListCursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string') {
      return { createdAt: v[0] as number, id: v[1] };
    }
  } catch {
    // reported below
  }
  throw new WharfError(
    'VALIDATION_FAILED',
    { reason: 'cursor is not a nextCursor returned by this route' },
    { details: [{ field: 'cursor' }] },
  );
}

function view(j: JobSummary, now: number): Record<string, unknown> {
  const started = j.startedAt;
  let error: unknown = null;
  if (j.errorJson !== null) {
    try {
      error = JSON.parse(j.errorJson);
    } catch {
      error = j.errorJson;
    }
  }
  return {
    id: j.id,
    status: j.status,
    createdAt: new Date(j.createdAt).toISOString(),
    // As /status reports them (domain jobTimes): ms; null before a worker took the job.
    delayTime: started !== null ? Math.max(0, started - j.queuedAt) : null,
    executionTime: started !== null && j.status !== 'IN_QUEUE' ? Math.max(0, (j.completedAt ?? now) - started) : null,
    workerId: j.workerId,
    error,
    retries: j.retries,
  };
}

/**
 * GET /v2/{endpointId}/requests (interface §4.1 rule 8 names the path; docs/observability.md the payload): the
 * endpoint's recent jobs, newest first, `limit` per page (default 50, at most 500), `cursor` for the next page.
 * Keyset pagination: a page costs `limit` index rows however deep it is, and jobs submitted meanwhile never shift
 * a page. Only jobs still held are listed: ttl and result retention remove jobs from this list too.
 */
export function registerRequestsRoute(app: FastifyInstance, deps: AppDeps): void {
  app.get<{ Params: { endpointId: string }; Querystring: { limit?: number; cursor?: string } }>(
    '/v2/:endpointId/requests',
    { schema: { params: EndpointParams, querystring: RequestsQuery } },
    async (request, reply) => {
      const principal = await authenticate(deps.accounts, request);
      const user = requireUser(principal, 'read', request.params.endpointId);
      const endpoint = await deps.resources.getEndpoint(user.user.id, request.params.endpointId);
      const limit = request.query.limit ?? 50;
      const before = request.query.cursor === undefined ? null : decodeCursor(request.query.cursor);
      // One more than asked: tells whether a next page exists without a second query.
      const rows = await deps.store.listJobs(endpoint.id, { limit: limit + 1, before });
      // Show only states already on disk (as engine.getJob does).
      await deps.engine.settledView();
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const nextCursor = rows.length > limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null;
      const now = deps.engine.clock.now();
      return sendJson(reply, JSON.stringify({ requests: page.map((j) => view(j, now)), nextCursor }));
    },
  );
}
