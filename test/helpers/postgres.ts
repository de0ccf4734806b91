// PostgreSQL for the store and multi-node tests: the server CI starts on 127.0.0.1:5432 (database `test`), a fresh
// schema per store so that tests never see each other's rows, and the rule for a missing server: a failure under
// CI=true (the suites must run there), a skip with a printed reason everywhere else.

import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';

export const PG_URL = process.env.WHARF_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why PostgreSQL cannot be used (null when it can). Throws under CI=true: a missing database is a failure there. */
export async function pgUnavailable(what: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  let reason: string | null = null;
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    reason = `PostgreSQL at ${PG_URL} is not reachable (${(error as Error).message || String(error)})`;
  } finally {
    await client.end().catch(() => {});
  }
  if (reason && process.env.CI === 'true') {
    throw new Error(`${what}: ${reason}. CI must run the PostgreSQL suites (.ci/run starts the server).`);
  }
  if (reason) console.warn(`[skip] ${what}: ${reason}; set WHARF_TEST_PG_URL or start PostgreSQL to run it`);
  return reason;
}

/** A new schema name; drop it (and every other one this file made) with dropSchemas() in afterAll. */
const made: string[] = [];
export function newSchema(): string {
  const name = `wharf_test_${randomBytes(6).toString('hex')}`;
  made.push(name);
  return name;
}

export async function dropSchemas(): Promise<void> {
  if (made.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  client.on('error', () => {});
  try {
    await client.connect();
    for (const name of made.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } catch {
    // Nothing to clean when the server is gone.
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * `PG_URL` pointed at one schema (Wharf's `?schema=` parameter), for `wharf serve --store`. A small pool: suites run
 * in parallel against one server whose max_connections is 100.
 */
export function schemaUrl(schema: string, poolSize = 8): string {
  const u = new URL(PG_URL);
  u.searchParams.set('schema', schema);
  u.searchParams.set('pool_size', String(poolSize));
  return u.toString();
}

/**
 * A TCP proxy in front of PostgreSQL, to take the database away from a store and give it back: `cut()` drops every
 * connection and refuses new ones (as a database that went down), `restore()` listens again on the same port.
 * `stall()` silences the connections open now, in both directions, without closing them (as a NAT or a network
 * partition that drops a connection without a word): nothing tells their ends; new connections pass as before.
 */
export interface PgProxy {
  /** PG_URL through the proxy, with the given schema. */
  url(schema: string): string;
  cut(): Promise<void>;
  stall(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startPgProxy(): Promise<PgProxy> {
  const target = new URL(PG_URL);
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const cut = async (): Promise<void> => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    sockets.clear();
    await closed;
  };
  return {
    url(schema) {
      const u = new URL(PG_URL);
      u.port = String(port);
      u.searchParams.set('schema', schema);
      u.searchParams.set('pool_size', '4');
      return u.toString();
    },
    cut,
    stall() {
      // Still open (and closed by cut() or close()), but nothing passes any more either way.
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      pairs.clear();
    },
    restore: () => listen(port),
    close: async () => {
      if (server.listening) await cut();
    },
  };
}
