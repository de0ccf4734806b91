import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { MAX_LOG_LINE, ProcessExecutor } from '../../src/fleet/executors/process.ts';
import type { RunningWorker, WorkerSpec } from '../../src/fleet/executors/types.ts';
import { alive, cleanUpWorkers, scriptDir, supervisorProcess, until } from '../helpers/worker-sandbox.ts';

const EXECUTOR_MODULE = resolve(import.meta.dirname, '../../src/fleet/executors/process.ts');

// The pid file is written under another name and renamed, so the test never reads it half-written (an empty read
// made a pid of 0, which is never alive).
const GRANDCHILD = `process.on('SIGTERM', () => {});
const fs = require('node:fs');
const file = 'grandchild-' + process.env.WHARF_WORKER_ID;
fs.writeFileSync(file + '.tmp', String(process.pid));
fs.renameSync(file + '.tmp', file);
setInterval(() => {}, 1000);`;

// Small worker scripts; each test gets a fresh copy in its own directory.
const SCRIPTS: Record<string, string> = {
  'env.mjs': `console.log(JSON.stringify({ cwd: process.cwd(), execPath: process.execPath, env: process.env }));`,
  'logs.mjs': `process.stdout.write('out one\\nout two\\n' + 'x'.repeat(${MAX_LOG_LINE} + 5000) + '\\nafter long\\ntail');
process.stderr.write('err one\\r\\n');
process.exitCode = 3;`,
  'cache.mjs': `import { getCompileCacheDir } from 'node:module';
console.log(JSON.stringify({ dir: getCompileCacheDir() ?? null }));`,
  'self-kill.mjs': `process.kill(process.pid, 'SIGKILL');`,
  'graceful.mjs': `process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(0); });
console.log('ready'); setInterval(() => {}, 1000);`,
  // Ignores SIGTERM without writing anything (a write to the pipe of a dead supervisor would end it).
  // Marks itself ready once the handler is in place (a SIGTERM before that would end it).
  'deaf.mjs': `import { writeFileSync } from 'node:fs';
process.on('SIGTERM', () => {}); setInterval(() => {}, 1000);
writeFileSync('ready-' + process.env.WHARF_WORKER_ID, '');`,
  'stubborn.mjs': `process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
console.log('ready'); setInterval(() => {}, 1000);`,
  // Starts a grandchild that ignores SIGTERM (it records its pid once the handler is in place), then exits at once
  // ("exit") or waits for SIGTERM.
  'tree.mjs': `import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
spawn(process.execPath, ['-e', GRANDCHILD], { stdio: 'ignore' });
process.on('SIGTERM', () => process.exit(0));
const gcFile = 'grandchild-' + process.env.WHARF_WORKER_ID;
setInterval(() => { if (process.argv[2] === 'exit' && existsSync(gcFile)) process.exit(0); }, 20);`.replace(
    'GRANDCHILD',
    JSON.stringify(GRANDCHILD),
  ),
  // As tree.mjs, but the grandchild leaves the worker's process group: it starts a session of its own (setsid), as a
  // model server started with Python's start_new_session=True does, so a signal to the group misses it.
  'escaped-tree.mjs': `import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
spawn(process.execPath, ['-e', GRANDCHILD], { stdio: 'ignore', detached: true }).unref();
process.on('SIGTERM', () => process.exit(0));
const gcFile = 'grandchild-' + process.env.WHARF_WORKER_ID;
setInterval(() => { if (process.argv[2] === 'exit' && existsSync(gcFile)) process.exit(0); }, 20);`.replace(
    'GRANDCHILD',
    JSON.stringify(GRANDCHILD),
  ),
  // A supervisor that starts one worker running the script named, and is then killed with SIGKILL by the test.
  'supervisor.mjs': `import { ProcessExecutor } from ${JSON.stringify(EXECUTOR_MODULE)};
const [stateDir, dir, script] = process.argv.slice(2);
const ex = new ProcessExecutor({ stateDir });
const w = await ex.start({ workerId: 'orphan1', endpointId: 'ep1', imageName: 'file://' + dir, entrypoint: ['node'],
  startCmd: [script], env: {}, gpuIndices: ['0'] }, { onLog() {}, onExit() {} });
console.log('worker ' + w.pid);
setInterval(() => {}, 1000);`,
  // Three workers that ignore SIGTERM, then killed with SIGKILL by the test.
  'supervisor-many.mjs': `import { ProcessExecutor } from ${JSON.stringify(EXECUTOR_MODULE)};
const [stateDir, dir] = process.argv.slice(2);
const ex = new ProcessExecutor({ stateDir });
for (const workerId of ['many1', 'many2', 'many3']) {
  const w = await ex.start({ workerId, endpointId: 'ep1', imageName: 'file://' + dir, entrypoint: ['node'],
    startCmd: ['deaf.mjs'], env: {}, gpuIndices: [] }, { onLog() {}, onExit() {} });
  console.log('worker ' + w.pid);
}
setInterval(() => {}, 1000);`,
};

let dir = '';
let stateDir = '';
const executors: ProcessExecutor[] = [];
const pids = new Set<number>();

function executor(opts: Partial<ConstructorParameters<typeof ProcessExecutor>[0]> = {}): ProcessExecutor {
  const ex = new ProcessExecutor({ stateDir, orphanGraceMs: 300, ...opts });
  executors.push(ex);
  return ex;
}

interface Started {
  worker: RunningWorker;
  logs: Array<[string, string]>;
  exit: Promise<{ code: number | null; signal: string | null }>;
  line: (text: string) => Promise<void>;
}

async function start(ex: ProcessExecutor, over: Partial<WorkerSpec>): Promise<Started> {
  const logs: Array<[string, string]> = [];
  let onExit: (i: { code: number | null; signal: string | null }) => void = () => {};
  const exit = new Promise<{ code: number | null; signal: string | null }>((r) => (onExit = r));
  const spec: WorkerSpec = {
    workerId: 'w1',
    endpointId: 'ep1',
    imageName: `file://${dir}`,
    entrypoint: [],
    startCmd: ['node', 'env.mjs'],
    env: {},
    gpuIndices: [],
    ...over,
  };
  const worker = await ex.start(spec, { onLog: (s, l) => logs.push([s, l]), onExit });
  if (worker.pid !== undefined) pids.add(worker.pid);
  const line = (text: string): Promise<void> => until(() => logs.some(([, l]) => l === text));
  return { worker, logs, exit, line };
}

function grandchild(workerId: string): number {
  const file = join(dir, `grandchild-${workerId}`);
  const pid = Number(readFileSync(file, 'utf8'));
  expect(pid, `pid in ${file}`).toBeGreaterThan(0);
  pids.add(pid);
  return pid;
}

/**
 * A supervisor process (supervisor.mjs) that started worker orphan1 running `script`, killed with SIGKILL once the
 * worker's grandchild is up: the worker and the grandchild are left running, with the pid file.
 */
async function crashedSupervisor(script: string): Promise<{ workerPid: number; gc: number }> {
  const sup = await supervisorProcess([join(dir, 'supervisor.mjs'), stateDir, dir, script], pids);
  await until(() => existsSync(join(dir, 'grandchild-orphan1')));
  const gc = grandchild('orphan1');
  await sup.crash();
  return { workerPid: sup.workerPid, gc };
}

beforeEach(() => {
  ({ dir, stateDir } = scriptDir('wharf-proc-', SCRIPTS));
});

afterEach(() => cleanUpWorkers(executors, pids, dir));

describe('ProcessExecutor', () => {
  it('validates image names', () => {
    const ex = executor();
    expect(ex.kind).toBe('process');
    expect(ex.validateImage('file:///srv/worker')).toBeNull();
    expect(ex.validateImage('file://examples/echo')).toBeNull();
    expect(ex.validateImage('docker.io/x:1')).toBe(
      "the process executor runs imageName file://<dir>; got 'docker.io/x:1' — use the docker executor for container images",
    );
    expect(ex.validateImage('file://')).toMatch(/no directory/);
  });

  it('refuses what it cannot start, without a stray error', async () => {
    const ex = executor();
    await expect(start(ex, { imageName: 'runpod/worker:1' })).rejects.toThrow(/use the docker executor/);
    await expect(start(ex, { imageName: `file://${dir}/missing` })).rejects.toThrow(/is not a directory/);
    await expect(start(ex, { startCmd: [] })).rejects.toThrow(/has no command/);
    await expect(start(ex, { startCmd: ['wharf-no-such-command-xyz'] })).rejects.toThrow(/could not start.*ENOENT/);
    expect(existsSync(join(stateDir, 'w1.pid'))).toBe(false);
  });

  it('runs the command in the image directory with a minimal environment', async () => {
    const ex = executor({ baseEnv: { PATH: '/usr/bin:/bin', HOME: '/home/w', LANG: 'C.UTF-8' } });
    const w = await start(ex, {
      entrypoint: ['node'],
      startCmd: ['env.mjs'],
      env: { FOO: 'bar', CUDA_VISIBLE_DEVICES: '7', PATH: '/opt/bin:/usr/bin' },
      gpuIndices: ['0', '2'],
      volumePath: '/data/volumes/v1',
    });
    expect(await w.exit).toEqual({ code: 0, signal: null });
    const [stream, line] = w.logs[0] ?? [];
    expect(stream).toBe('stdout');
    const seen = JSON.parse(line ?? '{}') as { cwd: string; execPath: string; env: Record<string, string> };
    expect(seen.cwd).toBe(dir);
    expect(seen.execPath).toBe(process.execPath); // `node` is the Node running Wharf
    expect(seen.env).toMatchObject({
      FOO: 'bar',
      PATH: '/opt/bin:/usr/bin',
      HOME: '/home/w',
      LANG: 'C.UTF-8',
      CUDA_VISIBLE_DEVICES: '0,2',
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      RUNPOD_VOLUME_PATH: '/data/volumes/v1',
      WHARF_WORKER_ID: 'w1',
    });
    expect(seen.env.VITEST).toBeUndefined(); // nothing else of the server's environment leaks
  });

  it("swaps a HOME whose RunPod SDK configuration holds an API key (the Python SDK would send it instead of the worker's)", async () => {
    const home = join(dir, 'home-with-runpod-config');
    mkdirSync(join(home, '.runpod'), { recursive: true });
    const spare = join(dir, 'worker-home');
    const warnings: string[] = [];
    const opts = {
      baseEnv: { PATH: '/usr/bin:/bin', HOME: home },
      spareHomeDir: spare,
      warn: (m: string) => warnings.push(m),
    };
    const homeSeen = async (ex: ProcessExecutor): Promise<string | undefined> => {
      const w = await start(ex, { entrypoint: ['node'], startCmd: ['env.mjs'] });
      expect(await w.exit).toEqual({ code: 0, signal: null });
      return (JSON.parse(w.logs[0]?.[1] ?? '{}') as { env: Record<string, string> }).env.HOME;
    };
    // No configuration, or one without a key (runpodctl writes both): HOME is kept.
    expect(await homeSeen(executor(opts))).toBe(home);
    writeFileSync(join(home, '.runpod', 'config.toml'), '[default]\napi_url = "https://api.runpod.io/graphql"\n');
    expect(await homeSeen(executor(opts))).toBe(home);
    expect(warnings).toEqual([]);
    writeFileSync(join(home, '.runpod', 'config.toml'), '[default]\napi_key = "rpa_hosted_key"\n');
    expect(await homeSeen(executor(opts))).toBe(spare);
    expect(existsSync(spare)).toBe(true);
    expect(warnings).toEqual([expect.stringContaining('holds an API key')]);
  });

  it('gives CPU workers an empty CUDA_VISIBLE_DEVICES and no volume path', async () => {
    const w = await start(executor(), {});
    await w.exit;
    const seen = JSON.parse(w.logs[0]?.[1] ?? '{}') as { env: Record<string, string> };
    expect(seen.env.CUDA_VISIBLE_DEVICES).toBe('');
    expect(seen.env.RUNPOD_VOLUME_PATH).toBeUndefined();
    expect(seen.env.PATH).toBeTruthy();
  });

  it("keeps Node workers' compiled code in its compile cache, unless the template says otherwise", async () => {
    const cacheDir = join(dir, 'compile-cache');
    const ex = executor({ compileCacheDir: cacheDir });
    // Node says what its compile cache did on stderr with NODE_DEBUG_NATIVE=COMPILE_CACHE.
    const run = async (env: Record<string, string>): Promise<{ dir: string | null; accepted: boolean }> => {
      const w = await start(ex, {
        startCmd: ['node', 'cache.mjs'],
        env: { NODE_DEBUG_NATIVE: 'COMPILE_CACHE', ...env },
      });
      expect(await w.exit).toEqual({ code: 0, signal: null });
      const out = w.logs.find(([s, l]) => s === 'stdout' && l.startsWith('{'))?.[1] ?? '{}';
      const accepted = w.logs.some(([s, l]) => s === 'stderr' && /cache\.mjs was accepted/.test(l));
      return { dir: (JSON.parse(out) as { dir: string | null }).dir, accepted };
    };
    const first = await run({});
    expect(first.dir?.startsWith(cacheDir)).toBe(true);
    expect(first.accepted).toBe(false);
    // The second start of the same code loads it from the cache the first one left.
    expect(await run({})).toEqual({ dir: first.dir, accepted: true });
    // A template's own setting wins.
    expect((await run({ NODE_COMPILE_CACHE: join(dir, 'theirs') })).dir?.startsWith(join(dir, 'theirs'))).toBe(true);
    expect((await run({ NODE_DISABLE_COMPILE_CACHE: '1' })).dir).toBeNull();
    // Without a directory configured, workers get no compile cache from Wharf.
    const plain = await start(executor(), { startCmd: ['node', 'cache.mjs'] });
    await plain.exit;
    expect(JSON.parse(plain.logs[0]?.[1] ?? '{}')).toEqual({ dir: null });
  });

  it('splits output into capped lines and reports the exit code', async () => {
    const w = await start(executor(), { startCmd: ['node', 'logs.mjs'] });
    expect(await w.exit).toEqual({ code: 3, signal: null });
    expect(w.logs.filter(([s]) => s === 'stdout').map(([, l]) => l)).toEqual([
      'out one',
      'out two',
      'x'.repeat(MAX_LOG_LINE),
      'after long',
      'tail',
    ]);
    expect(w.logs.filter(([s]) => s === 'stderr').map(([, l]) => l)).toEqual(['err one']);
  });

  it('reports death by signal', async () => {
    const w = await start(executor(), { startCmd: ['node', 'self-kill.mjs'] });
    expect(await w.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('keeps a pid file while the worker runs', async () => {
    const w = await start(executor(), { startCmd: ['node', 'graceful.mjs'] });
    await w.line('ready');
    const record = JSON.parse(readFileSync(join(stateDir, 'w1.pid'), 'utf8')) as { pid: number };
    expect(record.pid).toBe(w.worker.pid);
    await w.worker.stop({ graceMs: 5_000 });
    expect(existsSync(join(stateDir, 'w1.pid'))).toBe(false);
  });

  it('stops gracefully with SIGTERM', async () => {
    const w = await start(executor(), { startCmd: ['node', 'graceful.mjs'] });
    await w.line('ready');
    const t0 = Date.now();
    await w.worker.stop({ graceMs: 10_000 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(await w.exit).toEqual({ code: 0, signal: null });
    expect(w.logs).toContainEqual(['stdout', 'got SIGTERM']);
  });

  it('escalates to SIGKILL after the grace period', async () => {
    const w = await start(executor(), { startCmd: ['node', 'stubborn.mjs'] });
    await w.line('ready');
    const t0 = Date.now();
    // A grace long enough for a loaded machine to run the SIGTERM handler (it prints the line checked below).
    const stopping = w.worker.stop({ graceMs: 2_000 });
    expect(w.worker.stop({ graceMs: 2_000 })).toBe(stopping); // idempotent
    await stopping;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_990);
    expect(await w.exit).toEqual({ code: null, signal: 'SIGKILL' });
    await w.line('ignoring SIGTERM');
  });

  it('stops the whole process group', async () => {
    const w = await start(executor(), { startCmd: ['node', 'tree.mjs'] });
    await until(() => existsSync(join(dir, 'grandchild-w1')));
    const gc = grandchild('w1');
    expect(alive(gc)).toBe(true);
    await w.worker.stop({ graceMs: 5_000 });
    await until(() => !alive(gc));
  });

  it('kills what a worker leaves behind when it exits on its own', async () => {
    const w = await start(executor(), { startCmd: ['node', 'tree.mjs', 'exit'] });
    await until(() => existsSync(join(dir, 'grandchild-w1')));
    const gc = grandchild('w1');
    expect(await w.exit).toEqual({ code: 0, signal: null });
    await until(() => !alive(gc));
  });

  it('stops what left the process group (a session of its own), by the marker in the environment it inherited', async () => {
    const w = await start(executor(), { startCmd: ['node', 'escaped-tree.mjs'] });
    await until(() => existsSync(join(dir, 'grandchild-w1')));
    const gc = grandchild('w1');
    const stat = readFileSync(`/proc/${gc}/stat`, 'utf8');
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    expect(pgrp).not.toBe(w.worker.pid); // not in the worker's group: a signal to the group misses it
    await w.worker.stop({ graceMs: 5_000 });
    await until(() => !alive(gc)); // it ignores SIGTERM: killed with the group's SIGKILL when the worker exited
  });

  it('kills what left the process group when the worker exits on its own', async () => {
    const w = await start(executor(), { startCmd: ['node', 'escaped-tree.mjs', 'exit'] });
    await until(() => existsSync(join(dir, 'grandchild-w1')));
    const gc = grandchild('w1');
    expect(await w.exit).toEqual({ code: 0, signal: null });
    await until(() => !alive(gc));
  });

  it('survives hooks that throw', async () => {
    const ex = executor();
    let exited = false;
    await ex.start(
      {
        workerId: 'w1',
        endpointId: 'ep1',
        imageName: `file://${dir}`,
        entrypoint: [],
        startCmd: ['node', 'logs.mjs'],
        env: {},
        gpuIndices: [],
      },
      {
        onLog: () => {
          throw new Error('listener bug');
        },
        onExit: () => {
          exited = true;
          throw new Error('listener bug');
        },
      },
    );
    await until(() => exited);
  });

  it('stops everything it started and refuses new starts afterwards, until it starts again with a cleanup', async () => {
    const ex = executor();
    const a = await start(ex, { workerId: 'a', startCmd: ['node', 'graceful.mjs'] });
    const b = await start(ex, { workerId: 'b', startCmd: ['node', 'stubborn.mjs'] });
    await expect(start(ex, { workerId: 'a', startCmd: ['node', 'graceful.mjs'] })).rejects.toThrow(/already running/);
    await Promise.all([a.line('ready'), b.line('ready')]);
    await ex.stopAll({ graceMs: 2_000 }); // time enough for the graceful one's handler, even on a loaded machine
    expect(await a.exit).toEqual({ code: 0, signal: null });
    expect(await b.exit).toEqual({ code: null, signal: 'SIGKILL' });
    await expect(start(ex, { workerId: 'c' })).rejects.toThrow(/shutting down/);
    // A multi-node leader that lost its role (stopAll) and regained it: its supervisor cleans up first, then starts.
    await ex.cleanupOrphans();
    const c = await start(ex, { workerId: 'c', startCmd: ['node', 'graceful.mjs'] });
    await c.line('ready');
    await ex.stopAll({ graceMs: 2_000 });
    expect(await c.exit).toEqual({ code: 0, signal: null });
  });

  it('cleans up the workers of a supervisor that crashed', async () => {
    const { workerPid, gc } = await crashedSupervisor('tree.mjs');
    expect([alive(workerPid), alive(gc)]).toEqual([true, true]);
    expect(existsSync(join(stateDir, 'orphan1.pid'))).toBe(true);

    // A stale file of a dead process and one naming a live process that is not ours: removed, nothing killed.
    const stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      detached: true,
      stdio: 'ignore',
    });
    const strangerPid = stranger.pid ?? 0;
    pids.add(strangerPid);
    writeFileSync(join(stateDir, 'stranger.pid'), JSON.stringify({ pid: strangerPid, workerId: 'stranger' }));
    writeFileSync(join(stateDir, 'gone.pid'), JSON.stringify({ pid: 999_999_999, workerId: 'gone' }));
    writeFileSync(join(stateDir, 'junk.pid'), 'not json');

    expect(await executor().cleanupOrphans()).toBe(1);
    await until(() => !alive(workerPid) && !alive(gc)); // the grandchild ignores SIGTERM: escalated to SIGKILL
    expect(alive(strangerPid)).toBe(true);
    stranger.kill('SIGKILL');
    await until(() => !alive(strangerPid));
    expect(['orphan1', 'stranger', 'gone', 'junk'].filter((id) => existsSync(join(stateDir, `${id}.pid`)))).toEqual([]);
    expect(await executor().cleanupOrphans()).toBe(0);
  });

  it("cleans up what left a crashed supervisor's worker's process group", async () => {
    const { workerPid, gc } = await crashedSupervisor('escaped-tree.mjs');
    expect(await executor().cleanupOrphans()).toBe(1);
    await until(() => !alive(workerPid) && !alive(gc)); // the grandchild ignores SIGTERM: escalated to SIGKILL
  });

  it('cleans up orphans together: each waits out its grace at the same time, not one after another', async () => {
    const sup = spawn(process.execPath, [join(dir, 'supervisor-many.mjs'), stateDir, dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    pids.add(sup.pid ?? 0);
    const workerPids: number[] = [];
    await new Promise<void>((res, rej) => {
      sup.stdout.setEncoding('utf8').on('data', (s: string) => {
        for (const m of s.matchAll(/worker (\d+)/g)) workerPids.push(Number(m[1]));
        if (workerPids.length === 3) res();
      });
      sup.once('exit', () => rej(new Error('supervisor exited early')));
    });
    for (const pid of workerPids) pids.add(pid);
    await until(() => ['many1', 'many2', 'many3'].every((id) => existsSync(join(dir, `ready-${id}`))));
    const supExit = new Promise((r) => sup.once('exit', r));
    sup.kill('SIGKILL');
    await supExit;
    const started = performance.now();
    // Each ignores SIGTERM: 1 s of grace, then SIGKILL. One after another that is 3 s.
    expect(await executor({ orphanGraceMs: 1000 }).cleanupOrphans()).toBe(3);
    expect(performance.now() - started).toBeLessThan(2500);
    expect(workerPids.filter(alive)).toEqual([]);
  });

  it('counts nothing when the state directory does not exist yet', async () => {
    expect(await executor({ stateDir: join(dir, 'nowhere') }).cleanupOrphans()).toBe(0);
  });
});
