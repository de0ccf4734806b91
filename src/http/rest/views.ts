import type { Endpoint, Template, WorkerRecord } from '../../domain/index.ts';

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

export function workerPodView(w: WorkerRecord, running: number, e: Endpoint) {
  const state = running > 0 ? 'running' : w.state;
  return {
    id: w.id,
    name: `${e.name || e.id}-worker-${w.id}`,
    endpointId: e.id,
    desiredStatus: w.retired || state === 'unhealthy' ? 'EXITED' : 'RUNNING',
    workerState: state,
    workerStateReason: w.reason ?? undefined,
    gpu: w.gpuTypeId ? { id: w.gpuTypeId, count: w.gpuCount, displayName: w.gpuTypeId } : undefined,
    costPerHr: 0,
    image: undefined,
    templateId: e.templateId,
    slsVersion: w.version,
    lastStartedAt: new Date(w.createdAt).toISOString(),
    lastStatusChange: new Date(w.lastSeenAt).toISOString(),
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
    dataCenterIds: e.dataCenterIds,
    env: e.env,
    executionTimeoutMs: e.executionTimeoutMs,
    flashboot: e.flashboot,
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
