import { allowsAnyDataCenter, type Endpoint } from '../../../domain/index.ts';
import { WharfError } from '../../../errors/index.ts';
import { invalid, required, type GqlContext, type ResolverMap } from '../context.ts';
import {
  cudaVersions,
  dataCentersToLocations,
  envToList,
  locationsToDataCenters,
  reparsed,
  sameList,
} from '../convert.ts';
import { endpointFields, type GqlEndpointInput } from '../endpoint-input.ts';
import { podTemplateView } from '../template-input.ts';
import { podsOfEndpoint } from './pods.ts';
import { inlineTemplateInput } from './templates.ts';

async function volumeOf(ctx: GqlContext, id: string) {
  try {
    return await ctx.deps.volumes.get(ctx.user.id, id);
  } catch {
    return null; // deleted since, or never the caller's: shown as no volume
  }
}

/**
 * `locations` as saveEndpoint last received it, while it still names the endpoint's data centers (a REST change of
 * dataCenterIds since makes it derived again); else derived: whole countries as their code, null when unrestricted.
 * Unrestricted is one list however written: REST shows none (`""`) as every data center, and a client saving back
 * what it read (PATCH with GET's dataCenterIds) stores them all, which is no change to what was sent.
 */
export function locationsOf(e: Endpoint): string | null {
  const text = e.gqlLocations;
  if (text !== undefined && text !== null) {
    const sent = reparsed(() => locationsToDataCenters('locations', text));
    if (
      sent &&
      (sameList(sent, e.dataCenterIds) || (allowsAnyDataCenter(sent) && allowsAnyDataCenter(e.dataCenterIds)))
    ) {
      return text;
    }
  }
  return dataCentersToLocations(e.dataCenterIds);
}

/**
 * `allowedCudaVersions` likewise: as last received while it names the same versions (and still parses), else joined
 * (null = any).
 */
export function allowedCudaVersionsOf(e: Endpoint): string | null {
  const text = e.gqlAllowedCudaVersions;
  if (text !== undefined && text !== null) {
    const sent = reparsed(() => cudaVersions('allowedCudaVersions', text));
    if (sent && sameList(sent, e.allowedCudaVersions)) return text;
  }
  return e.allowedCudaVersions.length > 0 ? e.allowedCudaVersions.join(',') : null;
}

async function saveEndpoint(input: GqlEndpointInput, ctx: GqlContext): Promise<Endpoint> {
  const { resources } = ctx.deps;
  const userId = ctx.user.id;
  const stored = input.id ? await resources.getEndpoint(userId, input.id) : undefined;
  const fields = endpointFields(input, stored?.name);
  const templateId = input.templateId?.trim() || undefined;
  if (input.template && templateId) throw invalid('template', 'cannot be given together with templateId');
  const template = input.template ? inlineTemplateInput(input.template) : undefined;
  if (input.id) {
    // An update replaces the template bound to the endpoint in place (or binds a new one to it): see there.
    if (template) return resources.updateEndpointWithTemplate(userId, input.id, fields, template);
    return resources.updateEndpoint(userId, input.id, templateId ? { ...fields, templateId } : fields);
  }
  if (!template) {
    if (!templateId) throw invalid('templateId', 'is required to create an endpoint (or give an inline template)');
    return resources.createEndpoint(userId, { ...fields, templateId });
  }
  // The template is made bound to the new endpoint, in one write with it: a refused endpoint leaves no template.
  return resources.createEndpointWithTemplate(userId, fields, template);
}

export const endpointResolvers: ResolverMap = {
  Mutation: {
    saveEndpoint: (_: unknown, args: { input: GqlEndpointInput }, ctx: GqlContext) => saveEndpoint(args.input, ctx),

    deleteEndpoint: async (_: unknown, args: { id: string }, ctx: GqlContext) => {
      const e = await ctx.deps.resources.getEndpoint(ctx.user.id, args.id);
      if (e.workersMin !== 0 || e.workersMax !== 0) {
        throw new WharfError('ENDPOINT_HAS_WORKERS', {
          endpointId: e.id,
          workersMin: e.workersMin,
          workersMax: e.workersMax,
        });
      }
      await ctx.deps.resources.deleteEndpoint(ctx.user.id, e.id);
      return null;
    },

    updateEndpointTemplate: async (
      _: unknown,
      args: { input?: { endpointId: string; templateId: string } | null },
      ctx: GqlContext,
    ) => {
      const input = required(args.input);
      return ctx.deps.resources.updateEndpoint(ctx.user.id, input.endpointId, { templateId: input.templateId });
    },
  },

  /** Sources are domain endpoints; fields whose name and shape match need no resolver. */
  Endpoint: {
    locations: locationsOf,
    allowedCudaVersions: allowedCudaVersionsOf,
    flashBootType: (e: Endpoint) => (e.flashboot ? 'FLASHBOOT' : 'OFF'),
    // The supervisor keeps one FlashBoot standby worker while an endpoint is scaled to zero.
    workersStandby: (e: Endpoint) => (e.flashboot ? 1 : 0),
    env: (e: Endpoint) => envToList(e.env),
    createdAt: (e: Endpoint) => new Date(e.createdAt).toISOString(),
    aiKey: () => null,
    modelReferences: () => [],
    // Fields other clients select (flash, runpod-mcp) for things Wharf does not have: docs/graphql.md.
    workersPFBTarget: () => 0,
    compliance: () => [],
    requestTTL: () => null,
    flashEnvironmentId: () => null,
    activeBuildid: () => null,
    idePodId: () => null,
    networkVolume: (e: Endpoint, _: unknown, ctx: GqlContext) =>
      e.networkVolumeId ? volumeOf(ctx, e.networkVolumeId) : null,
    networkVolumeIds: (e: Endpoint, _: unknown, ctx: GqlContext) =>
      Promise.all(
        e.networkVolumeIds.map(async (id) => ({
          networkVolumeId: id,
          dataCenterId: (await volumeOf(ctx, id))?.dataCenterId ?? null,
        })),
      ),
    template: async (e: Endpoint, _: unknown, ctx: GqlContext) => {
      const t = await ctx.deps.store.getTemplate(ctx.user.id, e.templateId);
      return t ? podTemplateView(t) : null;
    },
    pods: (e: Endpoint, _: unknown, ctx: GqlContext) => podsOfEndpoint(ctx, e),
  },
};
