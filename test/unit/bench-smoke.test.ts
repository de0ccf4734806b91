// The benchmark harness must not rot: its smallest run (baselines and scenario 1, tiny counts) still starts the
// servers and workers, measures, and prints one JSON line per scenario.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = fileURLToPath(new URL('../../node_modules/.bin/node', import.meta.url));

test('npm run bench -- --tiny (scenario 1) prints its JSON line', { timeout: 15_000 }, async () => {
  const child = spawn(NODE, ['bench/run.ts', '--tiny', '--no-write'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_SCENARIOS: '1' },
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
  const s1 = lines.find((l) => l['scenario'] === '1');
  expect(s1, stdout).toBeDefined();
  expect(s1!['quick']).toBe(true);
  expect(s1!['submitPerS']).toBeGreaterThan(0);
  expect(s1!['e2eJobsPerS']).toBeGreaterThan(0);
  expect(s1!['errors']).toBe(0);
  expect(lines.find((l) => l['scenario'] === 'baseline')?.['helloRpsC50']).toBeGreaterThan(0);
});
