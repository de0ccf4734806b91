// Formatting and small computations shared by the pages.
import { isFinalStatus, type JobSummary } from './types.ts';

/**
 * A duration: ms, then s, then min and s below an hour, h and min below a day, then d and h (a long job read
 * "125 min 3 s", a day "1440 min 0 s"). Each step rounds the whole value to its smaller unit first, so a rounded-up
 * second or minute carries ("1 min 0 s", not "60.0 s" or "1 min 60 s").
 */
export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (value < 1000) return `${Math.round(value)} ms`;
  if (value < 59_950) return `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s`;
  const s = Math.round(value / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const m = Math.round(value / 60_000);
  if (m < 1440) return `${Math.floor(m / 60)} h ${m % 60} min`;
  const h = Math.round(value / 3_600_000);
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

export function time(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false });
}

export function ago(iso: string, now = Date.now()): string {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/**
 * USD: cents, and under a cent two significant digits (a worker that ran a few seconds costs some hundred-thousandths
 * of a dollar; four fixed decimals showed it as $0.0000, as if free), at most 8 decimals.
 */
export function money(amount: number): string {
  const size = Math.abs(amount);
  if (amount === 0 || size >= 0.01) return `$${amount.toFixed(2)}`;
  const decimals = Math.min(8, Math.max(4, 1 - Math.floor(Math.log10(size))));
  return `$${amount.toFixed(decimals)}`;
}

export function json(value: unknown): string {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return '(not serialisable)';
  }
}

/** The p-th percentile (0–100) by nearest rank; null for no values. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** When a listed job finished, estimated from the times /requests gives (created + delay + execution). */
function finishedAt(j: JobSummary): number | null {
  if (!isFinalStatus(j.status) || j.executionTime === null) return null;
  return new Date(j.createdAt).getTime() + (j.delayTime ?? 0) + j.executionTime;
}

export interface JobStats {
  /** Jobs that finished (completed, failed or timed out) in the last minute. */
  perMinute: number;
  delayP50: number | null;
  delayP95: number | null;
  execP50: number | null;
  execP95: number | null;
  /** How many finished jobs the percentiles are over. */
  sample: number;
}

/**
 * Throughput and latency percentiles from the newest page of /requests. When the page does not reach back a full
 * minute, the count is scaled to a minute from the time the page covers.
 */
export function jobStats(jobs: readonly JobSummary[], now: number, pageFull: boolean): JobStats {
  const done = jobs.filter((j) => j.status !== 'CANCELLED' && finishedAt(j) !== null);
  let perMinute = done.filter((j) => now - finishedAt(j)! <= 60_000).length;
  const oldest = jobs[jobs.length - 1];
  if (pageFull && oldest) {
    const covered = now - new Date(oldest.createdAt).getTime();
    if (covered > 0 && covered < 60_000) perMinute = Math.round((perMinute * 60_000) / covered);
  }
  const completed = done.filter((j) => j.status === 'COMPLETED');
  const delays = completed.map((j) => j.delayTime).filter((v): v is number => v !== null);
  const execs = completed.map((j) => j.executionTime).filter((v): v is number => v !== null);
  return {
    perMinute,
    delayP50: percentile(delays, 50),
    delayP95: percentile(delays, 95),
    execP50: percentile(execs, 50),
    execP95: percentile(execs, 95),
    sample: completed.length,
  };
}

/**
 * A job's error as a person reads it. The SDK workers report `{error_type, error_message, error_traceback, …}` as a
 * JSON string (RunPod's shape); shown as it came, that was one line of JSON with the traceback's line ends as `\n`.
 * Anything else is shown as it is.
 */
export function jobError(error: unknown): { message: string; traceback: string | null } {
  let value = error;
  if (typeof error === 'string') {
    try {
      value = JSON.parse(error) as unknown;
    } catch {
      return { message: error, traceback: null };
    }
  }
  if (typeof value === 'object' && value !== null && 'error_message' in value) {
    const v = value as { error_message: unknown; error_traceback?: unknown };
    const message = typeof v.error_message === 'string' ? v.error_message : json(v.error_message);
    const traceback = typeof v.error_traceback === 'string' && v.error_traceback !== '' ? v.error_traceback : null;
    return { message, traceback };
  }
  return { message: typeof error === 'string' ? error : json(error), traceback: null };
}

/**
 * `KEY=value` lines ⇄ an env object. Returns an error message for a bad line. The value is everything after the
 * first `=`, spaces and tabs included: trimming the line changed a value that ends in spaces (formatEnv writes it
 * as it is) whenever the form was saved for another field.
 */
export function parseEnv(text: string): { env: Record<string, string> } | { error: string } {
  const env: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    // Only a Windows line end is dropped (text pasted with \r\n).
    const line = lines[i]!.replace(/\r$/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const eq = line.indexOf('=');
    const name = eq > 0 ? line.slice(0, eq).trim() : '';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      return { error: `Line ${i + 1}: write NAME=value (NAME: letters, digits and _, not starting with a digit)` };
    }
    env[name] = line.slice(eq + 1);
  }
  return { env };
}

export function formatEnv(env: Record<string, string> | undefined): string {
  return Object.entries(env ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

/**
 * The env a form's box means: what it was loaded with while its text is untouched, else the text parsed. A value of
 * several lines (a PEM certificate, which the API and the CLI take) is shown over several lines that do not read
 * back as NAME=value; parsing the untouched box refused them, so no other field of the form could be saved.
 */
export function envOf(
  text: string,
  loaded: Record<string, string> | undefined,
): { env: Record<string, string> } | { error: string } {
  if (loaded && text === formatEnv(loaded)) return { env: loaded };
  return parseEnv(text);
}
