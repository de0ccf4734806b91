import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { ApiKey, Endpoint, Template, User } from '../../domain/index.ts';
import { statementCache } from './statements.ts';

/** Endpoints kept parsed in memory (getEndpoint); the oldest entry goes first past this many. */
const ENDPOINT_CACHE_MAX = 10_000;

function freezeNested(e: Endpoint): Endpoint {
  for (const v of Object.values(e)) if (typeof v === 'object' && v !== null) Object.freeze(v);
  return Object.freeze(e);
}

/** Users, keys, templates and endpoints stored as JSON documents with their lookup columns. */
export class SqliteResources {
  private readonly q: (sql: string) => StatementSync;
  /** Parsed endpoints by id: see getEndpoint. */
  private readonly endpoints = new Map<string, Endpoint>();

  constructor(db: DatabaseSync) {
    this.q = statementCache(db);
  }

  private docs<T>(sql: string, ...params: Array<string | number>): T[] {
    return (this.q(sql).all(...params) as Array<{ doc: string }>).map((r) => JSON.parse(r.doc) as T);
  }

  private doc<T>(sql: string, ...params: Array<string | number>): T | null {
    const r = this.q(sql).get(...params) as { doc: string } | undefined;
    return r ? (JSON.parse(r.doc) as T) : null;
  }

  createUser(u: User): void {
    this.q('INSERT INTO users (id, doc) VALUES (?, ?)').run(u.id, JSON.stringify(u));
  }
  getUser(id: string): User | null {
    return this.doc<User>('SELECT doc FROM users WHERE id = ?', id);
  }
  listUsers(): User[] {
    return this.docs<User>('SELECT doc FROM users ORDER BY rowid');
  }

  createApiKey(k: ApiKey): void {
    this.q('INSERT INTO api_keys (id, user_id, hash, doc) VALUES (?, ?, ?, ?)').run(
      k.id,
      k.userId,
      k.hash,
      JSON.stringify(k),
    );
  }
  findApiKeyByHash(hash: string): ApiKey | null {
    return this.doc<ApiKey>('SELECT doc FROM api_keys WHERE hash = ?', hash);
  }
  listApiKeys(userId: string): ApiKey[] {
    return this.docs<ApiKey>('SELECT doc FROM api_keys WHERE user_id = ? ORDER BY rowid', userId);
  }
  revokeApiKey(userId: string, keyId: string, now: number): boolean {
    const key = this.doc<ApiKey>('SELECT doc FROM api_keys WHERE id = ? AND user_id = ?', keyId, userId);
    if (!key || key.revokedAt !== null) return false;
    this.q('UPDATE api_keys SET doc = ? WHERE id = ?').run(JSON.stringify({ ...key, revokedAt: now }), keyId);
    return true;
  }

  createTemplate(t: Template): void {
    this.q('INSERT INTO templates (id, user_id, name, doc) VALUES (?, ?, ?, ?)').run(
      t.id,
      t.userId,
      t.name,
      JSON.stringify(t),
    );
  }
  getTemplate(userId: string, id: string): Template | null {
    return this.doc<Template>('SELECT doc FROM templates WHERE id = ? AND user_id = ?', id, userId);
  }
  listTemplates(userId: string): Template[] {
    return this.docs<Template>('SELECT doc FROM templates WHERE user_id = ? ORDER BY rowid', userId);
  }
  updateTemplate(t: Template): void {
    this.q('UPDATE templates SET name = ?, doc = ? WHERE id = ? AND user_id = ?').run(
      t.name,
      JSON.stringify(t),
      t.id,
      t.userId,
    );
  }
  deleteTemplate(userId: string, id: string): boolean {
    return Number(this.q('DELETE FROM templates WHERE id = ? AND user_id = ?').run(id, userId).changes) > 0;
  }

  createEndpoint(e: Endpoint): void {
    this.endpoints.delete(e.id);
    this.q('INSERT INTO endpoints (id, user_id, template_id, doc) VALUES (?, ?, ?, ?)').run(
      e.id,
      e.userId,
      e.templateId,
      JSON.stringify(e),
    );
  }
  /**
   * Every queue and worker request looks its endpoint up, so parsed endpoints are kept by id. This process is the
   * only writer of the table (the SQLite store is single-node), and create/update/delete below drop the entry inside
   * their transaction, so the cache never outlives a change; a rolled-back change only costs a re-read. Callers get
   * a shallow copy; the nested arrays and `env` are frozen because copies share them.
   */
  getEndpoint(userId: string | null, id: string): Endpoint | null {
    let e = this.endpoints.get(id);
    if (!e) {
      const found = this.doc<Endpoint>('SELECT doc FROM endpoints WHERE id = ?', id);
      if (!found) return null;
      e = freezeNested(found);
      if (this.endpoints.size >= ENDPOINT_CACHE_MAX) this.endpoints.delete(this.endpoints.keys().next().value!);
      this.endpoints.set(id, e);
    }
    return userId === null || e.userId === userId ? { ...e } : null;
  }
  listEndpoints(userId: string | null): Endpoint[] {
    return userId === null
      ? this.docs<Endpoint>('SELECT doc FROM endpoints ORDER BY rowid')
      : this.docs<Endpoint>('SELECT doc FROM endpoints WHERE user_id = ? ORDER BY rowid', userId);
  }
  updateEndpoint(e: Endpoint): void {
    this.endpoints.delete(e.id);
    this.q('UPDATE endpoints SET template_id = ?, doc = ? WHERE id = ? AND user_id = ?').run(
      e.templateId,
      JSON.stringify(e),
      e.id,
      e.userId,
    );
  }
  deleteEndpoint(userId: string, id: string): boolean {
    this.endpoints.delete(id);
    const deleted = Number(this.q('DELETE FROM endpoints WHERE id = ? AND user_id = ?').run(id, userId).changes) > 0;
    if (deleted) {
      // "Deleting an endpoint permanently removes its configuration, logs and job history" (interface §3.2).
      this.q('DELETE FROM stream_chunks WHERE job_id IN (SELECT id FROM jobs WHERE endpoint_id = ?)').run(id);
      this.q('DELETE FROM stream_cursors WHERE job_id IN (SELECT id FROM jobs WHERE endpoint_id = ?)').run(id);
      this.q('DELETE FROM jobs WHERE endpoint_id = ?').run(id);
      // The triggers brought the endpoint's counters to zero; their rows go too.
      this.q('DELETE FROM job_counts WHERE endpoint_id = ? AND n = 0').run(id);
      this.q('DELETE FROM tombstones WHERE endpoint_id = ?').run(id);
      this.q('DELETE FROM job_stops WHERE worker_id IN (SELECT id FROM workers WHERE endpoint_id = ?)').run(id);
      this.q('DELETE FROM workers WHERE endpoint_id = ?').run(id);
    }
    return deleted;
  }
  endpointsUsingTemplate(userId: string, templateId: string): string[] {
    const rows = this.q('SELECT id FROM endpoints WHERE user_id = ? AND template_id = ?').all(
      userId,
      templateId,
    ) as Array<{
      id: string;
    }>;
    return rows.map((r) => r.id);
  }
}
