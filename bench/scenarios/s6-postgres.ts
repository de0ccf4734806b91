// Scenario 6, the PostgreSQL store: the throughput measures of scenario 1 against `store: postgres://…`, in a
// database of its own (created and dropped here). Skipped, with the reason printed, while this build has no
// PostgreSQL store or no PostgreSQL answers.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/child.ts';
import type { Ctx, Result } from '../lib/context.ts';
import { throughput, throughputResult } from './s1-throughput.ts';

const TITLE = 'PostgreSQL store';

export async function s6(ctx: Ctx): Promise<Result> {
  const admin = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (!existsSync(join(ROOT, 'src', 'store', 'postgres'))) {
    return skipped(ctx, 'this build has no PostgreSQL store yet (src/store/postgres/ does not exist)');
  }
  const name = `wharf_bench_${process.pid}`;
  const url = new URL(admin);
  url.pathname = `/${name}`;
  let created = false;
  try {
    await sql(admin, `CREATE DATABASE ${name}`);
    created = true;
    const f = await throughput(
      ctx,
      's6',
      // Multi-node stores need a shared secret key (registry credentials are encrypted with it).
      { store: url.toString(), secretKey: randomBytes(32).toString('base64') },
      false,
    );
    const r = throughputResult(ctx, '6', TITLE, f);
    return { ...r, json: { ...r.json, store: 'postgres' } };
  } catch (error) {
    return skipped(ctx, `the PostgreSQL run failed: ${reasonOf(error)}`);
  } finally {
    if (created) await sql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
}

async function sql(url: string, text: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The first line that names an error (a child's message carries its output tail). */
function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text.split('\n');
  return (lines.find((l) => /Error:/.test(l)) ?? lines[0] ?? '').trim().slice(0, 300);
}

function skipped(ctx: Ctx, reason: string): Result {
  ctx.log(`s6: skipped: ${reason}`);
  return { id: '6', title: TITLE, markdown: `Skipped: ${reason}.`, json: { skipped: true, reason } };
}
