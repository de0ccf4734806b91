// What a store wrote, read past Wharf: for tests that a secret never reaches the database in plain text.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

import { PG_URL } from './postgres.ts';

export interface RawDb {
  /** Whether `text` appears anywhere in what the database wrote: the files (SQLite), every row of every table (PostgreSQL). */
  holds(text: string): Promise<boolean>;
  /** The stored text of one column of the row with that id; null when it is null or there is no such row. */
  column(table: string, column: string, id: string): Promise<string | null>;
}

/** The SQLite store of a server whose data directory is `dataDir`. */
export function sqliteRaw(dataDir: string): RawDb {
  const path = join(dataDir, 'wharf.db');
  return {
    async holds(text) {
      // The database file and its WAL, byte for byte: a value written only sealed is in neither.
      const files = [path, `${path}-wal`].filter((f) => existsSync(f));
      return files.some((f) => readFileSync(f).includes(text));
    },
    async column(table, column, id) {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        const row = db.prepare(`SELECT ${column} AS v FROM ${table} WHERE id = ?`).get(id) as
          { v: string | null } | undefined;
        return row?.v ?? null;
      } finally {
        db.close();
      }
    },
  };
}

/** The PostgreSQL store of a server on `schema`. */
export function postgresRaw(schema: string): RawDb {
  const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  return {
    async holds(text) {
      const tables = await query<{ t: string }>(
        'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      for (const { t } of tables) {
        const hits = await query(`SELECT 1 FROM "${schema}"."${t}" r WHERE strpos(r::text, $1) > 0`, [text]);
        if (hits.length > 0) return true;
      }
      return false;
    },
    async column(table, column, id) {
      const rows = await query<{ v: string | null }>(`SELECT ${column} AS v FROM "${schema}".${table} WHERE id = $1`, [
        id,
      ]);
      return rows[0]?.v ?? null;
    },
  };
}
