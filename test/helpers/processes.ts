// Real child processes for end-to-end tests: the example TypeScript worker and the `wharf serve` server. Every
// process started here is tracked so a test's afterEach can kill what is left (killAll).

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Node 24 from the project's devDependencies: runs the TypeScript sources directly. */
export const NODE = fileURLToPath(new URL('../../node_modules/.bin/node', import.meta.url));

export interface Proc {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** Resolves with the first match of `re` in the output; rejects after `ms` or when the process exits first. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const started = new Set<Proc>();

export function spawnProc(args: string[], env: Record<string, string | undefined>): Proc {
  const proc = spawn(NODE, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const watchers = new Set<() => void>();
  const onData = (c: Buffer): void => {
    out += c.toString();
    for (const w of [...watchers]) w();
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => {
      for (const w of [...watchers]) w();
      resolve({ code, signal });
    }),
  );
  const alive = (): boolean => proc.exitCode === null && proc.signalCode === null;
  const p: Proc = {
    proc,
    pid: proc.pid!,
    output: () => out,
    exit,
    alive,
    waitFor: (re, ms = 15_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = out.match(re);
          if (m) {
            done();
            resolve(m);
          } else if (!alive()) {
            done();
            reject(new Error(`process ${proc.pid} exited before printing ${re}:\n${out.slice(-2000)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${re} from process ${proc.pid}:\n${out.slice(-2000)}`));
        }, ms);
        const done = (): void => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      }),
    kill: async (signal = 'SIGKILL') => {
      if (alive()) proc.kill(signal);
      await exit;
    },
  };
  started.add(p);
  void exit.then(() => started.delete(p));
  return p;
}

/**
 * SIGKILL every process spawned through this module that is still running, and wait for them to exit. With
 * `graceMs`, SIGTERM first and SIGKILL only to those still running after it: a server then stops the workers its
 * process executor started, which a SIGKILL leaves running (they belong to the next server's orphan cleanup).
 */
export async function killAll(opts: { graceMs?: number } = {}): Promise<void> {
  if (opts.graceMs !== undefined) {
    const procs = [...started];
    await Promise.race([
      Promise.all(procs.map((p) => p.kill('SIGTERM'))),
      new Promise((r) => setTimeout(r, opts.graceMs)),
    ]);
  }
  await Promise.all([...started].map((p) => p.kill('SIGKILL')));
}

export interface WorkerProcessOptions {
  /** Base URL of the server, e.g. http://127.0.0.1:8000 */
  url: string;
  endpointId: string;
  podId: string;
  apiKey: string;
  env?: Record<string, string>;
}

/** The example worker (examples/echo-ts/worker.ts) with the RUNPOD_* variables a Wharf executor injects. */
export function spawnExampleWorker(o: WorkerProcessOptions): Proc {
  const base = `${o.url}/v2/${o.endpointId}`;
  return spawnProc(['examples/echo-ts/worker.ts'], {
    PATH: process.env.PATH,
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=x`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=x`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=x`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=x`,
    RUNPOD_AI_API_KEY: o.apiKey,
    RUNPOD_POD_ID: o.podId,
    RUNPOD_PING_INTERVAL: '1000',
    // JSON log lines with the job id, so tests can follow each job through the worker.
    RUNPOD_ENDPOINT_ID: o.endpointId,
    RUNPOD_LOG_LEVEL: 'DEBUG',
    ...o.env,
  });
}

export interface WorkerLogLine {
  requestId: string | null;
  message: string;
  level: string;
}

/** The worker's JSON log lines (RUNPOD_ENDPOINT_ID set); other output is skipped. */
export function workerLog(p: Proc): WorkerLogLine[] {
  const lines: WorkerLogLine[] = [];
  for (const line of p.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as WorkerLogLine);
    } catch {
      // A line cut by a kill -9.
    }
  }
  return lines;
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
