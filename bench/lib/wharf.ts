// Start a Wharf server child for a scenario, with the settings every benchmark shares, and the few REST calls the
// scenarios need (a template, endpoints).

import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'undici';
import { BENCH_DIR, spawnChild, type Child } from './child.ts';
import type { Ctx } from './context.ts';
import { makePool, send, type Answer } from './load.ts';
import { sleep } from './stats.ts';

export const ADMIN_KEY = 'wharf_bench_admin_key_0123456789abcdef';
export const AUTH = { authorization: `Bearer ${ADMIN_KEY}` };

export interface Wharf {
  child: Child;
  url: string;
  pool: Pool;
  dataDir: string;
  api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer & { json: any }>;
  /** A template (once) and an endpoint; returns the endpoint id. */
  createEndpoint(endpoint?: Record<string, unknown>, template?: Record<string, unknown>): Promise<string>;
  profileStart(): Promise<void>;
  /** Start a measured window; the returned function ends it and tells what the server spent in it. */
  window(): Promise<() => Promise<ServerWindow>>;
  profileStop(name: string): Promise<string | null>;
  close(): Promise<void>;
}

export interface ServerWindow {
  wallMs: number;
  /** Server process CPU (user + system). */
  cpuMs: number;
  commits: number;
  /** Time the server's event loop spent inside COMMIT (fsync included only with --sqlite-fsync in-commit), and nothing else. */
  commitMs: number;
  /** Store writes (one per submit, take, finish, …) carried by those commits. */
  writes: number;
  /** WAL fdatasyncs run on the thread pool (--sqlite-fsync off-loop), and their summed duration (call → callback). */
  fsyncs: number;
  fsyncMs: number;
  /** The slowest 1% and the slowest of those fsyncs (NaN when there were none). */
  fsyncP99Ms: number;
  fsyncMaxMs: number;
  /** Bytes the server wrote to storage (WAL frames and checkpoints; Linux only, NaN elsewhere). */
  diskWriteBytes: number;
}

export interface WharfOptions {
  overrides?: Record<string, unknown>;
  /** Sockets of the harness's pool to this server. */
  connections?: number;
  nodeArgs?: string[];
}

/**
 * Defaults of the benchmark server: rate limits off (they would cap a load test at the interface's per-endpoint
 * limits — what is measured is the server, not the limiter), logs at `warn` (request logging is off in Wharf
 * anyway), no GPUs, no executor unless a scenario asks for one.
 */
/** Node flags that make a helper process write a CPU profile of its whole life into the profile directory. */
export function profileArgs(ctx: Ctx, name: string): string[] {
  if (!ctx.opts.profileDir) return [];
  return ['--cpu-prof', '--cpu-prof-dir', ctx.opts.profileDir, '--cpu-prof-name', `${name}.cpuprofile`];
}

export async function startWharf(ctx: Ctx, name: string, o: WharfOptions = {}): Promise<Wharf> {
  const dataDir = ctx.dir(name);
  const child = spawnChild(
    'wharf-server.ts',
    {
      overrides: {
        port: 0,
        host: '127.0.0.1',
        dataDir,
        adminKey: ADMIN_KEY,
        executor: 'none',
        rateLimits: 'off',
        gpus: 'none',
        logLevel: 'warn',
        ...o.overrides,
      },
    },
    { nodeArgs: o.nodeArgs ?? [] },
  );
  const ready = await child.ready;
  const url = ready['url'] as string;
  const pool = makePool(url, o.connections ?? 64);
  let templateId: string | null = null;

  const api: Wharf['api'] = async (method, path, body) => {
    const a = await send(pool, {
      method,
      path,
      headers: AUTH,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    let json: any;
    try {
      json = a.text ? JSON.parse(a.text) : undefined;
    } catch {
      json = undefined;
    }
    return { ...a, json };
  };

  return {
    child,
    url,
    pool,
    dataDir,
    api,
    async createEndpoint(endpoint = {}, template = {}) {
      if (templateId === null || Object.keys(template).length > 0) {
        const t = await api('POST', '/v1/templates', {
          name: `bench-${Math.random().toString(36).slice(2)}`,
          imageName: `file://${join(BENCH_DIR, 'noop-worker')}`,
          dockerStartCmd: ['node', 'worker.ts'],
          ...template,
        });
        if (t.status !== 200) throw new Error(`template: ${t.status} ${t.text}`);
        if (Object.keys(template).length > 0) return endpointWith(t.json.id as string);
        templateId = t.json.id as string;
      }
      return endpointWith(templateId);

      async function endpointWith(tid: string): Promise<string> {
        const e = await api('POST', '/v1/endpoints', {
          name: `bench-${Math.random().toString(36).slice(2, 8)}`,
          templateId: tid,
          workersMax: 0,
          ...endpoint,
        });
        if (e.status !== 200) throw new Error(`endpoint: ${e.status} ${e.text}`);
        return e.json.id as string;
      }
    },
    async window() {
      await child.call('commits');
      const cpu0 = child.cpuMs();
      const t0 = performance.now();
      return async () => {
        const c = await child.call<Omit<ServerWindow, 'wallMs' | 'cpuMs'>>('commits');
        return { wallMs: performance.now() - t0, cpuMs: child.cpuMs() - cpu0, ...c };
      };
    },
    async profileStart() {
      if (ctx.opts.profileDir) await child.call('profileStart');
    },
    async profileStop(label) {
      if (!ctx.opts.profileDir) return null;
      const path = join(ctx.opts.profileDir, `${label}.cpuprofile`);
      await child.call('profileStop', { path });
      return path;
    },
    async close() {
      await pool.close();
      await child.stop();
    },
  };
}

const BODY = '{"input":{"n":1}}';

/** The no-op submission every load sends, to /run or /runsync (a request builder for closedLoop). */
export const submitRequest =
  (ep: string, route: 'run' | 'runsync' = 'run') =>
  () => ({
    method: 'POST' as const,
    path: `/v2/${ep}/${route}`,
    body: BODY,
    headers: AUTH,
  });

/** TypeScript-SDK workers of `ep` in a worker-host process of their own, started and waiting in job-take. */
export async function startSdkWorkers(
  w: Wharf,
  ep: string,
  o: { n: number; concurrency: number; idPrefix: string; nodeArgs?: string[] },
): Promise<Child> {
  const host = spawnChild(
    'worker-host.ts',
    {
      mode: 'wharf',
      url: w.url,
      key: ADMIN_KEY,
      endpointId: ep,
      n: o.n,
      concurrency: o.concurrency,
      idPrefix: o.idPrefix,
    },
    { nodeArgs: o.nodeArgs ?? [] },
  );
  await host.ready;
  await waitForIdleWorkers(w, ep, o.n);
  return host;
}

export async function waitForIdleWorkers(w: Wharf, ep: string, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const h = await w.api('GET', `/v2/${ep}/health`);
    if ((h.json?.workers?.idle ?? 0) >= n) return;
    await sleep(25);
  }
  throw new Error(`${n} workers did not come up on ${ep}`);
}
