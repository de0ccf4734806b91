import type { BillingRecord, BucketSize, LogLine, VolumeBillingRecord } from '../../sdk/client/index.ts';
import { UsageError } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { formatMs } from '../output.ts';

/**
 * Control characters of a worker's output shown, not obeyed: a worker (anyone's code) must not be able to move the
 * cursor, retitle or rewrite the reader's terminal through escape sequences.
 */
export const visible = (text: string): string =>
  text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );

function printLine(ctx: Context, l: LogLine): void {
  const { out } = ctx;
  if (out.json) return out.ndjson(l);
  const job = l.jobId ? ` ${out.c.dim(visible(l.jobId))}` : '';
  const text = visible(l.message);
  const message = l.stream === 'stderr' && l.level !== 'INFO' ? out.c.yellow(text) : text;
  out.line(`${out.c.dim(l.time)} ${out.c.cyan(visible(l.workerId))}${job} ${message}`);
}

export const logsCommand: Command = {
  name: 'logs',
  summary: "Print an endpoint's worker output (stdout and stderr of its workers)",
  args: ['<endpoint>'],
  options: {
    worker: { type: 'string', value: '<id>', doc: "Only this worker's lines" },
    job: { type: 'string', value: '<id>', doc: 'Only lines about this job' },
    limit: { type: 'string', value: '<n>', doc: 'The newest n lines (1-5000, default 500)' },
    after: { type: 'string', value: '<seq>', doc: 'Only lines after this sequence number' },
    follow: { type: 'boolean', short: 'f', doc: 'Keep printing new lines as they come (Ctrl-C to stop)' },
  },
  details: [
    'Each line: time, worker id, job id (when the line names one), message.',
    'With --json, one JSON object per line: {seq, time, workerId, jobId, stream, level, message}.',
  ],
  examples: ['wharf logs my-endpoint --job 6f1c…-e1', 'wharf logs my-endpoint -f --json | jq -r .message'],
  async run(ctx) {
    const [endpointId] = ctx.positionals() as [string];
    const a = ctx.args;
    const client = ctx.client();
    const filter = {
      ...(a.has('worker') ? { workerId: a.string('worker') } : {}),
      ...(a.has('job') ? { jobId: a.string('job') } : {}),
    };
    const limit = a.int('limit', { min: 1, max: 5000 });
    let after = a.int('after', { min: 0 });
    const follow = a.flag('follow');
    for (;;) {
      const page = await client.logs(endpointId, {
        ...filter,
        ...(after !== undefined ? { after } : {}),
        // Following: every line after the cursor, not the newest few.
        ...(follow && after !== undefined ? { limit: 5000, follow } : limit ? { limit } : {}),
      });
      for (const line of page.lines) printLine(ctx, line);
      if (!follow) return;
      after = page.next;
    }
  },
};

/**
 * A date (`2025-01-31`, midnight UTC) or a date-time Date.parse reads, in milliseconds; null when it is neither or
 * names a day the month does not have: Date.parse reads 2026-02-30 as March 2 without a word.
 */
export function parseDate(text: string): number | null {
  const t = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(t)) return null;
  const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (ymd) {
    const [year, month, day] = ymd.slice(1).map(Number) as [number, number, number];
    const date = new Date(Date.UTC(year, month - 1, day));
    if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  }
  return t;
}

const KINDS = ['endpoints', 'pods', 'volumes'] as const;
const GROUP_HEADERS = { endpointId: 'ENDPOINT', podId: 'POD', gpuTypeId: 'GPU TYPE' } as const;

export const billingCommand: Command = {
  name: 'billing',
  summary: 'Usage and cost by time bucket: endpoints (default), pods (workers) or volumes',
  args: ['[endpoints|pods|volumes]'],
  options: {
    bucket: { type: 'string', value: '<size>', doc: 'hour, day (default), week, month or year' },
    start: { type: 'string', value: '<time>', doc: 'From this date or date-time (default: the first record)' },
    end: { type: 'string', value: '<time>', doc: 'Up to this date or date-time (default: now)' },
    endpoint: { type: 'string', value: '<id>', doc: 'endpoints: only this endpoint' },
    grouping: {
      type: 'string',
      value: '<by>',
      doc: 'endpoints: endpointId, podId or gpuTypeId; pods: podId or gpuTypeId',
    },
  },
  examples: ['wharf billing --bucket hour --start 2025-01-01', 'wharf billing pods --grouping podId --json'],
  async run(ctx) {
    const kind = (ctx.positionals()[0] ?? 'endpoints') as (typeof KINDS)[number];
    if (!KINDS.includes(kind)) throw new UsageError(`expected one of ${KINDS.join(', ')}, got '${kind}'`, 'billing');
    const a = ctx.args;
    if (kind !== 'endpoints' && a.has('endpoint')) {
      throw new UsageError('--endpoint applies to billing endpoints only', 'billing');
    }
    if (kind === 'volumes' && a.has('grouping'))
      throw new UsageError('--grouping does not apply to volumes', 'billing');
    const time = (name: string): string | undefined => {
      const v = a.string(name);
      if (v === undefined) return undefined;
      const t = parseDate(v);
      if (t === null) throw new UsageError(`--${name} expects a date such as 2025-01-31, got '${v}'`, 'billing');
      return new Date(t).toISOString();
    };
    const window = {
      bucketSize: a.oneOf('bucket', ['hour', 'day', 'week', 'month', 'year'] as BucketSize[]),
      startTime: time('start'),
      endTime: time('end'),
    };
    const clean = <T extends object>(o: T): T =>
      Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
    const billing = ctx.client().billing;
    let rows: (BillingRecord | VolumeBillingRecord)[];
    let groupKey: 'endpointId' | 'podId' | 'gpuTypeId' | null;
    if (kind === 'volumes') {
      rows = await billing.networkVolumes(clean(window));
      groupKey = null;
    } else if (kind === 'pods') {
      const grouping = a.oneOf('grouping', ['podId', 'gpuTypeId'] as const);
      rows = await billing.pods(clean({ ...window, grouping }));
      groupKey = grouping ?? 'gpuTypeId';
    } else {
      const grouping = a.oneOf('grouping', ['endpointId', 'podId', 'gpuTypeId'] as const);
      rows = await billing.endpoints(clean({ ...window, grouping, endpointId: a.string('endpoint') }));
      groupKey = grouping ?? 'endpointId';
    }
    const { out } = ctx;
    if (out.json) return out.data(rows);
    const group = (r: BillingRecord | VolumeBillingRecord): unknown =>
      groupKey ? (r as BillingRecord)[groupKey] : null;
    out.table(rows, [
      { header: 'TIME', value: (r) => r.time },
      ...(groupKey ? [{ header: GROUP_HEADERS[groupKey], value: group }] : []),
      { header: 'AMOUNT $', value: (r) => r.amount.toFixed(4) },
      groupKey
        ? { header: 'BILLED', value: (r) => formatMs((r as BillingRecord).timeBilledMs) }
        : { header: 'DISK GB', value: (r) => r.diskSpaceBilledGb },
    ]);
    if (rows.length > 0) {
      const total = rows.reduce((sum, r) => sum + r.amount, 0);
      out.line(out.c.bold(`total $${total.toFixed(4)}`));
    }
  },
};
