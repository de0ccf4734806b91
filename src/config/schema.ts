/**
 * Every setting, declared once (STYLE.md habit 9): its flag, its WHARF_* variable, its type, default and bounds.
 * Precedence: flag > environment > config file > default. All problems are reported together, then the result is
 * frozen. Only this folder reads process.env.
 */
export interface SettingSpec {
  /** Key in the resolved config and in the JSON config file. */
  key: string;
  flag: string;
  env: string;
  kind: 'int' | 'string' | 'bool' | 'enum';
  default: number | string | boolean | null;
  min?: number;
  max?: number;
  values?: readonly string[];
  doc: string;
}

export const SETTINGS = [
  {
    key: 'port',
    flag: '--port',
    env: 'WHARF_PORT',
    kind: 'int',
    default: 8000,
    min: 0,
    max: 65535,
    doc: 'TCP port for every API.',
  },
  {
    key: 'host',
    flag: '--host',
    env: 'WHARF_HOST',
    kind: 'string',
    default: '127.0.0.1',
    doc: 'Address to listen on.',
  },
  {
    key: 'dataDir',
    flag: '--data-dir',
    env: 'WHARF_DATA_DIR',
    kind: 'string',
    default: './.wharf',
    doc: 'Database, keys, worker state, volumes.',
  },
  {
    key: 'store',
    flag: '--store',
    env: 'WHARF_STORE',
    kind: 'string',
    default: 'sqlite',
    doc: '`sqlite` (in the data directory) or a postgres:// URL.',
  },
  {
    key: 'adminKey',
    flag: '--admin-key',
    env: 'WHARF_ADMIN_KEY',
    kind: 'string',
    default: null,
    doc: 'Admin API key; generated on first start when unset.',
  },
  {
    key: 'publicUrl',
    flag: '--public-url',
    env: 'WHARF_PUBLIC_URL',
    kind: 'string',
    default: null,
    doc: 'Base URL workers use to reach this server (default http://<host>:<port>).',
  },
  {
    key: 'nodeId',
    flag: '--node-id',
    env: 'WHARF_NODE_ID',
    kind: 'string',
    default: 'e1',
    doc: 'Suffix of job ids made by this node.',
  },
  {
    key: 'logLevel',
    flag: '--log-level',
    env: 'WHARF_LOG_LEVEL',
    kind: 'enum',
    default: 'info',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    doc: 'Log level.',
  },
  {
    key: 'examples',
    flag: '--examples',
    env: 'WHARF_EXAMPLES',
    kind: 'bool',
    default: false,
    doc: 'Create the example endpoints from examples/ on start.',
  },
  {
    key: 'takeWaitMs',
    flag: '--take-wait-ms',
    env: 'WHARF_TAKE_WAIT_MS',
    kind: 'int',
    default: 20_000,
    min: 0,
    max: 80_000,
    doc: 'How long job-take long-polls (the SDK gives up at 90 s).',
  },
  {
    key: 'stopWaitMs',
    flag: '--stop-wait-ms',
    env: 'WHARF_STOP_WAIT_MS',
    kind: 'int',
    default: 20_000,
    min: 0,
    max: 80_000,
    doc: 'How long job-stop long-polls.',
  },
  {
    key: 'streamWaitMs',
    flag: '--stream-wait-ms',
    env: 'WHARF_STREAM_WAIT_MS',
    kind: 'int',
    default: 10_000,
    min: 0,
    max: 300_000,
    doc: 'How long /stream waits for new chunks.',
  },
  {
    key: 'statusSyncWaitMs',
    flag: '--status-sync-wait-ms',
    env: 'WHARF_STATUS_SYNC_WAIT_MS',
    kind: 'int',
    default: 90_000,
    min: 1000,
    max: 300_000,
    doc: 'Default wait of /status-sync.',
  },
  {
    key: 'leaseMs',
    flag: '--lease-ms',
    env: 'WHARF_LEASE_MS',
    kind: 'int',
    default: 30_000,
    min: 1000,
    max: 3_600_000,
    doc: 'A worker silent this long loses its jobs.',
  },
  {
    key: 'workerPingIntervalMs',
    flag: '--worker-ping-interval-ms',
    env: 'WHARF_WORKER_PING_INTERVAL_MS',
    kind: 'int',
    default: 5000,
    min: 1000,
    max: 600_000,
    doc: 'RUNPOD_PING_INTERVAL given to managed workers.',
  },
  {
    key: 'lostJobGraceMs',
    flag: '--lost-job-grace-ms',
    env: 'WHARF_LOST_JOB_GRACE_MS',
    kind: 'int',
    default: 15_000,
    min: 1000,
    max: 3_600_000,
    doc: 'A held job missing from a ping this long after it was taken is lost.',
  },
  {
    key: 'maxAttempts',
    flag: '--max-attempts',
    env: 'WHARF_MAX_ATTEMPTS',
    kind: 'int',
    default: 3,
    min: 1,
    max: 100,
    doc: 'Hand-outs of one job before a lost worker makes it FAILED.',
  },
  {
    key: 'sweepIntervalMs',
    flag: '--sweep-interval-ms',
    env: 'WHARF_SWEEP_INTERVAL_MS',
    kind: 'int',
    default: 500,
    min: 10,
    max: 60_000,
    doc: 'Period of the ttl/retention/timeout/lease sweeps.',
  },
  {
    key: 'tombstoneKeepMs',
    flag: '--tombstone-keep-ms',
    env: 'WHARF_TOMBSTONE_KEEP_MS',
    kind: 'int',
    default: 86_400_000,
    min: 0,
    max: 30 * 86_400_000,
    doc: 'How long /status still says "expired" instead of "not found".',
  },
  {
    key: 'executor',
    flag: '--executor',
    env: 'WHARF_EXECUTOR',
    kind: 'enum',
    default: 'process',
    values: ['process', 'none'],
    doc: 'How workers are started.',
  },
  {
    key: 'gpus',
    flag: '--gpus',
    env: 'WHARF_GPUS',
    kind: 'string',
    default: 'auto',
    doc: '`auto` (nvidia-smi), `none`, or a list like `NVIDIA A40:2`.',
  },
  {
    key: 'dataCenterId',
    flag: '--data-center-id',
    env: 'WHARF_DATA_CENTER_ID',
    kind: 'string',
    default: 'EU-RO-1',
    doc: "This node's data center, matched against endpoints' dataCenterIds.",
  },
  {
    key: 'workerInitTimeoutMs',
    flag: '--worker-init-timeout-ms',
    env: 'WHARF_WORKER_INIT_TIMEOUT_MS',
    kind: 'int',
    default: 120_000,
    min: 1000,
    max: 3_600_000,
    doc: 'A started worker that has not called in by then is replaced.',
  },
  {
    key: 'scaleIntervalMs',
    flag: '--scale-interval-ms',
    env: 'WHARF_SCALE_INTERVAL_MS',
    kind: 'int',
    default: 250,
    min: 10,
    max: 60_000,
    doc: 'Period of the autoscaler.',
  },
  {
    key: 'shutdownGraceMs',
    flag: '--shutdown-grace-ms',
    env: 'WHARF_SHUTDOWN_GRACE_MS',
    kind: 'int',
    default: 10_000,
    min: 0,
    max: 600_000,
    doc: 'Grace period for workers and requests on SIGTERM.',
  },
] as const satisfies readonly SettingSpec[];

type Spec = (typeof SETTINGS)[number];
type ValueOf<S extends Spec> = S['kind'] extends 'int'
  ? number
  : S['kind'] extends 'bool'
    ? boolean
    : S extends { values: readonly (infer V)[] }
      ? V
      : S['default'] extends null
        ? string | null
        : string;

export type Config = { readonly [S in Spec as S['key']]: ValueOf<S> };
