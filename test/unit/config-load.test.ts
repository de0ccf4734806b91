// The server's settings (src/config/load.ts): flag > WHARF_* > config file > default, and every mistake reported
// (ConfigError naming the flag, variable or file key) instead of ignored.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ConfigError, loadConfig, SETTINGS } from '../../src/config/index.ts';

function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wharf-config-')), 'wharf.json');
  writeFileSync(path, JSON.stringify(content));
  return path;
}

/** The problems loadConfig reports, or [] when it accepts the sources. */
function problems(argv: string[], env: Record<string, string> = {}): string[] {
  try {
    loadConfig({ argv, env });
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems;
  }
}

describe('the config file', () => {
  it('supplies settings below flags and the environment', () => {
    const path = configFile({ port: 9001, host: '0.0.0.0', examples: true, publicUrl: null });
    const config = loadConfig({ argv: ['--config', path, '--port', '9002'], env: { WHARF_HOST: '127.0.0.2' } });
    expect(config).toMatchObject({ port: 9002, host: '127.0.0.2', examples: true, publicUrl: null });
    expect(loadConfig({ argv: [], env: { WHARF_CONFIG: path } })).toMatchObject({ port: 9001, host: '0.0.0.0' });
  });

  it('refuses a key that is not a setting, naming it and the setting it probably meant', () => {
    const path = configFile({ exampels: true, leaseMS: 5000, 'data-dir': '/tmp/x', frobnicate: 1 });
    expect(problems(['--config', path])).toEqual([
      'config file key exampels is not a setting (did you mean examples?)',
      'config file key leaseMS is not a setting (did you mean leaseMs?)',
      'config file key data-dir is not a setting (did you mean dataDir?)',
      'config file key frobnicate is not a setting',
    ]);
  });

  it('refuses a value of the wrong JSON type instead of turning it into text', () => {
    const path = configFile({
      host: { a: 1 },
      port: '8000',
      examples: 'yes',
      executor: ['process'],
      leaseMs: null,
      adminKey: 42,
    });
    expect(problems(['--config', path])).toEqual([
      'config file key host: expected a string, got an object',
      'config file key port: expected a number, got string "8000"',
      'config file key examples: expected true or false, got string "yes"',
      'config file key executor: expected a string, got an array',
      'config file key leaseMs: expected a number, got null',
      'config file key adminKey: expected a string, got number 42',
    ]);
  });
});

describe('flags', () => {
  it('an unknown flag is one mistake, whether a value follows it or not, with the flag it probably meant', () => {
    expect(problems(['--bogus', '--port', '18460'])).toEqual(['unknown flag --bogus']);
    expect(problems(['--bogus', 'x', '--port', '18460'])).toEqual(['unknown flag --bogus']);
    expect(problems(['--prot', '18460', '--examples'])).toEqual(['unknown flag --prot (did you mean --port?)']);
    expect(problems(['--port', '18460', 'stray'])).toEqual(['unexpected argument stray']);
  });

  it('a flag followed by another flag has no value, unless it is a boolean', () => {
    expect(problems(['--port', '--host', '0.0.0.0'])).toEqual(['--port needs a value']);
    expect(loadConfig({ argv: ['--examples', '--port', '1'], env: {} })).toMatchObject({ examples: true, port: 1 });
    expect(loadConfig({ argv: ['--admin-key=--starts-with-dashes-0123'], env: {} }).adminKey).toBe(
      '--starts-with-dashes-0123',
    );
  });

  it('name the config file keys: each flag in camelCase (wharf serve --help says so)', () => {
    for (const s of SETTINGS) {
      expect(s.flag.slice(2).replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())).toBe(s.key);
    }
  });
});
