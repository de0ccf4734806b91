import { readFileSync } from 'node:fs';
import { nearestName } from '../domain/index.ts';
import { SETTINGS, type Config, type SettingSpec } from './schema.ts';

const SETTING_KEYS: readonly string[] = SETTINGS.map((s) => s.key);
const FLAGS: readonly string[] = ['--config', ...SETTINGS.map((s) => s.flag)];

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export interface LoadSources {
  argv?: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  /** Explicit overrides (tests, embedding); they win over everything. */
  overrides?: Partial<Record<keyof Config, unknown>>;
}

/** Resolve flag > env > file (--config / WHARF_CONFIG) > default; report every problem at once; freeze. */
export function loadConfig(sources: LoadSources = {}): Config {
  const argv = sources.argv ?? [];
  const env = sources.env ?? process.env;
  const problems: string[] = [];
  const flags = parseFlags(argv, problems);
  const file = readConfigFile(flags.get('--config') ?? env['WHARF_CONFIG'], problems);
  const out: Record<string, unknown> = {};
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    const override = sources.overrides?.[spec.key as keyof Config];
    if (override !== undefined) {
      out[spec.key] = override;
      continue;
    }
    const [raw, origin] = flags.has(spec.flag)
      ? [flags.get(spec.flag), spec.flag]
      : env[spec.env] !== undefined && env[spec.env] !== ''
        ? [env[spec.env], spec.env]
        : file[spec.key] !== undefined
          ? [file[spec.key], `config file key ${spec.key}`]
          : [undefined, ''];
    out[spec.key] = raw === undefined ? spec.default : coerce(spec, raw, origin, problems);
  }
  for (const flag of flags.keys()) {
    if (FLAGS.includes(flag)) continue;
    const near = nearestName(flag, FLAGS);
    problems.push(`unknown flag ${flag}${near ? ` (did you mean ${near}?)` : ''}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as Config;
}

function parseFlags(argv: readonly string[], problems: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument ${arg}`);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) {
      flags.set(arg.slice(0, eq), arg.slice(eq + 1));
    } else {
      const spec = SETTINGS.find((s) => s.flag === arg);
      const next = argv[i + 1];
      // The next flag is never a value (`--port --host x` lacks a port; `--port=--x` gives one that looks like a flag).
      const value = next === undefined || next.startsWith('--') ? undefined : next;
      if (value !== undefined) i++;
      if (spec?.kind === 'bool' && value === undefined) flags.set(arg, 'true');
      // An unknown flag (reported by loadConfig) takes the value that follows it, if any, so that `--bogus --port 1`
      // and `--bogus x --port 1` are one mistake each, not also an "unexpected argument".
      else if (value === undefined && (spec || arg === '--config')) problems.push(`${arg} needs a value`);
      else flags.set(arg, value ?? '');
    }
  }
  return flags;
}

function readConfigFile(path: string | undefined, problems: string[]): Record<string, unknown> {
  if (!path) return {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      problems.push(`config file ${path} must hold a JSON object`);
      return {};
    }
    return fileSettings(parsed as Record<string, unknown>, problems);
  } catch (error) {
    problems.push(`config file ${path}: ${(error as Error).message}`);
    return {};
  }
}

/**
 * The file's entries whose key is a setting and whose JSON type is the setting's; every other entry is a problem
 * naming its key, never ignored (a misspelt key would leave its setting at the default without a word) nor turned
 * into text (`{"host": {}}` would listen on "[object Object]").
 */
function fileSettings(parsed: Record<string, unknown>, problems: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed)) {
    const spec = (SETTINGS as readonly SettingSpec[]).find((s) => s.key === key);
    if (!spec) {
      // Same letters in another case or with dashes (`leaseMS`, `lease-ms`, `WHARF_LEASE_MS`), or a typo (`exampels`).
      const near = nearestName(key, SETTING_KEYS, (k) =>
        k
          .toLowerCase()
          .replace(/^wharf_/, '')
          .replace(/[^a-z0-9]/g, ''),
      );
      problems.push(`config file key ${key} is not a setting${near ? ` (did you mean ${near}?)` : ''}`);
      continue;
    }
    // null leaves unset a setting that may be unset (publicUrl, adminKey…).
    if (value === null && spec.default === null) continue;
    const fits =
      spec.kind === 'int'
        ? typeof value === 'number'
        : spec.kind === 'bool'
          ? typeof value === 'boolean'
          : typeof value === 'string';
    if (!fits) {
      problems.push(`config file key ${key}: expected ${JSON_TYPES[spec.kind]}, got ${jsonTypeOf(value)}`);
      continue;
    }
    out[key] = value;
  }
  return out;
}

const JSON_TYPES: Record<SettingSpec['kind'], string> = {
  int: 'a number',
  bool: 'true or false',
  string: 'a string',
  enum: 'a string',
};

function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function coerce(spec: SettingSpec, raw: unknown, origin: string, problems: string[]): unknown {
  const text = String(raw).trim();
  switch (spec.kind) {
    case 'int': {
      const n = typeof raw === 'number' ? raw : /^-?\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(n)) {
        problems.push(`${origin}: expected an integer, got '${text}'`);
        return spec.default;
      }
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
        problems.push(`${origin}: ${n} is outside ${spec.min ?? '-∞'}..${spec.max ?? '∞'}`);
      }
      return n;
    }
    case 'bool': {
      if (raw === true || ['true', '1', 'yes', 'on'].includes(text.toLowerCase())) return true;
      if (raw === false || ['false', '0', 'no', 'off'].includes(text.toLowerCase())) return false;
      problems.push(`${origin}: expected true or false, got '${text}'`);
      return spec.default;
    }
    case 'enum': {
      if (!spec.values?.includes(text))
        problems.push(`${origin}: expected one of ${spec.values?.join(', ')}, got '${text}'`);
      return text;
    }
    case 'string': {
      if (text === '') problems.push(`${origin}: must not be empty`);
      else if (spec.min !== undefined && text.length < spec.min) {
        problems.push(`${origin}: must be at least ${spec.min} characters long`);
      }
      return text;
    }
    default: {
      const unreachable: never = spec.kind;
      return unreachable;
    }
  }
}
