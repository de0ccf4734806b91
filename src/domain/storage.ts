/**
 * Network volumes and container registry credentials (REST v1 `/networkvolumes`, `/containerregistryauth`), and the
 * secrets templates and endpoints reference from their env (GraphQL `secretCreate`).
 */

export interface NetworkVolume {
  /** 10 lowercase alphanumerics (newNetworkVolumeId). */
  id: string;
  userId: string;
  name: string;
  /** GB, 0..4000; it may only grow. */
  size: number;
  dataCenterId: string;
  createdAt: number;
}

/**
 * The longest text each management field takes, on every surface (REST schemas, GraphQL, the engine): names as in
 * the hosted API (191), data center ids, registry credentials.
 */
export const TEXT_MAX = {
  name: 191,
  dataCenterId: 64,
  registryUsername: 1024,
  registryPassword: 16_384,
  secretName: 64,
  secretDescription: 1024,
  /** Bytes of UTF-8: a value becomes one environment variable of a worker. */
  secretValue: 65_536,
} as const;

export const VOLUME_MAX_GB = 4000;

/**
 * A registry credential as stored: the username and password are sealed together (AES-256-GCM, see
 * engine/secrets.ts) and never leave the server except to an executor pulling an image.
 */
export interface RegistryAuthRecord {
  /** cuid-like, 25 characters (newRegistryAuthId). */
  id: string;
  userId: string;
  name: string;
  /** base64 of iv ‖ tag ‖ ciphertext of `{"username","password"}`, bound to the id and owner. */
  sealed: string;
  createdAt: number;
}

/**
 * The shape of cuid-like ids (ids.ts: registry auths, secrets), so that a malformed id is a 400 and a well-formed
 * unknown one a 404.
 */
const CUID_LIKE_ID = /^c[a-z0-9]{24}$/;

export const REGISTRY_AUTH_ID_PATTERN = CUID_LIKE_ID;

/**
 * A user's secret as stored (RunPod "Secrets"): the value is sealed (AES-256-GCM, engine/user-secrets.ts), bound to the
 * id and owner, and leaves the server only in the environment of the owner's workers, where a template or endpoint env
 * value says `{{ RUNPOD_SECRET_<name> }}`.
 */
export interface SecretRecord {
  /** cuid-like, 25 characters (newSecretId). */
  id: string;
  userId: string;
  /** Unique per user; SECRET_NAME_PATTERN. */
  name: string;
  description: string;
  /** base64 of iv ‖ tag ‖ ciphertext of the value, bound to the id and owner. */
  sealed: string;
  createdAt: number;
}

/** Letters, digits, `_` and `-`: a name fits in `{{ RUNPOD_SECRET_<name> }}` and in an env variable's name. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

export const SECRET_ID_PATTERN = CUID_LIKE_ID;

/** A user's discount on serverless usage (GraphQL `myself.serverlessDiscount`). */
export interface ServerlessDiscount {
  /** Multiplier applied to serverless amounts (0.8 = pay 80 %). */
  discountFactor: number;
  type: string;
  /** ISO date-time; usage after it is billed at full price. */
  expirationDate: string;
}

export const DISCOUNT_TYPES = ['SERVERLESS', 'SERVERLESS_LO_VRAM', 'SERVERLESS_HI_VRAM'] as const;
