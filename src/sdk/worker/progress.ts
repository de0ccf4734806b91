// progressUpdate(job, value) must work outside the handler context too, as in Python where it is a module-level
// function. Running workers register a poster per job id; a job no worker here holds falls back to the
// environment, like Python's implementation.

import { outputUrl, readWorkerEnv } from './env.ts';
import { WorkerHttp } from './http.ts';
import { createLogger } from './log.ts';
import { encodeBody } from './result.ts';
import type { Job } from './types.ts';

export type ProgressPoster = (value: unknown) => Promise<void>;

const posters = new Map<string, ProgressPoster>();

export function registerProgress(jobId: string, poster: ProgressPoster): () => void {
  posters.set(jobId, poster);
  return () => {
    if (posters.get(jobId) === poster) posters.delete(jobId);
  };
}

/** Body of a progress post: non-final, the service exposes `output` while the job is IN_PROGRESS (spec 1.12). */
export function progressBody(value: unknown): string {
  return encodeBody({ status: 'IN_PROGRESS', output: value });
}

/**
 * Post `{"status":"IN_PROGRESS","output": value}` for a job. Fire-and-forget: the promise resolves when the post
 * ended (retried on 5xx) and never rejects, so an unawaited call cannot crash the worker.
 */
export async function progressUpdate(job: Pick<Job, 'id'>, value: unknown): Promise<void> {
  const poster = posters.get(job.id);
  if (poster !== undefined) return poster(value);
  try {
    const cfg = readWorkerEnv(process.env);
    const log = createLogger({ level: cfg.logLevel, json: cfg.endpointId !== undefined });
    const http = new WorkerHttp(cfg.apiKey);
    try {
      await http.post(outputUrl(cfg, job.id, false), progressBody(value), job.id, {
        waitsMs: cfg.retryWaitsMs,
        log,
        what: 'progress update',
      });
    } finally {
      // A one-off client: its keep-alive connection has nothing left to serve.
      http.destroy();
    }
  } catch (err) {
    // Only reachable without RUNPOD_WEBHOOK_GET_JOB: nowhere to post, which is not the handler's problem.
    process.stderr.write(`progressUpdate(${job.id}) dropped: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
