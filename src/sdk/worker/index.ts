// Wharf's TypeScript worker SDK: speaks the same worker protocol as the official Python SDK
// (`runpod.serverless.start`), so a Wharf server — or any RunPod-compatible one — runs TypeScript handlers.
//
//   import { start } from './src/sdk/worker/index.ts';
//   start({ handler: async (job) => ({ echo: job.input }) });

import { readWorkerEnv } from './env.ts';
import { createLogger } from './log.ts';
import type { StartOptions, WorkerHandle } from './types.ts';
import { Worker } from './worker.ts';

export type { Handler, HandlerContext, Job, JobLogger, StartOptions, StopOptions, WorkerHandle } from './types.ts';
export { progressUpdate } from './progress.ts';
export { RUNPOD_VERSION, SDK_VERSION } from './env.ts';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Start a worker that takes jobs from the service named by RUNPOD_WEBHOOK_GET_JOB and runs them through
 * `opts.handler`. Throws at once when that variable is missing; everything after start-up is logged, never thrown.
 */
export function start<I, O>(opts: StartOptions<I, O>): WorkerHandle {
  if (typeof opts.handler !== 'function') throw new TypeError('start(): `handler` must be a function');
  // Read at start(), not at import: importing the SDK has no side effects.
  const cfg = readWorkerEnv(opts.env ?? process.env);
  const log = createLogger({ level: cfg.logLevel, json: cfg.endpointId !== undefined });
  const worker = new Worker(opts, cfg, log);

  if (opts.installSignalHandlers !== false) {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (!signalled) {
        signalled = true;
        log.log('INFO', `${signal} received: finishing running jobs, taking no new ones`);
        void worker.stop();
      } else {
        // A second signal (impatient Ctrl-C) means "now": abort the running jobs instead of waiting.
        log.log('WARN', `${signal} received again: aborting running jobs`);
        void worker.stop({ timeoutMs: 0 });
      }
    };
    for (const s of SIGNALS) process.on(s, onSignal);
    // Removing the listeners once stopped restores the default: a later signal ends the process.
    void worker.done.finally(() => {
      for (const s of SIGNALS) process.off(s, onSignal);
    });
  }

  return {
    workerId: worker.workerId,
    stop: (stopOpts) => worker.stop(stopOpts),
    done: worker.done,
  };
}
