// The CLI's own settings (src/config/cli.ts): where the login file lives, flag > env > file > default, mode 0600,
// and when colour is wanted.

import { mkdtempSync, readFileSync, statSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  cliColorWanted,
  cliConfigPath,
  CliConfigError,
  readCliFile,
  removeCliFile,
  resolveCliConnection,
  writeCliFile,
} from '../../src/config/index.ts';

const home = () => mkdtempSync(join(tmpdir(), 'wharf-cli-config-'));

describe('the login file', () => {
  it('lives in $XDG_CONFIG_HOME/wharf, else ~/.config/wharf', () => {
    expect(cliConfigPath({ HOME: '/h' })).toBe('/h/.config/wharf/config.json');
    expect(cliConfigPath({ HOME: '/h', XDG_CONFIG_HOME: '/x' })).toBe('/x/wharf/config.json');
    expect(cliConfigPath({ HOME: '/h', XDG_CONFIG_HOME: '' })).toBe('/h/.config/wharf/config.json');
  });

  it('is written with mode 0600 in a 0700 directory, even over a looser file', () => {
    const dir = home();
    const path = join(dir, 'wharf', 'config.json');
    mkdirSync(join(dir, 'wharf'));
    writeFileSync(path, '{}', { mode: 0o644 });
    chmodSync(path, 0o644);
    writeCliFile(path, { url: 'http://h:1', apiKey: 'k' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ url: 'http://h:1', apiKey: 'k' });
    const fresh = join(home(), 'a', 'wharf', 'config.json');
    writeCliFile(fresh, { url: 'u' });
    expect(statSync(join(fresh, '..')).mode & 0o777).toBe(0o700);
    expect(removeCliFile(fresh)).toBe(true);
    expect(removeCliFile(fresh)).toBe(false);
  });

  it('is optional, but a broken one is an error, not ignored', () => {
    const dir = home();
    expect(readCliFile(join(dir, 'missing.json'))).toEqual({});
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{nope');
    expect(() => readCliFile(bad)).toThrow(CliConfigError);
    writeFileSync(bad, '[1]');
    expect(() => readCliFile(bad)).toThrow(/must hold a JSON object/);
    writeFileSync(bad, '{"url": 5, "apiKey": "k", "other": true}');
    expect(readCliFile(bad)).toEqual({ apiKey: 'k' });
  });
});

describe('resolveCliConnection', () => {
  const withFile = () => {
    const h = home();
    writeCliFile(join(h, '.config', 'wharf', 'config.json'), { url: 'http://file:1/', apiKey: 'k_file' });
    return h;
  };

  it('does not read a broken login file when flags or the environment give both the URL and the key', () => {
    const h = home();
    const path = join(h, '.config', 'wharf', 'config.json');
    writeCliFile(path, {});
    writeFileSync(path, '{broken');
    const env = { HOME: h, WHARF_URL: 'http://env:2', WHARF_API_KEY: 'k_env' };
    expect(resolveCliConnection({}, env)).toMatchObject({ url: 'http://env:2', apiKey: 'k_env' });
    expect(resolveCliConnection({ url: 'http://flag:3', apiKey: 'k' }, { HOME: h })).toMatchObject({ apiKey: 'k' });
    // Needed for one of them: still an error, which says how to get rid of the file.
    expect(() => resolveCliConnection({ url: 'http://flag:3' }, { HOME: h })).toThrow(/wharf logout removes it/);
  });

  it('takes flag > env > file > default, and says where each value came from', () => {
    const h = withFile();
    expect(resolveCliConnection({}, { HOME: h })).toMatchObject({
      url: 'http://file:1',
      apiKey: 'k_file',
      sources: { url: 'file', apiKey: 'file' },
    });
    const env = { HOME: h, WHARF_URL: 'http://env:2', WHARF_API_KEY: 'k_env' };
    expect(resolveCliConnection({}, env)).toMatchObject({ url: 'http://env:2', apiKey: 'k_env' });
    expect(resolveCliConnection({ url: 'http://flag:3', apiKey: 'k_flag' }, env)).toMatchObject({
      url: 'http://flag:3',
      apiKey: 'k_flag',
      sources: { url: 'flag', apiKey: 'flag' },
    });
    // Empty variables count as unset.
    expect(resolveCliConnection({}, { HOME: h, WHARF_URL: '' }).sources.url).toBe('file');
  });

  it('defaults to the local server and no key', () => {
    expect(resolveCliConnection({}, { HOME: home() })).toMatchObject({
      url: 'http://127.0.0.1:8000',
      apiKey: null,
      sources: { url: 'default', apiKey: 'default' },
    });
  });
});

describe('cliColorWanted', () => {
  it('colours a terminal unless NO_COLOR is set; FORCE_COLOR without one; NO_COLOR always wins', () => {
    expect(cliColorWanted(true, {})).toBe(true);
    expect(cliColorWanted(false, {})).toBe(false);
    expect(cliColorWanted(true, { NO_COLOR: '1' })).toBe(false);
    expect(cliColorWanted(true, { TERM: 'dumb' })).toBe(false);
    expect(cliColorWanted(false, { FORCE_COLOR: '1' })).toBe(true);
    expect(cliColorWanted(false, { FORCE_COLOR: '0' })).toBe(false);
    expect(cliColorWanted(true, { FORCE_COLOR: '1', NO_COLOR: 'x' })).toBe(false);
  });
});
