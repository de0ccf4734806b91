// What every scenario gets: the options of this run, sizes that shrink in quick mode, a log for people (stderr) and
// the result shape that run.ts turns into docs/benchmarks.md and one JSON line per scenario.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Options {
  quick: boolean;
  /** Quick with a quarter of the quick sizes and no optional variants: the smoke test's mode. */
  tiny: boolean;
  /** Scenario ids to run ('1'…'6', 'bullmq', 'graphile', 'pgboss'); baselines always run. */
  scenarios: Set<string>;
  /** Where the Markdown report goes; null = print only. */
  out: string | null;
  /** Write V8 CPU profiles of the measured windows here (and summarise them). */
  profileDir: string | null;
}

export interface Result {
  id: string;
  title: string;
  /** Markdown for people: tables and a few sentences. */
  markdown: string;
  /** The machine-readable line (flat or shallow object). */
  json: Record<string, unknown>;
}

export interface Baselines {
  /** Fastify hello world, requests/s at the throughput concurrency. */
  helloRps: number;
  helloRpsC1: number;
  /** Hello-world round trip at concurrency 1 and 50 (ms). */
  helloP50c1: number;
  helloP99c1: number;
  helloP50c50: number;
  helloP99c50: number;
  /** Server CPU per hello-world request (µs) at the throughput concurrency. */
  helloCpuUs: number;
  /** The same at concurrency 1, where nothing is amortised over several requests. */
  helloCpuUsC1: number;
  /** node:sqlite WAL synchronous=FULL: commits/s with one row each, rows/s batched. */
  storeCommitsPerS: number;
  storeBatchedRowsPerS: number;
}

export class Ctx {
  readonly opts: Options;
  readonly tmp: string;
  baselines: Baselines | null = null;
  /** Results so far (later scenarios compare with earlier ones). */
  readonly results: Result[] = [];

  constructor(opts: Options) {
    this.opts = opts;
    this.tmp = mkdtempSync(join(tmpdir(), 'wharf-bench-'));
  }

  /** A size (a count or a duration) for the full run, or the quick one (a quarter of it when tiny). */
  size(full: number, quick: number): number {
    if (this.opts.tiny) return Math.max(1, Math.round(quick / 4));
    return this.opts.quick ? quick : full;
  }

  dir(name: string): string {
    const d = join(this.tmp, name);
    mkdirSync(d, { recursive: true });
    return d;
  }

  private readonly t0 = Date.now();

  log(message: string): void {
    process.stderr.write(`[bench ${((Date.now() - this.t0) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);
  }

  cleanup(): void {
    rmSync(this.tmp, { recursive: true, force: true });
  }
}
