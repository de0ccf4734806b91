// Public types of the TypeScript worker SDK. The shapes mirror what the official Python SDK hands to a handler
// (`job["id"]`, `job["input"]`, extra keys passed through) so a handler ports between the two without surprises.

/** A job as the service hands it out: `id`, `input`, and any extra keys (`webhook`, `batchId`, `policy`, …). */
export interface Job<I = unknown> {
  id: string;
  input: I;
  [extra: string]: unknown;
}

export interface JobLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface HandlerContext {
  /** Aborted when the service stops this job (stop channel) or the worker is stopped with a timeout. */
  signal: AbortSignal;
  /** Posts `{"status":"IN_PROGRESS","output": value}` for this job. Never rejects. */
  progressUpdate(value: unknown): Promise<void>;
  /** Log lines tagged with this job's id. */
  log: JobLogger;
  workerId: string;
}

/**
 * A handler returns a value (or a promise of one), or an iterable / async iterable (e.g. a generator) whose
 * items are streamed one by one.
 */
export type Handler<I, O> = (job: Job<I>, ctx: HandlerContext) => O | Promise<O> | AsyncIterable<O> | Iterable<O>;

export interface StartOptions<I, O> {
  handler: Handler<I, O>;
  /** Called with the current concurrency before every take; its result (an integer >= 1) is the new one. */
  concurrencyModifier?: (current: number) => number;
  /** For streaming handlers: post all chunks again as the final output instead of `[]`. */
  returnAggregateStream?: boolean;
  /** Add `stopPod: true` to every result and shut the worker down after its first result. */
  refreshWorker?: boolean;
  /** Environment to read the RUNPOD_* variables from; defaults to `process.env`. */
  env?: Record<string, string | undefined>;
  /** Install SIGTERM/SIGINT handlers that stop the worker gracefully (default true). */
  installSignalHandlers?: boolean;
}

export interface StopOptions {
  /** After this many milliseconds, abort the jobs still running (no result is posted for them). */
  timeoutMs?: number;
}

export interface WorkerHandle {
  readonly workerId: string;
  /** Stop taking jobs, let running jobs finish and post, then resolve. Idempotent. */
  stop(opts?: StopOptions): Promise<void>;
  /** Resolves once the worker has stopped (after stop(), a signal, or a refreshWorker result). */
  readonly done: Promise<void>;
}
