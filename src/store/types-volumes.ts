/**
 * Store verbs of the management API beyond templates and endpoints: network volumes, registry credentials, users'
 * secrets, user settings and usage for billing. Part of the Store (types.ts); every backend passes
 * test/store/contract-management.ts.
 */
import type {
  NetworkVolume,
  RegistryAuthRecord,
  SecretRecord,
  UsageRecord,
  UsageStart,
  User,
  VolumeUsage,
} from '../domain/index.ts';

/** Usage overlapping [from, to) of one user, optionally narrowed. */
export interface UsageFilter {
  userId: string;
  from: number;
  to: number;
  endpointId?: string;
  workerId?: string;
  templateId?: string;
  imageName?: string;
}

export interface ManagementStore {
  /**
   * Replace a user's document (settings such as serverlessDiscount), but for its webhook secret, which only
   * setWebhookSecret changes: the document was read before, and a rotation since must not be undone by it.
   */
  updateUser(user: User): Promise<void>;

  /** Also opens the volume's first usage interval at `createdAt`. */
  createNetworkVolume(v: NetworkVolume): Promise<void>;
  /** userId null: any owner (internal use). */
  getNetworkVolume(userId: string | null, id: string): Promise<NetworkVolume | null>;
  listNetworkVolumes(userId: string): Promise<NetworkVolume[]>;
  /** A size change closes the current usage interval at `at` and opens one at the new size, atomically. */
  updateNetworkVolume(v: NetworkVolume, at: number): Promise<void>;
  /** Closes the usage interval at `at`; the usage history stays for billing. */
  deleteNetworkVolume(userId: string, id: string, at: number): Promise<boolean>;
  /** The user's endpoints naming the volume in networkVolumeId or networkVolumeIds. */
  endpointsUsingVolume(userId: string, volumeId: string): Promise<string[]>;

  /** Names are unique per user: a duplicate rejects. */
  createRegistryAuth(r: RegistryAuthRecord): Promise<void>;
  getRegistryAuth(userId: string, id: string): Promise<RegistryAuthRecord | null>;
  listRegistryAuths(userId: string): Promise<RegistryAuthRecord[]>;
  updateRegistryAuth(r: RegistryAuthRecord): Promise<void>;
  deleteRegistryAuth(userId: string, id: string): Promise<boolean>;
  /** The user's templates whose containerRegistryAuthId is this one. */
  templatesUsingRegistryAuth(userId: string, id: string): Promise<string[]>;

  /** Names are unique per user: a duplicate rejects (a unique violation). */
  createSecret(r: SecretRecord): Promise<void>;
  /** In creation order. */
  listSecrets(userId: string): Promise<SecretRecord[]>;
  deleteSecret(userId: string, id: string): Promise<boolean>;

  /**
   * The server's own settings, one text per key. `claimSetting`: the value stored under `key`, storing `value`
   * first when there is none, in one step (nodes starting together all get the first one stored).
   */
  claimSetting(key: string, value: string): Promise<string>;
  /** Store `value` under `key`, replacing any. */
  putSetting(key: string, value: string): Promise<void>;

  /** A worker started: open a usage record (a worker has at most one open record; a second open is ignored). */
  recordUsageStart(u: UsageStart): Promise<void>;
  /**
   * A worker stopped, exited, was lost or went to FlashBoot standby (not billed): close its open record at `at`.
   * Without an open record nothing changes.
   */
  recordUsageEnd(workerId: string, at: number): Promise<void>;
  /** A standby worker serves again: open a record like its latest one from `at`. */
  recordUsageResume(workerId: string, at: number): Promise<void>;
  listUsage(f: UsageFilter): Promise<UsageRecord[]>;
  /** Volume usage intervals of one user overlapping [from, to). */
  listVolumeUsage(userId: string, from: number, to: number): Promise<VolumeUsage[]>;
}
