// Scenario 1, idle fleet: what idle workers cost the server per job. /runsync at c=1 (one job at a time, each
// submitted when the last one completed, so every job finds the workers idle and waiting) with one single-slot no-op
// SDK worker long-polling the endpoint, then with 64; server CPU per job. A new job wakes one waiting take
// (Bus.publishOne), so 64 idle workers should cost a job about what one does; before that, each job woke all 64
// takes and each of them read the queue.

import type { Ctx } from '../lib/context.ts';
import { closedLoop } from '../lib/load.ts';
import { ratio, round, table } from '../lib/stats.ts';
import { startSdkWorkers, startWharf, submitRequest, type Wharf } from '../lib/wharf.ts';

export const IDLE_FLEET = 64;

export interface IdleFleetRun {
  workers: number;
  /** Jobs per second, one at a time. */
  jobsPerS: number;
  serverCpuUs: number;
  workerCpuUs: number;
}

export async function idleFleet(ctx: Ctx, name: string): Promise<[IdleFleetRun, IdleFleetRun]> {
  ctx.log(`${name}: /runsync at c=1 with 1, then ${IDLE_FLEET} idle single-slot workers`);
  return [await idleFleetRun(ctx, name, 1), await idleFleetRun(ctx, name, IDLE_FLEET)];
}

async function idleFleetRun(ctx: Ctx, name: string, workers: number): Promise<IdleFleetRun> {
  const w = await startWharf(ctx, `${name}-idle-${workers}`);
  const ep = await w.createEndpoint();
  const host = await startSdkWorkers(w, ep, { n: workers, concurrency: 1, idPrefix: 'bench-idle-' });
  await oneAtATime(w, ep, ctx.size(1000, 100)); // warm-up
  const end = await w.window();
  const hostCpu0 = host.cpuMs();
  const jobs = await oneAtATime(w, ep, ctx.size(3000, 300));
  const window = await end();
  const hostCpu = host.cpuMs() - hostCpu0;
  await host.stop();
  await w.close();
  return {
    workers,
    jobsPerS: (jobs / window.wallMs) * 1000,
    serverCpuUs: (window.cpuMs / jobs) * 1000,
    workerCpuUs: (hostCpu / jobs) * 1000,
  };
}

/** /runsync at c=1 for `ms` (each answer carries the completed job); returns how many jobs ran. */
async function oneAtATime(w: Wharf, ep: string, ms: number): Promise<number> {
  const load = await closedLoop({
    pool: w.pool,
    concurrency: 1,
    durationMs: ms,
    request: submitRequest(ep, 'runsync'),
  });
  if (load.errors > 0) throw new Error(`idle fleet: ${load.errors} /runsync errors, first: ${load.firstError}`);
  return load.requests;
}

export function idleFleetMarkdown(runs: readonly IdleFleetRun[]): string {
  return [
    table(
      ['idle workers (1 slot each), /runsync at c=1', 'jobs/s', 'server CPU µs per job', 'worker-host CPU µs per job'],
      runs.map((r) => [r.workers, r.jobsPerS, r.serverCpuUs, r.workerCpuUs]),
    ),
    '',
    `Idle fleet: one /runsync at a time, so every job finds the workers waiting in job-take. The server CPU per job with ` +
      `${IDLE_FLEET} idle workers against one is what a wake-up costs per waiting worker (ideally 1×: a new job ` +
      'wakes one take, not all of them).',
  ].join('\n');
}

export function idleFleetJson(runs: readonly [IdleFleetRun, IdleFleetRun]): Record<string, number> {
  const [one, many] = runs;
  return {
    idleFleetWorkers: many.workers,
    idleFleetCpuUsOne: round(one.serverCpuUs),
    idleFleetCpuUsMany: round(many.serverCpuUs),
    idleFleetCpuRatio: round(ratio(many.serverCpuUs, one.serverCpuUs)),
  };
}
