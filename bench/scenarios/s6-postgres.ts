// Scenario 6, the PostgreSQL store: the throughput measures of scenario 1 against `store: postgres://…`, in a
// database of its own (created and dropped here), on one node and on two nodes sharing the database
// (s6-two-nodes.ts). Skipped, with the reason printed, while this build has no PostgreSQL store or no PostgreSQL
// answers.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/child.ts';
import type { Ctx, Result } from '../lib/context.ts';
import { PG_ADMIN_URL, reasonOf, sql } from '../lib/pg.ts';
import { throughput, throughputResult } from './s1-throughput.ts';
import { twoNodeJson, twoNodeMarkdown, twoNodes } from './s6-two-nodes.ts';

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
    // Multi-node stores need a shared secret key (registry credentials are encrypted with it).
    const secretKey = randomBytes(32).toString('base64');
    const f = await throughput(ctx, 's6', { store: url.toString(), secretKey }, false);
    const two = await twoNodes(ctx, url.toString(), secretKey);
    const r = throughputResult(ctx, '6', TITLE, f);
    return {
      ...r,
      markdown: `One node:\n\n${r.markdown}\n\n${twoNodeMarkdown(ctx, two)}`,
      json: { ...r.json, store: 'postgres', twoNodes: twoNodeJson(ctx, two) },
    };
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
