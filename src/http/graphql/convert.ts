/**
 * Conversions between GraphQL shapes and the domain's (spec/rest-graphql-facts.md §2.10): env lists ↔ maps,
 * comma strings ↔ arrays, `dockerArgs` ↔ argv, `locations` ↔ data center ids. Pure; validation errors name the field.
 */
import { CUDA_VERSIONS, DATA_CENTER_IDS } from '../../domain/index.ts';
import { invalid } from './context.ts';

export interface EnvPair {
  key: string;
  value: string;
}

export function envToList(env: Record<string, string>): EnvPair[] {
  return Object.entries(env).map(([key, value]) => ({ key, value }));
}

export function envFromList(
  field: string,
  list: ReadonlyArray<EnvPair | null> | null | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of list ?? []) {
    if (!pair) continue;
    if (pair.key.trim() === '') throw invalid(`${field}.key`, 'must not be empty');
    env[pair.key] = pair.value;
  }
  return env;
}

/** `"a, b,,c"` → `['a', 'b', 'c']`. */
export function commaList(text: string | null | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function portsFromString(field: string, text: string | null | undefined): string[] {
  const ports = commaList(text);
  for (const p of ports) {
    if (!/^[0-9]{1,5}\/(http|tcp)$/.test(p)) throw invalid(field, `entry '${p}' must look like 8888/http or 22/tcp`);
  }
  return ports;
}

/** Split a command line the way a shell would for plain words and quotes: `python -u "my file.py"` → 3 args. */
export function splitArgs(field: string, text: string | null | undefined): string[] {
  const args: string[] = [];
  let current = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  const s = text ?? '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && (s[i + 1] === '"' || s[i + 1] === '\\')) current += s[++i];
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < s.length) {
      current += s[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) args.push(current);
      current = '';
      inWord = false;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (quote) throw invalid(field, 'has an unterminated quote');
  if (inWord) args.push(current);
  return args;
}

/** The inverse of splitArgs: words with spaces, quotes or backslashes are double-quoted. */
export function joinArgs(args: readonly string[]): string {
  return args.map((a) => (a !== '' && !/[\s"'\\]/.test(a) ? a : `"${a.replace(/(["\\])/g, '\\$1')}"`)).join(' ');
}

/** A template's command as `dockerArgs` carries it. `entrypoint` undefined: the form did not say (left as it is). */
export interface DockerCommand {
  dockerStartCmd: string[];
  dockerEntrypoint?: string[];
}

/**
 * `dockerArgs` → the template's command. Two forms: a command line (`python -u handler.py`, the start command), or
 * the JSON object `{"cmd": [...], "entrypoint": [...]}` in which runpodctl sends both (its `saveTemplate` after a
 * REST create with port labels or a readme). Text that starts with `{` but is not JSON is a command line.
 */
export function dockerArgsToCommand(field: string, text: string | null | undefined): DockerCommand {
  const s = (text ?? '').trim();
  if (s.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(s);
    } catch {
      return { dockerStartCmd: splitArgs(field, text) };
    }
    const isArgs = (v: unknown): v is string[] => Array.isArray(v) && v.every((a) => typeof a === 'string');
    const o = parsed as Record<string, unknown>;
    const keysKnown = Object.keys(o).every((k) => k === 'cmd' || k === 'entrypoint');
    if (
      !keysKnown ||
      !(o['cmd'] === undefined || isArgs(o['cmd'])) ||
      !(o['entrypoint'] === undefined || isArgs(o['entrypoint']))
    ) {
      throw invalid(field, 'as JSON must be {"cmd": [strings], "entrypoint": [strings]}');
    }
    const command: DockerCommand = { dockerStartCmd: isArgs(o['cmd']) ? o['cmd'] : [] };
    if (isArgs(o['entrypoint'])) command.dockerEntrypoint = o['entrypoint'];
    return command;
  }
  return { dockerStartCmd: splitArgs(field, text) };
}

/**
 * The template's command as `dockerArgs`: the command line, or the JSON form when there is an entrypoint too, so
 * that a client that reads `dockerArgs` and saves it back (runpodctl, the Python SDK) loses neither.
 */
export function commandToDockerArgs(t: {
  dockerStartCmd: readonly string[];
  dockerEntrypoint: readonly string[];
}): string {
  const line = joinArgs(t.dockerStartCmd);
  // A command line that starts with `{` would read back as the JSON form: it is written in that form then too.
  if (t.dockerEntrypoint.length === 0 && !line.trimStart().startsWith('{')) return line;
  return JSON.stringify({ cmd: t.dockerStartCmd, entrypoint: t.dockerEntrypoint });
}

/** The country of a data center id: `US-TX-3` → US, `EU-RO-1` → RO, `EUR-IS-1` → IS. */
export function countryOf(dataCenterId: string): string {
  const [first = '', second = ''] = dataCenterId.split('-');
  return ['EU', 'EUR', 'OC', 'AP'].includes(first) ? second : first;
}

/** `locations`: data center ids or two-letter country codes → data center ids; empty → [] (anywhere). */
export function locationsToDataCenters(field: string, text: string | null | undefined): string[] {
  const out: string[] = [];
  for (const raw of commaList(text)) {
    const entry = raw.toUpperCase();
    const known = (DATA_CENTER_IDS as readonly string[]).includes(entry);
    const matches = known
      ? [entry]
      : DATA_CENTER_IDS.filter((dc) => /^[A-Z]{2}$/.test(entry) && countryOf(dc) === entry);
    if (matches.length === 0) {
      throw invalid(
        field,
        `entry '${raw}' is neither a data center id (${DATA_CENTER_IDS.join(', ')}) nor a country with one`,
      );
    }
    for (const dc of matches) if (!out.includes(dc)) out.push(dc);
  }
  return out;
}

/**
 * Data center ids → `locations`; null when unrestricted (none or all of them). A country whose data centers are
 * all included reads as its country code (`US`), so a `locations` of country codes reads back as given.
 */
export function dataCentersToLocations(ids: readonly string[]): string | null {
  if (ids.length === 0 || DATA_CENTER_IDS.every((dc) => ids.includes(dc))) return null;
  const out: string[] = [];
  for (const id of ids) {
    const country = countryOf(id);
    const whole = DATA_CENTER_IDS.filter((dc) => countryOf(dc) === country).every((dc) => ids.includes(dc));
    const entry = whole ? country : id;
    if (!out.includes(entry)) out.push(entry);
  }
  return out.join(',');
}

export function cudaVersions(field: string, text: string | null | undefined): string[] {
  const versions = commaList(text);
  for (const v of versions) cudaVersion(field, v);
  return versions;
}

export function cudaVersion(field: string, v: string): string {
  if (!(CUDA_VERSIONS as readonly string[]).includes(v)) {
    throw invalid(field, `'${v}' is not one of ${CUDA_VERSIONS.join(', ')}`);
  }
  return v;
}

export function intIn(field: string, value: number, min: number, max: number): number {
  if (value < min || value > max) throw invalid(field, `must be between ${min} and ${max}`);
  return value;
}

export function oneOf<T extends string>(field: string, value: string, values: readonly T[]): T {
  if (!(values as readonly string[]).includes(value)) throw invalid(field, `must be one of ${values.join(', ')}`);
  return value as T;
}

/** Whether two lists hold the same strings in the same order. */
export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * A kept client text parsed again, or undefined when it no longer parses: a data center, CUDA version or quoting a
 * later release refuses reads the derived value then, rather than failing every read of its endpoint or template.
 */
export function reparsed<T>(parse: () => T): T | undefined {
  try {
    return parse();
  } catch {
    return undefined;
  }
}
