// Scenario 6, the PostgreSQL store: the throughput measures of scenario 1 against `store: postgres://…`, in a
// database of its own (created and dropped here). Skipped, with the reason printed, while this build has no
// PostgreSQL store or no PostgreSQL answers.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/child.ts';
import type { Ctx, Result } from '../lib/context.ts';
import { PG_ADMIN_URL, reasonOf, sql } from '../lib/pg.ts';
import { throughput, throughputResult } from './s1-throughput.ts';

const TITLE = 'PostgreSQL store';

export async function s6(ctx: Ctx): Promise<Result> {
  const admin = PG_ADMIN_URL;
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

function skipped(ctx: Ctx, reason: string): Result {
  ctx.log(`s6: skipped: ${reason}`);
  return { id: '6', title: TITLE, markdown: `Skipped: ${reason}.`, json: { skipped: true, reason } };
}
