import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EndpointInput, TemplateInput } from '../../domain/index.ts';
import { authenticate, requireUser, type Access } from '../plugins/auth.ts';
import type { AppDeps } from '../context.ts';
import {
  EndpointCreateInput,
  EndpointQuery,
  EndpointUpdateInput,
  IdParams,
  TemplateCreateInput,
  TemplateQuery,
  TemplateUpdateInput,
} from './schemas.ts';
import { endpointView, templateView, workerPodView } from './views.ts';

type EndpointQ = { includeTemplate?: boolean; includeWorkers?: boolean };

/** REST v1 templates and endpoints (spec/rest-v1.openapi.json): 200 on create, bare-array lists, 204 on delete. */
export function registerRestRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { accounts, resources, store } = deps;

  const userOf = async (request: FastifyRequest, access: Access) =>
    requireUser(await authenticate(accounts, request), access).user;

  async function renderEndpoint(userId: string, id: string, q: EndpointQ) {
    const e = await resources.getEndpoint(userId, id);
    // The workers show the template's image too (as /v1/pods does).
    const tpl =
      q.includeTemplate || q.includeWorkers
        ? ((await store.getTemplate(userId, e.templateId)) ?? undefined)
        : undefined;
    const template = q.includeTemplate ? tpl : undefined;
    let workers: unknown[] | undefined;
    if (q.includeWorkers) {
      const [list, load] = await Promise.all([store.listWorkers(e.id), store.runningByWorker(e.id)]);
      const extras = (w: (typeof list)[number]) => ({
        costPerHr: deps.billing.workerCostPerHr(w, e),
        dataCenterId: deps.dataCenterId,
        memoryCapMb: deps.workerMemoryMb,
        template: tpl,
      });
      workers = list.map((w) => workerPodView(w, load[w.id] ?? 0, e, extras(w)));
    }
    return endpointView(e, { template, workers });
  }

  // Templates
  app.post<{ Body: TemplateInput }>('/v1/templates', { schema: { body: TemplateCreateInput } }, async (request) => {
    const user = await userOf(request, 'write');
    return templateView(await resources.createTemplate(user.id, request.body));
  });
  app.get<{ Querystring: { includeEndpointBoundTemplates?: boolean } }>(
    '/v1/templates',
    { schema: { querystring: TemplateQuery } },
    async (request) => {
      const user = await userOf(request, 'read');
      // Templates made inline for one endpoint only when asked for. (Wharf has no curated templates, and another
      // user's template is never listed, public or not: includePublicTemplates and includeRunpodTemplates add none.)
      const bound = request.query.includeEndpointBoundTemplates === true;
      return (await resources.listTemplates(user.id)).filter((t) => bound || !t.boundEndpointId).map(templateView);
    },
  );
  app.get<{ Params: { templateId: string } }>(
    '/v1/templates/:templateId',
    { schema: { params: IdParams('templateId'), querystring: TemplateQuery } },
    async (request) => {
      const user = await userOf(request, 'read');
      return templateView(await resources.getTemplate(user.id, request.params.templateId));
    },
  );
  const updateTemplate = async (
    request: FastifyRequest<{ Params: { templateId: string }; Body: Partial<TemplateInput> }>,
  ) => {
    const user = await userOf(request, 'write');
    return templateView(await resources.updateTemplate(user.id, request.params.templateId, request.body));
  };
  const templateUpdateOpts = { schema: { params: IdParams('templateId'), body: TemplateUpdateInput } };
  app.patch('/v1/templates/:templateId', templateUpdateOpts, updateTemplate);
  app.post('/v1/templates/:templateId/update', templateUpdateOpts, updateTemplate);
  app.delete<{ Params: { templateId: string } }>(
    '/v1/templates/:templateId',
    { schema: { params: IdParams('templateId') } },
    async (request, reply) => {
      const user = await userOf(request, 'write');
      await resources.deleteTemplate(user.id, request.params.templateId);
      return reply.code(204).send();
    },
  );

  // Endpoints
  app.post<{ Body: EndpointInput }>('/v1/endpoints', { schema: { body: EndpointCreateInput } }, async (request) => {
    const user = await userOf(request, 'write');
    const e = await resources.createEndpoint(user.id, request.body);
    return endpointView(e);
  });
  app.get<{ Querystring: EndpointQ }>('/v1/endpoints', { schema: { querystring: EndpointQuery } }, async (request) => {
    const user = await userOf(request, 'read');
    const list = await resources.listEndpoints(user.id);
    return Promise.all(list.map((e) => renderEndpoint(user.id, e.id, request.query)));
  });
  app.get<{ Params: { endpointId: string }; Querystring: EndpointQ }>(
    '/v1/endpoints/:endpointId',
    { schema: { params: IdParams('endpointId'), querystring: EndpointQuery } },
    async (request) => {
      const user = await userOf(request, 'read');
      return renderEndpoint(user.id, request.params.endpointId, request.query);
    },
  );
  const updateEndpoint = async (
    request: FastifyRequest<{ Params: { endpointId: string }; Body: Partial<EndpointInput> }>,
  ) => {
    const user = await userOf(request, 'write');
    return endpointView(await resources.updateEndpoint(user.id, request.params.endpointId, request.body));
  };
  const endpointUpdateOpts = { schema: { params: IdParams('endpointId'), body: EndpointUpdateInput } };
  app.patch('/v1/endpoints/:endpointId', endpointUpdateOpts, updateEndpoint);
  app.post('/v1/endpoints/:endpointId/update', endpointUpdateOpts, updateEndpoint);
  app.delete<{ Params: { endpointId: string } }>(
    '/v1/endpoints/:endpointId',
    { schema: { params: IdParams('endpointId') } },
    async (request, reply) => {
      const user = await userOf(request, 'write');
      await resources.deleteEndpoint(user.id, request.params.endpointId);
      return reply.code(204).send();
    },
  );
}
