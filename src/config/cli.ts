import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The `wharf` client commands' own settings: which server, which key, whether to colour. Resolved here because only
 * src/config reads the environment (STYLE.md habit 9). Precedence: flag > WHARF_URL / WHARF_API_KEY > the file
 * written by `wharf login` > default. The file lives in $XDG_CONFIG_HOME/wharf/config.json (default
 * ~/.config/wharf/config.json), mode 0600, because it holds an API key.
 */
export const DEFAULT_CLI_URL = 'http://127.0.0.1:8000';

export type CliSource = 'flag' | 'env' | 'file' | 'default';

export interface CliConnection {
  url: string;
  apiKey: string | null;
  sources: { url: CliSource; apiKey: CliSource };
  /** Where `wharf login` writes and every command reads. */
  configPath: string;
}

export interface CliFile {
  url?: string;
  apiKey?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Thrown for a config file that exists but cannot be used; the CLI reports it as a usage error (exit 2). */
export class CliConfigError extends Error {
  override readonly name = 'CliConfigError';
}

const set = (v: string | undefined): v is string => v !== undefined && v !== '';

export function cliConfigPath(env: Env = process.env): string {
  const base = set(env['XDG_CONFIG_HOME']) ? env['XDG_CONFIG_HOME'] : join(env['HOME'] || homedir(), '.config');
  return join(base, 'wharf', 'config.json');
}

/** The login file, or {} when there is none. A file that is not a JSON object is an error, never ignored. */
export function readCliFile(path: string): CliFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliConfigError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliConfigError(
      `${path} is not valid JSON: ${(error as Error).message} (wharf logout removes it; wharf login writes a new one)`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliConfigError(`${path} must hold a JSON object (wharf logout removes it)`);
  }
  const { url, apiKey } = parsed as Record<string, unknown>;
  return {
    ...(typeof url === 'string' && url !== '' ? { url } : {}),
    ...(typeof apiKey === 'string' && apiKey !== '' ? { apiKey } : {}),
  };
}

/** Write the login file readable by its owner only (the directory too), replacing what was there. */
export function writeCliFile(path: string, data: CliFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  // writeFileSync keeps the mode of an existing file: tighten it whatever it was.
  chmodSync(path, 0o600);
}

export function removeCliFile(path: string): boolean {
  try {
    rmSync(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** flag > env > file > default, remembering where each value came from (`wharf config` shows it). */
export function resolveCliConnection(flags: { url?: string; apiKey?: string }, env: Env = process.env): CliConnection {
  const configPath = cliConfigPath(env);
  // Read only when it may supply something: a broken login file must not block a command (`wharf login` that would
  // replace it included) that flags or the environment fully configure.
  const given = (flag: string | undefined, fromEnv: string | undefined) => set(flag) || set(fromEnv);
  const needed = !given(flags.url, env['WHARF_URL']) || !given(flags.apiKey, env['WHARF_API_KEY']);
  const file = needed ? readCliFile(configPath) : {};
  const pick = (flag: string | undefined, fromEnv: string | undefined, fromFile: string | undefined) =>
    set(flag)
      ? { value: flag, source: 'flag' as const }
      : set(fromEnv)
        ? { value: fromEnv, source: 'env' as const }
        : set(fromFile)
          ? { value: fromFile, source: 'file' as const }
          : { value: null, source: 'default' as const };
  const url = pick(flags.url, env['WHARF_URL'], file.url);
  const apiKey = pick(flags.apiKey, env['WHARF_API_KEY'], file.apiKey);
  return {
    url: (url.value ?? DEFAULT_CLI_URL).replace(/\/+$/, ''),
    apiKey: apiKey.value,
    sources: { url: url.source, apiKey: apiKey.source },
    configPath,
  };
}

/**
 * Colour is for people: only on a terminal, never when NO_COLOR is set (no-color.org, any non-empty value);
 * FORCE_COLOR (not "0") turns it on without a terminal, for pagers and tests. NO_COLOR wins.
 */
export function cliColorWanted(isTTY: boolean, env: Env = process.env): boolean {
  if (set(env['NO_COLOR'])) return false;
  if (set(env['FORCE_COLOR']) && env['FORCE_COLOR'] !== '0') return true;
  return isTTY && env['TERM'] !== 'dumb';
}
