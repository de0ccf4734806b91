import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  alnumId,
  keyPrefix,
  newUserId,
  type ApiKey,
  type KeyScope,
  type ServerlessDiscount,
  type User,
  type WorkerRecord,
} from '../domain/index.ts';
import { WharfError } from '../errors/index.ts';
import { topics, type Bus } from './bus.ts';
import type { Store } from '../store/index.ts';

export type Principal =
  { kind: 'user'; user: User; key: ApiKey } | { kind: 'worker'; worker: WorkerRecord; userId: string };

/** SHA-256 hex of a key; every authenticated request hashes its key, so the one-shot form (no Hash object). */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** API keys look like `wharf_<40 random base62-ish chars>`; worker keys `wharfw_…`. Shown once, stored hashed. */
export function generateKey(prefix = 'wharf'): string {
  return `${prefix}_${randomBytes(30).toString('base64url')}`;
}

/**
 * How long a resolved key is trusted without a store read. A revocation (or a removed worker, a changed user)
 * clears the cache at once on every node: the `accounts` bus topic reaches the others over LISTEN/NOTIFY, and a
 * node whose bridge reconnected clears it too (wakeAll), as it may have missed one.
 */
const CACHE_MS = 5000;
/** Keys (and, apart, unknown keys) resolved in the last CACHE_MS kept at most. */
const CACHE_ENTRIES = 10_000;

/** The name of the key WHARF_ADMIN_KEY sets: the one a new value of the variable revokes. */
const ADMIN_ENV_KEY_NAME = 'admin (WHARF_ADMIN_KEY)';

/** Users and API keys: bootstrap of the admin, issuing, resolving and revoking keys. */
export class Accounts {
  private readonly store: Store;
  private readonly bus: Bus;
  private readonly cache = new Map<string, { principal: Principal; at: number }>();
  /**
   * Unknown keys, apart: a flood of made-up keys (each answered 401) fills this one, never the cache of the keys
   * in use, which would otherwise be cleared when full and send every client back to the store.
   */
  private readonly misses = new Map<string, number>();
  /** Bumped at every invalidation: a lookup that began before one must not cache what it read. */
  private generation = 0;

  constructor(store: Store, bus: Bus) {
    this.store = store;
    this.bus = bus;
    bus.subscribe(topics.accounts, () => {
      this.generation++;
      this.cache.clear();
      this.misses.clear();
    });
  }

  /**
   * Make sure the admin user exists and `adminKey` (when given) is one of its keys. Returns the admin user and, when
   * a key had to be generated, the new key (to be printed once and written to the data directory).
   */
  async bootstrapAdmin(adminKey: string | null): Promise<{ admin: User; generatedKey: string | null }> {
    const users = await this.store.listUsers();
    let admin = users.find((u) => u.isAdmin);
    if (!admin) {
      admin = {
        id: newUserId(),
        name: 'admin',
        isAdmin: true,
        createdAt: Date.now(),
        serverlessDiscount: null,
      };
      await this.store.createUser(admin);
    }
    if (adminKey) {
      const existing = await this.store.findApiKeyByHash(hashKey(adminKey));
      if (existing && existing.revokedAt !== null) {
        // Revoked (by a rotation, or on purpose): a revocation is never undone by a restart, and starting with an
        // admin key that does not work would lock the operator out in silence.
        throw new Error('WHARF_ADMIN_KEY is a key that was revoked (an earlier value?): set a new one');
      }
      if (!existing) await this.addKey(admin.id, adminKey, ADMIN_ENV_KEY_NAME, 'all', []);
      // A new WHARF_ADMIN_KEY replaces the one set before: rotating the variable must retire the old key. Checked at
      // every start, not only the one that stored the new key: a start cut off between the two writes (a crash, a
      // store failure) would otherwise leave the old key valid for good.
      const now = Date.now();
      for (const k of await this.store.listApiKeys(admin.id)) {
        if (k.name === ADMIN_ENV_KEY_NAME && k.revokedAt === null && k.hash !== hashKey(adminKey)) {
          await this.store.revokeApiKey(admin.id, k.id, now);
        }
      }
      this.invalidate();
      return { admin, generatedKey: null };
    }
    const keys = await this.store.listApiKeys(admin.id);
    if (keys.some((k) => k.revokedAt === null)) return { admin, generatedKey: null };
    const key = generateKey();
    await this.addKey(admin.id, key, 'admin (generated)', 'all', []);
    return { admin, generatedKey: key };
  }

  async createUser(name: string): Promise<User> {
    const user: User = {
      id: newUserId(),
      name,
      isAdmin: false,
      createdAt: Date.now(),
      serverlessDiscount: null,
    };
    await this.store.createUser(user);
    return user;
  }

  async getUser(userId: string): Promise<User> {
    const user = await this.store.getUser(userId);
    if (!user) throw new WharfError('USER_NOT_FOUND', { userId });
    return user;
  }

  listUsers(): Promise<User[]> {
    return this.store.listUsers();
  }

  /** Set or clear (null) a user's serverless discount; takes effect on the next billing read. */
  async setServerlessDiscount(userId: string, discount: ServerlessDiscount | null): Promise<User> {
    const user = { ...(await this.getUser(userId)), serverlessDiscount: discount };
    await this.store.updateUser(user);
    this.invalidate();
    return user;
  }

  listKeys(userId: string): Promise<ApiKey[]> {
    return this.store.listApiKeys(userId);
  }

  /** Issue a new key; returns the key text (shown once) and its record. */
  async createKey(
    userId: string,
    name: string,
    scope: KeyScope,
    endpointIds: string[] = [],
  ): Promise<{ key: string; record: ApiKey }> {
    const key = generateKey();
    const record = await this.addKey(userId, key, name, scope, endpointIds);
    return { key, record };
  }

  private async addKey(
    userId: string,
    key: string,
    name: string,
    scope: KeyScope,
    endpointIds: string[],
  ): Promise<ApiKey> {
    const record: ApiKey = {
      id: alnumId(12),
      userId,
      hash: hashKey(key),
      prefix: keyPrefix(key),
      name,
      scope,
      endpointIds,
      createdAt: Date.now(),
      revokedAt: null,
    };
    await this.store.createApiKey(record);
    return record;
  }

  async revokeKey(userId: string, keyId: string): Promise<boolean> {
    const ok = await this.store.revokeApiKey(userId, keyId, Date.now());
    this.invalidate();
    return ok;
  }

  /** Who is behind a key: a user's API key or a worker's own key. Null when unknown or revoked. */
  async resolve(key: string): Promise<Principal | null> {
    const hash = hashKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && now - cached.at < CACHE_MS) return cached.principal;
    const missed = this.misses.get(hash);
    if (missed !== undefined && now - missed < CACHE_MS) return null;
    const generation = this.generation;
    const principal = await this.lookup(hash);
    if (generation !== this.generation) return principal; // read before a revocation: used once, not cached
    if (principal === null) {
      if (this.misses.size >= CACHE_ENTRIES) this.misses.clear();
      this.misses.set(hash, now);
    } else {
      // Full: the oldest entry goes (a Map keeps insertion order), not every key in use at once.
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.delete(hash);
      this.cache.set(hash, { principal, at: now });
    }
    return principal;
  }

  private async lookup(hash: string): Promise<Principal | null> {
    const apiKey = await this.store.findApiKeyByHash(hash);
    if (apiKey) {
      // The hash index found it; compare again in constant time so a lookup side channel reveals nothing.
      if (!timingSafeEqual(Buffer.from(apiKey.hash), Buffer.from(hash)) || apiKey.revokedAt !== null) return null;
      const user = await this.store.getUser(apiKey.userId);
      return user ? { kind: 'user', user, key: apiKey } : null;
    }
    const worker = await this.store.findWorkerByKeyHash(hash);
    if (!worker) return null;
    const endpoint = await this.store.getEndpoint(null, worker.endpointId);
    return endpoint ? { kind: 'worker', worker, userId: endpoint.userId } : null;
  }

  /** Forget cached resolutions here and on every other node (a worker was removed, a key revoked). */
  invalidate(): void {
    this.bus.publish(topics.accounts);
  }
}
