// N no-op workers of Wharf's TypeScript worker SDK in the current process, joined to one endpoint with the owner's
// API key (the way workers started outside Wharf join), with the environment a managed worker would get.

import { start, type WorkerHandle } from '../../src/sdk/worker/index.ts';

export interface SdkWorkersOptions {
  url: string;
  key: string;
  endpointId: string;
  n: number;
  /** Jobs each worker runs at once: more than 1 makes the SDK use job-take-batch. */
  concurrency: number;
  idPrefix: string;
}

export function startSdkWorkers(o: SdkWorkersOptions): WorkerHandle[] {
  const base = `${o.url}/v2/${o.endpointId}`;
  const q = '?gpu=CPU';
  return Array.from({ length: o.n }, (_, i) =>
    start({
      handler: () => ({}),
      concurrencyModifier: () => o.concurrency,
      installSignalHandlers: false,
      env: {
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID${q}`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID${q}`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID${q}`,
        RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID${q}`,
        RUNPOD_AI_API_KEY: o.key,
        RUNPOD_POD_ID: `${o.idPrefix}${i}`,
        RUNPOD_PING_INTERVAL: '10000',
        // Per-job INFO lines would measure the terminal, not the worker.
        RUNPOD_LOG_LEVEL: 'ERROR',
      },
    }),
  );
}
