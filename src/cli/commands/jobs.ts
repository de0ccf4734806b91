import { isFinalStatus, type JobStatus, type QueueReason } from '../../sdk/client/index.ts';
import { UsageError } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { formatMs } from '../output.ts';
import type { Spinner } from '../spinner.ts';
import { visible } from './logs.ts';

const POLL_WAIT_MS = 2000;

/**
 * A job's error in one line. Workers report `{error_type, error_message, error_traceback}` (often as a JSON
 * string): that becomes "Error: boom", with the traceback returned apart for people who want it.
 */
export function jobError(e: unknown): { summary: string; traceback?: string } {
  let v = e;
  if (typeof v === 'string' && v.startsWith('{')) {
    try {
      v = JSON.parse(v);
    } catch {
      // Not JSON after all: shown as it is.
    }
  }
  if (typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>)['error_message'] === 'string') {
    const o = v as Record<string, unknown>;
    const type = typeof o['error_type'] === 'string' ? `${o['error_type']}: ` : '';
    const tb = o['error_traceback'];
    return { summary: `${type}${o['error_message']}`, ...(typeof tb === 'string' && tb ? { traceback: tb } : {}) };
  }
  return { summary: (typeof v === 'string' ? v : JSON.stringify(v)).replace(/\s*\n\s*/g, ' ') };
}

/** The error line's text, a worker's control characters shown (as `wharf logs` does), never obeyed. */
const errorText = (e: unknown): string => visible(jobError(e).summary);

/** "scaling-up: starting a worker": why jobs wait, as /status (queueReason) and /health (scaling) say. */
export const reasonText = (q: QueueReason): string => (q.message ? `${q.reason}: ${q.message}` : q.reason);

/** "IN_QUEUE · scaling-up: starting a worker" — the spinner's text while a job waits. */
export function describeJob(job: { status: string; queueReason?: QueueReason | undefined }): string {
  return job.queueReason ? `${job.status} · ${reasonText(job.queueReason)}` : job.status;
}

/**
 * Print a job (fields and output for people, the body with --json). Judged (the default, for commands that waited
 * for the outcome): a job that ended FAILED, CANCELLED or TIMED_OUT gets the error line and exit status 1.
 */
export function printJob(ctx: Context, job: JobStatus, judge = true): number {
  const { out } = ctx;
  if (out.json) out.data(job);
  else {
    const pairs: [string, unknown][] = [
      ['id', job.id],
      ['status', out.status(job.status)],
    ];
    if (job.queueReason) pairs.push(['waiting', reasonText(job.queueReason)]);
    if (job.workerId) pairs.push(['worker', job.workerId]);
    if (job.delayTime !== undefined) pairs.push(['delay', formatMs(job.delayTime)]);
    if (job.executionTime !== undefined) pairs.push(['execution', formatMs(job.executionTime)]);
    if (job.retries) pairs.push(['retries', job.retries]);
    const error = job.error === undefined ? undefined : jobError(job.error);
    if (error) pairs.push(['error', out.c.red(visible(error.summary))]);
    out.fields(pairs);
    if (error?.traceback) out.line(out.c.dim(visible(error.traceback)));
    if (job.output !== undefined) {
      out.line(out.c.dim(isFinalStatus(job.status) ? 'output' : 'progress'));
      out.line(JSON.stringify(job.output, null, 2));
    }
  }
  if (!judge || !isFinalStatus(job.status) || job.status === 'COMPLETED') return 0;
  out.error(`job ${job.id} ${job.status}${job.error !== undefined ? `: ${errorText(job.error)}` : ''}`);
  return 1;
}

/**
 * Long-poll /status-sync until the job is final, showing its status and queue reason (why it waits: scaling up,
 * all workers busy…) on the spinner. Gives up `maxWaitMs` after `startedAt` (default: now; a caller that already
 * waited another way passes when it began), with the job untouched.
 */
export async function waitForJob(
  ctx: Context,
  endpointId: string,
  first: Pick<JobStatus, 'id' | 'status'>,
  maxWaitMs?: number,
  startedAt = Date.now(),
): Promise<JobStatus> {
  const ep = ctx.client().endpoint(endpointId);
  const spinner = ctx.spinner();
  const deadline = maxWaitMs === undefined ? Infinity : startedAt + maxWaitMs;
  // /run's answer has no queue reason: ask once at once, so a scale-up shows before the first long poll ends.
  let job: JobStatus = isFinalStatus(first.status) ? first : await ep.status(first.id);
  spinner.start(`${job.id} ${describeJob(job)}`);
  const interrupted = () => `stopped waiting; job ${job.id} goes on (wharf cancel ${endpointId} ${job.id} to stop it)`;
  return whileWaiting(ctx, spinner, interrupted, async () => {
    while (!isFinalStatus(job.status)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        spinner.stop();
        throw new JobWaitTimeout(job, endpointId, maxWaitMs!);
      }
      job = await ep.statusSync(job.id, { wait: Math.max(1000, Math.min(POLL_WAIT_MS, left)) });
      spinner.update(`${job.id} ${describeJob(job)}`);
    }
    return job;
  });
}

/**
 * Run `wait` with its spinner; Ctrl-C meanwhile stops the spinner, prints `interrupted()` (what happens to the job,
 * which goes on) and exits 130. The spinner is stopped however `wait` ends.
 */
export async function whileWaiting<T>(
  ctx: Context,
  spinner: Spinner,
  interrupted: () => string,
  wait: () => Promise<T>,
): Promise<T> {
  const onSigint = (): void => {
    spinner.stop();
    ctx.out.error(interrupted());
    process.exit(130);
  };
  process.once('SIGINT', onSigint);
  try {
    return await wait();
  } finally {
    process.off('SIGINT', onSigint);
    spinner.stop();
  }
}

/** The job did not finish within --max-wait: exit 1, with the command that picks up where this one stopped. */
export class JobWaitTimeout extends Error {
  constructor(job: Pick<JobStatus, 'id' | 'status'>, endpointId: string, ms: number) {
    super(`job ${job.id} is still ${job.status} after ${formatMs(ms)} (wharf status ${endpointId} ${job.id} --wait)`);
  }
}

const jobArgs = ['<endpoint>', '<job>'] as const;

export const statusCommand: Command = {
  name: 'status',
  summary: "Show a job's status, output or error",
  args: jobArgs,
  options: {
    wait: { type: 'boolean', doc: 'Wait until the job is final (spinner on a terminal); exit 1 if it failed' },
    'max-wait': { type: 'string', value: '<duration>', doc: 'With --wait: give up after this long (e.g. 5m)' },
  },
  details: ['Without --wait the exit status is 0 whatever state the job is in.'],
  examples: ['wharf status my-endpoint 6f1c…-e1', 'wharf status my-endpoint 6f1c…-e1 --wait --json | jq .output'],
  async run(ctx) {
    const [endpointId, jobId] = ctx.positionals() as [string, string];
    const maxWait = ctx.args.duration('max-wait');
    if (maxWait !== undefined && !ctx.args.flag('wait'))
      throw new UsageError('--max-wait applies to --wait only', 'status');
    let job = await ctx.client().endpoint(endpointId).status(jobId);
    if (!ctx.args.flag('wait')) return printJob(ctx, job, false);
    job = await waitForJob(ctx, endpointId, job, maxWait);
    return printJob(ctx, job);
  },
};

export const cancelCommand: Command = {
  name: 'cancel',
  summary: 'Cancel a queued or running job',
  args: jobArgs,
  async run(ctx) {
    const [endpointId, jobId] = ctx.positionals() as [string, string];
    const res = await ctx.client().endpoint(endpointId).cancel(jobId);
    if (ctx.out.json) ctx.out.data(res);
    else ctx.out.line(`job ${res.id} ${ctx.out.status(res.status)}`);
  },
};

export const retryCommand: Command = {
  name: 'retry',
  summary: 'Queue a FAILED or TIMED_OUT job again, with the same id and input',
  args: jobArgs,
  async run(ctx) {
    const [endpointId, jobId] = ctx.positionals() as [string, string];
    const res = await ctx.client().endpoint(endpointId).retry(jobId);
    if (ctx.out.json) ctx.out.data(res);
    else ctx.out.line(`job ${res.id} ${ctx.out.status(res.status)}`);
  },
};

export const streamCommand: Command = {
  name: 'stream',
  summary: "Print a streaming job's chunks as they arrive, until it ends",
  args: jobArgs,
  details: [
    'Each chunk is printed on its own line: strings as they are, other values as JSON (always JSON with --json).',
    'Exit status 1 when the job did not complete.',
  ],
  async run(ctx) {
    const [endpointId, jobId] = ctx.positionals() as [string, string];
    return streamJob(ctx, endpointId, jobId);
  },
};

/** Shared by `stream` and `run --stream`: chunks to stdout as they come; exit 1 when the job did not complete. */
export async function streamJob(ctx: Context, endpointId: string, jobId: string): Promise<number> {
  const ep = ctx.client().endpoint(endpointId);
  const { out } = ctx;
  const chunks = ep.stream(jobId);
  for (;;) {
    const next = await chunks.next();
    if (next.done) {
      if (next.value.status === 'COMPLETED') return 0;
      // The error is on the job, not the stream.
      const job = await ep.status(jobId).catch(() => ({ id: jobId, status: next.value.status, error: undefined }));
      out.error(`job ${jobId} ${job.status}${job.error !== undefined ? `: ${errorText(job.error)}` : ''}`);
      return 1;
    }
    const chunk = next.value;
    if (out.json || typeof chunk !== 'string') out.ndjson(chunk);
    else out.line(chunk);
  }
}

/** `--input` as the job's input object: inline JSON, @file, or - for stdin. */
export async function readInput(ctx: Context): Promise<Record<string, unknown>> {
  const raw = ctx.args.string('input');
  let value: unknown = {};
  if (raw === '-') {
    try {
      value = JSON.parse(await ctx.readStdin());
    } catch (error) {
      throw new UsageError(`--input - : stdin is not valid JSON: ${(error as Error).message}`, ctx.command.name);
    }
  } else if (raw !== undefined) value = ctx.args.json('input', (p) => ctx.readFile(p));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError('--input must be a JSON object, e.g. --input \'{"prompt": "hi"}\'', ctx.command.name);
  }
  return value as Record<string, unknown>;
}
