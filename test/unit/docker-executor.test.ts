// The Docker executor without a daemon: the container it asks for (command, env, labels, GPUs, volume, limits,
// network), pulls with registry credentials and the pull policies, the FlashBoot wrapper and its env file, the
// multiplexed log framing and exit statuses. A fake Engine client records the calls; test/e2e/docker*.test.ts run the
// same executor against a real daemon.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  Demuxer,
  DockerApiError,
  parseImageRef,
  registryAuthHeader,
  type DockerClient,
  type ImageInfo,
} from '../../src/fleet/executors/docker-api.ts';
import { DockerExecutor, envFileText, exitInfo, resolvedCommand } from '../../src/fleet/executors/docker.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';

class FakeEngine {
  readonly socketPath = '/fake.sock';
  images = new Map<string, ImageInfo>();
  calls: Array<[string, ...unknown[]]> = [];
  bodies: any[] = [];
  refuseStorageOpt = false;
  /** What inspecting an exited container says of an OOM kill. */
  oomKilled = false;
  hasShell = true;
  failPull: string | null = null;
  /** Repositories that pull only with these credentials, as a private registry's. */
  privateRepos = new Map<string, { username: string; password: string }>();
  private exits = new Map<string, (s: { code: number; error: string | null }) => void>();
  private n = 0;

  async inspectImage(name: string) {
    this.calls.push(['inspectImage', name]);
    return this.images.get(name) ?? null;
  }
  async pull(ref: string, auth?: unknown) {
    this.calls.push(['pull', ref, auth]);
    if (this.failPull) throw new DockerApiError(500, this.failPull);
    const needs = this.privateRepos.get(ref);
    if (needs && JSON.stringify(auth) !== JSON.stringify(needs)) {
      throw new DockerApiError(404, `pull access denied for ${ref}, repository does not exist or may require login`);
    }
    this.images.set(ref, { Id: `sha256:${ref}`, Config: { Entrypoint: null, Cmd: ['python', 'handler.py'] } });
  }
  async createContainer(name: string, body: any) {
    this.calls.push(['create', name]);
    if (this.refuseStorageOpt && body.HostConfig.StorageOpt) {
      throw new DockerApiError(500, "--storage-opt is supported only for overlay over xfs with 'pquota' mount option");
    }
    this.bodies.push(structuredClone(body));
    return `c${++this.n}`;
  }
  async pathExists(id: string, path: string) {
    this.calls.push(['pathExists', id, path]);
    return this.hasShell;
  }
  async waitNextExit(id: string) {
    return { exited: new Promise<{ code: number; error: string | null }>((res) => this.exits.set(id, res)) };
  }
  private streams = new Map<string, PassThrough>();
  async attach(id: string) {
    const stream = new PassThrough();
    this.streams.set(id, stream);
    return stream as any;
  }
  async startContainer(id: string) {
    this.calls.push(['start', id]);
  }
  async stopContainer(id: string) {
    this.calls.push(['stop', id]);
    this.exit(id, 143);
  }
  async killContainer(id: string) {
    this.calls.push(['kill', id]);
  }
  async removeContainer(id: string) {
    this.calls.push(['remove', id]);
  }
  async renameContainer(id: string, name: string) {
    this.calls.push(['rename', id, name]);
  }
  async inspectContainer(id: string) {
    return {
      Id: id,
      Name: id,
      State: { Status: 'exited', Running: false, ExitCode: 0, OOMKilled: this.oomKilled },
      Config: { Labels: {} },
    };
  }
  async listContainers() {
    return [];
  }
  /** The container exits: its attach stream closes, then the wait answers. */
  exit(id: string, code: number) {
    this.streams.get(id)?.destroy();
    this.exits.get(id)?.({ code, error: null });
  }
}

let dir: string;
let engine: FakeEngine;
let warnings: string[];
const hooks = { onLog: () => {}, onExit: () => {} };

function executor(extra: Record<string, unknown> = {}) {
  return new DockerExecutor({
    socketPath: '/fake.sock',
    nodeId: 'n1',
    stateDir: join(dir, 'state'),
    client: engine as unknown as DockerClient,
    onWarning: (m) => warnings.push(m),
    ...extra,
  });
}

const spec = (extra: Partial<WorkerSpec> = {}): WorkerSpec => ({
  workerId: 'w0000000000001',
  endpointId: 'ep000000000001',
  imageName: 'registry.example.com/team/worker:1.2',
  entrypoint: [],
  startCmd: [],
  env: { RUNPOD_POD_ID: 'w0000000000001', RUNPOD_AI_API_KEY: 'k1', RUNPOD_VOLUME_PATH: '/host/volumes/v1', A: '1' },
  gpuIndices: [],
  ...extra,
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'wharf-docker-unit-'));
  engine = new FakeEngine();
  engine.images.set('registry.example.com/team/worker:1.2', {
    Id: 'sha256:img',
    Config: { Entrypoint: ['/entry.sh'], Cmd: ['serve'] },
  });
  warnings = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the container the docker executor creates', () => {
  it('carries the command, env, labels, GPU device request, volume bind and limits', async () => {
    const ex = executor({ network: 'wharf-net', memoryMb: 2048 });
    await ex.start(
      spec({
        entrypoint: ['python', '-u'],
        startCmd: ['handler.py'],
        gpuIndices: ['1', '3'],
        volumePath: '/data/volumes/v1',
        containerDiskInGb: 20,
      }),
      hooks,
    );
    const [body] = engine.bodies;
    expect(engine.calls.filter((c) => c[0] === 'create')).toEqual([['create', 'wharf-n1-w0000000000001']]);
    expect(body).toMatchObject({
      Image: 'registry.example.com/team/worker:1.2',
      Entrypoint: ['python', '-u'],
      Cmd: ['handler.py'],
      Labels: {
        'wharf.managed': 'true',
        'wharf.node-id': 'n1',
        'wharf.endpoint-id': 'ep000000000001',
        'wharf.worker-id': 'w0000000000001',
      },
      Tty: false,
      HostConfig: {
        NetworkMode: 'wharf-net',
        Binds: ['/data/volumes/v1:/runpod-volume'],
        Memory: 2048 * 1024 * 1024,
        MemorySwap: 2048 * 1024 * 1024,
        StorageOpt: { size: '20G' },
        DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: ['1', '3'], Capabilities: [['gpu']] }],
        Init: true,
      },
    });
    expect(body.Env).toEqual(
      expect.arrayContaining(['RUNPOD_VOLUME_PATH=/runpod-volume', 'CUDA_VISIBLE_DEVICES=0,1', 'A=1']),
    );
    expect(body.Labels['wharf.flashboot-key']).toBeUndefined();
    // The image was there: no pull.
    expect(engine.calls.some((c) => c[0] === 'pull')).toBe(false);
  });

  it('confines a CPU worker to its instance: vCPUs as a CFS quota, memory the smaller of it and the node cap', async () => {
    await executor().start(spec({ cpu: { vcpus: 4, memoryMb: 8192 } }), hooks);
    await executor({ memoryMb: 2048 }).start(
      spec({ workerId: 'w0000000000002', cpu: { vcpus: 1, memoryMb: 4096 } }),
      hooks,
    );
    await executor({ memoryMb: 2048 }).start(
      spec({ workerId: 'w0000000000003', cpu: { vcpus: 1, memoryMb: 1024 } }),
      hooks,
    );
    const [big, capped, small] = engine.bodies.map((b) => b.HostConfig);
    // A quota, not NanoCpus: the Engine refuses NanoCpus above the host's CPU count, and 4 vCPUs on a 2-core host
    // must still start.
    expect(big).toMatchObject({ CpuPeriod: 100_000, CpuQuota: 400_000, Memory: 8192 * 1024 * 1024 });
    expect(big.MemorySwap).toBe(big.Memory);
    expect(big.NanoCpus).toBeUndefined();
    expect(capped).toMatchObject({ CpuQuota: 100_000, Memory: 2048 * 1024 * 1024 });
    expect(small).toMatchObject({ CpuQuota: 100_000, Memory: 1024 * 1024 * 1024 });
  });

  it('an OOM kill is logged with the limit the worker had, or that it had none', async () => {
    engine.oomKilled = true;
    const logs: string[] = [];
    const exits: Array<Promise<void>> = [];
    for (const [i, [cap, cpu]] of (
      [
        [0, { vcpus: 1, memoryMb: 2048 }],
        [1024, undefined],
        [0, undefined],
      ] as const
    ).entries()) {
      let exited!: () => void;
      exits.push(new Promise<void>((res) => (exited = res)));
      await executor({ memoryMb: cap }).start(spec({ workerId: `w000000000000${i}`, ...(cpu ? { cpu } : {}) }), {
        onLog: (_stream, line) => logs.push(line),
        onExit: () => exited(),
      });
      engine.exit(`c${i + 1}`, 137);
      await exits[i];
    }
    expect(logs.filter((l) => l.includes('out of memory'))).toEqual([
      '[wharf] the container ran out of memory (limit 2048 MiB) and was killed',
      '[wharf] the container ran out of memory (limit 1024 MiB) and was killed',
      '[wharf] the container ran out of memory (no limit set: the host ran out) and was killed',
    ]);
  });

  it('a kept FlashBoot container is reused only for a worker of the same CPU size', async () => {
    const keys = new Set<string>();
    for (const cpu of [
      { vcpus: 1, memoryMb: 2048 },
      { vcpus: 2, memoryMb: 2048 },
      { vcpus: 1, memoryMb: 4096 },
    ]) {
      await executor().start(spec({ flashboot: true, cpu }), hooks);
      keys.add(engine.bodies.at(-1).Labels['wharf.flashboot-key']);
    }
    expect(keys.size).toBe(3);
  });

  it('keeps the image’s command when the template sets none; no volume, no GPUs, host network by default', async () => {
    await executor().start(spec(), hooks);
    const [body] = engine.bodies;
    expect(body.Entrypoint).toBeUndefined();
    expect(body.Cmd).toBeUndefined();
    expect(body.HostConfig.NetworkMode).toBe('host');
    expect(body.HostConfig.DeviceRequests).toBeUndefined();
    expect(body.HostConfig.Memory).toBeUndefined();
    expect(body.HostConfig.CpuQuota).toBeUndefined();
    expect(body.HostConfig.Binds).toEqual([]);
    expect(body.Env.some((e: string) => e.startsWith('RUNPOD_VOLUME_PATH='))).toBe(false);
    expect(body.Env).toContain('CUDA_VISIBLE_DEVICES=');
  });

  it('falls back without a disk limit where the storage driver cannot enforce one, and says so once', async () => {
    engine.refuseStorageOpt = true;
    const ex = executor();
    await ex.start(spec({ containerDiskInGb: 10 }), hooks);
    await ex.start(spec({ workerId: 'w0000000000002', containerDiskInGb: 10 }), hooks);
    expect(engine.bodies.map((b) => b.HostConfig.StorageOpt)).toEqual([undefined, undefined]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('containerDiskInGb is not enforced');
  });

  it('refuses file:// images and malformed references', () => {
    const ex = executor();
    expect(ex.validateImage('file://./examples/echo-ts')).toContain('process executor');
    expect(ex.validateImage('has space')).toContain('not a container image');
    expect(ex.validateImage('ghcr.io/org/img@sha256:abc')).toBeNull();
  });
});

describe('pulling', () => {
  it('pulls a missing image with the template’s registry credentials', async () => {
    const auth = { username: 'bot', password: 's3cret' };
    await executor().start(spec({ imageName: 'registry.example.com/team/new', registryAuth: auth }), hooks);
    expect(engine.calls.filter((c) => c[0] === 'pull')).toEqual([
      ['pull', 'registry.example.com/team/new:latest', auth],
    ]);
    const header = JSON.parse(
      Buffer.from(registryAuthHeader('registry.example.com/team/new', auth), 'base64url').toString(),
    );
    expect(header).toEqual({ username: 'bot', password: 's3cret', serveraddress: 'registry.example.com' });
    expect(JSON.parse(Buffer.from(registryAuthHeader('user/img', auth), 'base64url').toString()).serveraddress).toBe(
      'https://index.docker.io/v1/',
    );
  });

  it('follows the pull policy: never refuses a missing image, always falls back to a local copy', async () => {
    await expect(executor({ pull: 'never' }).start(spec({ imageName: 'absent/image' }), hooks)).rejects.toThrow(
      /not on this Docker host.*never/,
    );
    engine.failPull = 'registry unreachable';
    await executor({ pull: 'always' }).start(spec(), hooks);
    expect(engine.calls.filter((c) => c[0] === 'pull')).toHaveLength(1);
    expect(warnings[0]).toContain('using the local copy');
    await expect(executor().start(spec({ imageName: 'absent/image' }), hooks)).rejects.toThrow(/registry unreachable/);
  });

  it("an image pulled with one template's registry credentials runs only for starts that can pull it themselves", async () => {
    const ref = 'registry.example.com/acme/private:1';
    const acme = { username: 'acme', password: 'acme-pw' };
    engine.privateRepos.set(ref, acme);
    await executor().start(spec({ imageName: ref, registryAuth: acme }), hooks);
    // Another tenant names the same image, now on the host: without credentials that pull it, it does not run —
    // whatever the pull policy, and after a restart of the server (each executor() is a new one).
    const mallory = { username: 'mallory', password: 'guess' };
    await executor().cleanupOrphans(); // as at a server's start: it keeps what it knows of private images
    for (const [ex, registryAuth] of [
      [executor(), undefined],
      [executor(), mallory],
      [executor({ pull: 'always' }), undefined],
    ] as const) {
      const start = ex.start(spec({ workerId: 'w0000000000002', imageName: ref, registryAuth }), hooks);
      await expect(start).rejects.toThrow(/pull access denied/);
    }
    expect(engine.calls.filter((c) => c[0] === 'create')).toHaveLength(1);
    expect(warnings.join('\n')).not.toContain('using the local copy');
    // Credentials that pull it run it; once shown, the local copy serves them without a pull (policy missing).
    const ex = executor();
    await ex.start(spec({ workerId: 'w0000000000003', imageName: ref, registryAuth: acme }), hooks);
    await ex.start(spec({ workerId: 'w0000000000004', imageName: ref, registryAuth: acme }), hooks);
    expect(engine.calls.filter((c) => c[0] === 'create')).toHaveLength(3);
    expect(engine.calls.filter((c) => c[0] === 'pull' && c[2] === acme)).toHaveLength(2);
    // An image anyone may pull is public again: no more pulls for it.
    engine.privateRepos.delete(ref);
    await ex.start(spec({ workerId: 'w0000000000005', imageName: ref }), hooks);
    await executor().start(spec({ workerId: 'w0000000000006', imageName: ref }), hooks);
    expect(engine.calls.filter((c) => c[0] === 'pull')).toHaveLength(2 + 3 + 1);
  });

  it('normalises references', () => {
    expect(parseImageRef('node')).toEqual({ registry: null, reference: 'node:latest' });
    expect(parseImageRef('localhost:5000/a/b')).toEqual({
      registry: 'localhost:5000',
      reference: 'localhost:5000/a/b:latest',
    });
    expect(parseImageRef('ghcr.io/o/i:v1')).toEqual({ registry: 'ghcr.io', reference: 'ghcr.io/o/i:v1' });
    expect(parseImageRef('o/i@sha256:ab')).toEqual({ registry: null, reference: 'o/i@sha256:ab' });
  });
});

describe('FlashBoot', () => {
  it('wraps a reusable container’s command to read the per-worker variables, and restarts it for the next worker', async () => {
    const ex = executor();
    const w = await ex.start(spec({ flashboot: true }), hooks);
    const [body] = engine.bodies;
    expect(body.Entrypoint).toEqual([
      '/bin/sh',
      '-c',
      'set -a && . /run/wharf/env && set +a && exec "$@"',
      'wharf-worker',
    ]);
    expect(body.Cmd).toEqual(['/entry.sh', 'serve']);
    expect(body.Labels['wharf.flashboot-key']).toMatch(/^[0-9a-f]{32}$/);
    expect(body.HostConfig.Binds).toEqual([`${join(dir, 'state', 'wharf-n1-w0000000000001')}:/run/wharf:ro`]);

    await w.stop({ graceMs: 1000, keep: true });
    expect(ex.keptContainers()).toEqual([{ containerId: 'c1', endpointId: 'ep000000000001' }]);
    const reports: string[] = [];
    ex.onStart = (r) => reports.push(r.path);
    await ex.start(
      spec({ flashboot: true, workerId: 'w0000000000002', env: { ...spec().env, RUNPOD_POD_ID: 'w2' } }),
      hooks,
    );
    expect(reports).toEqual(['restarted']);
    expect(engine.bodies).toHaveLength(1);
    expect(engine.calls).toContainEqual(['rename', 'c1', 'wharf-n1-w0000000000002']);
  });

  it('does not keep a container stopped without keep, nor one of an image without /bin/sh', async () => {
    const ex = executor();
    const w = await ex.start(spec({ flashboot: true }), hooks);
    await w.stop({ graceMs: 1000 });
    expect(ex.keptContainers()).toEqual([]);
    expect(engine.calls).toContainEqual(['remove', 'c1']);

    engine.hasShell = false;
    engine.images.set('shell-less:latest', { Id: 'sha256:noshell', Config: { Entrypoint: ['/app'], Cmd: null } });
    const w2 = await ex.start(spec({ flashboot: true, imageName: 'shell-less', workerId: 'w0000000000003' }), hooks);
    const last = engine.bodies[engine.bodies.length - 1];
    expect(last.Entrypoint).toBeUndefined();
    expect(last.Labels['wharf.flashboot-key']).toBeUndefined();
    await w2.stop({ graceMs: 1000, keep: true });
    expect(ex.keptContainers()).toEqual([]);
  });

  it('writes an env file that /bin/sh reads back exactly', () => {
    const env = { PLAIN: 'x', QUOTES: `it's "a" $HOME \`cmd\` \\ end`, MULTI: 'line1\nline2', 'bad-key': 'skipped' };
    const file = join(dir, 'env');
    writeFileSync(file, envFileText(env));
    const out = execFileSync(
      '/bin/sh',
      [
        '-c',
        'set -a && . "$0" && set +a && node -e "process.stdout.write(JSON.stringify([process.env.PLAIN, process.env.QUOTES, process.env.MULTI]))"',
        file,
      ],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH },
      },
    );
    expect(JSON.parse(out)).toEqual([env.PLAIN, env.QUOTES, env.MULTI]);
  });

  it('resolves the command as docker run does', () => {
    const image: ImageInfo = { Id: 'x', Config: { Entrypoint: ['/e'], Cmd: ['c'] } };
    expect(resolvedCommand({ entrypoint: [], startCmd: [] }, image)).toEqual(['/e', 'c']);
    expect(resolvedCommand({ entrypoint: [], startCmd: ['s'] }, image)).toEqual(['/e', 's']);
    expect(resolvedCommand({ entrypoint: ['/t'], startCmd: [] }, image)).toEqual(['/t']);
    expect(resolvedCommand({ entrypoint: ['/t'], startCmd: ['a'] }, image)).toEqual(['/t', 'a']);
  });
});

describe('logs and exits', () => {
  it('splits the multiplexed stream, across chunk boundaries', () => {
    const got: Array<[string, string]> = [];
    const demux = new Demuxer((s, b) => got.push([s, b.toString()]));
    const frame = (type: number, text: string) => {
      const payload = Buffer.from(text);
      const header = Buffer.alloc(8);
      header[0] = type;
      header.writeUInt32BE(payload.length, 4);
      return Buffer.concat([header, payload]);
    };
    const all = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err é\n'), frame(1, 'out 2')]);
    for (let i = 0; i < all.length; i += 3) demux.push(all.subarray(i, i + 3));
    expect(got.map(([s]) => s).filter((s, i, a) => a.indexOf(s) === i)).toEqual(['stdout', 'stderr']);
    expect(
      got
        .filter(([s]) => s === 'stdout')
        .map(([, t]) => t)
        .join(''),
    ).toBe('out 1\nout 2');
    expect(
      got
        .filter(([s]) => s === 'stderr')
        .map(([, t]) => t)
        .join(''),
    ).toBe('err é\n');
  });

  it('reports 128+N exit statuses as signals', () => {
    expect(exitInfo(0)).toEqual({ code: 0, signal: null });
    expect(exitInfo(1)).toEqual({ code: 1, signal: null });
    expect(exitInfo(137)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(exitInfo(143)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(exitInfo(255)).toEqual({ code: 255, signal: null });
  });

  it('passes an exit to the supervisor once and removes the container', async () => {
    const exits: unknown[] = [];
    const ex = executor();
    await ex.start(spec(), { onLog: () => {}, onExit: (i) => exits.push(i) });
    engine.exit('c1', 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(exits).toEqual([{ code: 2, signal: null }]);
    expect(engine.calls).toContainEqual(['remove', 'c1']);
  });
});
