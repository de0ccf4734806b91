import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { WharfError } from '../errors/index.ts';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Starts every value sealed by sealText. What earlier versions stored in plain text in the same places (a job's
 * s3Config as JSON, `{…}`; a webhook secret, `whsec_…`) never does, so the two are told apart.
 */
const SEALED_PREFIX = 'sealed:v1:';

/** Whether stored text was sealed by sealText (else it is plain text an earlier version wrote). */
export const isSealed = (stored: string): boolean => stored.startsWith(SEALED_PREFIX);

/**
 * A sealed value that does not open with this server's key: sealed with another one (a different `--secret-key`, or
 * another data directory's `secret.key`), or bound to another record. Names the record (`what`), never the value;
 * an API answers it as SECRET_UNREADABLE.
 */
export class SecretUnreadableError extends WharfError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('SECRET_UNREADABLE', { what }, options);
    this.name = 'SecretUnreadableError';
  }
}

/**
 * AES-256-GCM for secrets at rest (registry credentials, jobs' s3Config, webhook secrets). Each value gets a fresh
 * IV; the associated data binds a ciphertext to its record, so a sealed value copied onto another record (or user)
 * fails to open.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`the secret key must be 32 bytes, got ${key.length}`);
    this.key = key;
  }

  seal(plain: string, aad: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** What seal made, opened. One that does not open throws a SecretUnreadableError naming `what`, never the value. */
  open(sealed: string, aad: string, what: string): string {
    try {
      const raw = Buffer.from(sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch (error) {
      throw new SecretUnreadableError(what, { cause: error });
    }
  }

  /** `plain` sealed for a text column that rows of earlier versions hold in plain text: marked (isSealed). */
  sealText(plain: string, aad: string): string {
    return SEALED_PREFIX + this.seal(plain, aad);
  }

  /**
   * Text stored by sealText, opened; plain text an earlier version stored (no mark) is returned as it is. A value
   * that does not open throws a SecretUnreadableError naming `what`.
   */
  openText(stored: string, aad: string, what: string): string {
    return isSealed(stored) ? this.open(stored.slice(SEALED_PREFIX.length), aad, what) : stored;
  }
}

/** The server's secret key is not the one the store's secrets were sealed with (checkSecretKey): a setting to fix. */
export class SecretKeyMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyMismatchError';
  }
}

const KEY_CHECK = 'secret-key-check';
const KEY_CHECK_TEXT = 'the key Wharf seals secrets with';

/**
 * Refuse to run with a secret key other than the one the store's secrets were sealed with. Such a server (a node
 * given another WHARF_SECRET_KEY than the cluster's, a data directory whose secret.key was replaced) would fail
 * every secret sealed before, and seal new ones (a job's s3Config, a registry credential) that the other nodes
 * cannot open. The store keeps a value sealed with the first key it saw; a key that cannot open it is refused,
 * unless `acceptNew` (the old key is lost for good), which makes this key the one checked from then on.
 */
export async function checkSecretKey(
  store: {
    claimSetting(key: string, value: string): Promise<string>;
    putSetting(key: string, value: string): Promise<void>;
  },
  box: SecretBox,
  opts: { acceptNew: boolean; keySource: string },
): Promise<void> {
  const mine = box.seal(KEY_CHECK_TEXT, KEY_CHECK);
  const stored = await store.claimSetting(KEY_CHECK, mine);
  try {
    if (box.open(stored, KEY_CHECK, 'the secret key check') === KEY_CHECK_TEXT) return;
  } catch (error) {
    if (!(error instanceof SecretUnreadableError)) throw error;
  }
  if (opts.acceptNew) return store.putSetting(KEY_CHECK, mine);
  throw new SecretKeyMismatchError(
    `the secret key (${opts.keySource}) is not the one the secrets in this store were sealed with: start with that ` +
      "key (--secret-key / WHARF_SECRET_KEY, the same on every node), or restore the data directory's secret.key; " +
      'if it is lost for good, start once with --accept-new-secret-key (what it sealed stays unreadable until recreated)',
  );
}

/** The configured key: base64 of 32 bytes (`openssl rand -base64 32`). */
export function decodeSecretKey(text: string): Buffer {
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) {
    throw new Error(
      `--secret-key / WHARF_SECRET_KEY must be base64 of 32 bytes (openssl rand -base64 32); it decodes to ${key.length}`,
    );
  }
  return key;
}

/**
 * The key from configuration (base64 of 32 bytes), else `<dataDir>/secret.key`, created once with mode 0600.
 * `wx` makes creation exclusive: two nodes starting at once on a shared directory end up with the same key.
 */
export function loadSecretKey(configured: string | null, dataDir: string): Buffer {
  if (configured) return decodeSecretKey(configured);
  const path = join(dataDir, 'secret.key');
  if (!existsSync(path)) createDurably(path, `${randomBytes(32).toString('base64')}\n`);
  chmodSync(path, 0o600);
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${path} does not hold base64 of 32 bytes`);
  return key;
}

/**
 * Create `path` holding `text`, whole or not at all, and durable before it is used: a crash or a file system gone
 * read-only a moment after the first start must not leave an empty key behind (the server could not start again,
 * and the secrets sealed with the key would be lost). Written to a temporary file and fsynced, then linked into
 * place, which fails if another node created the key first (creation stays exclusive), then the directory fsynced.
 */
function createDurably(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(tmp, { force: true });
  }
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
