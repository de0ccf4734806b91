import { keyPrefix, type ApiKey, type NetworkVolume, type User } from '../../domain/index.ts';

/** REST v1 `NetworkVolume`. */
export const volumeView = (v: NetworkVolume) => ({
  id: v.id,
  name: v.name,
  size: v.size,
  dataCenterId: v.dataCenterId,
});

/** An API key as listed: never the key or its hash, and only a few of its characters (keyPrefix). */
export const keyView = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  prefix: keyPrefix(k.prefix),
  scope: k.scope,
  endpointIds: k.endpointIds,
  createdAt: new Date(k.createdAt).toISOString(),
  revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
});

/** A user as admins see it: never the webhook secret. */
export const userView = (u: User) => ({
  id: u.id,
  name: u.name,
  isAdmin: u.isAdmin,
  createdAt: new Date(u.createdAt).toISOString(),
  serverlessDiscount: u.serverlessDiscount ?? null,
});
