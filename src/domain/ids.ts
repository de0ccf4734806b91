import { randomBytes, randomUUID } from 'node:crypto';

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Lowercase alphanumeric id of the given length from a CSPRNG (rejection sampling keeps it unbiased). */
export function alnumId(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 252 && out.length < length) out += ALNUM[byte % 36];
    }
  }
  return out;
}

/** Id lengths of DESIGN.md §3 "Ids", matching the hosted service's shapes. */
export const newEndpointId = (): string => alnumId(14);
export const newTemplateId = (): string => alnumId(10);
export const newNetworkVolumeId = (): string => alnumId(10);
export const newWorkerId = (): string => alnumId(14);
export const newUserId = (): string => `user_${alnumId(20)}`;
/** cuid-like: 25 characters starting with a letter (storage.ts CUID_LIKE_ID), as the hosted service's. */
const cuidLikeId = (): string => `c${alnumId(24)}`;
export const newRegistryAuthId = cuidLikeId;
export const newSecretId = cuidLikeId;

/** Job ids: UUID v4 plus the node suffix (`-e1`), `sync-` prefixed for /runsync. URL-safe by construction. */
export function newJobId(nodeSuffix: string, sync: boolean): string {
  const id = `${randomUUID()}-${nodeSuffix}`;
  return sync ? `sync-${id}` : id;
}

/** Ids arrive in URL paths; anything outside this alphabet is certainly not one of ours. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
