import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Endpoint, Template, WorkerRecord } from '../../domain/index.ts';
import { WharfError } from '../../errors/index.ts';
import type { AppDeps } from '../context.ts';
import { meta, userOf } from './common.ts';
import { IdParams } from './schemas.ts';
import { PodListQuery, PodQuery } from './schemas-management.ts';
import { workerPodView } from './views.ts';

type Includes = {
  includeMachine?: boolean;
  includeNetworkVolume?: boolean;
  includeSavingsPlans?: boolean;
  includeTemplate?: boolean;
  includeWorkers?: boolean;
};
type ListQuery = Includes & {
  computeType?: 'GPU' | 'CPU';
  cpuFlavorId?: string[];
  dataCenterId?: string[];
  desiredStatus?: 'RUNNING' | 'EXITED' | 'TERMINATED';
  endpointId?: string;
  gpuTypeId?: string[];
  id?: string;
  imageName?: string;
  name?: string;
  networkVolumeId?: string;
  templateId?: string;
};
type PodRequest = FastifyRequest<{ Params: { podId: string }; Querystring: Includes }>;

/**
 * `/v1/pods`: Wharf runs serverless workers only, and shows them as pods. As in the hosted API, worker pods are
 * listed only with `includeWorkers=true` (so a plain listing is empty); `GET /pods/{id}` finds a worker by id.
 * Stop, reset, restart and delete retire the worker (it takes no more jobs, finishes what it holds and is stopped;
 * the autoscaler starts a replacement if the endpoint still wants one). Create, update and start are refused.
 * `machine` (this node) is always shown, so `includeMachine` changes nothing.
 */
export function registerPodRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { store } = deps;

  async function render(
    userId: string,
    w: WorkerRecord,
    e: Endpoint,
    q: Includes,
    cache = new Map<string, Template | null>(),
  ) {
    let template = cache.get(e.templateId);
    if (template === undefined) {
      template = await store.getTemplate(userId, e.templateId);
      cache.set(e.templateId, template);
    }
    const volumeId = e.networkVolumeId ?? e.networkVolumeIds[0];
    const networkVolume = q.includeNetworkVolume && volumeId ? await store.getNetworkVolume(userId, volumeId) : null;
    const running = (await store.runningByWorker(e.id))[w.id] ?? 0;
    return workerPodView(w, running, e, {
      costPerHr: deps.billing.workerCostPerHr(w, e),
      dataCenterId: deps.dataCenterId,
      memoryCapMb: deps.workerMemoryMb,
      template: template ?? undefined,
      includeTemplate: q.includeTemplate,
      networkVolume: networkVolume ?? undefined,
      includeSavingsPlans: q.includeSavingsPlans,
    });
  }

  /** The worker with this id on one of the user's endpoints, or POD_NOT_FOUND. */
  async function find(userId: string, podId: string): Promise<{ w: WorkerRecord; e: Endpoint }> {
    const w = await store.getWorker(podId);
    const e = w ? await store.getEndpoint(userId, w.endpointId) : null;
    if (!w || !e) throw new WharfError('POD_NOT_FOUND', { podId });
    return { w, e };
  }

  app.get<{ Querystring: ListQuery }>(
    '/v1/pods',
    { schema: { querystring: PodListQuery }, config: meta('ListPods', 'List worker pods') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      const q = request.query;
      if (!q.includeWorkers) return [];
      const cache = new Map<string, Template | null>();
      const out: unknown[] = [];
      const endpoints = (await store.listEndpoints(user.id)).filter((e) => !q.endpointId || e.id === q.endpointId);
      for (const e of endpoints) {
        for (const w of await store.listWorkers(e.id)) {
          const pod = await render(user.id, w, e, q, cache);
          if (matches(pod, q)) out.push(pod);
        }
      }
      return out;
    },
  );

  app.get(
    '/v1/pods/:podId',
    { schema: { params: IdParams('podId'), querystring: PodQuery }, config: meta('GetPod', 'Get a worker pod') },
    async (request: PodRequest) => {
      const user = await userOf(deps, request, 'read');
      const { w, e } = await find(user.id, request.params.podId);
      return render(user.id, w, e, request.query);
    },
  );

  app.post('/v1/pods', { config: meta('CreatePod', 'Refused: create an endpoint instead', 201) }, async (request) => {
    await userOf(deps, request, 'write');
    throw new WharfError('PODS_NOT_SUPPORTED', { reason: 'create an endpoint instead' });
  });

  const refuse = (reason: string) => async (request: PodRequest) => {
    const user = await userOf(deps, request, 'write');
    await find(user.id, request.params.podId);
    throw new WharfError('PODS_NOT_SUPPORTED', { reason });
  };
  const params = { params: IdParams('podId') };
  const update = refuse("a worker runs its endpoint's template: update the endpoint or the template instead");
  app.patch('/v1/pods/:podId', { schema: params, config: meta('UpdatePod', 'Refused: update the endpoint') }, update);
  app.post('/v1/pods/:podId/update', { schema: params, config: meta('UpdatePod', 'Refused') }, update);
  app.post(
    '/v1/pods/:podId/start',
    { schema: params, config: meta('StartPod', 'Refused: the autoscaler starts workers') },
    refuse("workers are started by the autoscaler: raise the endpoint's workersMin to keep workers running"),
  );

  const retire = async (request: PodRequest, reason: string) => {
    const user = await userOf(deps, request, 'write');
    const { w, e } = await find(user.id, request.params.podId);
    await deps.workers.retire(w, reason);
    return render(user.id, (await store.getWorker(w.id)) ?? { ...w, retired: true }, e, {});
  };
  for (const [action, operationId] of [
    ['stop', 'StopPod'],
    ['reset', 'ResetPod'],
    ['restart', 'RestartPod'],
  ] as const) {
    app.post(
      `/v1/pods/:podId/${action}`,
      { schema: params, config: meta(operationId, `Retire the worker (${action})`) },
      (request: PodRequest) => retire(request, `${action} through the API`),
    );
  }
  app.delete(
    '/v1/pods/:podId',
    { schema: params, config: meta('DeletePod', 'Retire the worker', 204) },
    async (request: PodRequest, reply) => {
      await retire(request, 'deleted through the API');
      return reply.code(204).send();
    },
  );
}

type Pod = ReturnType<typeof workerPodView>;

/** The documented list filters, applied to the pod as shown. */
function matches(p: Pod, q: ListQuery): boolean {
  const type = p.gpu?.id;
  return (
    (!q.id || p.id === q.id) &&
    (!q.name || p.name === q.name) &&
    (!q.desiredStatus || p.desiredStatus === q.desiredStatus) &&
    (!q.computeType || p.computeType === q.computeType) &&
    (!q.gpuTypeId?.length || (type !== undefined && q.gpuTypeId.includes(type))) &&
    (!q.cpuFlavorId?.length || (p.cpuFlavorId !== undefined && q.cpuFlavorId.includes(p.cpuFlavorId))) &&
    (!q.dataCenterId?.length ||
      (p.machine.dataCenterId !== undefined && q.dataCenterId.includes(p.machine.dataCenterId))) &&
    (!q.imageName || p.image === q.imageName) &&
    (!q.templateId || p.templateId === q.templateId) &&
    (!q.networkVolumeId || p.networkVolumeId === q.networkVolumeId)
  );
}
