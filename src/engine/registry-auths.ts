import { newRegistryAuthId, REGISTRY_AUTH_ID_PATTERN, TEXT_MAX, type RegistryAuthRecord } from '../domain/index.ts';
import { invalidField, WharfError } from '../errors/index.ts';
import type { Store } from '../store/index.ts';
import { nameKept, refuseInUse } from './resource-rules.ts';
import type { SecretBox } from './secrets.ts';

export interface RegistryCredentials {
  username: string;
  password: string;
}

/** What any API shows of a registry auth: never the username or password. */
export interface RegistryAuthView {
  id: string;
  name: string;
}

const view = (r: RegistryAuthRecord): RegistryAuthView => ({ id: r.id, name: r.name });

/** Both given, and no longer than the REST schema allows (TEXT_MAX): the same bounds over GraphQL. */
function checkCredentials(c: RegistryCredentials): void {
  if (c.username === '') throw invalidField('username', 'username must not be empty');
  if (c.password === '') throw invalidField('password', 'password must not be empty');
  if (c.username.length > TEXT_MAX.registryUsername) {
    throw invalidField('username', `username must have at most ${TEXT_MAX.registryUsername} characters`);
  }
  if (c.password.length > TEXT_MAX.registryPassword) {
    throw invalidField('password', `password must have at most ${TEXT_MAX.registryPassword} characters`);
  }
}

/**
 * Container registry credentials (DESIGN.md §3 "Registry credentials"): sealed with AES-256-GCM before they reach the
 * store, bound to their id and owner, never returned by an API and never logged; only executors pulling an image
 * get them back, through `credentials()`.
 */
export class RegistryAuths {
  private readonly store: Store;
  private readonly box: SecretBox;

  constructor(store: Store, box: SecretBox) {
    this.store = store;
    this.box = box;
  }

  private seal(userId: string, id: string, c: RegistryCredentials): string {
    return this.box.seal(JSON.stringify({ username: c.username, password: c.password }), `${userId}/${id}`);
  }

  /** A malformed id is a 400 naming the field; a well-formed unknown one (or another user's) a 404. */
  private async record(userId: string, id: string): Promise<RegistryAuthRecord> {
    if (!REGISTRY_AUTH_ID_PATTERN.test(id)) {
      throw invalidField('containerRegistryAuthId', `${JSON.stringify(id)} is not a container registry auth id`);
    }
    const r = await this.store.getRegistryAuth(userId, id);
    if (!r) throw new WharfError('REGISTRY_AUTH_NOT_FOUND', { containerRegistryAuthId: id });
    return r;
  }

  async create(userId: string, input: { name: string } & RegistryCredentials): Promise<RegistryAuthView> {
    if (input.name.trim() === '') throw invalidField('name', 'name must not be empty');
    if (input.name.length > TEXT_MAX.name)
      throw invalidField('name', `name must have at most ${TEXT_MAX.name} characters`);
    checkCredentials(input);
    if ((await this.store.listRegistryAuths(userId)).some((r) => r.name === input.name)) {
      throw new WharfError('NAME_TAKEN', { resource: 'container registry auth', name: input.name });
    }
    const id = newRegistryAuthId();
    const r: RegistryAuthRecord = {
      id,
      userId,
      name: input.name,
      sealed: this.seal(userId, id, input),
      createdAt: Date.now(),
    };
    await nameKept(() => this.store.createRegistryAuth(r), 'container registry auth', r.name);
    return view(r);
  }

  async get(userId: string, id: string): Promise<RegistryAuthView> {
    return view(await this.record(userId, id));
  }

  async list(userId: string): Promise<RegistryAuthView[]> {
    return (await this.store.listRegistryAuths(userId)).map(view);
  }

  /** Replace the credentials (the name stays). */
  async update(userId: string, id: string, c: RegistryCredentials): Promise<RegistryAuthView> {
    const before = await this.record(userId, id);
    checkCredentials(c);
    const after = { ...before, sealed: this.seal(userId, id, c) };
    await this.store.updateRegistryAuth(after);
    return view(after);
  }

  /** Refused with RESOURCE_IN_USE while a template names it. */
  async delete(userId: string, id: string): Promise<void> {
    return this.store.exclusively(userId, async () => {
      await this.record(userId, id);
      refuseInUse('Container registry auth', id, await this.store.templatesUsingRegistryAuth(userId, id), 'template');
      await this.store.deleteRegistryAuth(userId, id);
    });
  }

  /** Decrypted credentials, for the Docker and Kubernetes executors only. */
  async credentials(userId: string, id: string): Promise<RegistryCredentials> {
    const r = await this.record(userId, id);
    const parsed = JSON.parse(
      this.box.open(r.sealed, `${userId}/${id}`, `the credentials of container registry auth ${id}`),
    ) as RegistryCredentials;
    return { username: parsed.username, password: parsed.password };
  }
}
