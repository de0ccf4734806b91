// Child processes of the harness (the server under test, the worker host) and a tiny request/answer protocol over
// their IPC channel. Each runs on the same Node as the harness (process.execPath: Node 24 from devDependencies
// under `npm run bench`).

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = fileURLToPath(new URL('../', import.meta.url));
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Child {
  readonly pid: number;
  readonly proc: ChildProcess;
  /** The child's first message (e.g. `{ ready: true, url }`). */
  readonly ready: Promise<Record<string, any>>;
  call<T = any>(cmd: string, args?: Record<string, unknown>): Promise<T>;
  /** Resident set size from /proc (bytes), or 0 where /proc is not there. */
  rss(): number;
  /** CPU time used so far (user + system, ms), or NaN where /proc is not there. */
  cpuMs(): number;
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  env?: Record<string, string>;
}

let seq = 0;

export function spawnChild(script: string, payload: unknown, opts: SpawnOptions = {}): Child {
  const proc = spawn(
    process.execPath,
    [...(opts.nodeArgs ?? []), '--expose-gc', fileURLToPath(new URL(`../children/${script}`, import.meta.url))],
    {
      cwd: ROOT,
      env: { ...process.env, ...opts.env, BENCH_PAYLOAD: JSON.stringify(payload) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  let out = '';
  const keep = (c: Buffer): void => {
    out = (out + c.toString()).slice(-20_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    proc.on('exit', (code, signal) => {
      exited = true;
      for (const p of pending.values())
        p.reject(new Error(`${script} exited (${code ?? signal}):\n${out.slice(-3000)}`));
      pending.clear();
      resolve();
    }),
  );
  const ready = new Promise<Record<string, any>>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as Record<string, any>));
    void exit.then(() => reject(new Error(`${script} exited before it was ready:\n${out.slice(-3000)}`)));
  });
  proc.on('message', (m: any) => {
    if (typeof m?.id !== 'number') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(new Error(`${script}: ${m.error}`));
  });
  return {
    pid: proc.pid!,
    proc,
    ready,
    call: (cmd, args = {}) =>
      new Promise((resolve, reject) => {
        if (exited) return reject(new Error(`${script} is not running`));
        const id = ++seq;
        pending.set(id, { resolve, reject });
        proc.send({ id, cmd, args });
      }),
    rss: () => rssOf(proc.pid!),
    cpuMs: () => cpuMsOf(proc.pid!),
    output: () => out,
    stop: async () => {
      if (exited) return;
      proc.send({ id: ++seq, cmd: 'exit', args: {} });
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** utime + stime of a process from /proc/<pid>/stat, in ms (clock ticks of 10 ms on Linux). */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** The child side: answer the parent's calls with `handlers`; `exit` stops the process after `onExit`. */
export function serveParent(
  handlers: Record<string, (args: any) => unknown>,
  onExit: () => Promise<void> = async () => {},
): void {
  process.on('message', (m: any) => {
    void (async () => {
      if (m?.cmd === 'exit') {
        try {
          await onExit();
        } finally {
          process.exit(0);
        }
      }
      const h = handlers[m?.cmd];
      try {
        if (!h) throw new Error(`unknown command ${m?.cmd}`);
        process.send!({ id: m.id, ok: true, value: await h(m.args) });
      } catch (error) {
        process.send!({ id: m.id, ok: false, error: (error as Error).stack ?? String(error) });
      }
    })();
  });
  // The parent died (or closed the channel): nobody will ever stop us otherwise.
  process.on('disconnect', () => {
    void onExit().finally(() => process.exit(0));
  });
}

/** The payload the parent passed to a child. */
export function payload<T>(): T {
  return JSON.parse(process.env.BENCH_PAYLOAD ?? '{}') as T;
}

/** Heap and RSS after a full GC (children run with --expose-gc). */
export function memory(): { rss: number; heapUsed: number; external: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
}
