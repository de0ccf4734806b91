import { newSecretId, SECRET_ID_PATTERN, SECRET_NAME_PATTERN, TEXT_MAX, type SecretRecord } from '../domain/index.ts';
import { invalidField, WharfError } from '../errors/index.ts';
import type { Store } from '../store/index.ts';
import { nameKept } from './resource-rules.ts';
import type { SecretBox } from './secrets.ts';

/** What any API shows of a secret: never its value. */
export interface SecretView {
  id: string;
  name: string;
  description: string;
  /** ISO 8601. */
  createdAt: string;
}

export interface SecretInput {
  name: string;
  value: string;
  description?: string | null | undefined;
}

const view = (r: SecretRecord): SecretView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  createdAt: new Date(r.createdAt).toISOString(),
});

/** The associated data of a sealed value: its record and owner, so that a value copied elsewhere does not open. */
const aad = (userId: string, id: string): string => `secret/${userId}/${id}`;

function checkInput(input: SecretInput): void {
  const { name, value, description } = input;
  if (name === '') throw invalidField('name', 'name must not be empty');
  if (name.length > TEXT_MAX.secretName) {
    throw invalidField('name', `name must have at most ${TEXT_MAX.secretName} characters`);
  }
  if (!SECRET_NAME_PATTERN.test(name)) {
    throw invalidField('name', `name ${JSON.stringify(name)} may hold only letters, digits, _ and -`);
  }
  if (value === '') throw invalidField('value', 'value must not be empty');
  // No environment variable can hold one; the failed start's error would quote the value.
  if (value.includes('\0')) throw invalidField('value', 'value must not contain NUL characters');
  if (Buffer.byteLength(value, 'utf8') > TEXT_MAX.secretValue) {
    throw invalidField('value', `value must have at most ${TEXT_MAX.secretValue} bytes`);
  }
  if ((description ?? '').length > TEXT_MAX.secretDescription) {
    throw invalidField('description', `description must have at most ${TEXT_MAX.secretDescription} characters`);
  }
}

/**
 * A name some env references that the owner has no secret by (the start of a worker fails with it). Names the
 * secrets, never a value.
 */
export class MissingSecretsError extends Error {
  readonly names: string[];

  constructor(names: string[]) {
    const list = names.map((n) => `${JSON.stringify(n)} ({{ RUNPOD_SECRET_${n} }})`).join(', ');
    const them = names.length > 1 ? 'them' : 'it';
    super(
      `env references secret${names.length > 1 ? 's' : ''} ${list}, which the endpoint's owner does not have: create ${them} with secretCreate or change the env`,
    );
    this.name = 'MissingSecretsError';
    this.names = names;
  }
}

/**
 * Users' named secrets (RunPod "Secrets"): sealed with AES-256-GCM before they reach the store, bound to their id and
 * owner, never returned by an API and never logged. Only a worker's environment gets a value back, through
 * `values()`, where its template or endpoint env references the secret by name.
 */
export class UserSecrets {
  private readonly store: Store;
  private readonly box: SecretBox;

  /** Told, with the owner's id, after a secret is created: starts that failed for want of it may succeed now. */
  readonly onCreate = new Set<(userId: string) => void>();

  constructor(store: Store, box: SecretBox) {
    this.store = store;
    this.box = box;
  }

  async create(userId: string, input: SecretInput): Promise<SecretView> {
    checkInput(input);
    if ((await this.store.listSecrets(userId)).some((r) => r.name === input.name)) {
      throw new WharfError('NAME_TAKEN', { resource: 'secret', name: input.name });
    }
    const id = newSecretId();
    const r: SecretRecord = {
      id,
      userId,
      name: input.name,
      description: input.description ?? '',
      sealed: this.box.seal(input.value, aad(userId, id)),
      createdAt: Date.now(),
    };
    await nameKept(() => this.store.createSecret(r), 'secret', r.name);
    for (const listener of this.onCreate) listener(userId);
    return view(r);
  }

  async list(userId: string): Promise<SecretView[]> {
    return (await this.store.listSecrets(userId)).map(view);
  }

  /**
   * A malformed id is a 400 naming the field; a well-formed unknown one (or another user's) a 404. Allowed while
   * templates reference it, as on RunPod: running workers keep their environment, the next start fails naming it.
   */
  async delete(userId: string, id: string): Promise<void> {
    if (!SECRET_ID_PATTERN.test(id)) throw invalidField('id', `${JSON.stringify(id)} is not a secret id`);
    if (!(await this.store.deleteSecret(userId, id))) throw new WharfError('SECRET_NOT_FOUND', { secretId: id });
  }

  /**
   * The values of the user's secrets by name, for a worker's environment. Any name the user has no secret by is a
   * MissingSecretsError naming them all.
   */
  async values(userId: string, names: Iterable<string>): Promise<Map<string, string>> {
    const wanted = new Set(names);
    if (wanted.size === 0) return new Map();
    const byName = new Map((await this.store.listSecrets(userId)).map((r) => [r.name, r]));
    const missing = [...wanted].filter((n) => !byName.has(n));
    if (missing.length > 0) throw new MissingSecretsError(missing);
    const out = new Map<string, string>();
    for (const name of wanted) {
      const r = byName.get(name)!;
      out.set(name, this.box.open(r.sealed, aad(userId, r.id), `secret ${JSON.stringify(name)}`));
    }
    return out;
  }
}
