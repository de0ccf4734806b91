/**
 * `myself` and the account's resources beyond endpoints and templates: registry auths, secrets, network volumes,
 * settings.
 */
import type { NetworkVolume, User } from '../../../domain/index.ts';
import { invalid, required, type GqlContext, type ResolverMap } from '../context.ts';
import { podTemplateView } from '../template-input.ts';
import { dataCenterView } from './catalog.ts';
import { podsOfUser } from './pods.ts';

type Input<T> = { input?: T | null };

export const accountResolvers: ResolverMap = {
  Query: {
    // Read afresh: the key's principal may be cached for a few seconds (a discount or pubKey just changed).
    myself: (_: unknown, _args: unknown, ctx: GqlContext) => ctx.deps.accounts.getUser(ctx.user.id),
  },

  /** The source is always the caller's own user record. */
  User: {
    authId: () => null,
    email: () => null,
    pubKey: (u: User) => u.pubKey ?? '',
    endpoints: (_: User, _a: unknown, ctx: GqlContext) => ctx.deps.resources.listEndpoints(ctx.user.id),
    endpoint: async (_: User, args: { id: string }, ctx: GqlContext) =>
      (await ctx.deps.store.getEndpoint(ctx.user.id, args.id)) ?? null,
    serverlessDiscount: (u: User) => u.serverlessDiscount ?? null,
    podTemplates: async (_: User, _a: unknown, ctx: GqlContext) =>
      (await ctx.deps.resources.listTemplates(ctx.user.id)).map(podTemplateView),
    networkVolumes: (_: User, _a: unknown, ctx: GqlContext) => ctx.deps.volumes.list(ctx.user.id),
    containerRegistryCreds: (_: User, _a: unknown, ctx: GqlContext) => ctx.deps.registryAuths.list(ctx.user.id),
    secrets: (_: User, _a: unknown, ctx: GqlContext) => ctx.deps.secrets.list(ctx.user.id),
    pods: (_: User, _a: unknown, ctx: GqlContext) => podsOfUser(ctx),
    clientBalance: () => 0,
    currentSpendPerHr: () => 0,
    spendLimit: () => null,
    notifyPodsStale: () => false,
    notifyPodsGeneral: () => false,
    notifyLowBalance: () => false,
  },

  NetworkVolume: {
    dataCenter: (v: NetworkVolume, _args: unknown, ctx: GqlContext) =>
      dataCenterView(v.dataCenterId, ctx.deps.gpuStock?.()),
  },

  /** Only ever the caller's own credentials; the secret (`registryAuth`) is never readable. */
  ContainerRegistryAuth: {
    userId: (_: unknown, _a: unknown, ctx: GqlContext) => ctx.user.id,
  },

  Mutation: {
    updateUserSettings: async (_: unknown, args: Input<{ pubKey?: string | null }>, ctx: GqlContext) => {
      const input = required(args.input);
      const user = await ctx.deps.accounts.getUser(ctx.user.id);
      if (input.pubKey === undefined) return user;
      if ((input.pubKey ?? '').length > 100_000) throw invalid('pubKey', 'must be at most 100000 characters');
      const updated: User = { ...user, pubKey: input.pubKey ?? '' };
      await ctx.deps.store.updateUser(updated);
      return updated;
    },

    saveRegistryAuth: (
      _: unknown,
      args: Input<{ name: string; username: string; password: string }>,
      ctx: GqlContext,
    ) => ctx.deps.registryAuths.create(ctx.user.id, required(args.input)),
    updateRegistryAuth: (
      _: unknown,
      args: Input<{ id: string; username: string; password: string }>,
      ctx: GqlContext,
    ) => {
      const { id, username, password } = required(args.input);
      return ctx.deps.registryAuths.update(ctx.user.id, id, { username, password });
    },
    deleteRegistryAuth: async (_: unknown, args: { registryAuthId?: string | null }, ctx: GqlContext) => {
      await ctx.deps.registryAuths.delete(ctx.user.id, required(args.registryAuthId, 'registryAuthId'));
      return null;
    },

    secretCreate: (
      _: unknown,
      args: Input<{ name: string; value: string; description?: string | null }>,
      ctx: GqlContext,
    ) => ctx.deps.secrets.create(ctx.user.id, required(args.input)),
    secretDelete: async (_: unknown, args: { id?: string | null }, ctx: GqlContext) => {
      await ctx.deps.secrets.delete(ctx.user.id, required(args.id, 'id'));
      return null;
    },

    createNetworkVolume: (
      _: unknown,
      args: Input<{ name: string; size: number; dataCenterId: string }>,
      ctx: GqlContext,
    ) => ctx.deps.volumes.create(ctx.user.id, required(args.input)),
    updateNetworkVolume: (
      _: unknown,
      args: Input<{ id: string; name?: string | null; size?: number | null }>,
      ctx: GqlContext,
    ) => {
      const { id, name, size } = required(args.input);
      return ctx.deps.volumes.update(ctx.user.id, id, { name: name ?? undefined, size: size ?? undefined });
    },
    deleteNetworkVolume: async (_: unknown, args: Input<{ id: string }>, ctx: GqlContext) => {
      await ctx.deps.volumes.delete(ctx.user.id, required(args.input).id);
      return null;
    },
  },
};
