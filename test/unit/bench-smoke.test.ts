// The benchmark harness must not rot: its smallest runs (baselines and scenario 1; baselines and scenario 6, the
// PostgreSQL store on one node and two) still start the servers and workers, measure, and print one JSON line per
// scenario.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { PG_URL, pgUnavailable } from '../helpers/postgres.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = fileURLToPath(new URL('../../node_modules/.bin/node', import.meta.url));

/** `npm run bench -- --tiny --no-write` for the given scenarios; the JSON lines it printed, by scenario. */
async function tinyBench(scenarios: string, env: Record<string, string> = {}): Promise<Map<string, any>> {
  const child = spawn(NODE, ['bench/run.ts', '--tiny', '--no-write'], {
    cwd: ROOT,
    env: { ...process.env, ...env, BENCH_SCENARIOS: scenarios },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code, stderr.slice(-2000)).toBe(0);
  const lines = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.find((l) => l['scenario'] === 'baseline')?.['helloRpsC50']).toBeGreaterThan(0);
  return new Map(lines.map((l) => [l['scenario'] as string, l]));
}

// Generous limits: a few seconds normally, but a busy CI machine (or its disk, for PostgreSQL) can stretch them a lot.
const SMOKE_TIMEOUT_MS = 90_000;

test('npm run bench -- --tiny (scenario 1) prints its JSON line', { timeout: SMOKE_TIMEOUT_MS }, async () => {
  const s1 = (await tinyBench('1')).get('1');
  expect(s1).toBeDefined();
  expect(s1['quick']).toBe(true);
  expect(s1['submitPerS']).toBeGreaterThan(0);
  expect(s1['e2eJobsPerS']).toBeGreaterThan(0);
  expect(s1['errors']).toBe(0);
});

test(
  'npm run bench -- --tiny (scenario 6: PostgreSQL, one node and two) prints its JSON line',
  {
    timeout: SMOKE_TIMEOUT_MS,
  },
  async (ctx) => {
    if (await pgUnavailable('bench scenario 6')) return ctx.skip();
    const s6 = (await tinyBench('6', { BENCH_PG_URL: PG_URL })).get('6');
    // A skipped scenario prints {skipped: true, reason}: with PostgreSQL reachable that is a failure.
    expect(s6?.['skipped'], s6?.['reason']).toBeUndefined();
    expect(s6['e2eJobsPerS']).toBeGreaterThan(0);
    expect(s6['twoNodes']['submitPerS']).toBeGreaterThan(0);
    expect(s6['twoNodes']['e2eJobsPerS']).toBeGreaterThan(0);
    expect(s6['errors']).toBe(0);
    expect(s6['twoNodes']['errors']).toBe(0);
  },
);
