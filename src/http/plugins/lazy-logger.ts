import type { FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;

/**
 * A request's logger whose pino child is built only when a line is actually written.
 *
 * Every request gets a child logger (Fastify's `reqId`, then ours with the endpoint, job and worker ids), and pino
 * serialises a child's bindings when it is created. At the shipped `info` level most request lines are debug
 * (workers' polls) and under `warn` none is written at all, so building the children eagerly was ~10% of a /run's
 * CPU (docs/benchmarks.md). Here `child()` only records the bindings; the pino child chain is created on the first
 * line that passes the level check, with exactly the bindings and order eager children would have had.
 */
export class LazyLogger {
  readonly #root: Logger;
  readonly #parent: Logger | LazyLogger;
  readonly #bindings: Bindings;
  readonly #opts: Record<string, unknown> | undefined;
  #real: Logger | undefined;

  constructor(root: Logger, parent: Logger | LazyLogger, bindings: Bindings, opts?: Record<string, unknown>) {
    this.#root = root;
    this.#parent = parent;
    this.#bindings = bindings;
    this.#opts = opts !== undefined && Object.keys(opts).length > 0 ? opts : undefined;
  }

  /** The pino child, created on first use. */
  get real(): Logger {
    if (this.#real === undefined) {
      const parent = this.#parent instanceof LazyLogger ? this.#parent.real : this.#parent;
      this.#real = parent.child(this.#bindings, this.#opts);
    }
    return this.#real;
  }

  get level(): string {
    return this.#real?.level ?? (this.#opts?.['level'] as string | undefined) ?? this.#root.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  isLevelEnabled(level: string): boolean {
    // A child with a level of its own (a route's logLevel) decides for itself; everything else inherits the root's.
    if (this.#real !== undefined || this.#opts?.['level'] !== undefined) return this.real.isLevelEnabled(level);
    if (this.#parent instanceof LazyLogger) return this.#parent.isLevelEnabled(level);
    return this.#parent.isLevelEnabled(level);
  }

  bindings(): Bindings {
    return this.real.bindings();
  }

  child(bindings: Bindings, opts?: Record<string, unknown>): LazyLogger {
    return new LazyLogger(this.#root, this, bindings, opts);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}

  #write(level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    // pino's overloads want (obj, msg?, ...args); what arrives here was written against the same signatures.
    this.real[level](...(args as [unknown, string?, ...unknown[]]));
  }
}

/** Fastify's `childLoggerFactory` (Fastify's logger is pino): the per-request child (reqId) is lazy too. */
export function lazyChildLoggerFactory(logger: FastifyBaseLogger, bindings: Bindings, opts: object): FastifyBaseLogger {
  const root = logger as unknown as Logger;
  return new LazyLogger(root, root, bindings, opts as Record<string, unknown>);
}
