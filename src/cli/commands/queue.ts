import type { Command } from '../context.ts';
import { formatMs } from '../output.ts';
import { reasonText } from './jobs.ts';

const counts = (o: object): string =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${v}`)
    .join('  ');

export const healthCommand: Command = {
  name: 'health',
  summary: "An endpoint's job counts and workers by state, and why jobs wait",
  args: ['<endpoint>'],
  async run(ctx) {
    const [endpointId] = ctx.positionals() as [string];
    const h = await ctx.client().endpoint(endpointId).health();
    if (ctx.out.json) return void ctx.out.data(h);
    const pairs: [string, unknown][] = [
      ['jobs', counts(h.jobs)],
      ['workers', counts(h.workers)],
    ];
    if (h.scaling) pairs.push(['scaling', reasonText(h.scaling)]);
    ctx.out.fields(pairs);
  },
};

export const purgeCommand: Command = {
  name: 'purge',
  summary: "Remove every job still waiting in an endpoint's queue (running jobs go on)",
  args: ['<endpoint>'],
  async run(ctx) {
    const [endpointId] = ctx.positionals() as [string];
    const res = await ctx.client().endpoint(endpointId).purgeQueue();
    if (ctx.out.json) ctx.out.data(res);
    else ctx.out.line(`removed ${res.removed} queued job${res.removed === 1 ? '' : 's'} from ${endpointId}`);
  },
};

export const jobsCommand: Command = {
  name: 'jobs',
  summary: "An endpoint's recent jobs, newest first",
  args: ['<endpoint>'],
  options: {
    limit: { type: 'string', value: '<n>', doc: 'Jobs per page, 1-500 (default 50)' },
    cursor: { type: 'string', value: '<cursor>', doc: 'The next page: nextCursor of the previous --json answer' },
  },
  async run(ctx) {
    const [endpointId] = ctx.positionals() as [string];
    const limit = ctx.args.int('limit', { min: 1, max: 500 });
    const cursor = ctx.args.string('cursor');
    const page = await ctx
      .client()
      .endpoint(endpointId)
      .requests({ ...(limit ? { limit } : {}), ...(cursor ? { cursor } : {}) });
    const { out } = ctx;
    if (out.json) return void out.data(page);
    out.table(page.requests, [
      { header: 'ID', value: (r) => r.id },
      { header: 'STATUS', value: (r) => r.status, paint: (s) => out.status(s) },
      { header: 'CREATED', value: (r) => r.createdAt },
      { header: 'DELAY', value: (r) => (r.delayTime === null ? null : formatMs(r.delayTime)) },
      { header: 'EXECUTION', value: (r) => (r.executionTime === null ? null : formatMs(r.executionTime)) },
      { header: 'WORKER', value: (r) => r.workerId },
      { header: 'RETRIES', value: (r) => r.retries },
    ]);
    if (page.nextCursor) out.note(out.ce.dim(`more: wharf jobs ${endpointId} --cursor ${page.nextCursor}`));
  },
};
