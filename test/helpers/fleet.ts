// Helpers for the fleet end-to-end tests: a server that runs real worker processes (process executor) from the
// example TypeScript worker, and ways to see those processes from the outside (pid files, /proc).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { expect } from 'vitest';

import { createEndpoint, startTestServer, type TestServer, type TestServerOptions } from './server.ts';
import { ROOT } from './processes.ts';

/** The example worker as a template: the process executor runs it in examples/echo-ts. */
export const ECHO_TEMPLATE = {
  imageName: `file://${join(ROOT, 'examples/echo-ts')}`,
  dockerStartCmd: ['node', 'worker.ts'],
  env: { WHARF_WORKER_RETRY_BASE_MS: '100' },
};

/** Fast fleet timers: workers ping every second, leases last 3 s, the autoscaler runs every 50 ms. */
export const FLEET = {
  executor: 'process',
  gpus: 'none',
  scaleIntervalMs: 50,
  workerPingIntervalMs: 1000,
  leaseMs: 3000,
  lostJobGraceMs: 2000,
  takeWaitMs: 1000,
  stopWaitMs: 1000,
  streamWaitMs: 1000,
  shutdownGraceMs: 10_000,
  workerInitTimeoutMs: 20_000,
  maxAttempts: 3,
};

export interface Fleet extends TestServer {
  /** Endpoint ids created through `endpoint()`, for the leftover-process check. */
  readonly endpoints: string[];
  endpoint(fields?: Record<string, unknown>, template?: Record<string, unknown>): Promise<string>;
  health(ep: string): Promise<any>;
  workers(ep: string): Promise<any[]>;
  run(ep: string, input: unknown): Promise<string>;
  status(ep: string, id: string): Promise<any>;
  /** Poll /status until the job is terminal (or `ms` passes). */
  waitJob(ep: string, id: string, ms?: number): Promise<any>;
  /** Poll /status until a worker runs the job (IN_PROGRESS); returns that status body. */
  untilRunning(ep: string, id: string, ms?: number): Promise<any>;
  /** Poll /health until the endpoint's scaling reason is `reason`; returns that health body. */
  untilScaling(ep: string, reason: string, ms?: number): Promise<any>;
  /** Pids of the worker processes the executor currently runs (its pid files). */
  pids(): number[];
}

export async function startFleet(
  overrides: Record<string, unknown> = {},
  opts: TestServerOptions = {},
): Promise<Fleet> {
  const t = await startTestServer({ ...FLEET, ...overrides }, opts);
  const endpoints: string[] = [];
  const fleet: Fleet = {
    ...t,
    endpoints,
    async endpoint(fields = {}, template = {}) {
      const id = await createEndpoint(
        t,
        { computeType: 'CPU', workersMax: 1, workersMin: 0, idleTimeout: 1, ...fields },
        { ...ECHO_TEMPLATE, ...template },
      );
      endpoints.push(id);
      return id;
    },
    async health(ep) {
      const res = await t.api('GET', `/v2/${ep}/health`);
      if (res.status !== 200) throw new Error(`health ${res.status} ${res.text}`);
      return res.json;
    },
    async workers(ep) {
      const res = await t.api('GET', `/v1/endpoints/${ep}?includeWorkers=true`);
      if (res.status !== 200) throw new Error(`endpoint ${res.status} ${res.text}`);
      return (res.json.workers ?? []) as any[];
    },
    async run(ep, input) {
      const res = await t.api('POST', `/v2/${ep}/run`, { input });
      if (res.status !== 200) throw new Error(`run ${res.status} ${res.text}`);
      return res.json.id as string;
    },
    async status(ep, id) {
      const res = await t.api('GET', `/v2/${ep}/status/${id}`);
      if (res.status !== 200) throw new Error(`status ${res.status} ${res.text}`);
      return res.json;
    },
    async waitJob(ep, id, ms = 20_000) {
      let last: any;
      await waitUntil(
        async () => {
          last = await fleet.status(ep, id);
          return TERMINAL.has(last.status);
        },
        ms,
        () => `job ${id} still ${JSON.stringify(last)}`,
      );
      return last;
    },
    async untilRunning(ep, id, ms = 15_000) {
      let last: any;
      await waitUntil(
        async () => {
          last = await fleet.status(ep, id);
          return last.status === 'IN_PROGRESS';
        },
        ms,
        () => `job ${id} to start; still ${JSON.stringify(last)}`,
      );
      return last;
    },
    async untilScaling(ep, reason, ms = 15_000) {
      let last: any;
      await waitUntil(
        async () => {
          last = await fleet.health(ep);
          return last.scaling?.reason === reason;
        },
        ms,
        () => JSON.stringify(last),
      );
      return last;
    },
    pids: () => pidFilePids(join(t.dataDir, 'workers')),
  };
  return fleet;
}

/**
 * Close the server (SIGTERM to its workers, as on shutdown) and check that no worker process is left: no pid file
 * of the executor, and no live process started for one of the fleet's endpoints.
 */
export async function closeFleet(fleet: Fleet): Promise<void> {
  try {
    await fleet.server.close();
    expect(fleet.pids()).toEqual([]);
  } finally {
    await fleet.close();
  }
  expect(workerProcesses(fleet.endpoints)).toEqual([]);
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll `check` every 50 ms until it is true; throws with `describe()` after `ms`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  ms = 15_000,
  describe: () => string = () => 'condition',
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${describe()}`);
    await sleep(50);
  }
}

function pidFilePids(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) {
    if (!name.endsWith('.pid')) continue;
    try {
      pids.push((JSON.parse(readFileSync(join(dir, name), 'utf8')) as { pid: number }).pid);
    } catch {
      // Removed between readdir and read: that worker just exited.
    }
  }
  return pids;
}

/** Whether a process runs (a zombie does not count: it is gone, only not reaped yet). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Live processes started as workers of these endpoints (their environment names the endpoint). */
export function workerProcesses(endpointIds: readonly string[]): number[] {
  const markers = endpointIds.map((id) => `RUNPOD_ENDPOINT_ID=${id}`);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (environ.some((v) => markers.includes(v)) && isAlive(pid)) found.push(pid);
  }
  return found;
}
