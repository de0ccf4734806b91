import { PassThrough } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isTerminal, LIMITS, type Endpoint, type Job } from '../../domain/index.ts';
import { WharfError } from '../../errors/index.ts';
import { clientGone, rawBodyOf, sendJson, type AppDeps } from '../context.ts';
import { authenticate, requireUser } from '../plugins/auth.ts';
import { toWharfError } from '../plugins/errors.ts';
import { bindLog } from '../plugins/observability.ts';
import { EndpointParams } from '../queue/schemas.ts';
import { answerOf, hasDone, openAiErrorBody, SSE_DONE, sseOfChunk, sseOfFinalOutput } from './sse.ts';

/** How long a request waits for its job's result (or, streaming, for the next chunk) before giving up. */
const OPENAI_WAIT_MS = 300_000;
/** A comment line this often keeps proxies from closing a stream whose job still waits in the queue. */
const KEEPALIVE_MS = 15_000;

/** The POST routes: path under /v2/{endpointId}/openai, and whether a body's `"stream": true` is honoured. */
const POST_ROUTES: ReadonlyArray<{ path: string; streams: boolean }> = [
  { path: '/v1/chat/completions', streams: true },
  { path: '/v1/completions', streams: true },
  { path: '/v1/embeddings', streams: false },
];

const OpenAiBody = Type.Object({}, { additionalProperties: true, description: 'The OpenAI request, passed through' });

type EP = { endpointId: string };

/**
 * OpenAI-compatible routes (docs/openai.md): `/v2/{endpointId}/openai/v1/{chat/completions, completions, embeddings,
 * models}`. Each request becomes a job whose input is `{openai_route, openai_input}`, the form the vLLM worker
 * expects; the job's output is the HTTP answer, its stream chunks the SSE events. The paths all start with
 * `/v2/:endpointId/openai/`, which the rate limiter files under the `/openai/*` row of interface §8.2.
 */
export function registerOpenAiRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { engine, accounts, resources } = deps;

  // OpenAI clients read `error.message` from `{"error": {...}}`: every error of these routes (401, 404, 429, bad
  // JSON, …) is answered in that shape, with the Wharf code as `code`.
  const errorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const wharfError = toWharfError(error, request.id);
    if (wharfError.code === 'INTERNAL') request.log.error({ err: error }, 'unhandled error');
    if (wharfError.headers) reply.headers(wharfError.headers);
    // A worker's failure or a timeout does not get better by sending the same request again at once.
    if (wharfError.code === 'OPENAI_JOB_FAILED' || wharfError.code === 'OPENAI_TIMEOUT') {
      reply.header('x-should-retry', 'false');
    }
    return sendJson(reply, openAiErrorBody(wharfError), wharfError.status);
  };

  async function endpointFor(request: FastifyRequest<{ Params: EP }>): Promise<Endpoint> {
    const principal = await authenticate(accounts, request);
    // Write access: every request runs a job, even the models list.
    const user = requireUser(principal, 'write', request.params.endpointId);
    return resources.getEndpoint(user.user.id, request.params.endpointId);
  }

  async function handle(
    request: FastifyRequest<{ Params: EP }>,
    reply: FastifyReply,
    route: string,
    /** The OpenAI request's JSON text, passed on as the client wrote it (its numbers, a 64-bit seed, exactly). */
    bodyJson: string,
    streaming: boolean,
  ): Promise<FastifyReply> {
    const endpoint = await endpointFor(request);
    const inputJson = `{"openai_route":${JSON.stringify(route)},"openai_input":${bodyJson}}`;
    const job = await engine.submit(endpoint, { input: null, inputJson }, 'sync');
    bindLog(request, reply, { jobId: job.id });
    reply.header('x-wharf-job-id', job.id);
    const gone = clientGone(request, reply);
    // A sync submit resolves before its fsync (store.submitJob): the id header must not leave before it is on disk.
    if (streaming) {
      await engine.whenDurable();
      return stream(request, reply, endpoint.id, job.id, gone);
    }

    const final = await engine.waitForFinal(endpoint.id, job.id, OPENAI_WAIT_MS, gone);
    await engine.whenDurable();
    if (gone.aborted) {
      // Nobody will read the answer: free the worker. 499 (client closed request) for the logs and metrics.
      await cancelQuietly(request, endpoint.id, job.id);
      return reply.code(499).send();
    }
    if (!isTerminal(final.status)) {
      await cancelQuietly(request, endpoint.id, job.id);
      // The wait was cut short by a graceful shutdown: the client should retry elsewhere.
      if (engine.bus.isClosed) throw new WharfError('SHUTTING_DOWN');
      throw new WharfError('OPENAI_TIMEOUT', { seconds: OPENAI_WAIT_MS / 1000, jobId: job.id });
    }
    const answer = final.status === 'COMPLETED' && final.outputJson !== null ? answerOf(final.outputJson) : null;
    if (!answer) throw failure(final);
    // The worker's own error (vLLM's error object), a 5xx included, is its answer to this request: sending it again
    // runs another job that fails the same way, as for OPENAI_JOB_FAILED (the OpenAI clients retry 5xx otherwise).
    if (answer.status !== 200) reply.header('x-should-retry', 'false');
    return sendJson(reply, answer.body, answer.status);
  }

  /**
   * `"stream": true`: an SSE response fed from the job's stream chunks, in order, ending with `data: [DONE]`
   * (unless the worker sent it). A failed job ends the stream with an error event, which the OpenAI clients raise.
   * The client hanging up cancels the job.
   */
  function stream(
    request: FastifyRequest,
    reply: FastifyReply,
    endpointId: string,
    jobId: string,
    gone: AbortSignal,
  ): FastifyReply {
    const sse = new PassThrough();
    sse.on('error', () => {}); // a write racing the client's hang-up; the hang-up itself is handled below
    const write = (text: string): void => {
      if (text !== '' && !sse.destroyed && !sse.writableEnded) sse.write(text);
    };
    /**
     * Resolves once the client has taken what was written, or is gone. The next read of the job's chunks waits for
     * it: a slow reader leaves the chunks in the store, rather than have the server read the whole answer into this
     * stream's buffer (at most one read, STREAM_READ_MAX_CHARS, waits here).
     */
    const drained = (): Promise<void> => {
      if (!sse.writableNeedDrain || sse.destroyed || gone.aborted) return Promise.resolve();
      return new Promise((resolve) => {
        const done = (): void => {
          sse.off('drain', done);
          sse.off('close', done);
          gone.removeEventListener('abort', done);
          resolve();
        };
        sse.on('drain', done);
        sse.on('close', done);
        gone.addEventListener('abort', done);
      });
    };
    // Node sends the status line and headers with the first byte of the body: without one now, a job still queued
    // would leave the client without its response (and the job id header) until the first chunk or keep-alive.
    write(': keep-alive\n\n');
    const pump = async (): Promise<void> => {
      let done = false;
      /** The attempt whose chunks went out; null until the first. */
      let sentAttempt: number | null = null;
      let lastActivity = engine.clock.now();
      for (;;) {
        await drained();
        if (gone.aborted) return;
        const res = await engine.stream(endpointId, jobId, 'openai', KEEPALIVE_MS, gone);
        if (gone.aborted) return;
        if (sentAttempt !== null && lostAfterSending(res, sentAttempt)) {
          // Its worker was lost and the job went back to the queue: the next attempt would stream the answer again
          // from its start, after the part the client already has. Nobody can read that run: stop it.
          await cancelQuietly(request, endpointId, jobId);
          write(`data: ${openAiErrorBody(new WharfError('OPENAI_STREAM_INTERRUPTED', { jobId }))}\n\n`);
          return;
        }
        for (const chunk of res.chunks) {
          const text = sseOfChunk(chunk);
          done ||= hasDone(text);
          write(text);
        }
        if (res.chunks.length > 0) {
          lastActivity = engine.clock.now();
          sentAttempt = res.attempt;
        }
        // Terminal with chunks just read: one more read drains any chunk that landed between chunks and status.
        if (isTerminal(res.status) && res.chunks.length === 0) {
          if (res.status !== 'COMPLETED') {
            write(`data: ${openAiErrorBody(failure(await engine.getJob(endpointId, jobId)))}\n\n`);
            return;
          }
          if (sentAttempt === null) {
            // Completed without streaming anything: the output is the answer, as for a non-streaming request. No
            // output, or vLLM's error object, ends the stream with an error event instead of an empty success.
            const job = await engine.getJob(endpointId, jobId);
            const answer = job.outputJson !== null ? answerOf(job.outputJson) : null;
            if (!answer) {
              write(`data: ${openAiErrorBody(failure(job))}\n\n`);
              return;
            }
            if (answer.status !== 200) {
              write(`data: ${answer.body}\n\n`);
              return;
            }
            const text = sseOfFinalOutput(job.outputJson!);
            done ||= hasDone(text);
            write(text);
          }
          break;
        }
        if (res.chunks.length === 0) {
          // A graceful shutdown released the wait: end the stream with an error event (the loop would spin).
          if (engine.bus.isClosed) {
            await cancelQuietly(request, endpointId, jobId);
            write(`data: ${openAiErrorBody(new WharfError('SHUTTING_DOWN'))}\n\n`);
            return;
          }
          if (engine.clock.now() - lastActivity >= OPENAI_WAIT_MS) {
            await cancelQuietly(request, endpointId, jobId);
            const timeout = new WharfError('OPENAI_TIMEOUT', { seconds: OPENAI_WAIT_MS / 1000, jobId });
            write(`data: ${openAiErrorBody(timeout)}\n\n`);
            return;
          }
          write(': keep-alive\n\n');
        }
      }
      if (!done) write(SSE_DONE);
    };
    void pump()
      .catch((error: unknown) => {
        request.log.error({ err: error }, 'openai stream failed');
        write(`data: ${openAiErrorBody(toWharfError(error, request.id))}\n\n`);
      })
      .finally(async () => {
        sse.end();
        if (gone.aborted) await cancelQuietly(request, endpointId, jobId);
      });
    reply
      .code(200)
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('x-accel-buffering', 'no');
    return reply.send(sse);
  }

  async function cancelQuietly(request: FastifyRequest, endpointId: string, jobId: string): Promise<void> {
    try {
      await engine.cancel(endpointId, jobId);
      request.log.info('client gone or timed out: job cancelled');
    } catch (error) {
      // Already gone (ttl) or finished meanwhile: nothing to stop.
      request.log.debug({ err: error }, 'cancel after client left failed');
    }
  }

  const common = { errorHandler };
  for (const r of POST_ROUTES) {
    app.post<{ Params: EP; Body: Record<string, unknown> }>(
      `/v2/:endpointId/openai${r.path}`,
      { ...common, schema: { params: EndpointParams, body: OpenAiBody }, bodyLimit: LIMITS.runsyncBodyBytes },
      async (request, reply) =>
        handle(request, reply, r.path, rawBodyOf(request).trim(), r.streams && request.body.stream === true),
    );
  }
  app.get<{ Params: EP }>(
    '/v2/:endpointId/openai/v1/models',
    // No HEAD: the models list runs a job.
    { ...common, exposeHeadRoute: false, schema: { params: EndpointParams } },
    async (request, reply) => handle(request, reply, '/v1/models', '{}', false),
  );
  // Any other path under /openai/ (`/v1/responses`, a typo): 404 in the OpenAI error shape the clients parse, after
  // the key check every /v2 route gets.
  app.all<{ Params: EP }>('/v2/:endpointId/openai/*', { ...common, exposeHeadRoute: false }, async (request) => {
    throw new WharfError('ROUTE_NOT_FOUND', { method: request.method, url: request.url.split('?')[0] });
  });
}

/** Whether a stream read shows that the attempt whose chunks were sent is over without finishing the job. */
function lostAfterSending(read: { status: string; chunks: string[]; attempt: number | null }, sent: number): boolean {
  if (read.status === 'IN_QUEUE') return true;
  return read.chunks.length > 0 && read.attempt !== sent;
}

/** The error for a job that ended without an answer, with the worker's error when it gave one. */
function failure(job: Job): WharfError {
  let detail = '';
  if (job.errorJson !== null) {
    let error: unknown = job.errorJson;
    try {
      error = JSON.parse(job.errorJson);
    } catch {
      // kept as text
    }
    detail = `: ${typeof error === 'string' ? error : JSON.stringify(error)}`.slice(0, 2000);
  } else if (job.status === 'COMPLETED') {
    detail = ' without output';
  }
  return new WharfError('OPENAI_JOB_FAILED', { jobId: job.id, status: job.status, detail });
}
