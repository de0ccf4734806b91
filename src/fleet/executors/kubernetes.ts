/**
 * The Kubernetes executor (DESIGN.md §3 "Executors and templates"): one Pod per worker, through
 * @kubernetes/client-node. The manifests come from kubernetes-manifests.ts (pure, unit-tested); this file creates
 * them, follows the pods with a watch and streams their logs.
 *
 * Why a pod per worker and not a Deployment per endpoint version: the supervisor decides which worker stops (an
 * idle one, never one that runs a job), gives each worker its own id, key and GPUs, and replaces a crashed worker
 * itself with backoff. A Deployment scales down by picking pods on its own (it would kill busy workers), restarts
 * crashed pods in its own loop (hiding crashes from the backoff and the retry accounting) and shares one pod
 * template (no per-worker identity). Bare pods with restartPolicy Never keep those decisions in the supervisor,
 * as with the process and Docker executors; the owner references below make sure none is left behind.
 *
 * State is tracked with a watch on this node's pods (label selector), re-listed and re-established when the watch
 * ends; a pod that terminates or disappears ends its worker exactly once.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';

import {
  CoreV1Api,
  KubeConfig,
  Log,
  Watch,
  type V1ConfigMap,
  type V1OwnerReference,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1Secret,
} from '@kubernetes/client-node';

import {
  anchorConfigMap,
  anchorName,
  claimName,
  CONTAINER_NAME,
  envSecret,
  LABEL_WORKER,
  nodeSelector,
  ownerReference,
  podExit,
  podName,
  podWaiting,
  pullSecret,
  volumeClaim,
  workerPod,
  type ManifestOptions,
  type PodExit,
} from './kubernetes-manifests.ts';
import { LineSplitter } from './process.ts';
import { safely, waitFor } from './waits.ts';
import type { Executor, ExecutorHooks, RunningWorker, WorkerSpec } from './types.ts';

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
// After the container terminated, how long its log stream gets to deliver the last lines.
const LOG_DRAIN_MS = 2_000;
// After the grace period, how long a pod gets to go before it is deleted with grace 0.
const DELETE_WAIT_MS = 15_000;
const REWATCH_MS = 1_000;
const DEFAULT_VOLUME_GB = 10;

/** The calls the executor makes; ClientNodeApi implements them with @kubernetes/client-node, tests with fakes. */
export interface KubeApi {
  readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null>;
  createConfigMap(namespace: string, body: V1ConfigMap): Promise<V1ConfigMap>;
  createSecret(namespace: string, body: V1Secret): Promise<V1Secret>;
  replaceSecret(namespace: string, name: string, body: V1Secret): Promise<V1Secret>;
  deleteSecret(namespace: string, name: string): Promise<void>;
  listSecrets(namespace: string, labelSelector: string): Promise<V1Secret[]>;
  createPod(namespace: string, body: V1Pod): Promise<V1Pod>;
  /** A pod that is already gone is fine. */
  deletePod(namespace: string, name: string, graceSeconds: number): Promise<void>;
  listPods(namespace: string, labelSelector: string): Promise<{ items: V1Pod[]; resourceVersion: string }>;
  readClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | null>;
  createClaim(namespace: string, body: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim>;
  watchPods(
    namespace: string,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: string, pod: V1Pod) => void,
    onDone: (err: unknown) => void,
  ): Promise<{ abort(): void }>;
  followLogs(
    namespace: string,
    pod: string,
    container: string,
    onText: (text: string) => void,
    onDone: (err: unknown) => void,
  ): Promise<{ abort(): void }>;
}

export interface KubernetesExecutorOptions {
  /** null: the server's own namespace when it runs in a cluster, else the kubeconfig context's, else `default`. */
  namespace: string | null;
  nodeId: string;
  gpuTypeLabel: string;
  dataCenterLabel: string | null;
  storageClass: string | null;
  memoryMb: number;
  /** The network volume's size (GB) for its claim; null when unknown. */
  volumeSizeGb: (volumeId: string) => Promise<number | null>;
  onWarning?: (message: string) => void;
}

interface LivePod {
  name: string;
  spec: WorkerSpec;
  hooks: ExecutorHooks;
  logs: { abort(): void } | null;
  logsEnded: Promise<void>;
  logsStarted: boolean;
  lines: LineSplitter;
  lastWaiting: string | null;
  done: boolean;
  exited: Promise<void>;
  markExited: () => void;
  worker: RunningWorker;
}

export class KubernetesExecutor implements Executor {
  readonly kind = 'kubernetes';
  readonly namespace: string;
  private readonly api: KubeApi;
  private readonly o: KubernetesExecutorOptions;
  private readonly m: ManifestOptions;
  private readonly warn: (message: string) => void;
  private readonly live = new Map<string, LivePod>();
  private anchor: Promise<V1OwnerReference> | null = null;
  private watch: Promise<void> | null = null;
  private watchHandle: { abort(): void } | null = null;
  private closing = false;

  constructor(api: KubeApi, opts: KubernetesExecutorOptions & { namespace: string }) {
    this.api = api;
    this.o = opts;
    this.namespace = opts.namespace;
    this.m = {
      namespace: opts.namespace,
      nodeId: opts.nodeId,
      gpuTypeLabel: opts.gpuTypeLabel,
      dataCenterLabel: opts.dataCenterLabel,
      memoryMb: opts.memoryMb,
    };
    this.warn = opts.onWarning ?? (() => {});
  }

  /** Connect with the default kubeconfig: KUBECONFIG, ~/.kube/config, or the pod's service account in a cluster. */
  static fromDefaultConfig(opts: KubernetesExecutorOptions): KubernetesExecutor {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    const namespace = opts.namespace ?? inClusterNamespace() ?? kc.getContextObject(kc.getCurrentContext())?.namespace;
    return new KubernetesExecutor(new ClientNodeApi(kc), { ...opts, namespace: namespace || 'default' });
  }

  validateImage(imageName: string): string | null {
    if (imageName.startsWith('file://')) {
      return `the kubernetes executor runs container images; '${imageName}' is a directory — use the process executor`;
    }
    if (imageName.trim() === '' || /\s/.test(imageName)) return `'${imageName}' is not a container image reference`;
    return null;
  }

  async start(spec: WorkerSpec, hooks: ExecutorHooks): Promise<RunningWorker> {
    if (this.closing) throw new Error(`cannot start worker ${spec.workerId}: the kubernetes executor is shutting down`);
    const name = podName(this.o.nodeId, spec.workerId);
    if (this.live.has(name)) throw new Error(`worker ${spec.workerId} is already running`);
    const problem = this.validateImage(spec.imageName);
    if (problem) throw new Error(problem);
    const anchor = await this.ensureAnchor();
    await this.ensureWatch();
    if (spec.volumeId !== undefined) await this.ensureClaim(spec.volumeId);

    const ns = this.namespace;
    const secrets: V1Secret[] = [];
    const live = this.track(name, spec, hooks);
    try {
      const graceSeconds = 30;
      // Built first: a pod the limits make unplaceable is refused before anything is created.
      const manifest = workerPod(this.m, spec, anchor, { pullSecret: spec.registryAuth !== undefined, graceSeconds });
      // Secrets first (owned by the anchor), so that the pod finds them when it starts; then handed to the pod.
      secrets.push(await this.api.createSecret(ns, envSecret(this.m, spec, anchor)));
      if (spec.registryAuth)
        secrets.push(await this.api.createSecret(ns, pullSecret(this.m, spec, spec.registryAuth, anchor)));
      const pod = await this.api.createPod(ns, manifest);
      const owner = ownerReference({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata ?? {} });
      for (const s of secrets) {
        await this.api.replaceSecret(ns, s.metadata!.name!, {
          ...s,
          metadata: { ...s.metadata, ownerReferences: [owner] },
        });
      }
      return live.worker;
    } catch (e) {
      live.done = true;
      this.live.delete(name);
      await this.api.deletePod(ns, name, 0).catch(() => {});
      for (const s of secrets) await this.api.deleteSecret(ns, s.metadata!.name!).catch(() => {});
      throw new Error(`could not start worker ${spec.workerId} (${spec.imageName}): ${describe(e)}`, { cause: e });
    }
  }

  async stopAll(opts: { graceMs: number }): Promise<void> {
    this.closing = true;
    await Promise.all([...this.live.values()].map((l) => l.worker.stop({ graceMs: opts.graceMs })));
    this.watchHandle?.abort();
    this.watchHandle = null;
  }

  /** Pods and secrets of this node that no worker of this run owns: a previous server's, deleted. */
  async cleanupOrphans(): Promise<number> {
    // The supervisor calls this first when it (re)starts, e.g. on regaining leadership after a stopAll.
    this.closing = false;
    await this.ensureAnchor();
    const ns = this.namespace;
    const selector = nodeSelector(this.o.nodeId);
    const { items } = await this.api.listPods(ns, selector);
    let removed = 0;
    for (const pod of items) {
      const name = pod.metadata?.name;
      if (!name || this.live.has(name)) continue;
      await this.api.deletePod(ns, name, 0);
      removed += 1;
    }
    for (const s of await this.api.listSecrets(ns, selector)) {
      const name = s.metadata?.name;
      const worker = s.metadata?.labels?.[LABEL_WORKER];
      if (!name || (worker && this.live.has(podName(this.o.nodeId, worker)))) continue;
      await this.api.deleteSecret(ns, name);
    }
    await this.ensureWatch();
    return removed;
  }

  private track(name: string, spec: WorkerSpec, hooks: ExecutorHooks): LivePod {
    let markExited!: () => void;
    const exited = new Promise<void>((res) => (markExited = res));
    let stopping: Promise<void> | null = null;
    const live: LivePod = {
      name,
      spec,
      hooks,
      logs: null,
      logsEnded: Promise.resolve(),
      logsStarted: false,
      lines: new LineSplitter((line) => safely(() => hooks.onLog('stdout', line))),
      lastWaiting: null,
      done: false,
      exited,
      markExited,
      worker: {
        workerId: spec.workerId,
        stop: ({ graceMs }) => {
          stopping ??= (async () => {
            if (live.done) return exited;
            const grace = Math.max(0, Math.ceil(graceMs / 1000));
            await this.api.deletePod(this.namespace, name, grace).catch(() => {});
            if (await waitFor(exited, grace * 1000 + DELETE_WAIT_MS)) return;
            await this.api.deletePod(this.namespace, name, 0).catch(() => {});
            if (await waitFor(exited, DELETE_WAIT_MS)) return;
            // No event came (the watch is broken): the pod was deleted twice, call it gone.
            this.finish(live, { code: null, signal: 'SIGKILL', reason: 'deleted' });
            await exited;
          })();
          return stopping;
        },
      },
    };
    this.live.set(name, live);
    return live;
  }

  private onPod(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name;
    const live = name ? this.live.get(name) : undefined;
    if (!live || live.done) return;
    if (type === 'DELETED') {
      this.finish(live, podExit(pod) ?? { code: null, signal: 'SIGKILL', reason: 'pod deleted' });
      return;
    }
    const waiting = podWaiting(pod);
    if (waiting !== null && waiting !== live.lastWaiting) {
      safely(() => live.hooks.onLog('stderr', `[wharf] pod ${live.name} waits: ${waiting}`));
    }
    live.lastWaiting = waiting;
    const state = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME)?.state;
    if (!live.logsStarted && (state?.running || state?.terminated)) this.followLogs(live);
    const exit = podExit(pod);
    if (exit) this.finish(live, exit);
  }

  private followLogs(live: LivePod): void {
    live.logsStarted = true;
    live.logsEnded = new Promise<void>((res) => {
      this.api
        .followLogs(
          this.namespace,
          live.name,
          CONTAINER_NAME,
          (text) => live.lines.push(text),
          () => res(),
        )
        .then(
          (handle) => {
            live.logs = handle;
            if (live.done) setTimeout(() => handle.abort(), LOG_DRAIN_MS).unref();
          },
          (e: unknown) => {
            safely(() => live.hooks.onLog('stderr', `[wharf] cannot follow the logs of ${live.name}: ${describe(e)}`));
            res();
          },
        );
    });
  }

  /** The worker is gone: drain its logs, delete the pod (its secrets go with it), tell the supervisor once. */
  private finish(live: LivePod, exit: PodExit): void {
    if (live.done) return;
    live.done = true;
    void (async () => {
      if (live.logsStarted) await waitFor(live.logsEnded, LOG_DRAIN_MS);
      live.logs?.abort();
      live.lines.flush();
      if (exit.reason) safely(() => live.hooks.onLog('stderr', `[wharf] pod ${live.name} ended: ${exit.reason}`));
      await this.api.deletePod(this.namespace, live.name, 0).catch(() => {});
      this.live.delete(live.name);
      safely(() => live.hooks.onExit({ code: exit.code, signal: exit.signal }));
      live.markExited();
    })();
  }

  private ensureAnchor(): Promise<V1OwnerReference> {
    this.anchor ??= (async () => {
      const ns = this.namespace;
      let cm = await this.api.readConfigMap(ns, anchorName(this.o.nodeId));
      if (!cm) {
        try {
          cm = await this.api.createConfigMap(ns, anchorConfigMap({ namespace: ns, nodeId: this.o.nodeId }));
        } catch (e) {
          cm = await this.api.readConfigMap(ns, anchorName(this.o.nodeId));
          if (!cm) throw e;
        }
      }
      return ownerReference({ apiVersion: 'v1', kind: 'ConfigMap', metadata: cm.metadata ?? {} });
    })();
    this.anchor.catch(() => (this.anchor = null));
    return this.anchor;
  }

  private async ensureClaim(volumeId: string): Promise<void> {
    const ns = this.namespace;
    if (await this.api.readClaim(ns, claimName(volumeId))) return;
    const size = (await this.o.volumeSizeGb(volumeId)) ?? DEFAULT_VOLUME_GB;
    try {
      await this.api.createClaim(ns, volumeClaim({ namespace: ns }, volumeId, size, this.o.storageClass));
    } catch (e) {
      // Created meanwhile by another worker's start: fine.
      if (!(await this.api.readClaim(ns, claimName(volumeId)))) throw e;
    }
  }

  /** List this node's pods (to catch up on what happened unseen), then watch from there; again when it ends. */
  private ensureWatch(): Promise<void> {
    this.watch ??= (async () => {
      const ns = this.namespace;
      const selector = nodeSelector(this.o.nodeId);
      const { items, resourceVersion } = await this.api.listPods(ns, selector);
      const present = new Set<string>();
      for (const pod of items) {
        if (pod.metadata?.name) present.add(pod.metadata.name);
        this.onPod('MODIFIED', pod);
      }
      for (const live of this.live.values()) {
        // Known here but not in the cluster: deleted while no watch ran (a pod being created is listed).
        if (!present.has(live.name) && live.logsStarted) this.onPod('DELETED', { metadata: { name: live.name } });
      }
      this.watchHandle = await this.api.watchPods(
        ns,
        selector,
        resourceVersion,
        (type, pod) => this.onPod(type, pod),
        (err) => {
          this.watchHandle = null;
          this.watch = null;
          if (this.closing) return;
          if (err) this.warn(`kubernetes pod watch ended: ${describe(err)}; re-listing`);
          setTimeout(() => void this.ensureWatch().catch((e: unknown) => this.warn(describe(e))), REWATCH_MS).unref();
        },
      );
    })();
    this.watch.catch(() => (this.watch = null));
    return this.watch;
  }
}

/** KubeApi over @kubernetes/client-node. */
export class ClientNodeApi implements KubeApi {
  private readonly core: CoreV1Api;
  private readonly watcher: Watch;
  private readonly logger: Log;

  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watcher = new Watch(kc);
    this.logger = new Log(kc);
  }

  readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null> {
    return orNull(this.core.readNamespacedConfigMap({ name, namespace }));
  }
  createConfigMap(namespace: string, body: V1ConfigMap): Promise<V1ConfigMap> {
    return this.core.createNamespacedConfigMap({ namespace, body });
  }
  createSecret(namespace: string, body: V1Secret): Promise<V1Secret> {
    return this.core.createNamespacedSecret({ namespace, body });
  }
  replaceSecret(namespace: string, name: string, body: V1Secret): Promise<V1Secret> {
    return this.core.replaceNamespacedSecret({ name, namespace, body });
  }
  async deleteSecret(namespace: string, name: string): Promise<void> {
    await orNull(this.core.deleteNamespacedSecret({ name, namespace }));
  }
  async listSecrets(namespace: string, labelSelector: string): Promise<V1Secret[]> {
    return (await this.core.listNamespacedSecret({ namespace, labelSelector })).items;
  }
  createPod(namespace: string, body: V1Pod): Promise<V1Pod> {
    return this.core.createNamespacedPod({ namespace, body });
  }
  async deletePod(namespace: string, name: string, graceSeconds: number): Promise<void> {
    await orNull(this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: graceSeconds }));
  }
  async listPods(namespace: string, labelSelector: string): Promise<{ items: V1Pod[]; resourceVersion: string }> {
    const list = await this.core.listNamespacedPod({ namespace, labelSelector });
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }
  readClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | null> {
    return orNull(this.core.readNamespacedPersistentVolumeClaim({ name, namespace }));
  }
  createClaim(namespace: string, body: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim> {
    return this.core.createNamespacedPersistentVolumeClaim({ namespace, body });
  }
  async watchPods(
    namespace: string,
    labelSelector: string,
    resourceVersion: string,
    onEvent: (type: string, pod: V1Pod) => void,
    onDone: (err: unknown) => void,
  ): Promise<{ abort(): void }> {
    const ac = await this.watcher.watch(
      `/api/v1/namespaces/${namespace}/pods`,
      { labelSelector, resourceVersion, allowWatchBookmarks: true },
      (type: string, obj: V1Pod) => {
        if (type !== 'BOOKMARK') onEvent(type, obj);
      },
      onDone,
    );
    return { abort: () => ac.abort() };
  }
  async followLogs(
    namespace: string,
    pod: string,
    container: string,
    onText: (text: string) => void,
    onDone: (err: unknown) => void,
  ): Promise<{ abort(): void }> {
    const sink = new Writable({
      decodeStrings: false,
      write(chunk: Buffer | string, _enc, cb) {
        onText(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
        cb();
      },
    });
    const ac = await this.logger.log(namespace, pod, container, sink, onDone, { follow: true });
    return { abort: () => ac.abort() };
  }
}

async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if ((e as { code?: number }).code === 404) return null;
    throw e;
  }
}

function inClusterNamespace(): string | null {
  try {
    return readFileSync(IN_CLUSTER_NAMESPACE, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** client-node's ApiException carries the API's Status as `body`: its message is what helps. */
function describe(e: unknown): string {
  const err = e as { code?: number; body?: unknown; message?: string };
  if (typeof err.body === 'string') {
    try {
      const status = JSON.parse(err.body) as { message?: string };
      if (status.message) return `${err.code ?? ''} ${status.message}`.trim();
    } catch {
      // not JSON
    }
  }
  return err.message ?? String(e);
}
