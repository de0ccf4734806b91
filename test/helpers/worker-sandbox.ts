// What the process executor's tests share: a directory of worker scripts per test, and the check after each test
// that the workers it started (and what they started) are all gone.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { expect } from 'vitest';

import type { ProcessExecutor } from '../../src/fleet/executors/process.ts';

/** Whether the process runs (a zombie is dead, just not reaped yet). */
export function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls `cond` every 20 ms until it holds; throws after `ms`. */
export async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A fresh directory holding `scripts` (name → text), and the executor's state directory inside it. */
export function scriptDir(prefix: string, scripts: Record<string, string>): { dir: string; stateDir: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const [name, text] of Object.entries(scripts)) writeFileSync(join(dir, name), text);
  return { dir, stateDir: join(dir, 'state') };
}

/**
 * After a test: stops the executors, kills and reports any process of `pids` still alive (a failure: the test left it
 * behind), and removes the directory. Empties `executors` and `pids` for the next test.
 */
export async function cleanUpWorkers(executors: ProcessExecutor[], pids: Set<number>, dir: string): Promise<void> {
  await Promise.all(executors.splice(0).map((ex) => ex.stopAll({ graceMs: 100 })));
  const leaked = [...pids].filter(alive);
  for (const pid of leaked) process.kill(pid, 'SIGKILL');
  pids.clear();
  rmSync(dir, { recursive: true, force: true });
  expect(leaked, 'processes left behind').toEqual([]);
}

/**
 * A supervisor in a process of its own (`node ...args`) that prints `worker <pid>` once it started its worker; its
 * pid and the worker's go into `pids`. `crash()` kills it with SIGKILL, leaving what it started running, as a server
 * killed outright would.
 */
export async function supervisorProcess(
  args: string[],
  pids: Set<number>,
): Promise<{ workerPid: number; crash: () => Promise<void> }> {
  const sup = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  pids.add(sup.pid ?? 0);
  const workerPid = await new Promise<number>((res, rej) => {
    sup.stdout.setEncoding('utf8').on('data', (s: string) => {
      const m = /worker (\d+)/.exec(s);
      if (m) res(Number(m[1]));
    });
    sup.once('exit', () => rej(new Error('supervisor exited early')));
  });
  pids.add(workerPid);
  const exited = new Promise((r) => sup.once('exit', r));
  return {
    workerPid,
    crash: async () => {
      sup.kill('SIGKILL');
      await exited;
    },
  };
}
