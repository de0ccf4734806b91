import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { takeBatchSize, type Endpoint, type WorkerRecord } from '../../domain/index.ts';
import { workerJobBody } from '../../engine/index.ts';
import { WharfError } from '../../errors/index.ts';
import { authenticate, requireUser } from '../plugins/auth.ts';
import { clientGone, rawBodyOf, sendJson, type AppDeps } from '../context.ts';

/** Result and stream bodies may be large outputs; a single stream chunk is split or refused past 1 MB. */
const WORKER_BODY_LIMIT = 20 * 1024 * 1024;

const WorkerParams = Type.Object({
  endpointId: Type.String({ minLength: 1, maxLength: 128 }),
  workerId: Type.String({ minLength: 1, maxLength: 512 }),
});
// The same worker id bound as on take: a worker that was handed a job must be able to post its result.
const WorkerJobParams = Type.Object({
  endpointId: Type.String({ minLength: 1, maxLength: 128 }),
  workerId: Type.String({ minLength: 1, maxLength: 512 }),
  jobId: Type.String({ minLength: 1, maxLength: 1024 }),
});

type WP = { endpointId: string; workerId: string };
type WJP = WP & { jobId: string };

/**
 * A worker template without `?` makes the SDK glue its query onto the last path segment
 * (`job-take/w1&job_in_progress=0`, spec §1.4). Split it back off and merge it into the query.
 */
function unglue(segment: string, query: Record<string, unknown>): { value: string; query: Record<string, unknown> } {
  const amp = segment.indexOf('&');
  if (amp < 0) return { value: segment, query };
  const extra = Object.fromEntries(new URLSearchParams(segment.slice(amp + 1)));
  return { value: segment.slice(0, amp), query: { ...extra, ...query } };
}

/**
 * The SDK pastes RUNPOD_POD_ID into the take template as it is: set but empty, it names no worker (`job-take/?gpu=…`,
 * or `job-take/&job_in_progress=0` without the template's `?`). Such a worker could post nothing back
 * (`job-done//<job>` names no worker either), so its polls are refused, and held like other refusals.
 */
const noWorkerId = (): WharfError =>
  new WharfError(
    'VALIDATION_FAILED',
    { reason: 'the URL names no worker: RUNPOD_POD_ID is empty' },
    { details: [{ field: 'workerId', message: 'is empty (set RUNPOD_POD_ID)' }] },
  );

/** A poll's worker id, its glued query split off (unglue); an empty one is refused. */
function pollWorkerId(segment: string, query: Record<string, unknown>): ReturnType<typeof unglue> {
  const out = unglue(segment, query);
  if (out.value === '') throw noWorkerId();
  return out;
}

const textOf = (v: unknown, fallback: string): string => (typeof v === 'string' && v !== '' ? v : fallback);

/** The worker side of the protocol under /v2/{endpointId}/ (spec/worker-protocol.md §1, checklist §1.16). */
export function registerWorkerRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { accounts, resources, workers } = deps;

  async function workerFor(request: FastifyRequest<{ Params: WP }>, workerId: string): Promise<WorkerRecord> {
    return (await workerAndEndpoint(request, workerId)).worker;
  }

  async function workerAndEndpoint(
    request: FastifyRequest<{ Params: WP }>,
    workerId: string,
  ): Promise<{ worker: WorkerRecord; endpoint: Endpoint }> {
    const principal = await authenticate(accounts, request);
    const endpointId = request.params.endpointId;
    // The endpoint and the worker's stored record in one read (one round trip on PostgreSQL).
    if (principal.kind === 'worker') {
      const { endpoint, worker } = await resources.getEndpointAndWorker(principal.userId, endpointId, workerId);
      return { worker: await workers.resolveWorker(endpoint, workerId, principal.worker, worker), endpoint };
    }
    // Workers started outside Wharf join an endpoint with an API key of its owner (scope all, or restricted to it).
    const user = requireUser(principal, 'write', endpointId);
    const { endpoint, worker } = await resources.getEndpointAndWorker(user.user.id, endpointId, workerId);
    return { worker: await workers.resolveWorker(endpoint, workerId, null, worker), endpoint };
  }

  /**
   * The official SDK re-polls take at once after any error status but 429 (spec §1.6; a 400 it reads as "no job"), so
   * a worker whose key was revoked, whose endpoint was deleted or whose URL names no worker, or any worker while the
   * store is away (503) or a bug fails the poll (500), would spin at ~1,500 requests/s. Such refusals on the polling
   * routes are held for a few seconds before they are sent.
   */
  async function refusalsHeld<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      const status = error instanceof WharfError ? error.status : 500;
      if (status === 400 || status === 401 || status === 404 || status >= 500) {
        await new Promise((resolve) => setTimeout(resolve, workers.refusalHoldMs));
      }
      throw error;
    }
  }

  /**
   * The polls check the key first too (as every API route does, plugins/auth.ts), but hold a refusal: they opt out
   * of the plain check and run this one. They have no HEAD twin: a HEAD would hand out jobs or stop orders and drop
   * them with the body.
   */
  const poll = {
    exposeHeadRoute: false,
    config: { ownKeyCheck: true },
    onRequest: async (request: FastifyRequest): Promise<void> => {
      await refusalsHeld(() => authenticate(accounts, request));
    },
  };

  /** A take's jobs (none, or jobs that could not be delivered: 204), answered with `body`. Refusals are held. */
  const take = (request: FastifyRequest<{ Params: WP }>, reply: FastifyReply, batch: boolean) =>
    refusalsHeld(async () => {
      const { value: workerId, query } = pollWorkerId(
        request.params.workerId,
        request.query as Record<string, unknown>,
      );
      const { worker } = await workerAndEndpoint(request, workerId);
      const max = takeBatchSize(batch ? Number(query['batch_size'] ?? 1) : 1);
      const signal = clientGone(request, reply);
      const jobs = await workers.take(worker, max, signal);
      if (jobs.length === 0) return reply.code(204).send();
      if (signal.aborted) {
        await workers.undeliverable(worker, jobs);
        return reply.code(204).send();
      }
      return sendJson(reply, batch ? `[${jobs.map(workerJobBody).join(',')}]` : workerJobBody(jobs[0]!));
    });

  app.get<{ Params: WP }>(
    '/v2/:endpointId/job-take/:workerId',
    { ...poll, schema: { params: WorkerParams } },
    (request, reply) => take(request, reply, false),
  );

  app.get<{ Params: WP }>(
    '/v2/:endpointId/job-take-batch/:workerId',
    { ...poll, schema: { params: WorkerParams } },
    (request, reply) => take(request, reply, true),
  );

  app.get<{ Params: WP }>(
    '/v2/:endpointId/job-stop/:workerId',
    { ...poll, schema: { params: WorkerParams } },
    (request, reply) =>
      refusalsHeld(async () => {
        const { value: workerId } = pollWorkerId(request.params.workerId, {});
        const worker = await workerFor(request, workerId);
        const ids = await workers.stops(worker, clientGone(request, reply));
        if (ids.length === 0) return reply.code(204).send();
        return sendJson(reply, JSON.stringify({ jobsToStop: ids }));
      }),
  );

  // The polls' URLs with an empty worker id and the template's `?` (`job-take/?gpu=…`, the trailing slash ignored).
  for (const name of ['job-take', 'job-take-batch', 'job-stop']) {
    const openapi = { summary: 'Refused, held: the URL names no worker (RUNPOD_POD_ID is empty)' };
    app.get(`/v2/:endpointId/${name}`, { ...poll, config: { ...poll.config, openapi } }, () =>
      refusalsHeld(() => Promise.reject(noWorkerId())),
    );
  }

  const jobOpts = { schema: { params: WorkerJobParams }, bodyLimit: WORKER_BODY_LIMIT };

  /** A job-done body over the limit is refused unread (413), and its job failed (WorkerGateway.resultTooLarge). */
  async function failOversizedResult(request: FastifyRequest<{ Params: WJP }>, error: unknown): Promise<void> {
    if ((error as { code?: unknown }).code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return;
    const limitMb = WORKER_BODY_LIMIT / (1024 * 1024);
    const sent = Number(request.headers['content-length']);
    const size = Number.isFinite(sent) && sent > 0 ? ` (${(sent / (1024 * 1024)).toFixed(1)} MB)` : '';
    try {
      const { value: jobId } = unglue(request.params.jobId, {});
      const worker = await workerFor(request, request.params.workerId);
      await workers.resultTooLarge(
        worker,
        jobId,
        `The worker's result${size} is larger than the ${limitMb} MB a worker may post`,
      );
    } catch (failure) {
      // Not this worker's job, or the store away: the post is refused all the same.
      request.log.warn({ err: failure }, 'an oversized result did not fail its job');
    }
  }

  app.post<{ Params: WJP }>(
    '/v2/:endpointId/job-done/:workerId/:jobId',
    { ...jobOpts, onError: (request, _reply, error) => failOversizedResult(request, error) },
    async (request, reply) => {
      const { value: jobId } = unglue(request.params.jobId, {});
      const worker = await workerFor(request, request.params.workerId);
      await workers.done(worker, jobId, rawBodyOf(request));
      return sendJson(reply, '{"ok":true}');
    },
  );

  app.post<{ Params: WJP }>('/v2/:endpointId/job-stream/:workerId/:jobId', jobOpts, async (request, reply) => {
    const { value: jobId } = unglue(request.params.jobId, {});
    const worker = await workerFor(request, request.params.workerId);
    await workers.streamChunk(worker, jobId, rawBodyOf(request));
    return sendJson(reply, '{"ok":true}');
  });

  app.get<{ Params: WP }>(
    '/v2/:endpointId/ping/:workerId',
    // No HEAD: a ping registers a worker, renews its lease and may hand its jobs back.
    { exposeHeadRoute: false, schema: { params: WorkerParams } },
    async (request, reply) => {
      const { value: workerId, query } = unglue(request.params.workerId, request.query as Record<string, unknown>);
      const worker = await workerFor(request, workerId);
      const jobIdParam = query['job_id'];
      const jobIds = typeof jobIdParam === 'string' && jobIdParam !== '' ? jobIdParam.split(',').filter(Boolean) : null;
      const unhealthy =
        query['status'] === 'unhealthy'
          ? { check: textOf(query['check'], 'unknown'), reason: textOf(query['reason'], 'no reason given') }
          : undefined;
      await workers.ping(worker, { jobIds, unhealthy });
      return sendJson(reply, '{"status":"pong"}');
    },
  );
}
