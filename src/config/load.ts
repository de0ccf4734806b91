import { readFileSync } from 'node:fs';
import { SETTINGS, type Config, type SettingSpec } from './schema.ts';

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
    if (flag !== '--config' && !SETTINGS.some((s) => s.flag === flag)) problems.push(`unknown flag ${flag}`);
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
      if (spec?.kind === 'bool' && (next === undefined || next.startsWith('--'))) flags.set(arg, 'true');
      else if (next === undefined) problems.push(`${arg} needs a value`);
      else {
        flags.set(arg, next);
        i++;
      }
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
    return parsed as Record<string, unknown>;
  } catch (error) {
    problems.push(`config file ${path}: ${(error as Error).message}`);
    return {};
  }
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
