import {
  cpuWorkerSize,
  memoryLimitMb,
  DATA_CENTER_IDS,
  DEFAULT_CPU_FLAVOR,
  type Endpoint,
  type NetworkVolume,
  type Template,
  type WorkerRecord,
} from '../../domain/index.ts';

/** REST v1 representations (spec/rest-v1.openapi.json `Template`, `Endpoint`, `Pod`). */
export function templateView(t: Template) {
  return {
    id: t.id,
    name: t.name,
    imageName: t.imageName,
    category: t.category,
    containerDiskInGb: t.containerDiskInGb,
    containerRegistryAuthId: t.containerRegistryAuthId ?? undefined,
    dockerEntrypoint: t.dockerEntrypoint,
    dockerStartCmd: t.dockerStartCmd,
    earned: 0,
    env: t.env,
    isPublic: t.isPublic,
    isRunpod: false,
    isServerless: t.isServerless,
    ports: t.ports,
    readme: t.readme,
    runtimeInMin: 0,
    volumeInGb: t.volumeInGb,
    volumeMountPath: t.volumeMountPath,
  };
}

/** What a pod view can add to a worker: its price, where it runs, and the `include*` parts asked for. */
export interface PodExtras {
  costPerHr?: number;
  /** The node's memory cap per worker in MiB (--worker-memory-mb), 0 or absent for none. */
  memoryCapMb?: number | undefined;
  dataCenterId?: string | undefined;
  template?: Template | undefined;
  includeTemplate?: boolean | undefined;
  networkVolume?: NetworkVolume | undefined;
  includeSavingsPlans?: boolean | undefined;
}

/** "NVIDIA GeForce RTX 4090" → "RTX 4090", as the hosted API shows GPU display names. */
export const gpuDisplayName = (gpuTypeId: string): string =>
  gpuTypeId
    .replace(/^(NVIDIA|AMD)\s+/, '')
    .replace(/^(GeForce|Instinct)\s+/, '')
    .replace(/\s+/g, ' ');

/** MiB as GB, to two decimals (a pod's memoryInGb). */
export const gbOf = (mb: number): number => Math.round((mb / 1024) * 100) / 100;

/** A worker as a REST v1 `Pod` (Wharf's only pods are serverless workers). */
export function workerPodView(w: WorkerRecord, running: number, e: Endpoint, x: PodExtras = {}) {
  const state = running > 0 ? 'running' : w.state;
  const gpuName = w.gpuTypeId && w.gpuCount > 0 ? gpuDisplayName(w.gpuTypeId) : undefined;
  const costPerHr = x.costPerHr ?? 0;
  const t = x.template;
  // A CPU worker's size: its endpoint's first instance's, which the executors confine it to.
  const size = cpuWorkerSize(e);
  const memoryMb = memoryLimitMb(x.memoryCapMb ?? 0, size?.memoryMb ?? 0);
  return {
    id: w.id,
    name: `${e.name || e.id}-worker-${w.id}`,
    endpointId: e.id,
    consumerUserId: e.userId,
    desiredStatus: w.retired || state === 'unhealthy' ? 'EXITED' : 'RUNNING',
    workerState: state,
    workerStateReason: w.reason ?? undefined,
    computeType: e.computeType,
    gpu: w.gpuTypeId
      ? {
          id: w.gpuTypeId,
          count: w.gpuCount,
          displayName: gpuName ?? w.gpuTypeId,
          securePrice: w.gpuCount > 0 ? costPerHr / w.gpuCount : 0,
        }
      : undefined,
    cpuFlavorId: e.computeType === 'CPU' ? (e.cpuFlavorIds[0] ?? DEFAULT_CPU_FLAVOR) : undefined,
    vcpuCount: size?.vcpus,
    memoryInGb: memoryMb > 0 ? gbOf(memoryMb) : undefined,
    costPerHr,
    adjustedCostPerHr: costPerHr,
    image: t?.imageName,
    templateId: e.templateId,
    ...(x.includeTemplate && t ? { template: templateView(t) } : {}),
    networkVolumeId: e.networkVolumeId ?? e.networkVolumeIds[0],
    ...(x.networkVolume
      ? {
          networkVolume: {
            id: x.networkVolume.id,
            name: x.networkVolume.name,
            size: x.networkVolume.size,
            dataCenterId: x.networkVolume.dataCenterId,
          },
        }
      : {}),
    slsVersion: w.version,
    lastStartedAt: new Date(w.createdAt).toISOString(),
    lastStatusChange: new Date(w.lastSeenAt).toISOString(),
    machine: {
      gpuDisplayName: gpuName ?? 'CPU',
      gpuTypeId: w.gpuTypeId ?? undefined,
      dataCenterId: x.dataCenterId,
      location: x.dataCenterId,
      costPerHr,
    },
    ...(x.includeSavingsPlans ? { savingsPlans: [] } : {}),
    interruptible: false,
    locked: false,
  };
}

export function endpointView(
  e: Endpoint,
  extra: { template?: Template | undefined; workers?: unknown[] | undefined } = {},
) {
  return {
    id: e.id,
    name: e.name,
    userId: e.userId,
    templateId: e.templateId,
    ...(extra.template ? { template: templateView(extra.template) } : {}),
    type: e.type,
    computeType: e.computeType,
    createdAt: new Date(e.createdAt).toISOString(),
    // None named (GraphQL's empty `locations`) reads as REST's default, every one: the same to placement.
    dataCenterIds: e.dataCenterIds.length > 0 ? e.dataCenterIds : [...DATA_CENTER_IDS],
    env: e.env,
    executionTimeoutMs: e.executionTimeoutMs,
    flashboot: e.flashboot,
    // Not in the spec's Endpoint (nor is flashboot), but part of what a client sent: a declarative one (Terraform)
    // that cannot read them back sees them as changed on every run.
    cpuFlavorIds: e.cpuFlavorIds,
    vcpuCount: e.vcpuCount,
    gpuCount: e.gpuCount,
    gpuTypeIds: e.gpuTypeIds,
    gpuIds: e.gpuIds,
    instanceIds: e.instanceIds,
    idleTimeout: e.idleTimeout,
    allowedCudaVersions: e.allowedCudaVersions,
    minCudaVersion: e.minCudaVersion ?? undefined,
    networkVolumeId: e.networkVolumeId ?? undefined,
    networkVolumeIds: e.networkVolumeIds,
    scalerType: e.scalerType,
    scalerValue: e.scalerValue,
    version: e.version,
    ...(extra.workers ? { workers: extra.workers } : {}),
    workersMax: e.workersMax,
    workersMin: e.workersMin,
  };
}
