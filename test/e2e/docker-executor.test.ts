// The Docker executor on its own against a real Docker Engine: what a container gets (command, environment, network
// volume, limits, labels), demultiplexed logs, exit statuses, the two start paths of FlashBoot (create vs restart,
// timed and printed) and restart safety (a crashed server's containers are removed or adopted, none leak).
// Skipped, with the reason printed, where no Docker Engine can be reached (see test/helpers/docker.ts).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { DockerExecutor, type StartReport } from '../../src/fleet/executors/docker.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';
import { dockerForTests, removeWharfContainers, wharfContainers, type DockerForTests } from '../helpers/docker.ts';

const docker = await dockerForTests();
const d = 'skip' in docker ? null : docker;

interface Run {
  lines: Array<[string, string]>;
  exit: Promise<{ code: number | null; signal: string | null }>;
  firstLine: Promise<number>;
}

describe.skipIf(d === null)('docker executor (engine API)', () => {
  // Collected even when skipped: the body must not touch the daemon then.
  const { client, image } = d ?? ({} as DockerForTests);
  let nodeId: string;
  let dir: string;
  const executors: DockerExecutor[] = [];

  const executor = (extra: Partial<ConstructorParameters<typeof DockerExecutor>[0]> = {}) => {
    const ex = new DockerExecutor({
      socketPath: client.socketPath,
      nodeId,
      stateDir: join(dir, 'state'),
      memoryMb: 256,
      ...extra,
    });
    executors.push(ex);
    return ex;
  };
  const spec = (workerId: string, script: string, extra: Partial<WorkerSpec> = {}): WorkerSpec => ({
    workerId,
    endpointId: 'ep-docker-test',
    imageName: image,
    entrypoint: [],
    startCmd: ['node', '-e', script],
    env: { RUNPOD_POD_ID: workerId, RUNPOD_ENDPOINT_ID: 'ep-docker-test', QUOTE: 'it\'s "quoted" $HOME' },
    gpuIndices: [],
    ...extra,
  });
  const run = async (ex: DockerExecutor, s: WorkerSpec): Promise<Run & { stop: (keep?: boolean) => Promise<void> }> => {
    const lines: Array<[string, string]> = [];
    const t0 = performance.now();
    let gotFirst!: (ms: number) => void;
    const firstLine = new Promise<number>((res) => (gotFirst = res));
    let exited!: (i: { code: number | null; signal: string | null }) => void;
    const exit = new Promise<{ code: number | null; signal: string | null }>((res) => (exited = res));
    const w = await ex.start(s, {
      onLog: (stream, line) => {
        if (lines.length === 0) gotFirst(performance.now() - t0);
        lines.push([stream, line]);
      },
      onExit: (i) => exited(i),
    });
    return { lines, exit, firstLine, stop: (keep = false) => w.stop({ graceMs: 5000, keep }) };
  };

  beforeEach(() => {
    nodeId = `dx${Math.random().toString(36).slice(2, 8)}`;
    dir = mkdtempSync(join(tmpdir(), 'wharf-docker-'));
  });
  afterEach(async () => {
    for (const ex of executors.splice(0)) await ex.stopAll({ graceMs: 1000 });
    try {
      expect(await wharfContainers(client, nodeId)).toEqual([]);
    } finally {
      await removeWharfContainers(client, nodeId);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the command with the worker env, the network volume at /runpod-volume, limits, and split logs', async () => {
    const volume = join(dir, 'volume');
    mkdirSync(volume);
    writeFileSync(join(volume, 'weights.txt'), 'from the network volume');
    const ex = executor();
    const script = [
      "const fs = require('node:fs');",
      'console.log(JSON.stringify({ vol: process.env.RUNPOD_VOLUME_PATH, cuda: process.env.CUDA_VISIBLE_DEVICES,',
      "  quote: process.env.QUOTE, file: fs.readFileSync('/runpod-volume/weights.txt', 'utf8') }));",
      "console.error('to stderr é');",
      "fs.writeFileSync('/runpod-volume/out.txt', 'written by the worker');",
      'process.exit(3);',
    ].join('\n');
    const r = await run(ex, spec('wvolume0000001', script, { volumePath: volume, containerDiskInGb: 5 }));
    expect(await r.exit).toEqual({ code: 3, signal: null });
    expect(r.lines).toContainEqual([
      'stdout',
      JSON.stringify({
        vol: '/runpod-volume',
        cuda: '',
        quote: 'it\'s "quoted" $HOME',
        file: 'from the network volume',
      }),
    ]);
    expect(r.lines).toContainEqual(['stderr', 'to stderr é']);
    expect(readFileSync(join(volume, 'out.txt'), 'utf8')).toBe('written by the worker');
    // Exited on its own: removed, not kept.
    expect(await wharfContainers(client, nodeId)).toEqual([]);
  });

  it('sets labels and the memory limit, stops with SIGTERM and reports a kill as a signal', async () => {
    const ex = executor();
    // The handler goes in before the line the test waits for: a SIGTERM that arrives between the two would kill the
    // process by default (exit 143), which a loaded CI machine did once.
    const script =
      "process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(0); }); console.log('up'); setInterval(() => {}, 1000);";
    const a = await run(ex, spec('wlabels0000001', script));
    await a.firstLine;
    const [c] = await wharfContainers(client, nodeId);
    expect(c!.Labels).toMatchObject({
      'wharf.managed': 'true',
      'wharf.node-id': nodeId,
      'wharf.endpoint-id': 'ep-docker-test',
      'wharf.worker-id': 'wlabels0000001',
    });
    const info = (await client.inspectContainer(c!.Id)) as any;
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
    expect(info.HostConfig.NetworkMode).toBe('host');
    await a.stop();
    expect(await a.exit).toEqual({ code: 0, signal: null });
    expect(a.lines).toContainEqual(['stdout', 'got SIGTERM']);

    const b = await run(ex, spec('wkilled0000001', "console.log('up'); setInterval(() => {}, 1000);"));
    await b.firstLine;
    const [k] = await wharfContainers(client, nodeId);
    await client.killContainer(k!.Id, 'SIGKILL');
    expect(await b.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('a CPU worker sees its instance’s vCPUs and memory as its cgroup’s limits', async () => {
    // cgroup v2 (cpu.max, memory.max) or v1 (the cpu and memory controllers' files), whichever the host has.
    const script = [
      "const fs = require('node:fs');",
      "const read = (...paths) => { for (const p of paths) { try { return fs.readFileSync(p, 'utf8').trim(); } catch {} } return null; };",
      "const v2 = read('/sys/fs/cgroup/cpu.max');",
      'console.log(JSON.stringify({',
      "  cpu: v2 ?? `${read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us', '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us')} ${read('/sys/fs/cgroup/cpu/cpu.cfs_period_us', '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us')}`,",
      "  memory: read('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'),",
      '}));',
    ].join('\n');
    // The node caps workers at 256 MiB (executor() above): a 3-vCPU instance with 6 GiB gets 256 MiB, one with
    // 128 MiB (smaller than the cap) its own. 3 vCPUs on a host with fewer still start, with every CPU there is.
    const big = await run(executor(), spec('wcpubig000001', script, { cpu: { vcpus: 3, memoryMb: 6144 } }));
    expect(await big.exit).toEqual({ code: 0, signal: null });
    expect(big.lines).toContainEqual([
      'stdout',
      JSON.stringify({ cpu: '300000 100000', memory: String(256 * 1024 * 1024) }),
    ]);
    const small = await run(executor(), spec('wcpusmall00001', script, { cpu: { vcpus: 1, memoryMb: 128 } }));
    expect(await small.exit).toEqual({ code: 0, signal: null });
    expect(small.lines).toContainEqual([
      'stdout',
      JSON.stringify({ cpu: '100000 100000', memory: String(128 * 1024 * 1024) }),
    ]);
  });

  it('FlashBoot: restarts a kept container instead of creating one (both paths timed)', async () => {
    const ex = executor();
    const reports: StartReport[] = [];
    ex.onStart = (r) => reports.push(r);
    const script =
      "console.log('worker ' + process.env.RUNPOD_POD_ID + ' key ' + process.env.RUNPOD_AI_API_KEY); setInterval(() => {}, 1000);";
    const first: number[] = [];
    const api: Record<string, number[]> = { created: [], restarted: [] };
    const firstLine: Record<string, number[]> = { created: [], restarted: [] };
    const containerIds = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const id = `wflash${String(i).padStart(8, '0')}`;
      // Every other start on a fresh endpoint: a create; the others find the kept container: a restart.
      const endpointId = i % 2 === 0 ? `ep-flash-${i}` : `ep-flash-${i - 1}`;
      const s = spec(id, script, {
        endpointId,
        flashboot: true,
        env: { RUNPOD_POD_ID: id, RUNPOD_AI_API_KEY: `key-${i}`, RUNPOD_ENDPOINT_ID: endpointId },
      });
      const r = await run(ex, s);
      const ms = await r.firstLine;
      const report = reports[reports.length - 1]!;
      api[report.path]!.push(report.ms);
      firstLine[report.path]!.push(ms);
      first.push(ms);
      // The per-worker variables are the new worker's, even in a restarted container.
      expect(r.lines[0]).toEqual(['stdout', `worker ${id} key key-${i}`]);
      for (const c of await wharfContainers(client, nodeId)) containerIds.add(c.Id);
      await r.stop(true);
      expect(await r.exit).toEqual({ code: null, signal: 'SIGTERM' });
    }
    expect(reports.map((r) => r.path)).toEqual(['created', 'restarted', 'created', 'restarted']);
    expect(containerIds.size).toBe(2);
    expect(ex.keptContainers().length).toBe(2);
    const med = (xs: number[]) => Math.round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);
    process.stdout.write(
      `\n[flashboot] Engine API time: create ${api.created!.map(Math.round).join('/')} ms, restart ` +
        `${api.restarted!.map(Math.round).join('/')} ms; start → first log line: create ` +
        `${firstLine.created!.map(Math.round).join('/')} ms (median ${med(firstLine.created!)}), restart ` +
        `${firstLine.restarted!.map(Math.round).join('/')} ms (median ${med(firstLine.restarted!)})\n`,
    );
    // stopAll removes kept containers too (checked in afterEach).
  });

  it('cleanupOrphans after a crash: removes running containers, adopts kept ones, leaves other nodes alone', async () => {
    const crashed = executor();
    const script = "console.log('up'); setInterval(() => {}, 1000);";
    const kept = await run(crashed, spec('wkept000000001', script, { flashboot: true }));
    await kept.firstLine;
    await kept.stop(true);
    await kept.exit;
    const orphan = await run(crashed, spec('worphan0000001', script));
    await orphan.firstLine;
    // Another node's container on the same Docker host.
    const otherNode = executor({ nodeId: `${nodeId}-other` });
    const other = await run(otherNode, spec('wother00000001', script));
    await other.firstLine;

    // The "restarted server": a new executor of the same node, while the old one's containers are still there.
    const next = executor();
    expect(await next.cleanupOrphans()).toBe(1);
    const left = await wharfContainers(client, nodeId);
    expect(left.map((c) => [c.Labels['wharf.worker-id'], c.State])).toEqual([['wkept000000001', 'exited']]);
    expect(next.keptContainers()).toHaveLength(1);
    expect(await wharfContainers(client, `${nodeId}-other`)).toHaveLength(1);

    // The adopted container serves the next worker of its endpoint.
    const reports: StartReport[] = [];
    next.onStart = (r) => reports.push(r);
    const reused = await run(next, spec('wreused0000001', script, { flashboot: true }));
    await reused.firstLine;
    expect(reports[0]!.path).toBe('restarted');
    await next.stopAll({ graceMs: 1000 });
    await otherNode.stopAll({ graceMs: 1000 });
    expect(await wharfContainers(client, `${nodeId}-other`)).toEqual([]);
    // The crashed executor's bookkeeping is stale; its containers were handled by `next`.
    executors.splice(executors.indexOf(crashed), 1);
  });
});
