import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type {
  NetworkVolume,
  RegistryAuthRecord,
  SecretRecord,
  UsageRecord,
  UsageStart,
  User,
  VolumeUsage,
} from '../../domain/index.ts';
import type { UsageFilter } from '../types-volumes.ts';
import { toUsage, type UsageRow } from '../rows.ts';
import { statementCache } from './statements.ts';

/** Network volumes, registry auths, secrets, user settings and usage (store/types-volumes.ts). Called inside the write queue. */
export class SqliteManagement {
  private readonly db: DatabaseSync;
  private readonly q: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.q = statementCache(db);
  }

  private docs<T>(sql: string, ...params: SQLInputValue[]): T[] {
    return (this.q(sql).all(...params) as Array<{ doc: string }>).map((r) => JSON.parse(r.doc) as T);
  }

  private ids(sql: string, ...params: SQLInputValue[]): string[] {
    return (this.q(sql).all(...params) as Array<{ id: string }>).map((r) => r.id);
  }

  updateUser(u: User): void {
    // The webhook secret is the one stored now (setWebhookSecret's), never the one in a document read before.
    const doc = JSON.stringify(u);
    this.q(
      `UPDATE users SET doc = CASE WHEN json_extract(doc, '$.webhookSecret') IS NULL THEN json_remove(?, '$.webhookSecret')
         ELSE json_set(?, '$.webhookSecret', json_extract(doc, '$.webhookSecret')) END
       WHERE id = ?`,
    ).run(doc, doc, u.id);
  }

  createVolume(v: NetworkVolume): void {
    this.q('INSERT INTO network_volumes (id, user_id, doc) VALUES (?, ?, ?)').run(v.id, v.userId, JSON.stringify(v));
    this.openVolumeUsage(v, v.createdAt);
  }
  getVolume(userId: string | null, id: string): NetworkVolume | null {
    const [v] =
      userId === null
        ? this.docs<NetworkVolume>('SELECT doc FROM network_volumes WHERE id = ?', id)
        : this.docs<NetworkVolume>('SELECT doc FROM network_volumes WHERE id = ? AND user_id = ?', id, userId);
    return v ?? null;
  }
  listVolumes(userId: string): NetworkVolume[] {
    return this.docs<NetworkVolume>('SELECT doc FROM network_volumes WHERE user_id = ? ORDER BY rowid', userId);
  }
  updateVolume(v: NetworkVolume, at: number): void {
    const before = this.getVolume(v.userId, v.id);
    if (!before) return;
    this.q('UPDATE network_volumes SET doc = ? WHERE id = ? AND user_id = ?').run(JSON.stringify(v), v.id, v.userId);
    if (before.size !== v.size) {
      this.closeVolumeUsage(v.id, at);
      this.openVolumeUsage(v, at);
    }
  }
  deleteVolume(userId: string, id: string, at: number): boolean {
    const gone = Number(this.q('DELETE FROM network_volumes WHERE id = ? AND user_id = ?').run(id, userId).changes) > 0;
    if (gone) this.closeVolumeUsage(id, at);
    return gone;
  }
  endpointsUsingVolume(userId: string, volumeId: string): string[] {
    return this.ids(
      `SELECT id FROM endpoints WHERE user_id = ? AND (json_extract(doc, '$.networkVolumeId') = ?
         OR EXISTS (SELECT 1 FROM json_each(doc, '$.networkVolumeIds') WHERE value = ?)) ORDER BY rowid`,
      userId,
      volumeId,
      volumeId,
    );
  }
  private openVolumeUsage(v: NetworkVolume, at: number): void {
    this.q('INSERT INTO volume_usage (volume_id, user_id, size_gb, started_at) VALUES (?, ?, ?, ?)').run(
      v.id,
      v.userId,
      v.size,
      at,
    );
  }
  private closeVolumeUsage(volumeId: string, at: number): void {
    this.q('UPDATE volume_usage SET ended_at = MAX(started_at, ?) WHERE volume_id = ? AND ended_at IS NULL').run(
      at,
      volumeId,
    );
  }
  volumeUsage(userId: string, from: number, to: number): VolumeUsage[] {
    const rows = this.q(
      `SELECT volume_id, user_id, size_gb, started_at, ended_at FROM volume_usage
       WHERE user_id = ? AND started_at < ? AND (ended_at IS NULL OR ended_at > ?) ORDER BY started_at, rowid`,
    ).all(userId, to, from) as Array<{
      volume_id: string;
      user_id: string;
      size_gb: number;
      started_at: number;
      ended_at: number | null;
    }>;
    return rows.map((r) => ({
      volumeId: r.volume_id,
      userId: r.user_id,
      sizeGb: r.size_gb,
      startedAt: r.started_at,
      endedAt: r.ended_at,
    }));
  }

  createRegistryAuth(r: RegistryAuthRecord): void {
    this.q('INSERT INTO registry_auths (id, user_id, name, doc) VALUES (?, ?, ?, ?)').run(
      r.id,
      r.userId,
      r.name,
      JSON.stringify(r),
    );
  }
  getRegistryAuth(userId: string, id: string): RegistryAuthRecord | null {
    const [r] = this.docs<RegistryAuthRecord>(
      'SELECT doc FROM registry_auths WHERE id = ? AND user_id = ?',
      id,
      userId,
    );
    return r ?? null;
  }
  listRegistryAuths(userId: string): RegistryAuthRecord[] {
    return this.docs<RegistryAuthRecord>('SELECT doc FROM registry_auths WHERE user_id = ? ORDER BY rowid', userId);
  }
  updateRegistryAuth(r: RegistryAuthRecord): void {
    this.q('UPDATE registry_auths SET name = ?, doc = ? WHERE id = ? AND user_id = ?').run(
      r.name,
      JSON.stringify(r),
      r.id,
      r.userId,
    );
  }
  deleteRegistryAuth(userId: string, id: string): boolean {
    return Number(this.q('DELETE FROM registry_auths WHERE id = ? AND user_id = ?').run(id, userId).changes) > 0;
  }
  templatesUsingRegistryAuth(userId: string, id: string): string[] {
    return this.ids(
      `SELECT id FROM templates WHERE user_id = ? AND json_extract(doc, '$.containerRegistryAuthId') = ? ORDER BY rowid`,
      userId,
      id,
    );
  }

  createSecret(r: SecretRecord): void {
    this.q('INSERT INTO secrets (id, user_id, name, doc) VALUES (?, ?, ?, ?)').run(
      r.id,
      r.userId,
      r.name,
      JSON.stringify(r),
    );
  }
  listSecrets(userId: string): SecretRecord[] {
    return this.docs<SecretRecord>('SELECT doc FROM secrets WHERE user_id = ? ORDER BY rowid', userId);
  }
  deleteSecret(userId: string, id: string): boolean {
    return Number(this.q('DELETE FROM secrets WHERE id = ? AND user_id = ?').run(id, userId).changes) > 0;
  }
  claimSetting(key: string, value: string): string {
    this.q('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING').run(key, value);
    return (this.q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string }).value;
  }
  putSetting(key: string, value: string): void {
    this.q(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ).run(key, value);
  }

  usageStart(u: UsageStart): void {
    this.q(
      `INSERT OR IGNORE INTO usage (worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count,
         cpu_flavor_id, data_center_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      u.workerId,
      u.userId,
      u.endpointId,
      u.templateId,
      u.imageName,
      u.gpuTypeId,
      u.gpuCount,
      u.cpuFlavorId,
      u.dataCenterId,
      u.startedAt,
    );
  }
  usageEnd(workerId: string, at: number): void {
    this.q('UPDATE usage SET ended_at = MAX(started_at, ?) WHERE worker_id = ? AND ended_at IS NULL').run(at, workerId);
  }
  /** Open a new record for the worker like its latest one, from `at` (a FlashBoot standby taken back into service). */
  usageResume(workerId: string, at: number): void {
    this.q(
      `INSERT OR IGNORE INTO usage (worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count,
         cpu_flavor_id, data_center_id, started_at)
       SELECT worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count, cpu_flavor_id,
         data_center_id, ? FROM usage WHERE worker_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1`,
    ).run(at, workerId);
  }
  usage(f: UsageFilter): UsageRecord[] {
    const where = ['user_id = ?', 'started_at < ?', '(ended_at IS NULL OR ended_at > ?)'];
    const params: SQLInputValue[] = [f.userId, f.to, f.from];
    const narrow: Array<[string, string | undefined]> = [
      ['endpoint_id', f.endpointId],
      ['worker_id', f.workerId],
      ['template_id', f.templateId],
      ['image_name', f.imageName],
    ];
    for (const [column, value] of narrow) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    const rows = this.db
      .prepare(`SELECT * FROM usage WHERE ${where.join(' AND ')} ORDER BY started_at, rowid`)
      .all(...params) as unknown as UsageRow[];
    return rows.map(toUsage);
  }
}
