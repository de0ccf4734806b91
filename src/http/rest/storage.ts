import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppDeps } from '../context.ts';
import { meta, userOf } from './common.ts';
import { IdParams } from './schemas.ts';
import {
  ContainerRegistryAuthCreateInput,
  NetworkVolumeCreateInput,
  NetworkVolumeUpdateInput,
} from './schemas-management.ts';
import { volumeView } from './views-management.ts';

type VolumeParams = { Params: { networkVolumeId: string } };
type AuthParams = { Params: { containerRegistryAuthId: string } };

/**
 * `/v1/networkvolumes` and `/v1/containerregistryauth` (spec/rest-v1.openapi.json): create 200, bare-array lists,
 * `PATCH` and `POST …/update` synonyms for volumes, delete 204. Registry auths show only `id` and `name`.
 */
export function registerStorageRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { volumes, registryAuths } = deps;
  const volumeParams = IdParams('networkVolumeId');

  app.post<{ Body: { name: string; size: number; dataCenterId: string } }>(
    '/v1/networkvolumes',
    { schema: { body: NetworkVolumeCreateInput }, config: meta('CreateNetworkVolume', 'Create a network volume') },
    async (request) => {
      const user = await userOf(deps, request, 'write');
      return volumeView(await volumes.create(user.id, request.body));
    },
  );
  app.get('/v1/networkvolumes', { config: meta('ListNetworkVolumes', 'List network volumes') }, async (request) => {
    const user = await userOf(deps, request, 'read');
    return (await volumes.list(user.id)).map(volumeView);
  });
  app.get<VolumeParams>(
    '/v1/networkvolumes/:networkVolumeId',
    { schema: { params: volumeParams }, config: meta('GetNetworkVolume', 'Get a network volume') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return volumeView(await volumes.get(user.id, request.params.networkVolumeId));
    },
  );
  const update = async (request: FastifyRequest<VolumeParams & { Body: { name?: string; size?: number } }>) => {
    const user = await userOf(deps, request, 'write');
    return volumeView(await volumes.update(user.id, request.params.networkVolumeId, request.body));
  };
  const updateOpts = (summary: string) => ({
    schema: { params: volumeParams, body: NetworkVolumeUpdateInput },
    config: meta('UpdateNetworkVolume', summary),
  });
  app.patch('/v1/networkvolumes/:networkVolumeId', updateOpts('Rename or grow a network volume'), update);
  app.post('/v1/networkvolumes/:networkVolumeId/update', updateOpts('Synonym of PATCH'), update);
  app.delete<VolumeParams>(
    '/v1/networkvolumes/:networkVolumeId',
    { schema: { params: volumeParams }, config: meta('DeleteNetworkVolume', 'Delete an unused network volume', 204) },
    async (request, reply) => {
      const user = await userOf(deps, request, 'write');
      await volumes.delete(user.id, request.params.networkVolumeId);
      return reply.code(204).send();
    },
  );

  // Ids are checked by the service (a malformed id is a 400, a well-formed unknown one a 404), after the key.
  const authParams = IdParams('containerRegistryAuthId');
  app.post<{ Body: { name: string; username: string; password: string } }>(
    '/v1/containerregistryauth',
    {
      schema: { body: ContainerRegistryAuthCreateInput },
      config: meta('CreateContainerRegistryAuth', 'Store registry credentials (encrypted; never shown again)'),
    },
    async (request) => {
      const user = await userOf(deps, request, 'write');
      return registryAuths.create(user.id, request.body);
    },
  );
  app.get(
    '/v1/containerregistryauth',
    { config: meta('ListContainerRegistryAuths', 'List registry auths (id and name)') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return registryAuths.list(user.id);
    },
  );
  app.get<AuthParams>(
    '/v1/containerregistryauth/:containerRegistryAuthId',
    { schema: { params: authParams }, config: meta('GetContainerRegistryAuth', 'Get a registry auth (id and name)') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return registryAuths.get(user.id, request.params.containerRegistryAuthId);
    },
  );
  app.delete<AuthParams>(
    '/v1/containerregistryauth/:containerRegistryAuthId',
    {
      schema: { params: authParams },
      config: meta('DeleteContainerRegistryAuth', 'Delete a registry auth no template uses', 204),
    },
    async (request, reply) => {
      const user = await userOf(deps, request, 'write');
      await registryAuths.delete(user.id, request.params.containerRegistryAuthId);
      return reply.code(204).send();
    },
  );
}
