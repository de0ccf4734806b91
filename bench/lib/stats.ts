// Latency samples, percentiles and the small formatting helpers every scenario shares.

/** A growable list of latency samples in milliseconds. */
export class Samples {
  private data = new Float64Array(1024);
  private n = 0;

  add(ms: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = ms;
  }

  get count(): number {
    return this.n;
  }

  /** Percentiles (0–100) by nearest rank over the sorted samples; NaN when there are none. */
  summary(): LatencySummary {
    const sorted = this.data.slice(0, this.n).sort();
    const at = (p: number): number => {
      if (sorted.length === 0) return Number.NaN;
      const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
      return sorted[rank]!;
    };
    let sum = 0;
    for (const v of sorted) sum += v;
    return {
      count: sorted.length,
      mean: sorted.length ? sum / sorted.length : Number.NaN,
      p50: at(50),
      p90: at(90),
      p99: at(99),
      p999: at(99.9),
      max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    };
  }
}

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** Round for tables and JSON: 2 decimals under 10, 1 under 1000, whole numbers above. */
export function round(v: number): number {
  if (!Number.isFinite(v)) return v;
  const a = Math.abs(v);
  if (a < 10) return Math.round(v * 100) / 100;
  if (a < 1000) return Math.round(v * 10) / 10;
  return Math.round(v);
}

export function fmt(v: number | string | null | undefined): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'string') return v;
  if (!Number.isFinite(v)) return '–';
  return round(v).toLocaleString('en-US');
}

export function ratio(a: number, b: number): number {
  return b > 0 ? a / b : Number.NaN;
}

export function pct(v: number): string {
  return Number.isFinite(v) ? `${round(v * 100)}%` : '–';
}

export function mib(bytes: number): number {
  return bytes / (1024 * 1024);
}

/** A Markdown table. */
export function table(head: string[], rows: Array<Array<number | string | null | undefined>>): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map((r) => line(r.map(fmt)))].join('\n');
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
