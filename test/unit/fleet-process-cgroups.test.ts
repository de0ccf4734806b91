// The process executor's workers in cgroups of their own (src/fleet/executors/cgroups.ts), on the real cgroup
// filesystems of this host: v1 (this machine's memory and cpu hierarchies) and v2 (the unified hierarchy of a hybrid
// host, which holds no controllers here: membership and kill only). A stop or a cleanup reaches a descendant that
// left the process group and replaced its whole environment, which the process group and the environment marker
// cannot; a CPU worker is confined to its instance's vCPUs and memory. Each version is skipped, with the reason
// printed, where its hierarchy is not writable here (not root, a read-only /sys/fs/cgroup); .ci/run sets
// WHARF_CGROUPS_EXPECTED=1 where it runs as root, and then a skip is a failure.

import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { WorkerCgroups } from '../../src/fleet/executors/cgroups.ts';
import { ProcessExecutor } from '../../src/fleet/executors/process.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';
import { alive, cleanUpWorkers, scriptDir, supervisorProcess, until } from '../helpers/worker-sandbox.ts';

const EXECUTOR_MODULE = resolve(import.meta.dirname, '../../src/fleet/executors/process.ts');

// Worker ids of this run only: an executor without cgroups (fleet-process-executor.test.ts, run in parallel) kills, at
// its worker's exit and in its orphan cleanup, every process of this user whose environment names its worker id
// (WHARF_WORKER_ID=w1), which would be this file's workers if they shared their ids.
const RUN = randomBytes(4).toString('hex');
const W1 = `w1-${RUN}`;

// A descendant that a process group and the WHARF_WORKER_ID marker both miss: a session of its own (setsid) and an
// empty environment. It ignores SIGTERM and records its pid once the handler is in place.
const HIDDEN = `process.on('SIGTERM', () => {});
require('node:fs').writeFileSync(process.argv[1] + '.tmp', String(process.pid));
require('node:fs').renameSync(process.argv[1] + '.tmp', process.argv[1]);
setInterval(() => {}, 1000);`;

const SCRIPTS: Record<string, string> = {
  'hides.mjs': `import { spawn } from 'node:child_process';
spawn(process.execPath, ['-e', ${JSON.stringify(HIDDEN)}, 'hidden-' + process.env.WHARF_WORKER_ID], {
  stdio: 'ignore', detached: true, env: {},
}).unref();
process.on('SIGTERM', () => process.exit(0));
setInterval(() => {}, 1000);`,
  'where.mjs': `import { readFileSync } from 'node:fs';
const own = readFileSync('/proc/self/cgroup', 'utf8').split('\\n').filter(Boolean);
const memory = own.find((l) => /:memory:/.test(l));
const cpu = own.find((l) => /:cpu[,:]/.test(l));
const read = (f) => { try { return readFileSync(f, 'utf8').trim(); } catch { return null; } };
const dir = (line, mount) => line && '/sys/fs/cgroup/' + mount + line.split(':')[2];
console.log(JSON.stringify({ own,
  quota: read(dir(cpu, 'cpu') + '/cpu.cfs_quota_us'), period: read(dir(cpu, 'cpu') + '/cpu.cfs_period_us'),
  memory: read(dir(memory, 'memory') + '/memory.limit_in_bytes') }));`,
  'supervisor.mjs': `import { ProcessExecutor } from ${JSON.stringify(EXECUTOR_MODULE)};
const [stateDir, dir, version, workerId] = process.argv.slice(2);
const ex = new ProcessExecutor({ stateDir, cgroups: 'auto', cgroupVersion: Number(version) });
const w = await ex.start({ workerId, endpointId: 'ep1', imageName: 'file://' + dir, entrypoint: ['node'],
  startCmd: ['hides.mjs'], env: {}, gpuIndices: [] }, { onLog() {}, onExit() {} });
console.log('worker ' + w.pid);
setInterval(() => {}, 1000);`,
  // A server whose own cpu cgroup has a quota (systemd's CPUQuota=, a container's --cpus), as root on v1.
  'quota-supervisor.mjs': `import { writeFileSync } from 'node:fs';
import { ProcessExecutor } from ${JSON.stringify(EXECUTOR_MODULE)};
const [quotaDir, stateDir, dir, workerId] = process.argv.slice(2);
writeFileSync(quotaDir + '/cgroup.procs', String(process.pid));
const ex = new ProcessExecutor({ stateDir, cgroups: 'auto', cgroupVersion: 1 });
const logs = [];
try {
  await new Promise((onExit, fail) => ex.start({ workerId, endpointId: 'ep1', imageName: 'file://' + dir,
    entrypoint: ['node'], startCmd: ['where.mjs'], env: {}, gpuIndices: [], cpu: { vcpus: 3, memoryMb: 300 } },
    { onLog: (_s, l) => logs.push(l), onExit }).catch(fail));
  console.log(JSON.stringify({ logs }));
} catch (e) {
  console.log(JSON.stringify({ error: e.message }));
}
await ex.stopAll({ graceMs: 100 });`,
};

const expected = process.env.WHARF_CGROUPS_EXPECTED === '1';

for (const version of [1, 2] as const) {
  const probeDir = mkdtempSync(join(tmpdir(), 'wharf-cg-probe-'));
  const probe = WorkerCgroups.open(probeDir, { prefer: version });
  const unavailable = typeof probe === 'string' ? probe : null;
  // A host with only the other version (a pure v2 host has no v1 memory hierarchy, a v1-only host no cgroup2 mount):
  // nothing to expect of this one.
  const mountinfo = existsSync('/proc/self/mountinfo') ? readFileSync('/proc/self/mountinfo', 'utf8') : '';
  const hasHierarchy = version === 1 ? /- cgroup \S+ \S*\bmemory\b/.test(mountinfo) : / - cgroup2 /.test(mountinfo);
  const otherVersion = !hasHierarchy || (typeof probe !== 'string' && probe.version !== version);
  if (typeof probe !== 'string') probe.close();
  rmSync(probeDir, { recursive: true, force: true });
  const skip = otherVersion || (unavailable !== null && !expected);
  if (skip) {
    process.stdout.write(
      `\n[cgroup v${version} tests skipped] ${unavailable ?? `this host has no cgroup v${version} hierarchy`}\n`,
    );
  }

  describe.skipIf(skip)(`process workers in cgroups (v${version})`, () => {
    let dir = '';
    let stateDir = '';
    const executors: ProcessExecutor[] = [];
    const pids = new Set<number>();

    const executor = (cgroups: 'auto' | 'off' = 'auto', memoryMb = 0) => {
      const ex = new ProcessExecutor({ stateDir, orphanGraceMs: 300, cgroups, cgroupVersion: version, memoryMb });
      executors.push(ex);
      return ex;
    };
    const start = async (ex: ProcessExecutor, over: Partial<WorkerSpec> = {}) => {
      const logs: string[] = [];
      let onExit: () => void = () => {};
      const exit = new Promise<void>((r) => (onExit = r));
      const worker = await ex.start(
        {
          workerId: W1,
          endpointId: 'ep1',
          imageName: `file://${dir}`,
          entrypoint: ['node'],
          startCmd: ['where.mjs'],
          env: {},
          gpuIndices: [],
          ...over,
        },
        { onLog: (_s, l) => logs.push(l), onExit },
      );
      if (worker.pid) pids.add(worker.pid);
      return { worker, logs, exit };
    };
    const hidden = async (workerId: string): Promise<number> => {
      const file = join(dir, `hidden-${workerId}`);
      await until(() => existsSync(file));
      const pid = Number(readFileSync(file, 'utf8'));
      pids.add(pid);
      return pid;
    };

    beforeEach(() => {
      expect(unavailable, 'cgroups expected here (WHARF_CGROUPS_EXPECTED=1)').toBeNull();
      ({ dir, stateDir } = scriptDir('wharf-cg-', SCRIPTS));
    });
    afterEach(() => cleanUpWorkers(executors, pids, dir));

    it('a worker runs in a cgroup of its own, which goes when it exits; the server’s goes at stopAll', async () => {
      const ex = executor();
      const w = await start(ex);
      await w.exit;
      const seen = JSON.parse(w.logs[0] ?? '{}') as { own: string[] };
      const line = seen.own.find((l) => (version === 1 ? /:memory:/.test(l) : l.startsWith('0::')));
      expect(line).toMatch(new RegExp(`/wharf-[0-9a-f]{16}/${W1}$`));
      const [base] = (WorkerCgroups.open(stateDir, { prefer: version }) as WorkerCgroups).leftovers().values();
      expect(base).toBeUndefined(); // no worker cgroup left
      await ex.stopAll({ graceMs: 100 });
      const mount = version === 1 ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup/unified';
      expect(existsSync(join(mount, line!.split(':')[2]!, '..'))).toBe(false);
    });

    it('after a stopAll, the next start runs its worker in a cgroup again (a multi-node leader regained)', async () => {
      // The supervisor's stop on losing the leadership stops every worker (stopAll, which removes the server's
      // directory); on regaining it, it cleans up and starts workers with the same executor.
      const ex = executor();
      await (
        await start(ex)
      ).exit;
      await ex.stopAll({ graceMs: 100 });
      await ex.cleanupOrphans();
      const w = await start(ex, { workerId: `again-${RUN}` });
      await w.exit;
      const seen = JSON.parse(w.logs[0] ?? '{}') as { own: string[] };
      const line = seen.own.find((l) => (version === 1 ? /:memory:/.test(l) : l.startsWith('0::')));
      expect(line).toMatch(new RegExp(`/wharf-[0-9a-f]{16}/again-${RUN}$`));
    });

    it('a server that never stops its executor (killed, a follower node) leaves no directory once its workers are gone', async () => {
      const own = readFileSync('/proc/self/cgroup', 'utf8')
        .split('\n')
        .find((l) => (version === 1 ? /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l) : l.startsWith('0::')))!
        .split(':')[2]!;
      const mount = version === 1 ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup/unified';
      const base = join(
        mount,
        own,
        `wharf-${createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 16)}`,
      );
      const ex = executor();
      expect(existsSync(base), 'made by an executor that ran no worker').toBe(false);
      const w = await start(ex);
      expect(existsSync(join(base, W1))).toBe(true);
      await w.exit;
      expect(existsSync(base), 'left after its last worker').toBe(false);
    });

    it('a --worker-memory-mb that cannot apply (cgroups off, or no memory controller) is said once', async () => {
      const warnings: string[] = [];
      const make = (cgroups: 'auto' | 'off', memoryMb: number) =>
        executors.push(
          new ProcessExecutor({ stateDir, cgroups, cgroupVersion: version, memoryMb, warn: (m) => warnings.push(m) }),
        );
      make('off', 0);
      expect(warnings).toEqual([]);
      make('off', 512);
      expect(warnings).toEqual([expect.stringMatching(/--worker-memory-mb \(512 MiB\) does not apply/)]);
      warnings.length = 0;
      make('auto', 512);
      // v1 has the memory controller here; the hybrid v2 hierarchy holds none.
      if (version === 1) expect(warnings).toEqual([]);
      else expect(warnings).toEqual([expect.stringMatching(/--worker-memory-mb \(512 MiB\) does not apply/)]);
    });

    it('a command that cannot run still fails the start, as without cgroups', async () => {
      await expect(start(executor(), { entrypoint: [], startCmd: ['wharf-no-such-command-xyz'] })).rejects.toThrow(
        /could not start.*ENOENT/,
      );
      expect([...(WorkerCgroups.open(stateDir, { prefer: version }) as WorkerCgroups).leftovers().keys()]).toEqual([]);
    });

    it('a stop reaches a descendant that left the process group and replaced its whole environment', async () => {
      // Without cgroups it escapes (the control: this test can fail).
      const off = await start(executor('off'), { workerId: `woff-${RUN}`, startCmd: ['hides.mjs'] });
      const escaped = await hidden(`woff-${RUN}`);
      await off.worker.stop({ graceMs: 1000 });
      expect(alive(escaped)).toBe(true);
      process.kill(escaped, 'SIGKILL');

      const w = await start(executor(), { startCmd: ['hides.mjs'] });
      const gc = await hidden(W1);
      await w.worker.stop({ graceMs: 300 });
      await w.exit;
      await until(() => !alive(gc));
    });

    it('a crashed supervisor’s worker’s hidden descendant is killed by the next cleanup', async () => {
      const sup = await supervisorProcess(
        [join(dir, 'supervisor.mjs'), stateDir, dir, String(version), `orphan1-${RUN}`],
        pids,
      );
      const workerPid = sup.workerPid;
      const gc = await hidden(`orphan1-${RUN}`);
      await sup.crash();

      expect(await executor().cleanupOrphans()).toBeGreaterThanOrEqual(1);
      await until(() => !alive(workerPid) && !alive(gc));
      expect([...(WorkerCgroups.open(stateDir, { prefer: version }) as WorkerCgroups).leftovers().keys()]).toEqual([]);
    });

    // The hybrid v2 hierarchy holds no controllers here (v1 has them): the limits are checked on v1.
    if (version === 1)
      it('a CPU worker is confined to its instance’s vCPUs and memory', async () => {
        const w = await start(executor(), { cpu: { vcpus: 3, memoryMb: 300 } });
        await w.exit;
        expect(JSON.parse(w.logs[0] ?? '{}')).toMatchObject({
          quota: '300000',
          period: '100000',
          memory: String(300 * 1024 * 1024),
        });
        // A GPU worker (no size) is tracked, not limited.
        const g = await start(executor(), { workerId: `w2-${RUN}`, gpuIndices: ['0'] });
        await g.exit;
        expect(JSON.parse(g.logs[0] ?? '{}')).toMatchObject({ quota: '-1' });
        expect(Number(JSON.parse(g.logs[0] ?? '{}').memory)).toBeGreaterThan(2 ** 40); // v1's "no limit"
      });

    if (version === 1)
      it('a worker killed for its memory limit says so in its log', async () => {
        const w = await start(executor(), {
          cpu: { vcpus: 1, memoryMb: 120 },
          startCmd: ['-e', 'const held = []; for (;;) held.push(Buffer.alloc(16 * 1024 * 1024, 1));'],
        });
        await w.exit;
        expect(w.logs).toContain(
          '[wharf] the worker ran out of memory (limit 120 MiB): the kernel killed one of its processes',
        );
        // One that ends on its own says nothing of the kind.
        const ok = await start(executor(), { workerId: `wok-${RUN}`, cpu: { vcpus: 1, memoryMb: 120 } });
        await ok.exit;
        expect(ok.logs.some((l) => l.includes('out of memory'))).toBe(false);
      });

    if (version === 1)
      it('a worker without a memory limit of its own, killed for an ancestor’s, says so without a limit', async () => {
        // A GPU worker with no --worker-memory-mb has no limit; the kernel still kills it when the host, or the
        // server's own cgroup (systemd's MemoryMax=), runs out: here the server's directory, made with a limit.
        const own = readFileSync('/proc/self/cgroup', 'utf8')
          .split('\n')
          .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l))!
          .split(':')[2]!;
        const base = join(
          '/sys/fs/cgroup/memory',
          own,
          `wharf-${createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 16)}`,
        );
        const ex = executor();
        mkdirSync(base);
        try {
          writeFileSync(join(base, 'memory.limit_in_bytes'), String(120 * 1024 * 1024));
          if (existsSync(join(base, 'memory.memsw.limit_in_bytes')))
            writeFileSync(join(base, 'memory.memsw.limit_in_bytes'), String(120 * 1024 * 1024));
          const w = await start(ex, {
            gpuIndices: ['0'],
            startCmd: ['-e', 'const held = []; for (;;) held.push(Buffer.alloc(16 * 1024 * 1024, 1));'],
          });
          await w.exit;
          expect(w.logs).toContain(
            '[wharf] the worker ran out of memory (no limit of its own: the host, or the server’s cgroup, ran out): ' +
              'the kernel killed one of its processes',
          );
        } finally {
          if (existsSync(base)) rmdirSync(base);
        }
      });

    if (version === 1)
      it('the node’s per-worker memory cap (--worker-memory-mb): every worker, and a CPU worker’s if smaller', async () => {
        const capped = executor('auto', 200);
        const gpu = await start(capped, { workerId: `wgpu-${RUN}`, gpuIndices: ['0'] });
        await gpu.exit;
        expect(JSON.parse(gpu.logs[0] ?? '{}')).toMatchObject({ quota: '-1', memory: String(200 * 1024 * 1024) });
        const cpu = await start(capped, { workerId: `wcpu-${RUN}`, cpu: { vcpus: 1, memoryMb: 4096 } });
        await cpu.exit;
        expect(JSON.parse(cpu.logs[0] ?? '{}')).toMatchObject({ quota: '100000', memory: String(200 * 1024 * 1024) });
      });

    if (version === 1)
      it('a CPU worker larger than the server’s own CPU quota starts, within that quota', async () => {
        // v1 refuses a child's quota above an ancestor's (EINVAL): the worker runs under the server's 2 CPUs.
        const cpuLine = readFileSync('/proc/self/cgroup', 'utf8')
          .split('\n')
          .find((l) => /^\d+:([^:]*,)?cpu(,[^:]*)?:/.test(l));
        const quotaDir = join('/sys/fs/cgroup/cpu', cpuLine!.split(':')[2]!, `wharf-test-quota-${RUN}`);
        mkdirSync(quotaDir);
        try {
          writeFileSync(join(quotaDir, 'cpu.cfs_period_us'), '100000');
          writeFileSync(join(quotaDir, 'cpu.cfs_quota_us'), '200000');
          const sup = spawn(
            process.execPath,
            [join(dir, 'quota-supervisor.mjs'), quotaDir, stateDir, dir, `big-${RUN}`],
            { stdio: ['ignore', 'pipe', 'inherit'] },
          );
          let out = '';
          sup.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
          await new Promise((r) => sup.once('exit', r));
          const result = JSON.parse(out) as { logs?: string[]; error?: string };
          expect(result.error).toBeUndefined();
          const seen = JSON.parse(result.logs?.[0] ?? '{}') as { own: string[]; memory: string };
          expect(seen.own.find((l) => /:memory:/.test(l))).toMatch(new RegExp(`/big-${RUN}$`));
          expect(seen.memory).toBe(String(300 * 1024 * 1024));
        } finally {
          rmdirSync(quotaDir);
        }
      });
  });
}
