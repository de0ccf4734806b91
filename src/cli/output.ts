/**
 * What the CLI prints. Results go to stdout (a table or key/value block for people, JSON with --json); notes,
 * progress and errors go to stderr, so `wharf … --json | jq` always reads clean JSON. Colour only when wanted
 * (see cliColorWanted: a terminal, no NO_COLOR).
 */
export interface Sink {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface Colors {
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;
const PLAIN: Colors = { bold: String, dim: String, red: String, green: String, yellow: String, cyan: String };
const ANSI: Colors = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
};

export const colors = (on: boolean): Colors => (on ? ANSI : PLAIN);

// eslint-disable-next-line no-control-regex
const ANSI_RE = /\x1b\[[0-9;]*m/g;
export const visibleLength = (s: string): number => [...s.replace(ANSI_RE, '')].length;

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Colour a cell after padding is worked out (padding counts visible characters only). */
  paint?: (text: string, row: T) => string;
}

/** A cell as text: '-' for nothing, lists joined with commas, objects as compact JSON. */
export function cell(v: unknown): string {
  if (v === undefined || v === null || v === '') return '-';
  if (Array.isArray(v)) return v.length === 0 ? '-' : v.map(cell).join(',');
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v) ?? typeof v;
}

export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[], c: Colors = PLAIN): string {
  const texts = rows.map((row) => columns.map((col) => cell(col.value(row))));
  const widths = columns.map((col, i) => Math.max(col.header.length, ...texts.map((t) => visibleLength(t[i]!))));
  const line = (cells: string[]) =>
    cells
      .map((s, i) => (i === cells.length - 1 ? s : s + ' '.repeat(widths[i]! - visibleLength(s))))
      .join('  ')
      .trimEnd();
  const header = line(columns.map((col) => c.bold(col.header)));
  const body = texts.map((t, r) => line(t.map((s, i) => columns[i]!.paint?.(s, rows[r]!) ?? s)));
  return [header, ...body].join('\n');
}

/** `key   value` lines, keys aligned. */
export function renderFields(pairs: readonly (readonly [string, unknown])[], c: Colors = PLAIN): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${c.dim(k.padEnd(width))}  ${cell(v)}`).join('\n');
}

/** 850 ms, 1.2 s, 3m 05s, 2h 10m. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const GOOD = new Set(['COMPLETED', 'READY', 'RUNNING', 'running', 'idle', 'ready', 'all']);
const BAD = new Set(['FAILED', 'TIMED_OUT', 'CANCELLED', 'unhealthy', 'REVOKED']);

/** A job, worker or key state in its colour: green done/healthy, red failed, yellow on its way. */
export function paintStatus(c: Colors, status: string): string {
  if (GOOD.has(status)) return c.green(status);
  if (BAD.has(status)) return c.red(status);
  return c.yellow(status);
}

export class Output {
  readonly json: boolean;
  /** Colours for stdout and for stderr (they can differ: `wharf … > file` on a terminal). */
  readonly c: Colors;
  readonly ce: Colors;
  readonly stdout: Sink;
  readonly stderr: Sink;

  constructor(io: { stdout: Sink; stderr: Sink }, opts: { json: boolean; color: boolean; colorErr: boolean }) {
    this.stdout = io.stdout;
    this.stderr = io.stderr;
    this.json = opts.json;
    this.c = colors(opts.color);
    this.ce = colors(opts.colorErr);
  }

  /** A line of the result on stdout. */
  line(text = ''): void {
    this.stdout.write(`${text}\n`);
  }

  /** A value as indented JSON on stdout (the --json form of every command). */
  data(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON value per line (streams and followed logs, for `jq -c`). */
  ndjson(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value)}\n`);
  }

  table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): void {
    if (rows.length === 0) this.note(empty);
    else this.line(renderTable(rows, columns, this.c));
  }

  fields(pairs: readonly (readonly [string, unknown])[]): void {
    this.line(renderFields(pairs, this.c));
  }

  /** A remark for people on stderr (never part of the result; silent with --json). */
  note(text: string): void {
    if (!this.json) this.stderr.write(`${text}\n`);
  }

  /** The one line an error gets: `wharf: CODE: message`. */
  error(message: string, code?: string): void {
    this.stderr.write(`${this.ce.red('wharf:')} ${code ? `${this.ce.bold(code)}: ` : ''}${message}\n`);
  }

  status(s: string): string {
    return paintStatus(this.c, s);
  }
}
