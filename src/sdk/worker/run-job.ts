// Runs one job through the user's handler and posts what it produced: one result post for a plain handler; chunk
// posts then one final post for a streaming one (spec 1.10, 1.13). A job whose signal was aborted posts nothing
// more: the service already considers it stopped (spec 1.9).

import { outputUrl, streamUrl } from './env.ts';
import type { WorkerEnv } from './env.ts';
import { coerceError, errorReport, errorText, streamErrorText } from './errors.ts';
import type { WorkerHttp } from './http.ts';
import type { WorkerLogger } from './log.ts';
import { chunkError, encodeBody, errorBody, isStreamable, resultBody, streamFinalBody } from './result.ts';
import type { ResultBody } from './result.ts';
import type { Handler, HandlerContext, Job } from './types.ts';

export interface RunJobDeps {
  cfg: WorkerEnv;
  http: WorkerHttp;
  log: WorkerLogger;
  returnAggregateStream: boolean;
  refreshWorker: boolean;
  /** Aborts pending posts and retry waits when the worker is stopped hard. */
  hardStop: AbortSignal;
}

/** Resolves once the job is finished and its result posted (or dropped); never rejects. */
export async function runJob<I, O>(
  handler: Handler<I, O>,
  job: Job<I>,
  ctx: HandlerContext,
  deps: RunJobDeps,
): Promise<void> {
  const { log } = deps;
  let returned: unknown;
  try {
    returned = handler(job, ctx);
    if (isThenable(returned)) returned = await returned;
  } catch (err) {
    if (ctx.signal.aborted) return logStopped(deps, job.id);
    log.log('ERROR', `Handler failed: ${coerceError(err).message}`, job.id);
    await postResult(deps, job.id, errorBody(errorReport(err, deps.cfg), deps.refreshWorker), false);
    return;
  }
  if (isStreamable(returned)) {
    await runStream(returned, job, ctx, deps);
    return;
  }
  if (ctx.signal.aborted) return logStopped(deps, job.id);
  await postResult(deps, job.id, resultBody(returned, deps.refreshWorker), false);
}

async function runStream(
  stream: AsyncIterable<unknown> | Iterable<unknown>,
  job: Job<unknown>,
  ctx: HandlerContext,
  deps: RunJobDeps,
): Promise<void> {
  const chunks: unknown[] = [];
  let final: ResultBody | undefined;
  try {
    // `for await` also walks sync iterables; chunks are posted one at a time, each awaited before the next is
    // pulled, so the service receives them in order (spec 1.13).
    for await (const chunk of stream) {
      if (ctx.signal.aborted) break;
      const failed = chunkError(chunk);
      if (failed !== undefined) {
        final = errorBody(errorText(failed.error), deps.refreshWorker);
        break;
      }
      chunks.push(chunk);
      await deps.http.post(streamUrl(deps.cfg, job.id), encodeBody({ output: chunk }), job.id, {
        waitsMs: deps.cfg.retryWaitsMs,
        log: deps.log,
        signal: deps.hardStop,
        what: 'stream chunk',
      });
    }
  } catch (err) {
    if (!ctx.signal.aborted) {
      deps.log.log('ERROR', `Streaming handler failed: ${coerceError(err).message}`, job.id);
      final = errorBody(streamErrorText(err), deps.refreshWorker);
    }
  }
  if (ctx.signal.aborted) return logStopped(deps, job.id);
  await postResult(
    deps,
    job.id,
    final ?? streamFinalBody(chunks, deps.returnAggregateStream, deps.refreshWorker),
    true,
  );
}

async function postResult(deps: RunJobDeps, jobId: string, body: ResultBody, isStream: boolean): Promise<void> {
  const ok = await deps.http.post(outputUrl(deps.cfg, jobId, isStream), encodeBody(body), jobId, {
    waitsMs: deps.cfg.retryWaitsMs,
    unreachableWaitsMs: deps.cfg.resultUnreachableWaitsMs,
    log: deps.log,
    signal: deps.hardStop,
    what: 'result',
  });
  if (ok) deps.log.log('DEBUG', `Result posted${body.error === undefined ? '' : ' (failed job)'}`, jobId);
}

function logStopped(deps: RunJobDeps, jobId: string): void {
  deps.log.log('INFO', 'Job stopped; no result posted', jobId);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
