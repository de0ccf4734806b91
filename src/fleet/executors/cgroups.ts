/**
 * Control groups for process workers (Linux). Each worker runs in a cgroup of its own, which it joins before its
 * first instruction: the executor spawns `/bin/sh`, which writes its own pid into the cgroup and then execs the
 * worker's command (same pid, same process group). That gives what a process group cannot:
 * - a stop reaches every process the worker started, also one that left the group and replaced its whole
 *   environment (a daemonised model server), since a process cannot leave its cgroup without privileges;
 * - a CPU endpoint's worker is confined to its instance's vCPUs (a CFS quota) and memory, as the container executors
 *   confine theirs.
 *
 * cgroup v1 (a hierarchy per controller: `memory` holds the membership and the memory limit, `cpu` the quota) and v2
 * (one hierarchy: `cpu.max` and `memory.max`, where the controllers are delegated to the server's cgroup; without
 * them workers are still tracked and killed whole, only not confined). Worker cgroups go under the server's own
 * cgroup, in a directory per data directory (`wharf-<hash>`), so two servers on one host never touch each other's.
 * Where nothing is writable (not root, no delegation, a read-only /sys/fs/cgroup in a container), `open` says why and
 * workers run as before.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The CFS period of a CPU worker's quota: 100 ms, as Docker's. */
const CPU_PERIOD_US = 100_000;

interface Hierarchy {
  version: 1 | 2;
  /** This server's directory of worker cgroups in the hierarchy. */
  base: string;
  /** What the hierarchy limits here (v1: its controller; v2: the controllers delegated to `base`). */
  limits: { cpu: boolean; memory: boolean };
}

/** What a worker's cgroup limits: vCPUs (a CPU worker's instance) and memory in MiB (its instance's or the node cap). */
export interface WorkerLimits {
  vcpus?: number | undefined;
  /** 0 or absent: no limit. */
  memoryMb?: number | undefined;
}

/** Where the cgroup filesystems are and which cgroups this process is in: the real ones unless a test names others. */
export interface CgroupSources {
  mountinfo: string;
  selfCgroup: string;
}

function readSources(): CgroupSources | null {
  try {
    return {
      mountinfo: readFileSync('/proc/self/mountinfo', 'utf8'),
      selfCgroup: readFileSync('/proc/self/cgroup', 'utf8'),
    };
  } catch {
    return null;
  }
}

interface Mount {
  root: string;
  point: string;
  fstype: string;
  options: string[];
}

function mounts(mountinfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [head, tail] = line.split(' - ');
    if (!head || !tail) continue;
    const f = head.split(' ');
    const [fstype, , superOptions] = tail.split(' ');
    if (f.length < 5 || !fstype) continue;
    const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({ root: unescape(f[3]!), point: unescape(f[4]!), fstype, options: (superOptions ?? '').split(',') });
  }
  return out;
}

/** The directory of this process's cgroup in a mounted hierarchy, or null when the mount does not show it. */
function ownDir(mount: Mount, path: string): string | null {
  const rel = relative(mount.root, path);
  if (rel.startsWith('..')) return null;
  return join(mount.point, rel);
}

/** The worker cgroups of one server (one data directory). */
export class WorkerCgroups {
  readonly version: 1 | 2;
  private readonly hierarchies: Hierarchy[];

  private constructor(hierarchies: Hierarchy[]) {
    this.hierarchies = hierarchies;
    this.version = hierarchies[0]!.version;
  }

  /**
   * The worker cgroups of the server whose process executor keeps its state in `stateDir`, or why there are none.
   * `prefer: 2` uses the v2 hierarchy of a hybrid host (tests: its membership and kill, where v1 holds the
   * controllers).
   */
  static open(stateDir: string, opts: { sources?: CgroupSources; prefer?: 1 | 2 } = {}): WorkerCgroups | string {
    if (process.platform !== 'linux') return 'not Linux';
    if (!existsSync('/bin/sh')) return 'no /bin/sh to start workers in their cgroup';
    const sources = opts.sources ?? readSources();
    if (!sources) return 'no /proc/self/cgroup';
    const name = `wharf-${createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 16)}`;
    const all = mounts(sources.mountinfo);
    const paths = new Map<string, string>(); // v1 controller (or '' for v2) → this process's cgroup path
    for (const line of sources.selfCgroup.split('\n')) {
      const m = /^\d+:([^:]*):(.*)$/.exec(line);
      if (!m) continue;
      if (m[1] === '') paths.set('', m[2]!);
      else for (const c of m[1]!.split(',')) paths.set(c, m[2]!);
    }
    const v1 = (controller: 'memory' | 'cpu'): Mount | undefined =>
      all.find((mt) => mt.fstype === 'cgroup' && mt.options.includes(controller));
    const v2 = all.find((mt) => mt.fstype === 'cgroup2');
    const useV1 = opts.prefer !== 2 && v1('memory') !== undefined;
    try {
      if (useV1) {
        const hs: Hierarchy[] = [];
        for (const controller of ['memory', 'cpu'] as const) {
          const mount = v1(controller);
          const own = mount && paths.has(controller) ? ownDir(mount, paths.get(controller)!) : null;
          if (!own) {
            if (controller === 'memory') return 'the v1 memory hierarchy does not show this process';
            continue;
          }
          const base = join(own, name);
          mkdirSync(base, { recursive: true });
          hs.push({ version: 1, base, limits: { cpu: controller === 'cpu', memory: controller === 'memory' } });
        }
        // Made to see that it can be; made again by the first worker (ensureBase).
        for (const h of hs) tryRmdir(h.base);
        return new WorkerCgroups(hs);
      }
      if (!v2 || !paths.has('')) return 'no cgroup hierarchy';
      const own = ownDir(v2, paths.get('')!);
      if (!own) return 'the v2 hierarchy does not show this process';
      const base = join(own, name);
      mkdirSync(base, { recursive: true });
      const limits = delegate(own, base);
      tryRmdir(base);
      return new WorkerCgroups([{ version: 2, base, limits }]);
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** Whether workers are confined to their size here (both limits in some hierarchy). */
  get confines(): boolean {
    return this.hierarchies.some((h) => h.limits.cpu) && this.hierarchies.some((h) => h.limits.memory);
  }

  /** Whether a worker's memory can be limited here (the memory controller in some hierarchy). */
  get limitsMemory(): boolean {
    return this.hierarchies.some((h) => h.limits.memory);
  }

  /** A new cgroup for the worker, with its limits (vCPUs, memory) where the hierarchies can set them. */
  create(workerId: string, limits: WorkerLimits = {}): WorkerCgroup {
    const dirs: string[] = [];
    try {
      for (const h of this.hierarchies) {
        ensureBase(h);
        const dir = join(h.base, workerId);
        mkdirSync(dir);
        dirs.push(dir);
        limit(h, dir, limits);
      }
    } catch (error) {
      new WorkerCgroup(dirs).remove();
      throw error;
    }
    return new WorkerCgroup(dirs);
  }

  /** The cgroups of workers this server left (a crash): to kill what is in them and remove them. */
  leftovers(): Map<string, WorkerCgroup> {
    const ids = new Set<string>();
    for (const h of this.hierarchies) {
      for (const entry of safeList(h.base)) ids.add(entry);
    }
    return new Map(
      [...ids].map((id) => [id, new WorkerCgroup(this.hierarchies.map((h) => join(h.base, id)).filter(existsSync))]),
    );
  }

  /** Removes this server's directories where they are empty (a stopAll; the next create makes them again). */
  close(): void {
    for (const h of this.hierarchies) tryRmdir(h.base);
  }
}

/** One worker's cgroup, in each hierarchy. */
export class WorkerCgroup {
  readonly dirs: string[];

  constructor(dirs: string[]) {
    this.dirs = dirs;
  }

  /** How many of its processes the kernel killed for running out of its memory limit (v1 oom_control, v2 events). */
  oomKills(): number {
    let kills = 0;
    for (const dir of this.dirs) {
      for (const file of ['memory.oom_control', 'memory.events']) {
        try {
          const m = /^oom_kill (\d+)$/m.exec(readFileSync(join(dir, file), 'utf8'));
          if (m) kills += Number(m[1]);
        } catch {
          // Not this version's file, or not the memory hierarchy.
        }
      }
    }
    return kills;
  }

  /** The files a process writes its pid into to join. */
  procsFiles(): string[] {
    return this.dirs.map((d) => join(d, 'cgroup.procs'));
  }

  /** The processes in it (those of the first hierarchy: every hierarchy holds the same ones). */
  members(): number[] {
    const first = this.dirs[0];
    if (first === undefined) return [];
    try {
      return readFileSync(join(first, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map(Number);
    } catch {
      return [];
    }
  }

  /** Signals every process in it; how many were signalled. */
  signal(signal: NodeJS.Signals): number {
    let n = 0;
    for (const pid of this.members()) {
      try {
        process.kill(pid, signal);
        n++;
      } catch {
        // Gone meanwhile.
      }
    }
    return n;
  }

  /**
   * Removes it once empty; false while a process is still in it (dying). The server's directory goes with its last
   * worker's cgroup: a server that is killed, or never stops its executor (a multi-node follower), leaves nothing
   * behind but the cgroups of workers still running.
   */
  remove(): boolean {
    if (!this.dirs.map(tryRmdir).every(Boolean)) return false;
    for (const dir of this.dirs) tryRmdir(dirname(dir)); // fails while it holds another worker's cgroup
    return true;
  }
}

/** v2: the cpu and memory controllers for the worker cgroups, where the server's own cgroup may hand them on. */
function delegate(own: string, base: string): { cpu: boolean; memory: boolean } {
  const enabled = { cpu: false, memory: false };
  for (const c of ['cpu', 'memory'] as const) {
    try {
      // Allowed only where `own` holds no process itself or is the root (the "no internal processes" rule): a
      // delegated service that runs the server in a leaf of its own has it.
      if (!controllersOf(join(own, 'cgroup.subtree_control')).includes(c)) {
        writeFileSync(join(own, 'cgroup.subtree_control'), `+${c}`);
      }
      writeFileSync(join(base, 'cgroup.subtree_control'), `+${c}`);
      enabled[c] = true;
    } catch {
      // Not delegated: tracked, not limited.
    }
  }
  return enabled;
}

/**
 * Makes the server's directory where it is missing: it exists only while it holds worker cgroups (WorkerCgroup.remove,
 * a stopAll), with the v2 controllers that `open` delegated to it.
 */
function ensureBase(h: Hierarchy): void {
  if (existsSync(h.base)) return;
  mkdirSync(h.base, { recursive: true });
  if (h.version !== 2) return;
  for (const c of ['cpu', 'memory'] as const) {
    if (h.limits[c]) writeFileSync(join(h.base, 'cgroup.subtree_control'), `+${c}`);
  }
}

function controllersOf(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

function limit(h: Hierarchy, dir: string, limits: WorkerLimits): void {
  const memoryMb = limits.memoryMb ?? 0;
  const bytes = String(memoryMb * 1024 * 1024);
  const quota = (limits.vcpus ?? 0) * CPU_PERIOD_US;
  const cpu = h.limits.cpu && quota > 0;
  const memory = h.limits.memory && memoryMb > 0;
  if (h.version === 1) {
    if (cpu) {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      try {
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
      } catch (error) {
        // v1 refuses a quota above an ancestor's (the server's own: systemd's CPUQuota=, a container's --cpus): that
        // smaller quota confines the worker already, so it runs under it instead of not at all.
        if ((error as NodeJS.ErrnoException).code !== 'EINVAL') throw error;
      }
    }
    if (memory) {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
      // No swap on top, as the Docker executor's MemorySwap = Memory (only where swap accounting is on).
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
        writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), bytes);
    }
    return;
  }
  if (cpu) writeFileSync(join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
  if (memory) {
    writeFileSync(join(dir, 'memory.max'), bytes);
    if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * The argv that starts `command` inside the cgroup: `/bin/sh` writes its pid into each `cgroup.procs` file, then
 * execs the command (same pid). A write that fails stops the start (exit 126, the reason on stderr): a worker must not
 * run outside the cgroup that its stop and its limits rely on.
 */
export function inCgroupArgv(procsFiles: string[], command: string, args: string[]): [string, string[]] {
  const script =
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "wharf: could not join the worker cgroup $1" >&2; exit 126; }; shift; n=$((n-1)); done; exec "$@"';
  return ['/bin/sh', ['-c', script, 'wharf-worker', String(procsFiles.length), ...procsFiles, command, ...args]];
}
