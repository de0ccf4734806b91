import type { NetworkVolume, RegistryAuthRecord, SecretRecord } from '../../domain/index.ts';
import type { ManagementStore } from '../types-volumes.ts';
import type { Conn, Db } from './db.ts';
import { docs } from './rows.ts';
import { toUsage, type UsageRow } from '../rows.ts';

async function openVolumeUsage(c: Conn, v: NetworkVolume, at: number): Promise<void> {
  await c.query('INSERT INTO volume_usage (volume_id, user_id, size_gb, started_at) VALUES ($1, $2, $3, $4)', [
    v.id,
    v.userId,
    v.size,
    at,
  ]);
}

async function closeVolumeUsage(c: Conn, volumeId: string, at: number): Promise<void> {
  await c.query(
    'UPDATE volume_usage SET ended_at = GREATEST(started_at, $1) WHERE volume_id = $2 AND ended_at IS NULL',
    [at, volumeId],
  );
}

/** Network volumes, registry auths, secrets, user settings and usage (store/types-volumes.ts). */
export function managementVerbs(db: Db): ManagementStore {
  const ids = async (sql: string, params: unknown[]): Promise<string[]> =>
    (await db.query<{ id: string }>(sql, params)).map((r) => r.id);

  return {
    async updateUser(u) {
      // The webhook secret is the one stored now (setWebhookSecret's), never the one in a document read before.
      await db.query(
        `UPDATE users SET doc = CASE WHEN doc::jsonb->'webhookSecret' IS NULL THEN ($1::jsonb - 'webhookSecret')::text
           ELSE jsonb_set($1::jsonb, '{webhookSecret}', doc::jsonb->'webhookSecret')::text END
         WHERE id = $2`,
        [JSON.stringify(u), u.id],
      );
    },

    createNetworkVolume(v) {
      return db.tx(async (c) => {
        await c.query('INSERT INTO network_volumes (id, user_id, doc) VALUES ($1, $2, $3)', [
          v.id,
          v.userId,
          JSON.stringify(v),
        ]);
        await openVolumeUsage(c, v, v.createdAt);
      });
    },
    async getNetworkVolume(userId, id) {
      const rows =
        userId === null
          ? await db.query<{ doc: string }>('SELECT doc FROM network_volumes WHERE id = $1', [id])
          : await db.query<{ doc: string }>('SELECT doc FROM network_volumes WHERE id = $1 AND user_id = $2', [
              id,
              userId,
            ]);
      return docs<NetworkVolume>(rows)[0] ?? null;
    },
    async listNetworkVolumes(userId) {
      return docs<NetworkVolume>(
        await db.query('SELECT doc FROM network_volumes WHERE user_id = $1 ORDER BY seq', [userId]),
      );
    },
    updateNetworkVolume(v, at) {
      return db.tx(async (c) => {
        const r = await c.query<{ doc: string }>(
          'SELECT doc FROM network_volumes WHERE id = $1 AND user_id = $2 FOR UPDATE',
          [v.id, v.userId],
        );
        const before = docs<NetworkVolume>(r.rows)[0];
        if (!before) return;
        await c.query('UPDATE network_volumes SET doc = $1 WHERE id = $2 AND user_id = $3', [
          JSON.stringify(v),
          v.id,
          v.userId,
        ]);
        if (before.size !== v.size) {
          await closeVolumeUsage(c, v.id, at);
          await openVolumeUsage(c, v, at);
        }
      });
    },
    deleteNetworkVolume(userId, id, at) {
      return db.tx(async (c) => {
        const gone = await c.query('DELETE FROM network_volumes WHERE id = $1 AND user_id = $2', [id, userId]);
        if (gone.rowCount === 0) return false;
        await closeVolumeUsage(c, id, at);
        return true;
      });
    },
    endpointsUsingVolume: (userId, volumeId) =>
      ids(
        `SELECT id FROM endpoints WHERE user_id = $1 AND (doc::jsonb->>'networkVolumeId' = $2
           OR jsonb_typeof(doc::jsonb->'networkVolumeIds') = 'array' AND doc::jsonb->'networkVolumeIds' ? $2)
         ORDER BY seq`,
        [userId, volumeId],
      ),
    async listVolumeUsage(userId, from, to) {
      const rows = await db.query<{
        volume_id: string;
        user_id: string;
        size_gb: number;
        started_at: number;
        ended_at: number | null;
      }>(
        `SELECT volume_id, user_id, size_gb, started_at, ended_at FROM volume_usage
         WHERE user_id = $1 AND started_at < $2 AND (ended_at IS NULL OR ended_at > $3) ORDER BY started_at, seq`,
        [userId, to, from],
      );
      return rows.map((r) => ({
        volumeId: r.volume_id,
        userId: r.user_id,
        sizeGb: r.size_gb,
        startedAt: r.started_at,
        endedAt: r.ended_at,
      }));
    },

    async createRegistryAuth(r) {
      await db.query('INSERT INTO registry_auths (id, user_id, name, doc) VALUES ($1, $2, $3, $4)', [
        r.id,
        r.userId,
        r.name,
        JSON.stringify(r),
      ]);
    },
    async getRegistryAuth(userId, id) {
      const rows = await db.query<{ doc: string }>('SELECT doc FROM registry_auths WHERE id = $1 AND user_id = $2', [
        id,
        userId,
      ]);
      return docs<RegistryAuthRecord>(rows)[0] ?? null;
    },
    async listRegistryAuths(userId) {
      return docs<RegistryAuthRecord>(
        await db.query('SELECT doc FROM registry_auths WHERE user_id = $1 ORDER BY seq', [userId]),
      );
    },
    async updateRegistryAuth(r) {
      await db.query('UPDATE registry_auths SET name = $1, doc = $2 WHERE id = $3 AND user_id = $4', [
        r.name,
        JSON.stringify(r),
        r.id,
        r.userId,
      ]);
    },
    async deleteRegistryAuth(userId, id) {
      return (
        (await ids('DELETE FROM registry_auths WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId])).length > 0
      );
    },
    templatesUsingRegistryAuth: (userId, id) =>
      ids(`SELECT id FROM templates WHERE user_id = $1 AND doc::jsonb->>'containerRegistryAuthId' = $2 ORDER BY seq`, [
        userId,
        id,
      ]),

    async claimSetting(key, value) {
      // Two statements: the SELECT's snapshot is taken after the INSERT waited out a concurrent one, so it sees the
      // value that won.
      await db.query('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, value]);
      const [row] = await db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]);
      return row!.value;
    },
    async putSetting(key, value) {
      await db.query(
        'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        [key, value],
      );
    },
    async createSecret(r) {
      await db.query('INSERT INTO secrets (id, user_id, name, doc) VALUES ($1, $2, $3, $4)', [
        r.id,
        r.userId,
        r.name,
        JSON.stringify(r),
      ]);
    },
    async listSecrets(userId) {
      return docs<SecretRecord>(await db.query('SELECT doc FROM secrets WHERE user_id = $1 ORDER BY seq', [userId]));
    },
    async deleteSecret(userId, id) {
      return (await ids('DELETE FROM secrets WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId])).length > 0;
    },

    async recordUsageStart(u) {
      // ON CONFLICT: the partial unique index usage_open allows one open record per worker; a second is ignored.
      await db.query(
        `INSERT INTO usage (worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count,
           cpu_flavor_id, data_center_id, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT DO NOTHING`,
        [
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
        ],
      );
    },
    async recordUsageEnd(workerId, at) {
      await db.query('UPDATE usage SET ended_at = GREATEST(started_at, $1) WHERE worker_id = $2 AND ended_at IS NULL', [
        at,
        workerId,
      ]);
    },
    /** Open a new record for the worker like its latest one, from `at` (a FlashBoot standby taken back into service). */
    async recordUsageResume(workerId, at) {
      await db.query(
        `INSERT INTO usage (worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count,
           cpu_flavor_id, data_center_id, started_at)
         SELECT worker_id, user_id, endpoint_id, template_id, image_name, gpu_type_id, gpu_count, cpu_flavor_id,
           data_center_id, $1 FROM usage WHERE worker_id = $2 ORDER BY started_at DESC, seq DESC LIMIT 1
         ON CONFLICT DO NOTHING`,
        [at, workerId],
      );
    },
    async listUsage(f) {
      const where = ['user_id = $1', 'started_at < $2', '(ended_at IS NULL OR ended_at > $3)'];
      const params: unknown[] = [f.userId, f.to, f.from];
      const narrow: Array<[string, string | undefined]> = [
        ['endpoint_id', f.endpointId],
        ['worker_id', f.workerId],
        ['template_id', f.templateId],
        ['image_name', f.imageName],
      ];
      for (const [column, value] of narrow) {
        if (value === undefined) continue;
        params.push(value);
        where.push(`${column} = $${params.length}`);
      }
      const rows = await db.query<UsageRow>(
        `SELECT * FROM usage WHERE ${where.join(' AND ')} ORDER BY started_at, seq`,
        params,
      );
      return rows.map(toUsage);
    },
  };
}
