import pg from 'pg';
import { WharfError } from '../../errors/index.ts';

/** What a verb needs of a connection: a pooled client inside a transaction, or the pool itself for plain reads. */
export interface Conn {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

export interface PgTarget {
  /** Connection settings for pg (a Pool or a dedicated Client). */
  config: pg.ClientConfig;
  /** The schema every table lives in (search_path), or null for the server's default. */
  schema: string | null;
  /** Pool size from the URL's `pool_size` parameter, when given. */
  poolSize: number | null;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * `postgres://user@host:5432/db?schema=wharf&pool_size=20` → pg settings. `schema` and `pool_size` are Wharf's own
 * parameters, taken out of the URL: the schema is applied as search_path on every connection (so several deployments
 * or test runs can share one database), the pool size bounds this node's connections.
 */
export function parseTarget(url: string, schemaOverride?: string | null): PgTarget {
  const u = new URL(url);
  const schema = schemaOverride ?? u.searchParams.get('schema');
  const poolText = u.searchParams.get('pool_size');
  u.searchParams.delete('schema');
  u.searchParams.delete('pool_size');
  if (schema !== null && !SCHEMA_NAME.test(schema)) {
    throw new Error(`schema "${schema}" must be a plain identifier (letters, digits, underscores)`);
  }
  const poolSize = poolText === null ? null : Number(poolText);
  if (poolSize !== null && !(Number.isInteger(poolSize) && poolSize >= 1 && poolSize <= 1000)) {
    throw new Error(`pool_size "${poolText}" must be an integer from 1 to 1000`);
  }
  return {
    schema,
    poolSize,
    config: {
      connectionString: u.toString(),
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
      // Timestamps are BIGINT milliseconds and counts are BIGINT: numbers, not strings, for every row mapper.
      types: { getTypeParser: typeParser },
      // A node whose database went away must answer 503 within seconds, never hang a request.
      connectionTimeoutMillis: 5000,
      query_timeout: 30_000,
      keepAlive: true,
      application_name: 'wharf',
    },
  };
}

const INT8 = 20;
const NUMERIC = 1700;
function typeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8 || oid === NUMERIC) return (v: string) => Number(v);
  return (pg.types.getTypeParser as (oid: number, format?: string) => (value: string) => unknown)(oid, format);
}

/** Serialization failures and deadlocks: nothing was applied, the transaction can simply run again. */
const RETRYABLE = new Set(['40001', '40P01']);
/** SQLSTATEs meaning "the database is not there right now" (class 08 is handled by prefix). */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400', '25006']);
const UNAVAILABLE_SYSCALLS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error|Cannot use a pool after calling end|Client was closed|not queryable/i;

export function codeOf(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
}

/** True when the error says the database cannot be reached (as opposed to a constraint or a bug). */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof WharfError) return error.code === 'STORE_UNAVAILABLE';
  const code = codeOf(error);
  if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SYSCALLS.has(code)) return true;
  if (error instanceof AggregateError) return error.errors.some(isConnectionError);
  return error instanceof Error && UNAVAILABLE_MESSAGES.test(error.message);
}

/**
 * Connection loss becomes STORE_UNAVAILABLE (503, "nothing was acknowledged; retry"); text PostgreSQL cannot store
 * (U+0000 in a name or an id: 22021, or in jsonb: 22P05), which SQLite takes, is bad input (400), not a server
 * fault; anything else passes.
 */
export function storeError(error: unknown): unknown {
  if (error instanceof WharfError) return error;
  const code = codeOf(error);
  if (code === '22021' || code === '22P05') {
    return new WharfError('VALIDATION_FAILED', { reason: 'text must not contain the NUL character (U+0000)' });
  }
  if (!isConnectionError(error)) return error;
  const detail = error instanceof Error && error.message ? error.message : codeOf(error) || String(error);
  return new WharfError('STORE_UNAVAILABLE', { reason: `PostgreSQL is unreachable (${detail})` }, { cause: error });
}

/** A pooled client in use: `broken` once its connection failed; `done()` returns it, or destroys a broken one. */
interface Checkout {
  readonly client: pg.PoolClient;
  broken: Error | undefined;
  done(): void;
}

/**
 * A client of `pool`. A checked-out client whose connection dies emits 'error'; without a listener that would crash
 * the process. The failure reaches the query in flight anyway, and the client is destroyed rather than returned.
 */
async function checkout(pool: pg.Pool): Promise<Checkout> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError(error);
  }
  const onError = (error: Error): void => {
    c.broken = error;
  };
  const c: Checkout = {
    client,
    broken: undefined,
    done: () => {
      client.off('error', onError);
      client.release(c.broken);
    },
  };
  client.on('error', onError);
  return c;
}

/** Advisory locks held or awaited at once by one node (management changes: rare, each a few queries long). */
const LOCK_POOL_SIZE = 4;

/**
 * The pool, and the one way to run a verb: `tx` opens a transaction on a pooled client, commits, and only then
 * resolves, so an acknowledged write is durable. A connection that broke is destroyed rather than returned to the
 * pool; the next checkout dials again, which is all the recovery a returning database needs.
 */
export class Db {
  readonly pool: pg.Pool;
  readonly schema: string | null;
  private readonly target: PgTarget;
  /** Connections that hold advisory locks (advisoryLocked), made on first use. */
  private lockPool: pg.Pool | undefined;

  constructor(target: PgTarget, poolSize?: number) {
    this.target = target;
    this.schema = target.schema;
    const max = poolSize ?? target.poolSize ?? 20;
    this.pool = new pg.Pool({ ...target.config, max, idleTimeoutMillis: 30_000 });
    // An idle client whose server went away emits 'error' on the pool; unhandled it would crash the process. The
    // pool drops that client by itself.
    this.pool.on('error', () => {});
  }

  /** A dedicated connection outside the pool (LISTEN, the leader's advisory lock). */
  client(overrides: Partial<pg.ClientConfig> = {}): pg.Client {
    return new pg.Client({ ...this.target.config, ...overrides });
  }

  /** A single statement in its own implicit transaction (reads, and writes that are one statement). */
  async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows;
    } catch (error) {
      throw storeError(error);
    }
  }

  async tx<T>(fn: (c: Conn) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await checkout(this.pool);
      try {
        await c.client.query('BEGIN');
        const result = await fn(c.client);
        await c.client.query('COMMIT');
        return result;
      } catch (error) {
        if (isConnectionError(error)) {
          // The server rolls back a transaction whose connection died: nothing half-applied is left behind.
          c.broken = error as Error;
          throw storeError(error);
        }
        await c.client.query('ROLLBACK').catch((e: unknown) => {
          c.broken = e as Error;
        });
        if (!c.broken && RETRYABLE.has(codeOf(error)) && attempt < 5) continue;
        throw storeError(error);
      } finally {
        c.done();
      }
    }
  }

  /**
   * Run `fn` holding PostgreSQL's session advisory lock on `key`, so every node waits for it. The lock is held on a
   * connection of a small pool of its own: `fn` runs its queries on the main pool, so lock holders never take the
   * connections they (or takes and results) need, and at most LOCK_POOL_SIZE locks are held or awaited per node.
   */
  async advisoryLocked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (!this.lockPool) {
      this.lockPool = new pg.Pool({ ...this.target.config, max: LOCK_POOL_SIZE, idleTimeoutMillis: 30_000 });
      this.lockPool.on('error', () => {}); // as the main pool's
    }
    const c = await checkout(this.lockPool);
    try {
      try {
        await c.client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
      } catch (error) {
        c.broken = error as Error;
        throw storeError(error);
      }
      try {
        return await fn();
      } finally {
        // A connection that died took its session's locks with it.
        await c.client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]).catch((e: unknown) => {
          c.broken = e as Error;
        });
      }
    } finally {
      c.done();
    }
  }

  async close(): Promise<void> {
    await this.lockPool?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }
}
