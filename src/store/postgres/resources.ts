import type { ApiKey, Endpoint, Template, User } from '../../domain/index.ts';
import type { AccountStore, ResourceStore } from '../types.ts';
import { KeyedMutex } from '../keyed-mutex.ts';
import type { Conn, Db } from './db.ts';
import { docs, toWorker, type WorkerRow } from './rows.ts';

const INSERT_TEMPLATE = 'INSERT INTO templates (id, user_id, name, doc) VALUES ($1, $2, $3, $4)';
const UPDATE_TEMPLATE = 'UPDATE templates SET name = $1, doc = $2 WHERE id = $3 AND user_id = $4';
const DELETE_TEMPLATE = 'DELETE FROM templates WHERE id = $1 AND user_id = $2 RETURNING id';
const INSERT_ENDPOINT = 'INSERT INTO endpoints (id, user_id, template_id, doc) VALUES ($1, $2, $3, $4)';
const UPDATE_ENDPOINT = 'UPDATE endpoints SET template_id = $1, doc = $2 WHERE id = $3 AND user_id = $4';
const templateRow = (t: Template) => [t.id, t.userId, t.name, JSON.stringify(t)];
const templateUpdate = (t: Template) => [t.name, JSON.stringify(t), t.id, t.userId];
const endpointRow = (e: Endpoint) => [e.id, e.userId, e.templateId, JSON.stringify(e)];
const endpointUpdate = (e: Endpoint) => [e.templateId, JSON.stringify(e), e.id, e.userId];

/** Deletes the endpoint with its jobs, workers and history, in the caller's transaction. */
async function deleteEndpointIn(c: Conn, userId: string, id: string): Promise<boolean> {
  const gone = await c.query('DELETE FROM endpoints WHERE id = $1 AND user_id = $2', [id, userId]);
  if (gone.rowCount === 0) return false;
  // "Deleting an endpoint permanently removes its configuration, logs and job history" (interface §3.2).
  const jobs = 'SELECT id FROM jobs WHERE endpoint_id = $1';
  await c.query(`DELETE FROM stream_chunks WHERE job_id IN (${jobs})`, [id]);
  await c.query(`DELETE FROM stream_cursors WHERE job_id IN (${jobs})`, [id]);
  await c.query('DELETE FROM jobs WHERE endpoint_id = $1', [id]);
  await c.query('DELETE FROM tombstones WHERE endpoint_id = $1', [id]);
  await c.query('DELETE FROM job_stops WHERE worker_id IN (SELECT id FROM workers WHERE endpoint_id = $1)', [id]);
  await c.query('DELETE FROM workers WHERE endpoint_id = $1', [id]);
  return true;
}

/**
 * Users, keys, templates and endpoints stored as JSON documents with their lookup columns. Unlike the SQLite store,
 * endpoints are not cached in memory: other nodes change them, and a stale copy would outlive their change.
 */
export function resourceVerbs(db: Db): AccountStore & ResourceStore {
  const one = async <T>(sql: string, params: unknown[]): Promise<T | null> =>
    docs<T>(await db.query<{ doc: string }>(sql, params))[0] ?? null;
  const many = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
    docs<T>(await db.query<{ doc: string }>(sql, params));
  // The same user's changes queue here first, so a node holds at most one lock connection per user.
  const management = new KeyedMutex();

  return {
    exclusively<T>(userId: string, fn: () => Promise<T>): Promise<T> {
      return management.run(userId, () => db.advisoryLocked(`wharf-management:${userId}`, fn));
    },

    async createUser(u: User) {
      await db.query('INSERT INTO users (id, doc) VALUES ($1, $2)', [u.id, JSON.stringify(u)]);
    },
    getUser: (id) => one<User>('SELECT doc FROM users WHERE id = $1', [id]),
    listUsers: () => many<User>('SELECT doc FROM users ORDER BY seq'),

    async createApiKey(k: ApiKey) {
      await db.query('INSERT INTO api_keys (id, user_id, hash, doc) VALUES ($1, $2, $3, $4)', [
        k.id,
        k.userId,
        k.hash,
        JSON.stringify(k),
      ]);
    },
    findApiKeyByHash: (hash) => one<ApiKey>('SELECT doc FROM api_keys WHERE hash = $1', [hash]),
    listApiKeys: (userId) => many<ApiKey>('SELECT doc FROM api_keys WHERE user_id = $1 ORDER BY seq', [userId]),
    revokeApiKey(userId, keyId, now) {
      return db.tx(async (c) => {
        const r = await c.query<{ doc: string }>('SELECT doc FROM api_keys WHERE id = $1 AND user_id = $2 FOR UPDATE', [
          keyId,
          userId,
        ]);
        const key = docs<ApiKey>(r.rows)[0];
        if (!key || key.revokedAt !== null) return false;
        await c.query('UPDATE api_keys SET doc = $1 WHERE id = $2', [
          JSON.stringify({ ...key, revokedAt: now }),
          keyId,
        ]);
        return true;
      });
    },

    async createTemplate(t: Template) {
      await db.query(INSERT_TEMPLATE, templateRow(t));
    },
    getTemplate: (userId, id) =>
      one<Template>('SELECT doc FROM templates WHERE id = $1 AND user_id = $2', [id, userId]),
    listTemplates: (userId) => many<Template>('SELECT doc FROM templates WHERE user_id = $1 ORDER BY seq', [userId]),
    async updateTemplate(t) {
      await db.query(UPDATE_TEMPLATE, templateUpdate(t));
    },
    async deleteTemplate(userId, id) {
      const rows = await db.query(DELETE_TEMPLATE, [id, userId]);
      return rows.length > 0;
    },

    async createEndpoint(e: Endpoint) {
      await db.query(INSERT_ENDPOINT, endpointRow(e));
    },
    getEndpoint: (userId, id) =>
      userId === null
        ? one<Endpoint>('SELECT doc FROM endpoints WHERE id = $1', [id])
        : one<Endpoint>('SELECT doc FROM endpoints WHERE id = $1 AND user_id = $2', [id, userId]),
    async getEndpointAndWorker(userId, endpointId, workerId) {
      const [r] = await db.query<{ endpoint_doc: string } & Partial<WorkerRow>>(
        `SELECT e.doc AS endpoint_doc, w.* FROM endpoints e LEFT JOIN workers w ON w.id = $2
         WHERE e.id = $1 AND ($3::text IS NULL OR e.user_id = $3)`,
        [endpointId, workerId, userId],
      );
      if (!r) return { endpoint: null, worker: null };
      const endpoint = docs<Endpoint>([{ doc: r.endpoint_doc }])[0]!;
      return { endpoint, worker: r.id === null || r.id === undefined ? null : toWorker(r as WorkerRow) };
    },
    listEndpoints: (userId) =>
      userId === null
        ? many<Endpoint>('SELECT doc FROM endpoints ORDER BY seq')
        : many<Endpoint>('SELECT doc FROM endpoints WHERE user_id = $1 ORDER BY seq', [userId]),
    async updateEndpoint(e) {
      await db.query(UPDATE_ENDPOINT, endpointUpdate(e));
    },
    deleteEndpoint: (userId, id) => db.tx((c) => deleteEndpointIn(c, userId, id)),
    async endpointsUsingTemplate(userId, templateId) {
      const rows = await db.query<{ id: string }>(
        'SELECT id FROM endpoints WHERE user_id = $1 AND template_id = $2 ORDER BY seq',
        [userId, templateId],
      );
      return rows.map((r) => r.id);
    },
    saveTemplateAndEndpoints(template, endpoints) {
      return db.tx(async (c) => {
        if (template && 'create' in template) await c.query(INSERT_TEMPLATE, templateRow(template.create));
        else if (template && 'update' in template) await c.query(UPDATE_TEMPLATE, templateUpdate(template.update));
        else if (template) await c.query(DELETE_TEMPLATE, [template.delete.id, template.delete.userId]);
        for (const w of endpoints) {
          if ('create' in w) await c.query(INSERT_ENDPOINT, endpointRow(w.create));
          else if ('update' in w) await c.query(UPDATE_ENDPOINT, endpointUpdate(w.update));
          else await deleteEndpointIn(c, w.delete.userId, w.delete.id);
        }
      });
    },
  };
}
