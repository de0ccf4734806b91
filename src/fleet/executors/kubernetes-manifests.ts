/**
 * Pure builders of every Kubernetes object the Kubernetes executor creates (kubernetes.ts), so each manifest is
 * unit-tested without a cluster. Only types come from @kubernetes/client-node.
 *
 * Objects and how they are tied together (nothing outlives what it belongs to):
 * - one ConfigMap per Wharf node, the "anchor": every worker pod names it as owner, so deleting it (or the namespace)
 *   garbage-collects every worker of that node;
 * - one Pod per worker (restartPolicy Never), labelled wharf.managed / wharf.node-id / wharf.endpoint-id /
 *   wharf.worker-id;
 * - per worker, a Secret with its environment (the worker key among it) and, with registry credentials, a
 *   kubernetes.io/dockerconfigjson Secret for imagePullSecrets; both are created owned by the anchor (so that the pod
 *   finds them when it starts) and then handed over to the pod, so they go when the pod goes;
 * - one PersistentVolumeClaim per network volume (ReadWriteMany), labelled but owned by nobody: it holds the volume's
 *   data and outlives workers, nodes and restarts.
 */
import type {
  V1ConfigMap,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';

import { parseImageRef } from './docker-api.ts';
import { allowsAnyCudaVersion, allowsAnyDataCenter } from '../../domain/index.ts';
import { compareCudaVersions, cudaVersionParts, type CudaLimits } from '../cuda.ts';
import { workerMemoryMb, type WorkerSpec } from './types.ts';

export const LABEL_MANAGED = 'wharf.managed';
export const LABEL_NODE = 'wharf.node-id';
export const LABEL_ENDPOINT = 'wharf.endpoint-id';
export const LABEL_WORKER = 'wharf.worker-id';
export const LABEL_VOLUME = 'wharf.volume-id';
export const VOLUME_MOUNT = '/runpod-volume';
export const CONTAINER_NAME = 'worker';
export const GPU_RESOURCE = 'nvidia.com/gpu';

export interface ManifestOptions {
  namespace: string;
  nodeId: string;
  /** Node label naming the GPU type (GPU feature discovery's nvidia.com/gpu.product). */
  gpuTypeLabel: string;
  /** Node label naming the data center; null: placement ignores dataCenterIds. */
  dataCenterLabel: string | null;
  /** Memory limit in MiB; 0: none. A CPU worker's instance memory, where smaller, wins. */
  memoryMb: number;
}

/** A DNS-1123 label made of `s`: lowercase alphanumerics and dashes, at most `max` characters. */
export function dnsLabel(s: string, max = 63): string {
  const clean = s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return clean.slice(0, max).replace(/-+$/, '') || 'x';
}

/** A label value: at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends. */
export function labelValue(s: string): string {
  return s
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

export const anchorName = (nodeId: string): string => `wharf-node-${dnsLabel(nodeId, 40)}`;
export const podName = (nodeId: string, workerId: string): string =>
  `wharf-${dnsLabel(nodeId, 20)}-${dnsLabel(workerId, 30)}`;
export const envSecretName = (pod: string): string => `${pod}-env`;
export const pullSecretName = (pod: string): string => `${pod}-pull`;
export const claimName = (volumeId: string): string => `wharf-volume-${dnsLabel(volumeId, 40)}`;

/** The label selector of everything one Wharf node manages. */
export function nodeSelector(nodeId: string): string {
  return `${LABEL_MANAGED}=true,${LABEL_NODE}=${labelValue(nodeId)}`;
}

/** GPU feature discovery writes product names with dashes for spaces: `NVIDIA A40` → `NVIDIA-A40`. */
export function gpuProductValue(gpuTypeId: string): string {
  return labelValue(gpuTypeId.trim().replace(/\s+/g, '-'));
}

/**
 * GPU feature discovery's labels for the CUDA version a node's driver supports (what nvidia-smi's banner names):
 * the current names, then the older ones that releases before the rename write (current ones write both).
 */
const CUDA_LABELS = [
  { major: 'nvidia.com/cuda.runtime-version.major', minor: 'nvidia.com/cuda.runtime-version.minor' },
  { major: 'nvidia.com/cuda.runtime.major', minor: 'nvidia.com/cuda.runtime.minor' },
];

/**
 * Node selector terms (any one suffices) for nodes whose driver's CUDA version meets the endpoint's limits, the
 * rule `cudaRefusal` applies on this machine; null when the limits allow any version. Label values are compared as
 * integers (`Gt`), so 12.10 counts as newer than 12.9. Throws when no version meets both limits: the pod would stay
 * pending forever.
 */
export function cudaNodeTerms(limits: CudaLimits): V1NodeSelectorRequirement[][] | null {
  const allowed = limits.allowedCudaVersions ?? [];
  const min = limits.minCudaVersion ?? null;
  const anyVersion = allowsAnyCudaVersion(allowed);
  if (anyVersion && min === null) return null;
  const inList = (key: string, values: string[]): V1NodeSelectorRequirement => ({ key, operator: 'In', values });
  if (anyVersion) {
    const [major, minor] = cudaVersionParts(min!) ?? [0, 0];
    return CUDA_LABELS.flatMap((l) => [
      [{ key: l.major, operator: 'Gt', values: [String(major)] }],
      minor === 0
        ? [inList(l.major, [String(major)])]
        : [inList(l.major, [String(major)]), { key: l.minor, operator: 'Gt', values: [String(minor - 1)] }],
    ]);
  }
  const versions = allowed.filter((v) => min === null || compareCudaVersions(v, min) >= 0);
  if (versions.length === 0) {
    throw new Error(
      `no CUDA version meets both the endpoint's allowedCudaVersions ${allowed.join(', ')} and its minCudaVersion ${min}`,
    );
  }
  const minorsByMajor = new Map<string, string[]>();
  for (const v of versions) {
    const [major, minor] = cudaVersionParts(v)!;
    minorsByMajor.set(String(major), [...(minorsByMajor.get(String(major)) ?? []), String(minor)]);
  }
  return CUDA_LABELS.flatMap((l) =>
    [...minorsByMajor].map(([major, minors]) => [inList(l.major, [major]), inList(l.minor, minors)]),
  );
}

/** Required node affinity: one of the CUDA terms (when limited), each also requiring one of the data centers. */
function placementTerms(o: ManifestOptions, spec: WorkerSpec, gpus: number): V1NodeSelectorTerm[] {
  // Every data center allowed: no restriction (nodes labelled with names of their own qualify too).
  const allowed = spec.dataCenterIds ?? [];
  const dataCenters = allowsAnyDataCenter(allowed) ? [] : allowed.map(labelValue).filter((v) => v !== '');
  const where: V1NodeSelectorRequirement[] =
    o.dataCenterLabel && dataCenters.length > 0
      ? [{ key: o.dataCenterLabel, operator: 'In', values: dataCenters }]
      : [];
  const cuda = gpus > 0 ? cudaNodeTerms(spec) : null;
  const terms = (cuda ?? [[]]).map((t) => [...t, ...where]).filter((t) => t.length > 0);
  return terms.map((matchExpressions) => ({ matchExpressions }));
}

export function ownerReference(o: {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; uid?: string };
}): V1OwnerReference {
  const name = o.metadata?.name;
  const uid = o.metadata?.uid;
  if (!name || !uid) throw new Error(`${o.kind} has no name or uid yet: it must be read back from the API first`);
  return { apiVersion: o.apiVersion, kind: o.kind, name, uid, blockOwnerDeletion: false };
}

function workerLabels(o: ManifestOptions, spec: WorkerSpec): Record<string, string> {
  return {
    [LABEL_MANAGED]: 'true',
    [LABEL_NODE]: labelValue(o.nodeId),
    [LABEL_ENDPOINT]: labelValue(spec.endpointId),
    [LABEL_WORKER]: labelValue(spec.workerId),
  };
}

export function anchorConfigMap(o: Pick<ManifestOptions, 'namespace' | 'nodeId'>): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: anchorName(o.nodeId),
      namespace: o.namespace,
      labels: { [LABEL_MANAGED]: 'true', [LABEL_NODE]: labelValue(o.nodeId) },
      annotations: {
        'wharf.io/purpose': 'Owner of the worker pods of this Wharf node: deleting it removes them all.',
      },
    },
    data: { nodeId: o.nodeId },
  };
}

/** The worker's environment as seen in the pod: the volume path inside, GPUs numbered from 0. */
export function podEnv(spec: WorkerSpec): Record<string, string> {
  const env: Record<string, string> = { ...spec.env };
  env.CUDA_VISIBLE_DEVICES = spec.gpuIndices.map((_, i) => String(i)).join(',');
  if (spec.volumeId !== undefined) env.RUNPOD_VOLUME_PATH = VOLUME_MOUNT;
  else delete env.RUNPOD_VOLUME_PATH;
  return env;
}

export function envSecret(o: ManifestOptions, spec: WorkerSpec, owner: V1OwnerReference): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: envSecretName(podName(o.nodeId, spec.workerId)),
      namespace: o.namespace,
      labels: workerLabels(o, spec),
      ownerReferences: [owner],
    },
    stringData: podEnv(spec),
  };
}

/** A kubernetes.io/dockerconfigjson Secret for the image's registry. */
export function pullSecret(
  o: ManifestOptions,
  spec: WorkerSpec,
  auth: { username: string; password: string },
  owner: V1OwnerReference,
): V1Secret {
  const registry = parseImageRef(spec.imageName).registry ?? 'https://index.docker.io/v1/';
  const config = {
    auths: {
      [registry]: {
        username: auth.username,
        password: auth.password,
        auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64'),
      },
    },
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: {
      name: pullSecretName(podName(o.nodeId, spec.workerId)),
      namespace: o.namespace,
      labels: workerLabels(o, spec),
      ownerReferences: [owner],
    },
    stringData: { '.dockerconfigjson': JSON.stringify(config) },
  };
}

export function volumeClaim(
  o: Pick<ManifestOptions, 'namespace'>,
  volumeId: string,
  sizeGb: number,
  storageClass: string | null,
): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: claimName(volumeId),
      namespace: o.namespace,
      labels: { [LABEL_MANAGED]: 'true', [LABEL_VOLUME]: labelValue(volumeId) },
    },
    spec: {
      // Every worker of every endpoint naming the volume mounts it, on whichever node it runs.
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: `${Math.max(1, sizeGb)}Gi` } },
      ...(storageClass ? { storageClassName: storageClass } : {}),
    },
  };
}

export function workerPod(
  o: ManifestOptions,
  spec: WorkerSpec,
  owner: V1OwnerReference,
  opts: { pullSecret: boolean; graceSeconds: number },
): V1Pod {
  const name = podName(o.nodeId, spec.workerId);
  const gpus = spec.gpuIndices.length;
  const limits: Record<string, string> = {};
  const requests: Record<string, string> = {};
  if (gpus > 0) limits[GPU_RESOURCE] = String(gpus);
  const memoryMb = workerMemoryMb(o.memoryMb, spec);
  if (memoryMb > 0) limits.memory = requests.memory = `${memoryMb}Mi`;
  // A CPU endpoint's instance: its vCPUs requested and limited alike (Guaranteed QoS with the memory above), as the
  // instance is a size the worker is given, not a ceiling it may be squeezed under.
  if (spec.cpu) limits.cpu = requests.cpu = String(spec.cpu.vcpus);
  if (spec.containerDiskInGb !== undefined && spec.containerDiskInGb > 0) {
    // The limit is the template's container disk; the request stays small so that the default (50 GB) does not make
    // pods unschedulable on nodes that report less allocatable ephemeral storage.
    limits['ephemeral-storage'] = `${spec.containerDiskInGb}Gi`;
    requests['ephemeral-storage'] = `${Math.min(1, spec.containerDiskInGb)}Gi`;
  }
  const nodeSelector: Record<string, string> = {};
  if (gpus > 0 && spec.gpuTypeId) nodeSelector[o.gpuTypeLabel] = gpuProductValue(spec.gpuTypeId);
  const nodeSelectorTerms = placementTerms(o, spec, gpus);
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace,
      labels: workerLabels(o, spec),
      ownerReferences: [owner],
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: opts.graceSeconds,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      containers: [
        {
          name: CONTAINER_NAME,
          image: spec.imageName,
          ...(spec.entrypoint.length > 0 ? { command: spec.entrypoint } : {}),
          ...(spec.startCmd.length > 0 ? { args: spec.startCmd } : {}),
          envFrom: [{ secretRef: { name: envSecretName(name) } }],
          resources: {
            ...(Object.keys(limits).length > 0 ? { limits } : {}),
            ...(Object.keys(requests).length > 0 ? { requests } : {}),
          },
          ...(spec.volumeId !== undefined
            ? { volumeMounts: [{ name: 'network-volume', mountPath: VOLUME_MOUNT }] }
            : {}),
        },
      ],
    },
  };
  const podSpec = pod.spec!;
  if (opts.pullSecret) podSpec.imagePullSecrets = [{ name: pullSecretName(name) }];
  if (Object.keys(nodeSelector).length > 0) podSpec.nodeSelector = nodeSelector;
  if (gpus > 0) podSpec.tolerations = [{ key: GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }];
  if (nodeSelectorTerms.length > 0) {
    podSpec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } };
  }
  if (spec.volumeId !== undefined) {
    podSpec.volumes = [{ name: 'network-volume', persistentVolumeClaim: { claimName: claimName(spec.volumeId) } }];
  }
  return pod;
}

export interface PodExit {
  code: number | null;
  signal: string | null;
  /** Why, when Kubernetes says more than an exit code (OOMKilled, Evicted, DeadlineExceeded). */
  reason: string | null;
}

/** The worker container's end, once the pod is done with it; null while it still runs (or has not started). */
export function podExit(pod: V1Pod): PodExit | null {
  const status = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
  const terminated = status?.state?.terminated;
  if (terminated) {
    const code = terminated.exitCode;
    const reason =
      terminated.reason && terminated.reason !== 'Completed' && terminated.reason !== 'Error'
        ? terminated.reason
        : null;
    if (terminated.signal) return { code: null, signal: signalName(terminated.signal), reason };
    if (code > 128 && code <= 128 + 64) return { code: null, signal: signalName(code - 128), reason };
    return { code, signal: null, reason };
  }
  // Failed without a container status: evicted, deadline exceeded, or never started.
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
    return { code: pod.status.phase === 'Succeeded' ? 0 : 1, signal: null, reason: pod.status.reason ?? null };
  }
  return null;
}

/** Why the worker container waits, when that is worth telling (ImagePullBackOff, CreateContainerConfigError…). */
export function podWaiting(pod: V1Pod): string | null {
  const waiting = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME)?.state?.waiting;
  if (waiting?.reason && waiting.reason !== 'ContainerCreating' && waiting.reason !== 'PodInitializing') {
    return `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
  }
  const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unschedulable?.reason)
    return `${unschedulable.reason}${unschedulable.message ? `: ${unschedulable.message}` : ''}`;
  return null;
}

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  6: 'SIGABRT',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  15: 'SIGTERM',
};
function signalName(n: number): string {
  return SIGNALS[n] ?? `signal ${n}`;
}
