// Example Wharf worker in TypeScript. Run it the way Wharf's local executor does:
//
//   RUNPOD_WEBHOOK_GET_JOB='http://127.0.0.1:8080/v2/<endpoint>/job-take/$ID?' ... node examples/echo-ts/worker.ts
//
// The service injects the RUNPOD_* variables; the handler below echoes its input, with a few switches that the
// SDK's tests use to exercise streaming, progress, cancellation, failures and crashes.

import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import { start } from '../../src/sdk/worker/index.ts';
import type { HandlerContext, Job } from '../../src/sdk/worker/index.ts';

interface EchoInput {
  stream?: number; // stream this many chunks instead of returning one result
  sleepMs?: number; // take this long (stops early when the job is cancelled)
  holdMs?: number; // take this long, whatever happens (a handler that does not look at its cancellation)
  fail?: string; // throw an Error with this message
  progress?: boolean; // report progress twice (before sleepMs)
  crash?: number; // exit the process mid-job with this code
  crashOnceFile?: string; // exit(1) mid-job unless this file exists, creating it first: only the first attempt crashes
  refresh?: boolean; // ask the service to recycle this worker after the job
}

async function* streamChunks(n: number, signal: AbortSignal): AsyncGenerator<{ chunk: number }> {
  for (let i = 0; i < n; i++) {
    signal.throwIfAborted();
    yield { chunk: i };
  }
}

async function handler(job: Job<EchoInput>, ctx: HandlerContext) {
  const input = job.input ?? {};
  if (typeof input.stream === 'number') return streamChunks(input.stream, ctx.signal);
  if (input.crash !== undefined) process.exit(Number(input.crash));
  if (input.crashOnceFile !== undefined && !existsSync(input.crashOnceFile)) {
    writeFileSync(input.crashOnceFile, ctx.workerId);
    process.exit(1);
  }
  // Progress comes before the sleep, so that a client polling /status sees it while the job still runs.
  if (input.progress) {
    await ctx.progressUpdate({ pct: 50 });
    await ctx.progressUpdate('almost');
  }
  if (input.sleepMs !== undefined) await sleep(input.sleepMs, undefined, { signal: ctx.signal });
  if (input.holdMs !== undefined) await sleep(input.holdMs);
  if (input.fail !== undefined) throw new Error(String(input.fail));
  if (input.refresh) return { echo: input, refresh_worker: true };
  return { echo: input };
}

start({ handler });
