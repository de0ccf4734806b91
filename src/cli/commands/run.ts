import { isFinalStatus, type JobStatus } from '../../sdk/client/index.ts';
import { UsageError } from '../args.ts';
import type { Command } from '../context.ts';
import { printJob, readInput, streamJob, waitForJob, whileWaiting } from './jobs.ts';

const RUNSYNC_MAX_WAIT_MS = 300_000;

export const runCommand: Command = {
  name: 'run',
  summary: 'Submit a job; with --sync or --wait, wait for its result',
  args: ['<endpoint>'],
  usage: "[--input '{…}'] [--sync | --wait | --stream] [options]",
  options: {
    input: {
      type: 'string',
      short: 'i',
      value: '<json>',
      doc: 'The job input: a JSON object, @file.json, or - for stdin (default {})',
    },
    sync: { type: 'boolean', doc: 'Submit with /runsync: the server holds the request until the job is final' },
    wait: { type: 'boolean', doc: 'Submit with /run, then wait until the job is final, showing why it waits' },
    stream: { type: 'boolean', doc: 'Submit with /run, then print streamed chunks as they arrive' },
    'max-wait': { type: 'string', value: '<duration>', doc: 'With --sync or --wait: give up after this long' },
    webhook: { type: 'string', value: '<url>', doc: 'URL the server POSTs the final result to' },
    ttl: { type: 'string', value: '<duration>', doc: 'Delete the job this long after submission (policy.ttl)' },
    timeout: {
      type: 'string',
      value: '<duration>',
      doc: 'Fail the job TIMED_OUT after running this long (policy.executionTimeout)',
    },
    'low-priority': { type: 'boolean', doc: 'Do not scale up for this job (policy.lowPriority)' },
  },
  details: [
    'Durations: 500ms, 30s, 5m, 2h, 1d (a bare number is seconds).',
    'Without --sync/--wait/--stream the job id is printed and the command returns at once.',
    'Exit status 1 when a waited-for job ends FAILED, CANCELLED or TIMED_OUT (its error is printed), or when',
    '--max-wait runs out first (the job goes on).',
  ],
  examples: [
    'wharf run my-endpoint --input \'{"prompt": "hello"}\' --sync',
    'wharf run my-endpoint --input @job.json --wait --timeout 10m --ttl 1h',
    'wharf run my-endpoint --input \'{"stream": 3}\' --stream',
    'echo \'{"a": 1}\' | wharf run my-endpoint --input - --json',
  ],
  async run(ctx) {
    const [endpointId] = ctx.positionals() as [string];
    const { args, out } = ctx;
    const modes = ['sync', 'wait', 'stream'].filter((m) => args.flag(m));
    if (modes.length > 1) throw new UsageError(`--${modes.join(' and --')} cannot be used together`, 'run');
    const maxWait = args.duration('max-wait');
    if (maxWait !== undefined && !args.flag('sync') && !args.flag('wait')) {
      throw new UsageError('--max-wait applies to --sync and --wait only', 'run');
    }
    const policy = {
      ...(args.has('timeout') ? { executionTimeout: args.duration('timeout') } : {}),
      ...(args.has('ttl') ? { ttl: args.duration('ttl') } : {}),
      ...(args.flag('low-priority') ? { lowPriority: true } : {}),
    };
    const webhook = args.string('webhook');
    const request = {
      input: await readInput(ctx),
      ...(webhook ? { webhook } : {}),
      ...(Object.keys(policy).length > 0 ? { policy } : {}),
    };
    const ep = ctx.client().endpoint(endpointId);

    if (args.flag('sync')) {
      const started = Date.now();
      // One /runsync call holds the request as long as the server allows (or --max-wait, if shorter)…
      const window = Math.max(1000, Math.min(maxWait ?? RUNSYNC_MAX_WAIT_MS, RUNSYNC_MAX_WAIT_MS));
      const spinner = ctx.spinner();
      spinner.start(`waiting on /runsync (up to ${Math.round(window / 1000)} s)`);
      // The job has no id here yet (it comes with the answer): say where to find it.
      let job: JobStatus = await whileWaiting(
        ctx,
        spinner,
        () => `stopped waiting; the job goes on (wharf jobs ${endpointId} lists it)`,
        () => ep.runSync(request, { wait: window, timeoutMs: window }),
      );
      // …and when that ran out first, the CLI keeps waiting, now showing the job's status and queue reason, until
      // --max-wait counted from the submission.
      if (!isFinalStatus(job.status)) job = await waitForJob(ctx, endpointId, job, maxWait, started);
      return printJob(ctx, job);
    }

    const submitted = await ep.run(request);
    if (args.flag('stream')) {
      out.note(out.ce.dim(`job ${submitted.id} ${submitted.status}`));
      return streamJob(ctx, endpointId, submitted.id);
    }
    if (args.flag('wait')) return printJob(ctx, await waitForJob(ctx, endpointId, submitted, maxWait));
    if (out.json) out.data(submitted);
    else {
      out.fields([
        ['id', submitted.id],
        ['status', out.status(submitted.status)],
      ]);
      out.note(out.ce.dim(`Follow it with: wharf status ${endpointId} ${submitted.id} --wait`));
    }
    return 0;
  },
};
