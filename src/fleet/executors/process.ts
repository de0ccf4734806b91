/**
 * The process executor (the default): runs a template's `[...dockerEntrypoint, ...dockerStartCmd]` as a local
 * process in the directory named by an `imageName` of the form `file://<dir>` (DESIGN.md §3 "Executors and
 * templates"). Linux first: orphan detection reads /proc; elsewhere cleanupOrphans only removes stale pid files.
 *
 * Each worker runs in its own process group (detached), so a stop reaches everything it started: SIGTERM to the
 * group, SIGKILL after the grace period. When the worker's main process exits, whatever is left of its group is
 * killed too — a leftover grandchild would otherwise hold a GPU and keep the log pipes (and onExit) open. A
 * descendant that left the group (a session of its own: setsid, Python's start_new_session=True, as some model
 * servers are started) is found by the marker it inherited in its environment (WHARF_WORKER_ID) and signalled with
 * the group. One that also replaced its whole environment escapes; only a container (the docker executor) holds
 * everything.
 * A pid file per worker lets the next supervisor find workers that a crashed one left running.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

import { inCgroupArgv, WorkerCgroups, type WorkerCgroup } from './cgroups.ts';
import { safely, sleep, waitFor } from './waits.ts';
import {
  workerMemoryMb,
  type Executor,
  type ExecutorHooks,
  type ImageOwner,
  type RunningWorker,
  type WorkerSpec,
} from './types.ts';

/** Longest log line passed on; the rest of the line is dropped so one runaway print cannot flood the log store. */
export const MAX_LOG_LINE = 16 * 1024;
const FILE_PREFIX = 'file://';
// 2 s after exit for the log pipes to drain: long enough for buffered output, short enough that a process that
// escaped the group (setsid) and holds the pipes cannot delay onExit indefinitely.
const PIPE_DRAIN_MS = 2_000;
// 10 s after SIGKILL: a process stuck in uninterruptible I/O (D state) must not hang the server's shutdown.
const KILL_WAIT_MS = 10_000;
// 50 ms between /proc checks while an orphan (not our child, so no exit event) dies.
const ORPHAN_POLL_MS = 50;

export interface ProcessExecutorOptions {
  /** Where pid files live; one directory per node (two supervisors sharing it would clean each other up). */
  stateDir: string;
  /** The Node binary for commands whose first word is `node`; default: the Node running Wharf. */
  nodePath?: string;
  /** PATH, HOME and LANG for workers; default: taken from this process once, at construction. */
  baseEnv?: Record<string, string>;
  /** How long an orphan gets between SIGTERM and SIGKILL. */
  orphanGraceMs?: number;
  /**
   * Node's module compile cache for the workers (`NODE_COMPILE_CACHE`): V8 code for every module a Node worker loads,
   * TypeScript stripped, kept on disk, so a worker started again skips most of its module loading (the SDK's import
   * took ~0.27 s without, ~0.13 s with it). Inside the data directory (mode 0700), never a shared temporary directory:
   * cached code is run. Workers that are not Node ignore it; a template's own env wins (`NODE_COMPILE_CACHE`, or
   * `NODE_DISABLE_COMPILE_CACHE=1`). Default: none.
   */
  compileCacheDir?: string;
  /**
   * Whose endpoints may run: a worker process runs as the server's own OS user, able to read its data directory
   * (the secret key, the database) and anything else that user can, so by default only admins' endpoints. `all`
   * trusts every user of the server (a single team). Default here: `all` (the server passes its configuration).
   */
  owners?: 'admins' | 'all';
  /**
   * The workers' HOME when the server's holds a RunPod SDK configuration with an API key (see workerHome); made
   * when needed. Default: none, HOME is kept.
   */
  spareHomeDir?: string;
  /** Told once, at construction, when the workers get spareHomeDir as their HOME, or run without cgroups. */
  warn?: (message: string) => void;
  /**
   * Each worker in a cgroup of its own (cgroups.ts): its stop reaches every process it started, and a CPU worker is
   * confined to its instance's vCPUs and memory. `auto` uses them where they are writable (root, or a delegated
   * cgroup) and says once when they are not; `off` never. Default here: `off` (the server passes `auto`).
   */
  cgroups?: 'auto' | 'off';
  /**
   * Memory limit per worker in MiB (`--worker-memory-mb`), 0 (default) for none; a CPU worker's instance memory, where
   * smaller, wins. Applied where workers run in cgroups.
   */
  memoryMb?: number;
  /** Tests: the v2 hierarchy of a hybrid host instead of v1 (see WorkerCgroups.open). */
  cgroupVersion?: 1 | 2;
}

/**
 * The HOME workers get. The official Python SDK takes the `api_key` of `~/.runpod/config.toml`, when that file has
 * one, instead of RUNPOD_AI_API_KEY for every take and result (worker-protocol.md §1.2): under the HOME of someone
 * who configured runpodctl or the SDK for the hosted service, every worker would send a key Wharf does not know and
 * never get a job. Such a HOME is swapped for `spare`; any other is kept (caches under it stay shared by workers).
 */
export function workerHome(home: string, spare: string | undefined): { home: string; swapped: boolean } {
  if (spare === undefined) return { home, swapped: false };
  let config: string;
  try {
    config = readFileSync(join(home, '.runpod', 'config.toml'), 'utf8');
  } catch {
    return { home, swapped: false };
  }
  if (!/^\s*api_key\s*=/m.test(config)) return { home, swapped: false };
  mkdirSync(spare, { recursive: true, mode: 0o700 });
  return { home: spare, swapped: true };
}

/** The directory of a `file://<dir>` image name, resolved against the server's working directory; else null. */
export function fileImageDir(imageName: string): string | null {
  if (!imageName.startsWith(FILE_PREFIX)) return null;
  const dir = imageName.slice(FILE_PREFIX.length);
  return dir === '' ? null : resolve(dir);
}

interface Tracked {
  worker: RunningWorker;
  exited: Promise<void>;
}

/** The file a command names, as execvp would find it (the child's PATH, its cwd): null when none can be run. */
export function resolveCommand(command: string, cwd: string, path: string | undefined): string | null {
  const runnable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) {
    const file = isAbsolute(command) ? command : resolve(cwd, command);
    return runnable(file) ? file : null;
  }
  for (const dir of (path ?? '').split(delimiter)) {
    const file = resolve(cwd, dir === '' ? '.' : dir, command);
    if (runnable(file)) return file;
  }
  return null;
}

interface PidRecord {
  pid: number;
  workerId: string;
  endpointId?: string;
  startTicks: string | null;
}

export class ProcessExecutor implements Executor {
  readonly kind = 'process';
  private readonly stateDir: string;
  private readonly nodePath: string;
  private readonly baseEnv: Record<string, string>;
  private readonly orphanGraceMs: number;
  private readonly compileCacheDir: string | undefined;
  private readonly owners: 'admins' | 'all';
  private readonly running = new Map<string, Tracked>();
  /** null: workers run without cgroups (turned off, or none writable here). */
  private readonly cgroups: WorkerCgroups | null;
  private readonly memoryMb: number;
  private closing = false;

  constructor(opts: ProcessExecutorOptions) {
    this.stateDir = opts.stateDir;
    this.nodePath = opts.nodePath ?? process.execPath;
    // A child's PATH/HOME/LANG are inherited by nature; nothing else of the server's environment (keys, database
    // URLs) reaches a worker. Configuration may pass baseEnv to pin them.
    const baseEnv = opts.baseEnv ?? {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: process.env.HOME ?? '/',
      LANG: process.env.LANG ?? 'C.UTF-8',
    };
    const home = baseEnv.HOME === undefined ? null : workerHome(baseEnv.HOME, opts.spareHomeDir);
    if (home?.swapped) {
      opts.warn?.(
        `${join(baseEnv.HOME!, '.runpod', 'config.toml')} holds an API key, which the RunPod Python SDK would send ` +
          `instead of each worker's own key: workers get HOME=${home.home} instead`,
      );
    }
    this.baseEnv = home === null ? baseEnv : { ...baseEnv, HOME: home.home };
    this.orphanGraceMs = opts.orphanGraceMs ?? 5_000;
    this.compileCacheDir = opts.compileCacheDir;
    this.owners = opts.owners ?? 'all';
    this.memoryMb = opts.memoryMb ?? 0;
    this.cgroups = null;
    // The node's memory cap is set in the worker's cgroup: without one (or its memory controller) it caps nothing.
    const capIgnored =
      this.memoryMb > 0 ? `; --worker-memory-mb (${this.memoryMb} MiB) does not apply to process workers` : '';
    if ((opts.cgroups ?? 'off') === 'off' && capIgnored) {
      opts.warn?.(`process workers run without cgroups (--worker-cgroups off)${capIgnored}`);
    }
    if ((opts.cgroups ?? 'off') === 'auto') {
      const opened = WorkerCgroups.open(this.stateDir, { prefer: opts.cgroupVersion });
      if (typeof opened === 'string') {
        opts.warn?.(
          `process workers run without cgroups (${opened}): a stop reaches their process group and marked ` +
            `descendants only, and CPU workers are not confined to their instance’s vCPUs and memory${capIgnored}`,
        );
      } else {
        this.cgroups = opened;
        if (!opened.confines) {
          opts.warn?.(
            `process workers run in cgroups (v${opened.version}) without the cpu and memory controllers: CPU ` +
              'workers are not confined to their instance’s vCPUs and memory' +
              (opened.limitsMemory ? '' : capIgnored),
          );
        }
      }
    }
  }

  validateImage(imageName: string, owner?: ImageOwner): string | null {
    if (owner && !owner.isAdmin && this.owners === 'admins') {
      return (
        'the process executor runs workers as the server’s own OS user, with access to its data directory, so it ' +
        'runs admin users’ endpoints only; an administrator may trust every user with WHARF_PROCESS_EXECUTOR_USERS=all, ' +
        'or run the docker executor'
      );
    }
    if (fileImageDir(imageName) !== null) return null;
    return (
      `the process executor runs imageName file://<dir>; got '${imageName}'` +
      (imageName.startsWith(FILE_PREFIX) ? ' (no directory given)' : ' — use the docker executor for container images')
    );
  }

  async start(spec: WorkerSpec, hooks: ExecutorHooks): Promise<RunningWorker> {
    if (this.closing) throw new Error(`cannot start worker ${spec.workerId}: the process executor is shutting down`);
    if (this.running.has(spec.workerId)) throw new Error(`worker ${spec.workerId} is already running`);
    const dir = fileImageDir(spec.imageName);
    if (dir === null) throw new Error(this.validateImage(spec.imageName) ?? 'bad imageName');
    const [first, ...args] = [...spec.entrypoint, ...spec.startCmd];
    if (first === undefined || first === '') {
      throw new Error(`worker ${spec.workerId} has no command: set dockerStartCmd (e.g. ["node", "handler.ts"])`);
    }
    if (!isDirectory(dir)) throw new Error(`imageName ${spec.imageName}: ${dir} is not a directory on this node`);
    mkdirSync(this.stateDir, { recursive: true });

    const env = this.workerEnv(spec);
    const memoryMb = workerMemoryMb(this.memoryMb, spec);
    let command = first === 'node' ? this.nodePath : first;
    let argv = args;
    let cgroup: WorkerCgroup | null = null;
    if (this.cgroups) {
      // The shell that joins the cgroup execs the command: a command that cannot run must fail the start here, as
      // spawn's own ENOENT does without cgroups, not as the shell's exit 127 later.
      const file = resolveCommand(command, dir, env.PATH);
      if (file === null) {
        throw new Error(
          `could not start worker ${spec.workerId}: spawn ${command} ENOENT (command '${first}', cwd ${dir})`,
        );
      }
      cgroup = this.cgroups.create(spec.workerId, { vcpus: spec.cpu?.vcpus, memoryMb });
      [command, argv] = inCgroupArgv(cgroup.procsFiles(), file, args);
    }
    const child = spawn(command, argv, {
      cwd: dir,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid;
    if (pid === undefined) {
      const err = await new Promise<Error>((res) => child.once('error', res));
      child.stdout.destroy();
      child.stderr.destroy();
      cgroup?.remove();
      throw new Error(`could not start worker ${spec.workerId}: ${err.message} (command '${first}', cwd ${dir})`, {
        cause: err,
      });
    }
    // Written before the event loop turns, so an exit (which removes it) can never come first.
    const pidFile = join(this.stateDir, `${spec.workerId}.pid`);
    const startTicks = procStat(pid)?.startTicks ?? null;
    const record: PidRecord = { pid, workerId: spec.workerId, endpointId: spec.endpointId, startTicks };
    try {
      writeFileSync(pidFile, JSON.stringify(record));
    } catch (e) {
      // Without its pid file a worker could outlive a crash unnoticed: do not run it at all.
      signalGroup(pid, 'SIGKILL');
      cgroup?.signal('SIGKILL');
      throw new Error(`could not write ${pidFile}: ${(e as Error).message}`, { cause: e });
    }

    const out = new LineSplitter((line) => safely(() => hooks.onLog('stdout', line)));
    const err = new LineSplitter((line) => safely(() => hooks.onLog('stderr', line)));
    child.stdout.setEncoding('utf8').on('data', (s: string) => out.push(s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => err.push(s));
    // After a successful spawn an 'error' can only come from a failed kill of a process that is already gone.
    child.on('error', () => {});
    const closed = new Promise<void>((res) => child.once('close', () => res()));

    let reaped = false;
    const exited = new Promise<void>((res) => {
      child.once('exit', (code, signal) => {
        reaped = true;
        // Read before the cgroup goes: a kill by the kernel for the memory limit is said in the worker's log, as
        // the Docker executor says an OOM-killed container's. The count includes kills for the host's memory or an
        // ancestor's limit (the server's own cgroup): a worker without a limit of its own says so.
        const oomKills = cgroup?.oomKills() ?? 0;
        if (oomKills > 0) {
          const limit =
            memoryMb > 0 ? `limit ${memoryMb} MiB` : 'no limit of its own: the host, or the server’s cgroup, ran out';
          safely(() =>
            hooks.onLog(
              'stderr',
              `[wharf] the worker ran out of memory (${limit}): the kernel killed ` +
                `${oomKills === 1 ? 'one of its processes' : `${oomKills} of its processes`}`,
            ),
          );
        }
        signalGroup(pid, 'SIGKILL');
        signalLeftGroup(spec.workerId, pid, cgroup, 'SIGKILL');
        // The cgroup empties as the killed processes die: waited for with the pipes, so that once onExit runs
        // nothing of the worker holds its GPU any more.
        const emptied = cgroup ? untilRemoved(cgroup, PIPE_DRAIN_MS) : Promise.resolve();
        void Promise.all([waitFor(closed, PIPE_DRAIN_MS), emptied]).then(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          out.flush();
          err.flush();
          rmSync(pidFile, { force: true });
          this.running.delete(spec.workerId);
          safely(() => hooks.onExit({ code, signal }));
          res();
        });
      });
    });

    let stopping: Promise<void> | null = null;
    const worker: RunningWorker = {
      workerId: spec.workerId,
      pid,
      stop: ({ graceMs }) => {
        stopping ??= (async () => {
          // Once reaped, the pid may belong to someone else: only wait for the exit bookkeeping.
          if (reaped) return exited;
          signalGroup(pid, 'SIGTERM');
          signalLeftGroup(spec.workerId, pid, cgroup, 'SIGTERM');
          if (await waitFor(exited, graceMs)) return;
          signalGroup(pid, 'SIGKILL');
          signalLeftGroup(spec.workerId, pid, cgroup, 'SIGKILL');
          await waitFor(exited, KILL_WAIT_MS);
        })();
        return stopping;
      },
    };
    this.running.set(spec.workerId, { worker, exited });
    return worker;
  }

  async stopAll(opts: { graceMs: number }): Promise<void> {
    // Refuse new starts first: a start racing with shutdown would otherwise leave a worker nobody stops.
    this.closing = true;
    await Promise.all([...this.running.values()].map((t) => t.worker.stop(opts)));
    this.cgroups?.close();
  }

  async cleanupOrphans(): Promise<number> {
    // The supervisor calls this first when it (re)starts, e.g. on regaining leadership after a stopAll.
    this.closing = false;
    let names: string[];
    try {
      names = readdirSync(this.stateDir);
    } catch {
      return 0;
    }
    // All at once: each may wait out its grace, and the supervisor starts nothing until every orphan is gone.
    const workerIds = names.filter((n) => n.endsWith('.pid')).map((n) => n.slice(0, -'.pid'.length));
    const results = await Promise.all(
      workerIds
        .filter((workerId) => !this.running.has(workerId))
        .map(async (workerId) => {
          const file = join(this.stateDir, `${workerId}.pid`);
          const record = readPidRecord(file);
          const killed = record !== null && record.workerId === workerId && (await this.killOrphan(record));
          rmSync(file, { force: true });
          return killed;
        }),
    );
    // What is left in the cgroups of workers no pid file named (a crash between the cgroup and the pid file, or a
    // descendant of a killed orphan that escaped it): killed, and the cgroups removed.
    let swept = 0;
    for (const [workerId, cgroup] of this.cgroups?.leftovers() ?? []) {
      if (this.running.has(workerId)) continue;
      if (cgroup.signal('SIGKILL') > 0) swept++;
      await untilRemoved(cgroup, KILL_WAIT_MS);
    }
    return results.filter(Boolean).length + swept;
  }

  private workerEnv(spec: WorkerSpec): Record<string, string> {
    const env: Record<string, string> = {
      ...this.baseEnv,
      ...(this.compileCacheDir === undefined ? {} : { NODE_COMPILE_CACHE: this.compileCacheDir }),
      ...spec.env,
      // Set last so a template cannot claim GPUs it was not given. The indices are nvidia-smi's, which number GPUs
      // in PCI bus order; CUDA's own default order is fastest first, another GPU on a host with mixed types.
      CUDA_VISIBLE_DEVICES: spec.gpuIndices.join(','),
      CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      // Marks the process tree as ours, for cleanupOrphans after a crash.
      WHARF_WORKER_ID: spec.workerId,
    };
    if (spec.volumePath !== undefined) env.RUNPOD_VOLUME_PATH = spec.volumePath;
    return env;
  }

  /** SIGTERM, then SIGKILL after orphanGraceMs, to a left-over group that is provably ours. */
  private async killOrphan(record: PidRecord): Promise<boolean> {
    const members = new OrphanMembers(record);
    if (members.remaining() === 0) return false;
    // Not our child, so there is no exit event to wait for: poll /proc until the group is gone.
    const gone = async (ms: number): Promise<boolean> => {
      // performance.now(): a wall-clock step must not stretch or skip the wait.
      const deadline = performance.now() + ms;
      while (members.remaining() > 0) {
        if (performance.now() >= deadline) return false;
        await sleep(ORPHAN_POLL_MS);
      }
      return true;
    };
    members.signal('SIGTERM');
    if (await gone(this.orphanGraceMs)) return true;
    members.signal('SIGKILL');
    await gone(KILL_WAIT_MS);
    return true;
  }
}

/**
 * The live processes of a recorded worker that are provably ours: its group, and descendants that left the group. A
 * process proves it once, by the worker's marker in its environment; after that it is followed by pid and start
 * time, because a dying process loses its environment (its memory is released) while it still closes files and holds
 * what it held, before it becomes a zombie.
 */
class OrphanMembers {
  private readonly known = new Map<number, string>(); // pid → start ticks
  private readonly record: PidRecord;
  private readonly marker: string;

  constructor(record: PidRecord) {
    this.record = record;
    this.marker = `WHARF_WORKER_ID=${record.workerId}`;
  }

  remaining(): number {
    for (const [pid, startTicks] of this.proven()) this.known.set(pid, startTicks);
    for (const [pid, startTicks] of this.known) {
      const stat = procStat(pid);
      // Gone, a zombie, or a reused pid (another start time): this one is done.
      if (stat === null || stat.state === 'Z' || stat.startTicks !== startTicks) this.known.delete(pid);
    }
    return this.known.size;
  }

  /** The group, and each member that left it (it would miss the group's signal). */
  signal(signal: NodeJS.Signals): void {
    signalGroup(this.record.pid, signal);
    for (const pid of this.known.keys()) {
      if (procStat(pid)?.pgrp !== this.record.pid) signalProcess(pid, signal);
    }
  }

  /** Processes that carry the marker, in the group or out of it; a reused pid of the group's leader never matches. */
  private proven(): Array<[number, string]> {
    const { pid: leader, startTicks } = this.record;
    return markedProcesses(
      this.marker,
      (pid, stat) => pid !== leader || startTicks === null || stat.startTicks === startTicks,
    );
  }
}

/** Signal the worker's processes that left its process group (see the header); its group is signalled apart. */
/**
 * The worker's processes outside its process group, each signalled once (a second SIGTERM makes some workers quit
 * their graceful stop): with a cgroup, every member not in the group, whatever its environment; without, those that
 * carry the worker's marker.
 */
function signalLeftGroup(workerId: string, pgid: number, cgroup: WorkerCgroup | null, signal: NodeJS.Signals): void {
  if (cgroup === null) return signalEscaped(workerId, pgid, signal);
  for (const pid of cgroup.members()) {
    if (procStat(pid)?.pgrp !== pgid) signalProcess(pid, signal);
  }
}

function signalEscaped(workerId: string, pgid: number, signal: NodeJS.Signals): void {
  for (const [pid] of markedProcesses(`WHARF_WORKER_ID=${workerId}`, (_, stat) => stat.pgrp !== pgid)) {
    signalProcess(pid, signal);
  }
}

/**
 * Live processes (not zombies, never this one) whose environment carries `marker`, with their start times. Only
 * this server's user's processes are looked at (workers run as that user): a server running as root does not read
 * the environments of other users' processes. `where` filters on /proc/<pid>/stat first, so the environments of the
 * others are not read either.
 */
function markedProcesses(marker: string, where: (pid: number, stat: ProcStat) => boolean): Array<[number, string]> {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: Array<[number, string]> = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid || ownerOf(pid) !== SERVER_UID) continue;
    const stat = procStat(pid);
    if (stat === null || stat.state === 'Z' || !where(pid, stat)) continue;
    if (procEnviron(pid).includes(marker)) found.push([pid, stat.startTicks]);
  }
  return found;
}

const SERVER_UID = process.getuid?.() ?? -1;

/** The user a process runs as (the owner of its /proc directory); null when it is gone. */
function ownerOf(pid: number): number | null {
  try {
    return statSync(`/proc/${pid}`).uid;
  } catch {
    return null;
  }
}

interface ProcStat {
  state: string;
  pgrp: number;
  startTicks: string;
}

function procStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "pid (comm)": comm may contain spaces and parentheses, so split after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const [state, , pgrp] = fields;
    const startTicks = fields[19];
    if (state === undefined || pgrp === undefined || startTicks === undefined) return null;
    return { state, pgrp: Number(pgrp), startTicks };
  } catch {
    return null;
  }
}

function procEnviron(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

function readPidRecord(file: string): PidRecord | null {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<PidRecord>;
    if (typeof r.pid !== 'number' || !Number.isInteger(r.pid) || r.pid <= 1 || typeof r.workerId !== 'string') {
      return null;
    }
    return { pid: r.pid, workerId: r.workerId, startTicks: typeof r.startTicks === 'string' ? r.startTicks : null };
  } catch {
    return null;
  }
}

/** Signal one process; one that is already gone (ESRCH) is what we wanted anyway. */
function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: nothing left to signal.
  }
}

/** Signal a whole process group; a group that is already gone (ESRCH) is what we wanted anyway. */
function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left to signal.
  }
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** Splits a text stream into lines, capping each at MAX_LOG_LINE characters. */
export class LineSplitter {
  private buf = '';
  private dropping = false;
  private readonly emit: (line: string) => void;

  constructor(emit: (line: string) => void) {
    this.emit = emit;
  }

  push(chunk: string): void {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      this.take(chunk.slice(start, nl), true);
      start = nl + 1;
    }
    this.take(chunk.slice(start), false);
  }

  flush(): void {
    if (this.buf !== '' && !this.dropping) this.emit(this.buf.replace(/\r$/, ''));
    this.buf = '';
    this.dropping = false;
  }

  private take(part: string, complete: boolean): void {
    if (!this.dropping) {
      this.buf += part;
      if (this.buf.length > MAX_LOG_LINE) {
        this.emit(this.buf.slice(0, MAX_LOG_LINE));
        this.buf = '';
        this.dropping = true;
      }
    }
    if (complete) {
      if (!this.dropping) this.emit(this.buf.replace(/\r$/, ''));
      this.buf = '';
      this.dropping = false;
    }
  }
}

/** Removes the cgroup once its processes are gone, polling /sys until then or `ms`. */
async function untilRemoved(cgroup: WorkerCgroup, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cgroup.remove()) {
    if (performance.now() >= deadline) return;
    cgroup.signal('SIGKILL');
    await sleep(ORPHAN_POLL_MS);
  }
}
