// Scenario 6, two nodes: the throughput measures of scenario 1 against two Wharf servers sharing one PostgreSQL
// database (what docs/multinode.md describes). Clients submit to both nodes in turn, as behind a load balancer; half
// of the SDK workers poll each node, so jobs submitted on one node are taken and finished through the other about
// half the time (the LISTEN/NOTIFY bridge wakes the remote long polls). Both servers and their workers share this
// machine's two cores with PostgreSQL and the load generator: the figures say what a second node costs and carries
// here, not how a cluster of machines scales.

import { performance } from 'node:perf_hooks';
import { spawnChild, type Child } from '../lib/child.ts';
import type { Ctx } from '../lib/context.ts';
import { closedLoop, roundRobin } from '../lib/load.ts';
import { pct, ratio, round, sleep, table } from '../lib/stats.ts';
import { AUTH, startWharf, submitRequest, waitForIdleWorkers, type ServerWindow, type Wharf } from '../lib/wharf.ts';
import { LOAD_CONCURRENCY } from './baselines.ts';
import { e2eWarmupMs, WORKER_CONCURRENCY, WORKERS } from './s1-throughput.ts';

export interface TwoNodeFigures {
  submitRps: number;
  submitP50: number;
  submitP99: number;
  /** Both servers' CPU per acknowledged /run (µs). */
  submitCpuUs: number;
  e2eJobsPerS: number;
  e2eJobs: number;
  /** Acknowledged /run per second while the workers ran. */
  e2eSubmitRps: number;
  drainMs: number;
  /** Both servers' CPU per completed job (µs). */
  e2eServerCpuUs: number;
  /** Both worker hosts' CPU per completed job (µs). */
  e2eWorkerCpuUs: number;
  errors: number;
}

export async function twoNodes(ctx: Ctx, store: string, secretKey: string): Promise<TwoNodeFigures> {
  const durationMs = ctx.size(5000, 400);
  const nodes = await Promise.all(
    ['a', 'b'].map((n) =>
      startWharf(ctx, `s6-two-nodes-${n}`, { overrides: { store, secretKey, nodeId: `bench-${n}` } }),
    ),
  );
  const hosts: Child[] = [];
  try {
    const target = roundRobin(nodes.map((n) => n.pool));
    const cpu = (): number => nodes.reduce((sum, n) => sum + n.child.cpuMs(), 0);

    ctx.log('s6: two nodes, /run submissions, no workers');
    const queueEp = await nodes[0]!.createEndpoint();
    const cpu0 = cpu();
    const submit = await closedLoop({
      pool: target,
      concurrency: LOAD_CONCURRENCY,
      durationMs,
      warmupMs: ctx.size(500, 100),
      request: submitRequest(queueEp),
    });
    const submitCpuUs = ((cpu() - cpu0) / submit.answered) * 1000;

    ctx.log(`s6: two nodes, end to end, ${WORKERS} SDK workers x ${WORKER_CONCURRENCY}, half on each node`);
    // A fresh endpoint: the jobs queued above are another endpoint's and no worker takes them.
    const ep = await nodes[0]!.createEndpoint();
    nodes.forEach((node, i) => {
      hosts.push(
        spawnChild('worker-host.ts', {
          mode: 'wharf',
          url: node.url,
          key: AUTH.authorization.slice('Bearer '.length),
          endpointId: ep,
          n: WORKERS / 2,
          concurrency: WORKER_CONCURRENCY,
          idPrefix: `bench-two-${i}-`,
        }),
      );
    });
    await Promise.all(hosts.map((h) => h.ready));
    await waitForIdleWorkers(nodes[0]!, ep, WORKERS);
    // The same warm-up as every other end-to-end window: the same load, drained, before the measured one.
    await Promise.all(nodes.map((n) => n.child.call('resetCompleted')));
    const warm = await closedLoop({
      pool: target,
      concurrency: LOAD_CONCURRENCY,
      durationMs: e2eWarmupMs(ctx),
      request: submitRequest(ep),
    });
    await allCompleted(nodes, warm.requests, 120_000);
    await Promise.all(nodes.map((n) => n.child.call('resetCompleted')));
    const ends = await Promise.all(nodes.map((n) => n.window()));
    const hostCpu = (): number => hosts.reduce((sum, h) => sum + h.cpuMs(), 0);
    const hostCpu0 = hostCpu();
    const start = performance.timeOrigin + performance.now();
    const load = await closedLoop({
      pool: target,
      concurrency: LOAD_CONCURRENCY,
      durationMs,
      request: submitRequest(ep),
    });
    const acked = performance.timeOrigin + performance.now();
    const last = await allCompleted(nodes, load.requests, 120_000);
    const windows: ServerWindow[] = await Promise.all(ends.map((end) => end()));
    const serverCpuMs = windows.reduce((sum, w) => sum + w.cpuMs, 0);
    if (submit.errors + load.errors > 0) {
      ctx.log(`s6: two nodes: ${submit.errors + load.errors} errors, first: ${submit.firstError ?? load.firstError}`);
    }
    return {
      submitRps: submit.rps,
      submitP50: submit.latency.p50,
      submitP99: submit.latency.p99,
      submitCpuUs,
      e2eJobsPerS: (load.requests / (last - start)) * 1000,
      e2eJobs: load.requests,
      e2eSubmitRps: load.rps,
      drainMs: Math.max(0, last - acked),
      e2eServerCpuUs: (serverCpuMs / load.requests) * 1000,
      e2eWorkerCpuUs: ((hostCpu() - hostCpu0) / load.requests) * 1000,
      errors: submit.errors + load.errors,
    };
  } finally {
    await Promise.all(hosts.map((h) => h.stop()));
    await Promise.all(nodes.map((n) => n.close()));
  }
}

/**
 * When the last of `target` jobs reached a final state, whichever node its result was posted to (each node counts
 * its own completions); NaN when they did not all complete within `timeoutMs`.
 */
async function allCompleted(nodes: Wharf[], target: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const counts = await Promise.all(
      nodes.map((n) => n.child.call<{ completed: number; lastCompletedAt: number }>('completed')),
    );
    if (counts.reduce((sum, c) => sum + c.completed, 0) >= target) {
      return Math.max(...counts.map((c) => c.lastCompletedAt));
    }
    if (performance.now() > deadline) return Number.NaN;
    await sleep(20);
  }
}

export function twoNodeMarkdown(ctx: Ctx, t: TwoNodeFigures): string {
  const hello = ctx.baselines?.helloRps ?? Number.NaN;
  return [
    'Two nodes on the same database (clients alternate between them; half of the workers poll each):',
    '',
    table(
      [
        'measure',
        'per second',
        'of hello-world req/s',
        'server CPU µs per job (both)',
        'worker CPU µs per job',
        'notes',
      ],
      [
        [
          '/run acknowledged (committed), c=50, no workers',
          t.submitRps,
          pct(ratio(t.submitRps, hello)),
          t.submitCpuUs,
          null,
          `p50 ${round(t.submitP50)} ms, p99 ${round(t.submitP99)} ms`,
        ],
        [
          'end to end, workers in separate processes',
          t.e2eJobsPerS,
          pct(ratio(t.e2eJobsPerS, hello)),
          t.e2eServerCpuUs,
          t.e2eWorkerCpuUs,
          `${t.e2eJobs} jobs; /run ${round(t.e2eSubmitRps)}/s meanwhile; drained ${round(t.drainMs)} ms after the last ack`,
        ],
      ],
    ),
    '',
    'Both servers, PostgreSQL, the workers and the load generator share the two cores here: this shows what a ' +
      'second node costs and carries on one machine (a job submitted on one node is often taken and finished ' +
      'through the other, woken by LISTEN/NOTIFY), not how nodes on separate machines scale.',
  ].join('\n');
}

export function twoNodeJson(ctx: Ctx, t: TwoNodeFigures): Record<string, number> {
  return {
    submitPerS: round(t.submitRps),
    submitP50: round(t.submitP50),
    submitP99: round(t.submitP99),
    submitCpuUs: round(t.submitCpuUs),
    e2eJobsPerS: round(t.e2eJobsPerS),
    e2eJobs: t.e2eJobs,
    e2eRatioToHello: round(ratio(t.e2eJobsPerS, ctx.baselines?.helloRps ?? Number.NaN)),
    e2eServerCpuUsPerJob: round(t.e2eServerCpuUs),
    e2eWorkerCpuUsPerJob: round(t.e2eWorkerCpuUs),
    errors: t.errors,
  };
}
