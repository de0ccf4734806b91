/**
 * Pods: Wharf has no pods of its own; its serverless workers are shown as pods (read-only), `podStop` and
 * `podTerminate` retire a worker, and the mutations that create, resume or change a pod answer PODS_NOT_SUPPORTED (their
 * inputs are in the schema so that the clients' documents validate and get that answer rather than a 400).
 */
import {
  cpuWorkerSize,
  memoryLimitMb,
  type Endpoint,
  type Template,
  type WorkerRecord,
} from '../../../domain/index.ts';
import { WharfError } from '../../../errors/index.ts';
import { required, type GqlContext, type ResolverMap } from '../context.ts';
import { dockerArgsOf } from '../template-input.ts';
import { gbOf, gpuDisplayName } from '../../rest/views.ts';

function podView(ctx: GqlContext, w: WorkerRecord, e: Endpoint, t: Template | null) {
  const now = ctx.deps.engine.clock.now();
  const uptimeSeconds = w.retired ? 0 : Math.max(0, Math.floor((now - w.createdAt) / 1000));
  // A CPU worker's size: its endpoint's first instance's, which the executors confine it to. A GPU worker has none.
  const size = cpuWorkerSize(e);
  const memoryMb = memoryLimitMb(ctx.deps.workerMemoryMb ?? 0, size?.memoryMb ?? 0);
  return {
    id: w.id,
    name: `${e.name || e.id}-worker-${w.id}`,
    desiredStatus: w.retired || w.state === 'unhealthy' ? 'EXITED' : 'RUNNING',
    podType: 'SERVERLESS',
    endpointId: e.id,
    imageName: t?.imageName ?? null,
    dockerArgs: t ? dockerArgsOf(t) : null,
    dockerId: null,
    // Pod env is a list of "KEY=value" strings (the SDKs select it without a sub-selection).
    env: Object.entries({ ...t?.env, ...e.env }).map(([k, v]) => `${k}=${v}`),
    gpuCount: w.gpuCount,
    vcpuCount: size?.vcpus ?? 0,
    // What the worker may use: its instance's memory, the node's cap where smaller (a GPU worker: the cap, if any).
    memoryInGb: gbOf(memoryMb),
    containerDiskInGb: t?.containerDiskInGb ?? null,
    volumeInGb: t?.volumeInGb ?? 0,
    volumeMountPath: t?.volumeMountPath ?? null,
    // As billed, and as REST shows it.
    costPerHr: ctx.deps.billing.workerCostPerHr(w, e),
    lastStatusChange: new Date(w.lastSeenAt).toISOString(),
    lastStartedAt: new Date(w.createdAt).toISOString(),
    machineId: null,
    port: null,
    ports: t?.ports.join(',') ?? '',
    uptimeSeconds,
    templateId: e.templateId,
    version: w.version,
    runtime: { uptimeInSeconds: uptimeSeconds, ports: [] },
    machine: {
      podHostId: w.id,
      gpuDisplayName: w.gpuTypeId && w.gpuCount > 0 ? gpuDisplayName(w.gpuTypeId) : 'CPU',
      gpuAvailable: null,
      location: ctx.deps.dataCenterId ?? null,
      maintenanceStart: null,
      maintenanceEnd: null,
      maintenanceNote: null,
    },
  };
}

export async function podsOfEndpoint(ctx: GqlContext, e: Endpoint) {
  const [workers, template] = await Promise.all([
    ctx.deps.store.listWorkers(e.id),
    ctx.deps.store.getTemplate(e.userId, e.templateId),
  ]);
  return workers.map((w) => podView(ctx, w, e, template));
}

export async function podsOfUser(ctx: GqlContext) {
  const endpoints = await ctx.deps.resources.listEndpoints(ctx.user.id);
  return (await Promise.all(endpoints.map((e) => podsOfEndpoint(ctx, e)))).flat();
}

/** The caller's worker with its endpoint, or null (unknown, or a worker of another user's endpoint). */
async function findWorker(ctx: GqlContext, podId: string) {
  const worker = await ctx.deps.store.getWorker(podId);
  const endpoint = worker ? await ctx.deps.store.getEndpoint(ctx.user.id, worker.endpointId) : null;
  return worker && endpoint ? { worker, endpoint } : null;
}

async function retire(ctx: GqlContext, podId: string, reason: string) {
  const found = await findWorker(ctx, podId);
  if (!found) throw new WharfError('POD_NOT_FOUND', { podId });
  if (!found.worker.retired) await ctx.deps.workers.retire(found.worker, reason);
  const worker = (await ctx.deps.store.getWorker(podId)) ?? { ...found.worker, retired: true };
  const template = await ctx.deps.store.getTemplate(ctx.user.id, found.endpoint.templateId);
  return podView(ctx, worker, found.endpoint, template);
}

const notSupported = (operation: string) => () => {
  throw new WharfError('PODS_NOT_SUPPORTED', {
    reason: `${operation} is not available; create an endpoint (saveEndpoint) and its workers are listed as pods`,
  });
};

type PodArgs = { input?: { podId: string } | null };

export const podResolvers: ResolverMap = {
  Query: {
    pod: async (_: unknown, args: PodArgs, ctx: GqlContext) => {
      const found = await findWorker(ctx, required(args.input).podId);
      if (!found) return null;
      const template = await ctx.deps.store.getTemplate(ctx.user.id, found.endpoint.templateId);
      return podView(ctx, found.worker, found.endpoint, template);
    },
  },
  Mutation: {
    podFindAndDeployOnDemand: notSupported('podFindAndDeployOnDemand'),
    podRentInterruptable: notSupported('podRentInterruptable'),
    deployCpuPod: notSupported('deployCpuPod'),
    podResume: notSupported('podResume'),
    podBidResume: notSupported('podBidResume'),
    podEditJob: notSupported('podEditJob'),
    podStop: (_: unknown, args: PodArgs, ctx: GqlContext) => retire(ctx, required(args.input).podId, 'podStop'),
    podTerminate: async (_: unknown, args: PodArgs, ctx: GqlContext) => {
      await retire(ctx, required(args.input).podId, 'podTerminate');
      return null;
    },
  },
};
