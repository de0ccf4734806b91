import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LIMITS, POLICY, type Endpoint, type Job, type User } from '../../domain/index.ts';
import { memberText } from '../../domain/json.ts';
import { endpointHealth, statusBody, streamBody, type Principal, type Submission } from '../../engine/index.ts';
import { WharfError } from '../../errors/index.ts';
import { mayReachPrivate, refusal, type PrivateTargets } from '../../webhooks/index.ts';
import { authenticate, requireUser, type Access } from '../plugins/auth.ts';
import { bindLog } from '../plugins/observability.ts';
import { nullMeansAbsent } from '../plugins/validation.ts';
import { clientGone, rawBodyOf, sendJson, type AppDeps } from '../context.ts';
import { withQueueReason } from './queue-reason.ts';
import { EndpointParams, JobParams, StatusQuery, SubmitBody, WaitQuery } from './schemas.ts';

type EP = { endpointId: string };
type JP = { endpointId: string; jobId: string };

/**
 * `principal` is the caller: an admin's private-target privilege is its full-scope keys' only, so a restricted key
 * (a CI system's) of an admin cannot point deliveries at internal addresses. Returns whether the job's deliveries
 * must stay on public addresses (JobPolicy.webhookPublicOnly): a host name is only resolved when delivered.
 */
function checkWebhook(
  url: string | undefined,
  owner: User,
  principal: Principal,
  privateTargets: PrivateTargets,
): { webhookPublicOnly: boolean } {
  if (url === undefined) return { webhookPublicOnly: false };
  const bad = (reason: string) => new WharfError('VALIDATION_FAILED', { reason }, { details: [{ field: 'webhook' }] });
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('webhook must be an absolute http(s) URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw bad('webhook must use http or https');
  // The password would be kept in the delivery log; deliveries are signed instead.
  if (parsed.username !== '' || parsed.password !== '') {
    throw bad('webhook must not carry a user name or password (sign deliveries with the webhook secret instead)');
  }
  // A host name is checked when it is resolved, at delivery (its address may change until then).
  const privileged = owner.isAdmin && principal.kind === 'user' && principal.key.scope === 'all';
  const webhookPublicOnly = !mayReachPrivate(privateTargets, privileged);
  const refused = refusal(parsed, webhookPublicOnly, true);
  if (refused !== null) throw bad(`webhook: ${refused.message}`);
  return { webhookPublicOnly };
}

/** A given `wait` under the 1000 ms minimum waits the minimum (schemas.ts WaitQuery says why); absent stays absent. */
function floorWait(wait: number | undefined): number | undefined {
  return wait === undefined ? undefined : Math.max(wait, POLICY.runsyncWaitMs.min);
}

/** The submission, with its input as the client wrote it (64-bit integers, `1.0`: domain/json.ts memberText). */
function submissionOf(request: FastifyRequest<{ Body: Submission }>): Submission {
  return { ...request.body, inputJson: memberText(rawBodyOf(request), 'input') };
}

/** The queue API of interface §4.1 under /v2/{endpointId}. Every success is HTTP 200 (the JS SDK insists). */
export function registerQueueRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { engine, accounts, resources } = deps;
  const privateTargets = deps.webhookPrivateTargets ?? 'admins';

  async function endpointFor(
    request: FastifyRequest<{ Params: EP }>,
    access: Access,
  ): Promise<{ endpoint: Endpoint; principal: Principal; owner: User }> {
    const principal = await authenticate(accounts, request);
    const endpointId = request.params.endpointId;
    const user = requireUser(principal, access, endpointId);
    const endpoint = await resources.getEndpoint(user.user.id, endpointId);
    return { endpoint, principal, owner: user.user };
  }

  /** The stream cursor belongs to the caller's key: two clients reading one stream each see every chunk. */
  const consumerOf = (p: Principal): string => (p.kind === 'user' ? `key:${p.key.id}` : `worker:${p.worker.id}`);

  const post = { schema: { params: EndpointParams, body: SubmitBody }, preValidation: nullMeansAbsent(SubmitBody) };

  app.post<{ Params: EP; Body: Submission }>(
    '/v2/:endpointId/run',
    { ...post, bodyLimit: LIMITS.runBodyBytes },
    async (request, reply) => {
      const { endpoint, owner, principal } = await endpointFor(request, 'write');
      const scope = checkWebhook(request.body.webhook, owner, principal, privateTargets);
      const job = await engine.submit(endpoint, { ...submissionOf(request), ...scope }, 'async');
      bindLog(request, reply, { jobId: job.id });
      return sendJson(reply, `{"id":${JSON.stringify(job.id)},"status":"IN_QUEUE"}`);
    },
  );

  app.post<{ Params: EP; Body: Submission; Querystring: { wait?: number } }>(
    '/v2/:endpointId/runsync',
    { ...post, schema: { ...post.schema, querystring: WaitQuery }, bodyLimit: LIMITS.runsyncBodyBytes },
    async (request, reply) => {
      const { endpoint, owner, principal } = await endpointFor(request, 'write');
      const scope = checkWebhook(request.body.webhook, owner, principal, privateTargets);
      const waitGiven = request.query.wait !== undefined;
      const job = await engine.submit(endpoint, { ...submissionOf(request), ...scope }, 'sync', waitGiven);
      bindLog(request, reply, { jobId: job.id });
      const final = await engine.waitForFinal(
        endpoint.id,
        job.id,
        floorWait(request.query.wait) ?? POLICY.runsyncWaitMs.default,
        clientGone(request, reply),
      );
      // The submit did not wait for its fsync (store.submitJob, mode sync): the id must be on disk before it leaves.
      await engine.whenDurable();
      return sendJson(reply, statusBody(final, engine.clock.now()));
    },
  );

  /** The job as /status and /status-sync show it. */
  const sendStatus = (reply: FastifyReply, job: Job) =>
    sendJson(reply, withQueueReason(statusBody(job, engine.clock.now()), job, deps.fleetStatus));

  const status = async (
    request: FastifyRequest<{ Params: JP; Querystring: { ttl?: number } }>,
    reply: FastifyReply,
  ) => {
    // HEAD is a safe method (Fastify answers it with the GET handler): it reads, never sets the ttl.
    const ttl = request.method === 'HEAD' ? undefined : request.query.ttl;
    const { endpoint } = await endpointFor(request, ttl === undefined ? 'read' : 'write');
    const job =
      ttl === undefined
        ? await engine.getJob(endpoint.id, request.params.jobId)
        : await engine.setTtl(endpoint.id, request.params.jobId, ttl);
    return sendStatus(reply, job);
  };
  const statusOpts = { schema: { params: JobParams, querystring: StatusQuery } };
  type StatusRoute = { Params: JP; Querystring: { ttl?: number } };
  app.get<StatusRoute>('/v2/:endpointId/status/:jobId', statusOpts, status);
  app.post<StatusRoute>('/v2/:endpointId/status/:jobId', statusOpts, status);

  const statusSync = async (
    request: FastifyRequest<{ Params: JP; Querystring: { wait?: number } }>,
    reply: FastifyReply,
  ) => {
    const { endpoint } = await endpointFor(request, 'read');
    // HEAD (answered by the GET handler) asks for the headers of the state now, as HEAD /status does: no waiting.
    const job =
      request.method === 'HEAD'
        ? await engine.getJob(endpoint.id, request.params.jobId)
        : await engine.statusSync(
            endpoint.id,
            request.params.jobId,
            floorWait(request.query.wait),
            clientGone(request, reply),
          );
    return sendStatus(reply, job);
  };
  const waitOpts = { schema: { params: JobParams, querystring: WaitQuery } };
  type WaitRoute = { Params: JP; Querystring: { wait?: number } };
  app.get<WaitRoute>('/v2/:endpointId/status-sync/:jobId', waitOpts, statusSync);
  app.post<WaitRoute>('/v2/:endpointId/status-sync/:jobId', waitOpts, statusSync);

  const stream = async (
    request: FastifyRequest<{ Params: JP; Querystring: { wait?: number } }>,
    reply: FastifyReply,
  ) => {
    const { endpoint, principal } = await endpointFor(request, 'read');
    const res = await engine.stream(
      endpoint.id,
      request.params.jobId,
      consumerOf(principal),
      floorWait(request.query.wait),
      clientGone(request, reply),
    );
    return sendJson(reply, streamBody(res.status, res.chunks));
  };
  // No HEAD: a read of /stream moves the caller's cursor past the chunks it returns (HEAD would lose them).
  app.get<WaitRoute>('/v2/:endpointId/stream/:jobId', { ...waitOpts, exposeHeadRoute: false }, stream);
  app.post<WaitRoute>('/v2/:endpointId/stream/:jobId', waitOpts, stream);

  app.post<{ Params: JP }>(
    '/v2/:endpointId/cancel/:jobId',
    { schema: { params: JobParams } },
    async (request, reply) => {
      const { endpoint } = await endpointFor(request, 'write');
      const job = await engine.cancel(endpoint.id, request.params.jobId);
      return sendJson(reply, `{"id":${JSON.stringify(job.id)},"status":"${job.status}"}`);
    },
  );

  app.post<{ Params: JP }>(
    '/v2/:endpointId/retry/:jobId',
    { schema: { params: JobParams } },
    async (request, reply) => {
      const { endpoint } = await endpointFor(request, 'write');
      const job = await engine.retry(endpoint.id, request.params.jobId);
      return sendJson(reply, `{"id":${JSON.stringify(job.id)},"status":"${job.status}"}`);
    },
  );

  app.post<{ Params: EP }>(
    '/v2/:endpointId/purge-queue',
    { schema: { params: EndpointParams } },
    async (request, reply) => {
      const { endpoint } = await endpointFor(request, 'write');
      const removed = await engine.purge(endpoint.id);
      return sendJson(reply, `{"removed":${removed},"status":"completed"}`);
    },
  );

  app.get<{ Params: EP }>('/v2/:endpointId/health', { schema: { params: EndpointParams } }, async (request, reply) => {
    const { endpoint } = await endpointFor(request, 'read');
    return sendJson(
      reply,
      JSON.stringify(await endpointHealth(deps.store, endpoint.id, deps.fleetStatus?.(endpoint.id))),
    );
  });
}
