// `wharf serve` given settings it must refuse, as a real process: one message on stderr and exit 2, before anything
// is created or written (no data directory, no secret key, no admin key that nobody was shown).

import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { killAll, spawnProc } from '../helpers/processes.ts';

vi.setConfig({ testTimeout: 60_000 });

afterEach(async () => {
  await killAll();
});

interface Served {
  /** True when the server started (it is then stopped at once). */
  started: boolean;
  code: number | null;
  output: string;
  dataDir: string;
}

/** `wharf serve` with a data directory that does not exist yet, until it exits or says it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'wharf-serve-config-')), 'data');
  const p = spawnProc(['src/cli/main.ts', 'serve', '--data-dir', dataDir, '--port', '0', ...args], {
    PATH: process.env['PATH'],
    HOME: dataDir,
    ...env,
  });
  const started = await p.waitFor(/wharf listening/, 30_000).then(
    () => true,
    () => false,
  );
  if (started) await p.kill('SIGTERM');
  const { code } = await p.exit;
  return { started, code, output: p.output(), dataDir };
}

/** Refused: exit 2, the problem on stderr, and nothing created. */
function expectRefused(res: Served, message: RegExp): void {
  expect(res.started, res.output).toBe(false);
  expect(res.code, res.output).toBe(2);
  expect(res.output).toMatch(/^wharf: Invalid configuration:\n {2}- /);
  expect(res.output).toMatch(message);
  expect(res.output).not.toMatch(/\n\s+at /);
  expect(existsSync(res.dataDir)).toBe(false);
}

describe('wharf serve refuses', () => {
  it('a --gpus list naming no known GPU type, pointing at the list and the likely type', async () => {
    const [garbage, typo, env] = await Promise.all([
      serve(['--gpus', 'garbage']),
      serve(['--gpus', 'NVIDIA A4O:2']),
      serve([], { WHARF_GPUS: 'NVIDIA A40:1,Imaginary X1:2' }),
    ]);
    expectRefused(garbage, /--gpus \/ WHARF_GPUS: unknown GPU type 'garbage': "wharf serve --help" lists/);
    expectRefused(typo, /unknown GPU type 'NVIDIA A4O' \(did you mean 'NVIDIA A40'\?\)/);
    expectRefused(env, /unknown GPU type 'Imaginary X1'/);
  });

  it('but still starts with --gpus none or a declared known type', async () => {
    const [none, declared] = await Promise.all([
      serve(['--gpus', 'none', '--executor', 'none']),
      serve(['--gpus', 'RTX 4090:2', '--executor', 'none']),
    ]);
    expect(none.started, none.output).toBe(true);
    expect(declared.started, declared.output).toBe(true);
  });
});
