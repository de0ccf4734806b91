// `wharf serve` given settings it must refuse, as a real process: one message on stderr and exit 2, before anything
// is created or written (no data directory, no secret key, no admin key that nobody was shown).

import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { freePort, killAll, spawnProc } from '../helpers/processes.ts';

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

/** `wharf serve` with a data directory that does not exist yet (or `dataDir`), until it exits or says it listens. */
async function serve(
  args: string[],
  env: Record<string, string> = {},
  dataDir = join(mkdtempSync(join(tmpdir(), 'wharf-serve-config-')), 'data'),
): Promise<Served> {
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

  it('a --cors-origins entry that is no origin', async () => {
    expectRefused(
      await serve(['--cors-origins', 'https://app.example.com/console']),
      /--cors-origins \/ WHARF_CORS_ORIGINS: 'https:\/\/app.example.com\/console' is no origin/,
    );
  });

  it('a --cuda-version that is no CUDA version', async () => {
    const [flag, env] = await Promise.all([
      serve(['--cuda-version', '12']),
      serve([], { WHARF_CUDA_VERSION: 'cuda12.4' }),
    ]);
    expectRefused(flag, /--cuda-version \/ WHARF_CUDA_VERSION must be a version like 12.4, got '12'/);
    expectRefused(env, /got 'cuda12.4'/);
  });

  it('but still starts with --gpus none or a declared known type', async () => {
    const [none, declared] = await Promise.all([
      serve(['--gpus', 'none', '--executor', 'none']),
      serve(['--gpus', 'RTX 4090:2', '--executor', 'none']),
    ]);
    expect(none.started, none.output).toBe(true);
    expect(declared.started, declared.output).toBe(true);
  });

  it('but warns when managed workers would ping less often than their lease needs', async () => {
    const [tight, fine] = await Promise.all([
      serve(['--gpus', 'none', '--lease-ms', '3000']),
      serve(['--gpus', 'none', '--lease-ms', '3000', '--worker-ping-interval-ms', '1000']),
    ]);
    expect(tight.started, tight.output).toBe(true);
    expect(tight.output).toMatch(/--worker-ping-interval-ms \(5000\) is not below --lease-ms \(3000\)/);
    expect(fine.started, fine.output).toBe(true);
    expect(fine.output).not.toMatch(/worker-ping-interval-ms/);
  });
});

describe('wharf serve refuses before writing anything', () => {
  it('a --prices file it cannot read or use', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-prices-'));
    writeFileSync(join(dir, 'bad.json'), '{"gpu": {"NVIDIA A40": "cheap"}}');
    writeFileSync(join(dir, 'broken.json'), '{"gpu": ');
    const [missing, bad, broken] = await Promise.all([
      serve(['--prices', join(dir, 'missing.json')]),
      serve(['--prices', join(dir, 'bad.json')]),
      serve([], { WHARF_PRICES: join(dir, 'broken.json') }),
    ]);
    expectRefused(missing, /--prices \/ WHARF_PRICES file \S+missing.json: no such file\n/);
    expectRefused(bad, /bad.json: prices.gpu\["NVIDIA A40"\]: expected a number >= 0/);
    expectRefused(broken, /broken.json: not valid JSON: /);
  });

  it('a --secret-key that is not base64 of 32 bytes, a --store it cannot use, bad --rate-limit-overrides', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const [secret, store, pgWithoutKey, overrides, all] = await Promise.all([
      serve(['--secret-key', 'abc']),
      serve(['--store', 'mysql://db/wharf']),
      serve(['--store', 'postgres://wharf@127.0.0.1:1/wharf']),
      serve(['--rate-limit-overrides', 'run=lots']),
      serve(['--secret-key', key.slice(4), '--rate-limit-overrides', 'run=10,bogus=5', '--gpus', 'garbage']),
    ]);
    expectRefused(secret, /--secret-key \/ WHARF_SECRET_KEY must be base64 of 32 bytes/);
    expectRefused(store, /--store \/ WHARF_STORE must be sqlite or a postgres:\/\/ URL, got 'mysql:\/\/db\/wharf'/);
    expectRefused(pgWithoutKey, /--store postgres:\/\/… needs --secret-key/);
    expectRefused(overrides, /--rate-limit-overrides \/ WHARF_RATE_LIMIT_OVERRIDES: rate limit override "run=lots"/);
    // Every problem at once, as loadConfig reports its own.
    expectRefused(all, /gpus[^\n]+\n {2}- --secret-key[^\n]+\n {2}- --rate-limit-overrides[^\n]+"bogus=5"/);
  });

  it("a --secret-key other than the one the data directory's secrets were sealed with", async () => {
    const first = await serve(['--executor', 'none']);
    expect(first.started, first.output).toBe(true);
    const other = await serve(
      ['--executor', 'none', '--secret-key', Buffer.alloc(32, 9).toString('base64')],
      {},
      first.dataDir,
    );
    expect(other.started, other.output).toBe(false);
    expect(other.code, other.output).toBe(2);
    expect(other.output).toMatch(
      /^wharf: Invalid configuration:\n {2}- the secret key \(--secret-key \/ WHARF_SECRET_KEY\) is not the one/,
    );
    expect(other.output).toMatch(/--accept-new-secret-key/);
    expect(other.output).not.toMatch(/\n\s+at /);
  });

  it('a busy port: one line, exit 1, nothing written', async () => {
    const port = await freePort();
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    try {
      const res = await serve(['--port', String(port)]);
      expect(res).toMatchObject({ started: false, code: 1 });
      expect(res.output).toBe(
        `wharf: port ${port} is in use on 127.0.0.1: stop what listens there or choose another port (--port / WHARF_PORT)\n`,
      );
      expect(existsSync(res.dataDir)).toBe(false);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
