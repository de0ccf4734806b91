// PostgreSQL helpers shared by the scenarios that need a database of their own (s6, the PostgreSQL peers).

/** Where the scenarios create their databases; `BENCH_PG_URL` overrides it. */
export const PG_ADMIN_URL = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Run one statement on its own connection (CREATE/DROP DATABASE cannot run inside a pool's transaction). */
export async function sql(url: string, text: string, connectionTimeoutMillis = 0): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The first line that names an error (a child's message carries its output tail). */
export function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text.split('\n');
  return (lines.find((l) => /Error:/.test(l)) ?? lines[0] ?? '').trim().slice(0, 300);
}
