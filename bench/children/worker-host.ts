// The worker host: N no-op workers in a process of their own, so they do not share the server's event loop.
// `wharf` mode runs TypeScript-SDK workers against a Wharf server; `bullmq` mode runs BullMQ workers on Redis with
// the same N and concurrency (the peer comparison).

import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import type { WorkerHandle } from '../../src/sdk/worker/index.ts';
import { memory, payload, serveParent } from '../lib/child.ts';
import { startSdkWorkers, type SdkWorkersOptions } from './sdk-workers.ts';

type Payload =
  | ({ mode: 'wharf' } & SdkWorkersOptions)
  | { mode: 'bullmq'; queue: string; redis: { host: string; port: number }; n: number; concurrency: number };

const p = payload<Payload>();
let sdk: WorkerHandle[] = [];
let bull: Worker[] = [];
let completed = 0;
let lastCompletedAt = 0;
const waiters = new Set<() => void>();
const onCompleted = (): void => {
  completed++;
  lastCompletedAt = performance.timeOrigin + performance.now();
  for (const w of waiters) w();
};

if (p.mode === 'wharf') {
  sdk = startSdkWorkers(p);
} else {
  bull = Array.from({ length: p.n }, () => {
    const w = new Worker(p.queue, async () => ({}), { connection: p.redis, concurrency: p.concurrency });
    w.on('completed', onCompleted);
    return w;
  });
  await Promise.all(bull.map((w) => w.waitUntilReady()));
}

async function stopAll(): Promise<void> {
  await Promise.all([...sdk.map((w) => w.stop({ timeoutMs: 1000 })), ...bull.map((w) => w.close())]);
  sdk = [];
  bull = [];
}

serveParent(
  {
    mem: () => memory(),
    waitCompleted: ({ target, timeoutMs }: { target: number; timeoutMs: number }) =>
      new Promise((resolve) => {
        const check = (): void => {
          if (completed >= target) finish();
        };
        const finish = (): void => {
          waiters.delete(check);
          clearTimeout(timer);
          resolve({ completed, lastCompletedAt });
        };
        const timer = setTimeout(finish, timeoutMs);
        waiters.add(check);
        check();
      }),
    stop: async () => {
      await stopAll();
      return null;
    },
  },
  stopAll,
);

process.send!({ ready: true, pid: process.pid });
