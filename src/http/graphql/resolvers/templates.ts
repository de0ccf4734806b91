import type { Template, TemplateInput } from '../../../domain/index.ts';
import { WharfError } from '../../../errors/index.ts';
import { invalid, required, type GqlContext, type ResolverMap } from '../context.ts';
import type { GqlEndpointTemplateInput } from '../endpoint-input.ts';
import { podTemplateView, templateFields, type GqlTemplateInput } from '../template-input.ts';

/** `saveEndpoint(input: {template: {...}})`: the serverless template made for (or replaced in) the endpoint. */
export function inlineTemplateInput(t: GqlEndpointTemplateInput): TemplateInput {
  const fields = templateFields({ ...t, volumeInGb: 0, isServerless: true });
  if (!fields.imageName) throw invalid('template.imageName', 'is required');
  return { ...fields, imageName: fields.imageName };
}

async function saveTemplate(input: GqlTemplateInput, ctx: GqlContext): Promise<Template> {
  const { resources } = ctx.deps;
  const fields = templateFields(input);
  if (input.id) return resources.updateTemplate(ctx.user.id, input.id, fields);
  if (!fields.imageName) throw invalid('imageName', 'is required to create a template');
  return resources.createTemplate(ctx.user.id, { ...fields, imageName: fields.imageName });
}

type PodTemplateFilter = { isRunpod?: boolean | null; isServerless?: boolean | null; isPublic?: boolean | null };

export const templateResolvers: ResolverMap = {
  Query: {
    podTemplates: async (_: unknown, args: { input?: PodTemplateFilter | null }, ctx: GqlContext) => {
      const f = args.input ?? {};
      // Wharf has no curated (RunPod) templates, and another user's template is never shown.
      if (f.isRunpod) return [];
      const list = await ctx.deps.resources.listTemplates(ctx.user.id);
      return list
        .filter((t) => (f.isServerless ?? t.isServerless) === t.isServerless)
        .filter((t) => (f.isPublic ?? t.isPublic) === t.isPublic)
        .map(podTemplateView);
    },
    podTemplate: async (_: unknown, args: { id: string }, ctx: GqlContext) => {
      const t = await ctx.deps.store.getTemplate(ctx.user.id, args.id);
      return t ? podTemplateView(t) : null;
    },
  },
  Mutation: {
    saveTemplate: async (_: unknown, args: { input?: GqlTemplateInput | null }, ctx: GqlContext) =>
      podTemplateView(await saveTemplate(required(args.input), ctx)),
    deleteTemplate: async (_: unknown, args: { templateName: string }, ctx: GqlContext) => {
      const list = await ctx.deps.resources.listTemplates(ctx.user.id);
      const t = list.find((x) => x.name === args.templateName);
      if (!t) throw new WharfError('TEMPLATE_NOT_FOUND', { templateId: args.templateName });
      await ctx.deps.resources.deleteTemplate(ctx.user.id, t.id);
      return null;
    },
  },
};
