import { parseArgs } from 'node:util';

/** A mistake in how the command was called: reported on one line, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** The command whose --help to point at ("endpoint create"), when known. */
  command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Placeholder shown in --help: `--name <name>`. */
  value?: string;
  doc: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

/** Options every client command takes. */
export const GLOBAL_OPTIONS: OptionSpecs = {
  url: { type: 'string', value: '<url>', doc: 'Server URL (env WHARF_URL; default http://127.0.0.1:8000)' },
  'api-key': { type: 'string', value: '<key>', doc: 'API key (env WHARF_API_KEY)' },
  json: { type: 'boolean', doc: 'Print JSON on stdout, for scripts' },
  'no-color': { type: 'boolean', doc: 'No colours (also NO_COLOR=1)' },
  help: { type: 'boolean', short: 'h', doc: 'Show this help' },
};

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "30s", "5m", "1h", "250ms", "2d"; a bare number is seconds. Returns milliseconds, or null when unreadable. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNITS[m[2] ?? 's']!;
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

/** The parsed command line with typed, checked getters; every problem is a UsageError naming the option. */
export class Args {
  readonly positionals: string[];
  private readonly values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  readonly command: string;

  constructor(command: string, argv: readonly string[], options: OptionSpecs) {
    this.command = command;
    try {
      const parsed = parseArgs({
        args: [...argv],
        options: Object.fromEntries(
          Object.entries(options).map(([name, o]) => [
            name,
            { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
          ]),
        ),
        allowPositionals: true,
        strict: true,
      });
      this.values = parsed.values;
      this.positionals = parsed.positionals;
    } catch (error) {
      throw new UsageError(parseArgsMessage(error), command);
    }
  }

  has(name: string): boolean {
    return this.values[name] !== undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  string(name: string): string | undefined {
    const v = this.values[name];
    return typeof v === 'string' ? v : undefined;
  }

  required(name: string): string {
    const v = this.string(name);
    if (v === undefined || v === '') throw new UsageError(`--${name} is required`, this.command);
    return v;
  }

  list(name: string): string[] {
    const v = this.values[name];
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  }

  int(name: string, bounds: { min?: number; max?: number } = {}): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const n = /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} expects a whole number, got '${v}'`, this.command);
    if ((bounds.min !== undefined && n < bounds.min) || (bounds.max !== undefined && n > bounds.max)) {
      throw new UsageError(`--${name} must be between ${bounds.min ?? '-∞'} and ${bounds.max ?? '∞'}`, this.command);
    }
    return n;
  }

  /** Milliseconds from "30s", "5m", "250ms"… (a bare number is seconds). */
  duration(name: string): number | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const ms = parseDuration(v);
    if (ms === null) {
      throw new UsageError(`--${name} expects a duration such as 30s, 5m, 1h or 500ms, got '${v}'`, this.command);
    }
    return ms;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    if (!values.includes(v as T)) {
      throw new UsageError(`--${name} must be one of ${values.join(', ')}, got '${v}'`, this.command);
    }
    return v as T;
  }

  /** A JSON value given inline, or read from a file with `@path` (curl's convention). */
  json(name: string, read: (path: string) => string): unknown {
    const v = this.string(name);
    if (v === undefined) return undefined;
    let text = v;
    if (v.startsWith('@')) {
      try {
        text = read(v.slice(1));
      } catch (error) {
        throw new UsageError(`--${name}: cannot read ${v.slice(1)}: ${(error as Error).message}`, this.command);
      }
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new UsageError(`--${name} is not valid JSON: ${(error as Error).message}`, this.command);
    }
  }

  /** KEY=VALUE pairs of a repeatable option, as an object. */
  pairs(name: string): Record<string, string> | undefined {
    const items = this.list(name);
    if (items.length === 0) return undefined;
    const out: Record<string, string> = {};
    for (const item of items) {
      const eq = item.indexOf('=');
      if (eq <= 0) throw new UsageError(`--${name} expects KEY=VALUE, got '${item}'`, this.command);
      out[item.slice(0, eq)] = item.slice(eq + 1);
    }
    return out;
  }

  /** Exactly the positional arguments named, in order (`[x]` is optional). */
  expect(names: readonly string[]): string[] {
    const required = names.filter((n) => !n.startsWith('[')).length;
    if (this.positionals.length < required) {
      throw new UsageError(`missing ${names.slice(this.positionals.length, required).join(' ')}`, this.command);
    }
    if (this.positionals.length > names.length) {
      throw new UsageError(`unexpected argument '${this.positionals[names.length]}'`, this.command);
    }
    return this.positionals;
  }
}

/** Node's parseArgs messages are long and mention `strict: false`; say what was wrong in a few words. */
function parseArgsMessage(error: unknown): string {
  const e = error as { code?: string; message?: string };
  // Node names the option as '--limit <value>', or '-i, --input <value>' when it has a short form: the long name.
  const option = /'(?:-[^-' ],\s*)?(-{1,2}[^' ,]+)/.exec(e.message ?? '')?.[1];
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option ?? ''}`.trim();
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /argument missing|ambiguous/.test(e.message ?? '')
      ? `${option ?? 'option'} needs a value`
      : `${option ?? 'option'} does not take a value`;
  }
  return e.message ?? String(error);
}
