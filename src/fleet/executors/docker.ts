/**
 * The Docker executor (DESIGN.md §3 "Executors and templates"): runs a template's image as one container per worker
 * through the Docker Engine API (docker-api.ts).
 *
 * - Image: pulled with the template's registry credentials according to the pull policy (default: when missing). An
 *   image pulled with credentials is private: another start runs the host's copy only once its own pull of the image
 *   (with its template's credentials, or none) succeeded, so one tenant cannot run another's private image by name.
 * - Command: the template's dockerEntrypoint and dockerStartCmd override the image's, as `docker run` would.
 * - Environment: the supervisor's (template, endpoint, worker-protocol variables), with RUNPOD_VOLUME_PATH pointing at
 *   /runpod-volume (a bind of the network volume's directory) and CUDA_VISIBLE_DEVICES numbering the container's GPUs.
 * - GPUs: a DeviceRequest for exactly the GPUs the inventory assigned (nvidia container toolkit).
 * - Limits: memory (configuration) and the template's containerDiskInGb where the storage driver can enforce it.
 * - Labels: wharf.managed=true, wharf.node-id, wharf.endpoint-id and wharf.worker-id mark every container Wharf made,
 *   so cleanupOrphans finds what a crashed server left behind and nothing leaks.
 * - Logs: attached before the start (no history), demultiplexed into stdout and stderr lines.
 *
 * FlashBoot: when the supervisor stops an idle worker of a flashboot endpoint (`stop({ keep: true })`), its stopped
 * container is kept (at most `flashbootKeep` per endpoint, for `flashbootKeepMs`) and a later worker of the same
 * endpoint, image and settings restarts it instead of creating one: no create, and the container's filesystem
 * (caches, downloaded weights) is still there. A container's environment is fixed at creation, so a reusable
 * container reads the per-worker variables (id, key) from a file bound at /run/wharf/env through a `/bin/sh`
 * wrapper; images without /bin/sh run without the wrapper and are simply not reused.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

import { DockerApiError, DockerClient, Demuxer, parseImageRef, type ImageInfo } from './docker-api.ts';
import { LineSplitter } from './process.ts';
import { safely, sleep, waitFor } from './waits.ts';
import { workerMemoryMb, type Executor, type ExecutorHooks, type RunningWorker, type WorkerSpec } from './types.ts';

export const LABEL_MANAGED = 'wharf.managed';
export const LABEL_NODE = 'wharf.node-id';
export const LABEL_ENDPOINT = 'wharf.endpoint-id';
export const LABEL_WORKER = 'wharf.worker-id';
/** Present on containers that FlashBoot may restart: the hash of everything but the per-worker variables. */
export const LABEL_REUSE = 'wharf.flashboot-key';
/** The host directory bound at /run/wharf (the env file of a reusable container). */
export const LABEL_ENV_DIR = 'wharf.env-dir';
export const VOLUME_MOUNT = '/runpod-volume';
const ENV_MOUNT = '/run/wharf';
const WRAPPER = 'set -a && . /run/wharf/env && set +a && exec "$@"';
/** Variables that differ between two workers of one endpoint version: not part of the FlashBoot key. */
const PER_WORKER = new Set(['RUNPOD_POD_ID', 'RUNPOD_AI_API_KEY', 'RUNPOD_POD_HOSTNAME']);
// After the container exited, how long its attach stream gets to deliver the last lines.
const LOG_DRAIN_MS = 2_000;
// After `docker stop` returned (or failed), how long the exit bookkeeping may take.
const EXIT_WAIT_MS = 15_000;
// Without the wait connection (the daemon restarted), how often the container's state is polled.
const EXIT_POLL_MS = 1_000;

export type PullPolicy = 'missing' | 'always' | 'never';

export interface DockerExecutorOptions {
  /** The Docker daemon's Unix socket. */
  socketPath: string;
  /** This server's node id: a label on every container, so two servers on one Docker host leave each other alone. */
  nodeId: string;
  /** Host directory for the env files of reusable containers (bound into them, so a path the daemon sees). */
  stateDir: string;
  /** NetworkMode of worker containers: `host` (default; workers reach a server on 127.0.0.1), `bridge`, a network. */
  network?: string;
  /** Memory limit per worker in MiB; 0 (default) for none. A CPU worker's instance memory, where smaller, wins. */
  memoryMb?: number;
  pull?: PullPolicy;
  /** Stopped containers kept per endpoint for FlashBoot; 0 turns the reuse off. Default 2. */
  flashbootKeep?: number;
  /** How long a stopped container is kept for FlashBoot. Default 10 minutes. */
  flashbootKeepMs?: number;
  /** Run docker-init as PID 1 (signal forwarding, zombie reaping). Default true. */
  init?: boolean;
  /** Something the operator should know that is not an error (a limit the host cannot enforce). */
  onWarning?: (message: string) => void;
  client?: DockerClient;
}

interface Live {
  containerId: string;
  spec: WorkerSpec;
  reuseKey: string | null;
  envDir: string | null;
  keep: boolean;
  gone: boolean;
  exited: Promise<void>;
  worker: RunningWorker;
}

interface Kept {
  containerId: string;
  endpointId: string;
  reuseKey: string;
  envDir: string;
  timer: NodeJS.Timeout;
}

/** How the last start went: `created` or `restarted` (FlashBoot), and how long the Engine API calls took. */
export interface StartReport {
  workerId: string;
  path: 'created' | 'restarted';
  ms: number;
}

export class DockerExecutor implements Executor {
  readonly kind = 'docker';
  readonly client: DockerClient;
  private readonly o: Required<Omit<DockerExecutorOptions, 'client' | 'onWarning'>>;
  private readonly warn: (message: string) => void;
  private readonly live = new Map<string, Live>();
  private readonly kept = new Map<string, Kept>();
  private readonly pulls = new Map<string, Promise<ImageInfo>>();
  /**
   * Images (by id) pulled with registry credentials, each with the credentials (fingerprints) whose pull of it
   * succeeded in this process. The ids are kept in the state directory: after a restart every start shows again.
   */
  private readonly privateImages: Map<string, Set<string>>;
  /** Image id → whether it has /bin/sh (the FlashBoot wrapper needs it). */
  private readonly hasShell = new Map<string, boolean>();
  private diskLimitWorks = true;
  private closing = false;
  /** Called after every successful start (tests and the bench read the two start paths). */
  onStart: (report: StartReport) => void = () => {};

  constructor(opts: DockerExecutorOptions) {
    this.client = opts.client ?? new DockerClient({ socketPath: opts.socketPath });
    this.o = {
      socketPath: opts.socketPath,
      nodeId: opts.nodeId,
      stateDir: opts.stateDir,
      network: opts.network ?? 'host',
      memoryMb: opts.memoryMb ?? 0,
      pull: opts.pull ?? 'missing',
      flashbootKeep: opts.flashbootKeep ?? 2,
      flashbootKeepMs: opts.flashbootKeepMs ?? 600_000,
      init: opts.init ?? true,
    };
    this.warn = opts.onWarning ?? (() => {});
    this.privateImages = new Map(readPrivateImages(this.o.stateDir).map((id) => [id, new Set()]));
  }

  validateImage(imageName: string): string | null {
    if (imageName.startsWith('file://')) {
      return `the docker executor runs container images; '${imageName}' is a directory — use the process executor`;
    }
    if (imageName.trim() === '' || /\s/.test(imageName)) return `'${imageName}' is not a container image reference`;
    return null;
  }

  async start(spec: WorkerSpec, hooks: ExecutorHooks): Promise<RunningWorker> {
    if (this.closing) throw new Error(`cannot start worker ${spec.workerId}: the docker executor is shutting down`);
    if (this.live.has(spec.workerId)) throw new Error(`worker ${spec.workerId} is already running`);
    const problem = this.validateImage(spec.imageName);
    if (problem) throw new Error(problem);
    const image = await this.ensureImage(spec);
    const began = performance.now();
    const env = this.containerEnv(spec);
    const name = containerName(this.o.nodeId, spec.workerId);
    let reuseKey = spec.flashboot && this.o.flashbootKeep > 0 ? this.reuseKeyOf(spec, image, env) : null;

    let containerId: string | null = null;
    let envDir: string | null = null;
    let path: StartReport['path'] = 'created';
    const pooled = reuseKey === null ? undefined : this.takeKept(spec.endpointId, reuseKey);
    if (pooled) {
      try {
        await this.client.renameContainer(pooled.containerId, name);
        containerId = pooled.containerId;
        envDir = pooled.envDir;
        path = 'restarted';
      } catch {
        await this.discard(pooled.containerId, pooled.envDir);
      }
    }
    if (containerId === null) {
      const created = await this.create(spec, image, env, name, reuseKey);
      containerId = created.containerId;
      envDir = created.envDir;
      reuseKey = created.reuseKey;
    }

    let attached: Awaited<ReturnType<DockerClient['attach']>> | null = null;
    try {
      if (envDir !== null) writeEnvFile(envDir, env);
      const { exited } = await this.client.waitNextExit(containerId);
      attached = await this.client.attach(containerId);
      await this.client.startContainer(containerId);
      const worker = this.track(spec, hooks, containerId, reuseKey, envDir, exited, attached);
      this.onStart({ workerId: spec.workerId, path, ms: performance.now() - began });
      return worker;
    } catch (e) {
      attached?.destroy();
      await this.discard(containerId, envDir);
      throw new Error(`could not start worker ${spec.workerId} (${spec.imageName}): ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  async stopAll(opts: { graceMs: number }): Promise<void> {
    this.closing = true;
    await Promise.all([...this.live.values()].map((l) => l.worker.stop({ graceMs: opts.graceMs })));
    await Promise.all([...this.kept.values()].map((k) => this.dropKept(k)));
  }

  /**
   * Containers of this node that no worker of this run owns: running ones are removed (the server that started them
   * is gone, and with it their keys); stopped reusable ones are adopted for FlashBoot while there is room.
   * Env directories without a container go too (not the list of private images). Returns how many containers were
   * removed.
   */
  async cleanupOrphans(): Promise<number> {
    // The supervisor calls this first when it (re)starts, e.g. on regaining leadership after a stopAll.
    this.closing = false;
    const mine = new Set([...this.live.values()].map((l) => l.containerId));
    for (const k of this.kept.values()) mine.add(k.containerId);
    const found = await this.client.listContainers([`${LABEL_MANAGED}=true`, `${LABEL_NODE}=${this.o.nodeId}`]);
    let removed = 0;
    const dirsInUse = new Set<string>();
    for (const c of found) {
      if (mine.has(c.Id)) {
        if (c.Labels[LABEL_ENV_DIR]) dirsInUse.add(c.Labels[LABEL_ENV_DIR]);
        continue;
      }
      const key = c.Labels[LABEL_REUSE];
      const endpointId = c.Labels[LABEL_ENDPOINT];
      const envDir = c.Labels[LABEL_ENV_DIR];
      const adoptable =
        c.State === 'exited' &&
        key !== undefined &&
        endpointId !== undefined &&
        envDir !== undefined &&
        existsSync(envDir) &&
        this.keptCount(endpointId) < this.o.flashbootKeep;
      if (adoptable) {
        this.keep({ containerId: c.Id, endpointId, reuseKey: key, envDir });
        dirsInUse.add(envDir);
        continue;
      }
      await this.client.removeContainer(c.Id);
      if (envDir) rmSync(envDir, { recursive: true, force: true });
      removed += 1;
    }
    for (const entry of safeReaddir(this.o.stateDir)) {
      if (entry === PRIVATE_IMAGES_FILE) continue;
      const dir = join(this.o.stateDir, entry);
      if (!dirsInUse.has(dir)) rmSync(dir, { recursive: true, force: true });
    }
    return removed;
  }

  /** Stopped containers kept for FlashBoot, per endpoint (tests, diagnostics). */
  keptContainers(): Array<{ containerId: string; endpointId: string }> {
    return [...this.kept.values()].map((k) => ({ containerId: k.containerId, endpointId: k.endpointId }));
  }

  private async ensureImage(spec: WorkerSpec): Promise<ImageInfo> {
    const { reference } = parseImageRef(spec.imageName);
    const who = credentialsOf(spec);
    // Not shared between credentials: one start's pull must not vouch for another's.
    const key = `${reference}\0${who}`;
    const pending = this.pulls.get(key);
    if (pending) return pending;
    const p = (async () => {
      const local = await this.client.inspectImage(reference);
      // A private image on the host runs only for credentials that pulled it: others pull it first, without fallback.
      const unproven = local !== null && this.privateImages.get(local.Id)?.has(who) === false;
      if (local && this.o.pull !== 'always' && !unproven) return local;
      if (this.o.pull === 'never') {
        if (local)
          throw new Error(`image ${reference} was pulled with other registry credentials; the pull policy is 'never'`);
        throw new Error(`image ${reference} is not on this Docker host and the pull policy is 'never'`);
      }
      try {
        await this.client.pull(reference, spec.registryAuth);
      } catch (e) {
        if (!local || unproven) throw e;
        this.warn(`pull of ${reference} failed, using the local copy: ${(e as Error).message}`);
        return local;
      }
      const pulled = await this.client.inspectImage(reference);
      if (!pulled) throw new Error(`image ${reference} is missing right after its pull`);
      this.pulledBy(pulled.Id, spec.registryAuth === undefined ? null : who);
      return pulled;
    })();
    this.pulls.set(key, p);
    try {
      return await p;
    } finally {
      this.pulls.delete(key);
    }
  }

  /** A pull of image `id` succeeded with these credentials (null: with none, so anyone may run it). */
  private pulledBy(id: string, who: string | null): void {
    const before = this.privateImages.size;
    if (who === null) this.privateImages.delete(id);
    else this.privateImages.set(id, (this.privateImages.get(id) ?? new Set()).add(who));
    if (this.privateImages.size !== before) writePrivateImages(this.o.stateDir, [...this.privateImages.keys()]);
  }

  private containerEnv(spec: WorkerSpec): Record<string, string> {
    const env: Record<string, string> = {
      ...spec.env,
      // The container sees exactly its GPUs, numbered from 0 (nvidia container toolkit).
      CUDA_VISIBLE_DEVICES: spec.gpuIndices.map((_, i) => String(i)).join(','),
    };
    if (spec.volumePath !== undefined) env.RUNPOD_VOLUME_PATH = VOLUME_MOUNT;
    else delete env.RUNPOD_VOLUME_PATH;
    return env;
  }

  private reuseKeyOf(spec: WorkerSpec, image: ImageInfo, env: Record<string, string>): string {
    const shared = Object.fromEntries(Object.entries(env).filter(([k]) => !PER_WORKER.has(k)));
    return createHash('sha256')
      .update(
        JSON.stringify([
          image.Id,
          spec.entrypoint,
          spec.startCmd,
          shared,
          spec.gpuIndices,
          spec.volumePath ?? null,
          spec.containerDiskInGb ?? null,
          workerMemoryMb(this.o.memoryMb, spec),
          spec.cpu?.vcpus ?? null,
          this.o.network,
        ]),
      )
      .digest('hex')
      .slice(0, 32);
  }

  private async create(
    spec: WorkerSpec,
    image: ImageInfo,
    env: Record<string, string>,
    name: string,
    reuseKey: string | null,
  ): Promise<{ containerId: string; envDir: string | null; reuseKey: string | null }> {
    let argv: string[] | null = null;
    if (reuseKey !== null && this.hasShell.get(image.Id) !== false) {
      argv = resolvedCommand(spec, image);
      if (argv.length === 0) reuseKey = null;
    } else {
      reuseKey = null;
    }
    if (argv !== null && reuseKey !== null) {
      const envDir = join(this.o.stateDir, name);
      mkdirSync(envDir, { recursive: true, mode: 0o755 });
      const id = await this.createContainer(name, this.body(spec, env, reuseKey, envDir, argv));
      if (this.hasShell.get(image.Id) === undefined) {
        const shell = await this.client.pathExists(id, '/bin/sh').catch(() => false);
        this.hasShell.set(image.Id, shell);
        if (!shell) {
          await this.discard(id, envDir);
          return this.create(spec, image, env, name, null);
        }
      }
      return { containerId: id, envDir, reuseKey };
    }
    const id = await this.createContainer(name, this.body(spec, env, null, null, null));
    return { containerId: id, envDir: null, reuseKey: null };
  }

  private async createContainer(name: string, body: ContainerBody): Promise<string> {
    if (!this.diskLimitWorks) delete body.HostConfig.StorageOpt;
    try {
      return await this.client.createContainer(name, body);
    } catch (e) {
      // overlay2 enforces a size only on xfs with pquota; elsewhere the daemon refuses StorageOpt.
      if (body.HostConfig.StorageOpt && e instanceof DockerApiError && /storage.?opt|quota/i.test(e.message)) {
        this.diskLimitWorks = false;
        this.warn(`containerDiskInGb is not enforced on this Docker host: ${e.message}`);
        delete body.HostConfig.StorageOpt;
        return this.client.createContainer(name, body);
      }
      throw e;
    }
  }

  /** The create body; `argv` set: the FlashBoot wrapper runs it after reading the env file. */
  private body(
    spec: WorkerSpec,
    env: Record<string, string>,
    reuseKey: string | null,
    envDir: string | null,
    argv: string[] | null,
  ): ContainerBody {
    const labels: Record<string, string> = {
      [LABEL_MANAGED]: 'true',
      [LABEL_NODE]: this.o.nodeId,
      [LABEL_ENDPOINT]: spec.endpointId,
      [LABEL_WORKER]: spec.workerId,
    };
    const binds: string[] = [];
    if (spec.volumePath !== undefined) binds.push(`${spec.volumePath}:${VOLUME_MOUNT}`);
    if (reuseKey !== null && envDir !== null) {
      labels[LABEL_REUSE] = reuseKey;
      labels[LABEL_ENV_DIR] = envDir;
      binds.push(`${envDir}:${ENV_MOUNT}:ro`);
    }
    const hostConfig: ContainerBody['HostConfig'] = {
      NetworkMode: this.o.network,
      Binds: binds,
      Init: this.o.init,
      RestartPolicy: { Name: 'no' },
    };
    const memoryMb = workerMemoryMb(this.o.memoryMb, spec);
    if (memoryMb > 0) {
      hostConfig.Memory = memoryMb * 1024 * 1024;
      hostConfig.MemorySwap = hostConfig.Memory;
    }
    if (spec.cpu) {
      // A CPU endpoint's vCPUs as a CFS quota (`docker run --cpu-quota`): unlike NanoCpus (`--cpus`), which the
      // Engine refuses above the host's CPU count, a quota for more vCPUs than the host has still starts the worker,
      // with every CPU there is.
      hostConfig.CpuPeriod = CPU_PERIOD_US;
      hostConfig.CpuQuota = spec.cpu.vcpus * CPU_PERIOD_US;
    }
    if (spec.containerDiskInGb !== undefined && spec.containerDiskInGb > 0) {
      hostConfig.StorageOpt = { size: `${spec.containerDiskInGb}G` };
    }
    if (spec.gpuIndices.length > 0) {
      hostConfig.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: spec.gpuIndices, Capabilities: [['gpu']] }];
    }
    const body: ContainerBody = {
      Image: parseImageRef(spec.imageName).reference,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: labels,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      HostConfig: hostConfig,
    };
    if (argv !== null) {
      body.Entrypoint = ['/bin/sh', '-c', WRAPPER, 'wharf-worker'];
      body.Cmd = argv;
    } else {
      if (spec.entrypoint.length > 0) body.Entrypoint = spec.entrypoint;
      if (spec.startCmd.length > 0) body.Cmd = spec.startCmd;
    }
    return body;
  }

  private track(
    spec: WorkerSpec,
    hooks: ExecutorHooks,
    containerId: string,
    reuseKey: string | null,
    envDir: string | null,
    waited: Promise<{ code: number; error: string | null }>,
    attached: Awaited<ReturnType<DockerClient['attach']>>,
  ): RunningWorker {
    const out = new LineSplitter((line) => safely(() => hooks.onLog('stdout', line)));
    const err = new LineSplitter((line) => safely(() => hooks.onLog('stderr', line)));
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    const demux = new Demuxer((stream, data) => (stream === 'stdout' ? out : err).push(decoders[stream].write(data)));
    attached.on('data', (chunk: Buffer) => demux.push(chunk));
    attached.on('error', () => {});
    const logsClosed = new Promise<void>((res) => attached.once('close', () => res()));

    let stopping: Promise<void> | null = null;
    const live: Live = {
      containerId,
      spec,
      reuseKey,
      envDir,
      keep: false,
      gone: false,
      exited: Promise.resolve(),
      worker: {
        workerId: spec.workerId,
        stop: ({ graceMs, keep }) => {
          stopping ??= (async () => {
            live.keep = keep === true;
            if (!live.gone) {
              await this.client
                .stopContainer(containerId, Math.max(0, Math.ceil(graceMs / 1000)))
                .catch(() => this.client.killContainer(containerId))
                .catch(() => {});
            }
            await waitFor(live.exited, EXIT_WAIT_MS);
          })();
          return stopping;
        },
      },
    };
    live.exited = (async () => {
      const status = await waited.catch(() => this.pollExit(containerId));
      live.gone = true;
      await waitFor(logsClosed, LOG_DRAIN_MS);
      attached.destroy();
      out.push(decoders.stdout.end());
      err.push(decoders.stderr.end());
      out.flush();
      err.flush();
      const info = await this.client.inspectContainer(containerId).catch(() => null);
      if (info?.State.OOMKilled) {
        safely(() =>
          hooks.onLog(
            'stderr',
            `[wharf] the container ran out of memory (${memoryLimitText(workerMemoryMb(this.o.memoryMb, spec))}) and was killed`,
          ),
        );
      }
      const keepIt = live.keep && reuseKey !== null && envDir !== null && !this.closing && info !== null;
      if (keepIt) this.keep({ containerId, endpointId: spec.endpointId, reuseKey, envDir });
      else await this.discard(containerId, envDir);
      this.live.delete(spec.workerId);
      safely(() => hooks.onExit(exitInfo(status.code)));
    })();
    this.live.set(spec.workerId, live);
    return live.worker;
  }

  /** The wait connection broke (daemon restart): poll until the container is no longer running. */
  private async pollExit(containerId: string): Promise<{ code: number; error: string | null }> {
    for (;;) {
      const info = await this.client.inspectContainer(containerId).catch(() => undefined);
      if (info === null) return { code: 137, error: 'container disappeared' };
      if (info && !info.State.Running) return { code: info.State.ExitCode, error: info.State.Error || null };
      await sleep(EXIT_POLL_MS);
    }
  }

  private keptCount(endpointId: string): number {
    let n = 0;
    for (const k of this.kept.values()) if (k.endpointId === endpointId) n++;
    return n;
  }

  /** Keep a stopped container for FlashBoot; at the endpoint's limit, the one kept longest makes room. */
  private keep(k: Omit<Kept, 'timer'>): void {
    const same = [...this.kept.values()].filter((x) => x.endpointId === k.endpointId);
    for (const old of same.slice(0, Math.max(0, same.length - this.o.flashbootKeep + 1))) void this.dropKept(old);
    const timer = setTimeout(() => {
      const entry = this.kept.get(k.containerId);
      if (entry) void this.dropKept(entry);
    }, this.o.flashbootKeepMs);
    timer.unref();
    this.kept.set(k.containerId, { ...k, timer });
  }

  private takeKept(endpointId: string, reuseKey: string): Kept | undefined {
    for (const k of this.kept.values()) {
      if (k.endpointId === endpointId && k.reuseKey === reuseKey) {
        clearTimeout(k.timer);
        this.kept.delete(k.containerId);
        return k;
      }
    }
    return undefined;
  }

  private async dropKept(k: Kept): Promise<void> {
    clearTimeout(k.timer);
    this.kept.delete(k.containerId);
    await this.discard(k.containerId, k.envDir);
  }

  private async discard(containerId: string, envDir: string | null): Promise<void> {
    await this.client.removeContainer(containerId).catch((e: unknown) => {
      this.warn(`could not remove container ${containerId.slice(0, 12)}: ${(e as Error).message}`);
    });
    if (envDir !== null) rmSync(envDir, { recursive: true, force: true });
  }
}

interface ContainerBody {
  Image: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env: string[];
  Labels: Record<string, string>;
  AttachStdout: boolean;
  AttachStderr: boolean;
  Tty: boolean;
  HostConfig: {
    NetworkMode: string;
    Binds: string[];
    Init: boolean;
    RestartPolicy: { Name: string };
    Memory?: number;
    MemorySwap?: number;
    CpuPeriod?: number;
    CpuQuota?: number;
    StorageOpt?: Record<string, string>;
    DeviceRequests?: Array<{ Driver: string; DeviceIDs: string[]; Capabilities: string[][] }>;
  };
}

/** What an OOM kill's log line says of the limit: a container without one was killed by the host's OOM killer. */
function memoryLimitText(mb: number): string {
  return mb > 0 ? `limit ${mb} MiB` : 'no limit set: the host ran out';
}

/** The CFS period of a CPU worker's quota: Docker's default, 100 ms. */
const CPU_PERIOD_US = 100_000;

/** Container names allow [a-zA-Z0-9][a-zA-Z0-9_.-]*. */
export function containerName(nodeId: string, workerId: string): string {
  return `wharf-${nodeId.replace(/[^a-zA-Z0-9_.-]/g, '_')}-${workerId}`;
}

/** What `docker run` would execute: the template's entrypoint and command override the image's, Docker's way. */
export function resolvedCommand(spec: Pick<WorkerSpec, 'entrypoint' | 'startCmd'>, image: ImageInfo): string[] {
  const entrypoint = spec.entrypoint.length > 0 ? spec.entrypoint : (image.Config?.Entrypoint ?? []);
  // Setting an entrypoint drops the image's CMD, as with `docker run --entrypoint`.
  const cmd = spec.startCmd.length > 0 ? spec.startCmd : spec.entrypoint.length > 0 ? [] : (image.Config?.Cmd ?? []);
  return [...entrypoint, ...cmd];
}

/** The env file the FlashBoot wrapper sources: `export`-free `KEY='value'` lines under `set -a`. */
export function envFileText(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'\n`)
    .join('');
}

function writeEnvFile(dir: string, env: Record<string, string>): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  // Readable by the container's user whoever it is; the directory lives in the server's 0700 data directory.
  writeFileSync(join(dir, 'env'), envFileText(env), { mode: 0o644 });
}

/** Who pulls for a start: a fingerprint of its registry credentials (kept in memory only), or `anonymous`. */
function credentialsOf(spec: Pick<WorkerSpec, 'registryAuth'>): string {
  if (spec.registryAuth === undefined) return 'anonymous';
  const { username, password } = spec.registryAuth;
  return createHash('sha256')
    .update(JSON.stringify([username, password]))
    .digest('hex');
}

const PRIVATE_IMAGES_FILE = 'private-images.json';

function readPrivateImages(stateDir: string): string[] {
  try {
    const ids: unknown = JSON.parse(readFileSync(join(stateDir, PRIVATE_IMAGES_FILE), 'utf8'));
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return []; // none yet
  }
}

function writePrivateImages(stateDir: string, ids: string[]): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(stateDir, PRIVATE_IMAGES_FILE), JSON.stringify(ids), { mode: 0o600 });
}

/** Docker reports a process killed by signal N as exit status 128 + N. */
export function exitInfo(code: number): { code: number | null; signal: string | null } {
  if (code > 128 && code <= 128 + 64) {
    const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name) return { code: null, signal: name };
  }
  return { code, signal: null };
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
