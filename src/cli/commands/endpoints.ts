import type { Endpoint, EndpointCreateInput, EndpointUpdateInput } from '../../sdk/client/index.ts';
import { UsageError, type OptionSpecs } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { formatMs } from '../output.ts';
import { body, DATA_OPTION, deleted, idArg, listOf, toggle } from './body.ts';

const FIELDS: OptionSpecs = {
  name: { type: 'string', value: '<name>', doc: 'Display name' },
  template: { type: 'string', value: '<id>', doc: 'Template the workers run' },
  gpu: { type: 'string', multiple: true, value: '<gpuTypeId>', doc: 'Allowed GPU type, e.g. "NVIDIA A40"' },
  'gpu-count': { type: 'string', value: '<n>', doc: 'GPUs per worker' },
  'cpu-flavor': { type: 'string', multiple: true, value: '<id>', doc: 'CPU flavor for CPU endpoints (cpu3c…)' },
  vcpu: { type: 'string', value: '<n>', doc: 'vCPUs per worker (CPU endpoints)' },
  'workers-min': { type: 'string', value: '<n>', doc: 'Workers kept running' },
  'workers-max': { type: 'string', value: '<n>', doc: 'Most workers at once' },
  'idle-timeout': { type: 'string', value: '<duration>', doc: 'Stop an idle worker after this long (1s-1h)' },
  'execution-timeout': { type: 'string', value: '<duration>', doc: "Jobs' default execution timeout" },
  flashboot: { type: 'boolean', doc: 'Keep a stopped worker warm (FlashBoot)' },
  'no-flashboot': { type: 'boolean', doc: 'Turn FlashBoot off' },
  scaler: { type: 'string', value: '<type>', doc: 'QUEUE_DELAY or REQUEST_COUNT' },
  'scaler-value': { type: 'string', value: '<n>', doc: 'Seconds of queue delay, or jobs per worker' },
  env: { type: 'string', multiple: true, value: '<KEY=VALUE>', doc: 'Environment variable for the workers' },
  volume: { type: 'string', multiple: true, value: '<id>', doc: 'Network volume to mount' },
  'data-center': { type: 'string', multiple: true, value: '<id>', doc: 'Data centers workers may run in' },
  ...DATA_OPTION,
};

function fields(ctx: Context, create: boolean): Record<string, unknown> {
  const a = ctx.args;
  const idle = a.duration('idle-timeout');
  // The API takes whole seconds, 1 to 3600: a value outside is refused, not rounded into the range.
  if (idle !== undefined && (idle < 1000 || idle > 3_600_000 || idle % 1000 !== 0)) {
    throw new UsageError(
      `--idle-timeout must be whole seconds from 1s to 1h, got '${a.string('idle-timeout')}'`,
      ctx.command.name,
    );
  }
  const volumes = listOf(ctx, 'volume');
  const cpu = listOf(ctx, 'cpu-flavor');
  return body(ctx, {
    name: a.string('name'),
    templateId: create ? a.required('template') : a.string('template'),
    computeType: create ? (cpu || a.has('vcpu') ? 'CPU' : undefined) : undefined,
    gpuTypeIds: listOf(ctx, 'gpu'),
    gpuCount: a.int('gpu-count', { min: 1, max: 64 }),
    cpuFlavorIds: cpu,
    vcpuCount: a.int('vcpu', { min: 1, max: 512 }),
    workersMin: a.int('workers-min', { min: 0, max: 1000 }),
    workersMax: a.int('workers-max', { min: 0, max: 1000 }),
    idleTimeout: idle === undefined ? undefined : idle / 1000,
    executionTimeoutMs: a.duration('execution-timeout'),
    flashboot: toggle(ctx, 'flashboot'),
    scalerType: a.oneOf('scaler', ['QUEUE_DELAY', 'REQUEST_COUNT']),
    scalerValue: a.int('scaler-value', { min: 1 }),
    env: a.pairs('env'),
    ...(volumes?.length === 1 ? { networkVolumeId: volumes[0] } : { networkVolumeIds: volumes }),
    dataCenterIds: listOf(ctx, 'data-center'),
  });
}

const compute = (e: Endpoint): string =>
  e.computeType === 'CPU' ? 'CPU' : `${e.gpuCount}x ${e.gpuTypeIds.length ? e.gpuTypeIds.join('|') : 'any GPU'}`;

export function printEndpoint(ctx: Context, e: Endpoint): void {
  const { out } = ctx;
  if (out.json) return out.data(e);
  out.fields([
    ['id', e.id],
    ['name', e.name],
    ['template', e.templateId],
    ['compute', compute(e)],
    ['workers', `${e.workersMin}-${e.workersMax}`],
    ['idle timeout', `${e.idleTimeout} s`],
    ['exec timeout', e.executionTimeoutMs === 0 ? 'none (jobs run until their ttl)' : formatMs(e.executionTimeoutMs)],
    ['scaler', `${e.scalerType} ${e.scalerValue}`],
    ['flashboot', e.flashboot],
    // Several volumes come in networkVolumeIds only (networkVolumeId names one).
    ['volume', e.networkVolumeIds?.length ? e.networkVolumeIds : e.networkVolumeId],
    ['env', Object.keys(e.env).length ? Object.entries(e.env).map(([k, v]) => `${k}=${v}`) : null],
    ['version', e.version],
    ['created', e.createdAt],
    ['queue url', `${ctx.connection().url}/v2/${e.id}`],
  ]);
  if (e.workers) {
    out.line();
    out.table(
      e.workers,
      [
        { header: 'WORKER', value: (w) => w.id },
        { header: 'STATE', value: (w) => w.workerState, paint: (s) => out.status(s) },
        { header: 'DESIRED', value: (w) => w.desiredStatus },
        { header: 'STARTED', value: (w) => w.lastStartedAt },
        { header: '$/HR', value: (w) => w.costPerHr },
      ],
      '(no workers)',
    );
  }
}

const group = (ctx: Context) => ctx.client().endpoints;

export const endpointCommands: Command[] = [
  {
    name: 'endpoint create',
    summary: 'Create an endpoint from a template',
    usage: '--template <id> [options]',
    options: FIELDS,
    details: [
      'Giving --cpu-flavor or --vcpu makes a CPU endpoint; otherwise it is a GPU endpoint.',
      'Durations: 500ms, 30s, 5m, 2h (a bare number is seconds).',
    ],
    examples: [
      'wharf endpoint create --name echo --template tpl123abcd --cpu-flavor cpu3c --workers-max 2',
      'wharf endpoint create --template tpl123abcd --gpu "NVIDIA A40" --idle-timeout 30s --json',
    ],
    async run(ctx) {
      const input = fields(ctx, true) as unknown as EndpointCreateInput;
      printEndpoint(ctx, await group(ctx).create(input));
    },
  },
  {
    name: 'endpoint list',
    summary: 'List your endpoints',
    async run(ctx) {
      const list = await group(ctx).list();
      const { out } = ctx;
      if (out.json) return out.data(list);
      out.table(list, [
        { header: 'ID', value: (e) => e.id },
        { header: 'NAME', value: (e) => e.name },
        { header: 'TEMPLATE', value: (e) => e.templateId },
        { header: 'COMPUTE', value: compute },
        { header: 'WORKERS', value: (e) => `${e.workersMin}-${e.workersMax}` },
        { header: 'IDLE', value: (e) => `${e.idleTimeout}s` },
        { header: 'VERSION', value: (e) => e.version },
      ]);
    },
  },
  {
    name: 'endpoint get',
    summary: "Show an endpoint's settings (and its workers with --workers)",
    args: ['<endpoint>'],
    options: { workers: { type: 'boolean', doc: 'Also list its workers' } },
    async run(ctx) {
      const id = idArg(ctx);
      const e = await group(ctx).get(id, ctx.args.flag('workers') ? { includeWorkers: true } : {});
      printEndpoint(ctx, e);
    },
  },
  {
    name: 'endpoint update',
    summary: "Change an endpoint's settings (only the fields given)",
    args: ['<endpoint>'],
    options: FIELDS,
    examples: ['wharf endpoint update abc123def456gh --workers-max 4 --env MODEL=small'],
    async run(ctx) {
      const patch = fields(ctx, false) as EndpointUpdateInput;
      printEndpoint(ctx, await group(ctx).update(idArg(ctx), patch));
    },
  },
  {
    name: 'endpoint delete',
    summary: 'Delete an endpoint (its workers are stopped)',
    args: ['<endpoint>'],
    async run(ctx) {
      const id = idArg(ctx);
      await group(ctx).delete(id);
      deleted(ctx, 'endpoint', id);
    },
  },
];
