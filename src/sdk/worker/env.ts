// Reads the RUNPOD_* environment once, at start(), and builds every URL the worker calls. The substitutions and the
// literal `&` appends copy the Python SDK exactly (spec 1.4): servers written against either SDK see the same URLs.

import { randomUUID } from 'node:crypto';

export const SDK_VERSION = '0.1.0';
/** Reported as `runpod_version` in pings and error reports, so a server can tell this SDK from the Python one. */
export const RUNPOD_VERSION = `wharf-ts-${SDK_VERSION}`;
export const USER_AGENT = `Wharf-TS-Worker/${SDK_VERSION} (node ${process.versions.node})`;

const DEFAULT_PING_INTERVAL_MS = 10_000;
// Python turns values below 1000 ms into a 0 s interval that crashes its heartbeat; we clamp instead.
const MIN_PING_INTERVAL_MS = 1_000;
// Python's result retry waits 2 s then 3 s (aiohttp-retry FibonacciRetry); tests shrink the base.
const DEFAULT_RETRY_BASE_MS = 1_000;

export interface WorkerEnv {
  readonly workerId: string;
  /** True only when RUNPOD_POD_ID was given: the heartbeat needs a stable, service-assigned id. */
  readonly podIdSet: boolean;
  readonly apiKey: string;
  readonly takeTemplate: string;
  readonly outputTemplate: string;
  readonly streamTemplate: string;
  readonly pingTemplate: string | undefined;
  readonly pingIntervalMs: number;
  readonly hostname: string;
  readonly endpointId: string | undefined;
  readonly logLevel: string;
  readonly retryWaitsMs: readonly number[];
  /**
   * A result post that cannot reach the service (refused, reset, timed out: a server restarting) is retried for
   * about a minute, not the 5 s of retryWaitsMs: given up, the result is lost and the job runs again once the
   * service notices (Python retries it not at all).
   */
  readonly resultUnreachableWaitsMs: readonly number[];
}

export function readWorkerEnv(env: Record<string, string | undefined>): WorkerEnv {
  const takeTemplate = nonEmpty(env.RUNPOD_WEBHOOK_GET_JOB);
  if (takeTemplate === undefined) {
    throw new Error(
      'RUNPOD_WEBHOOK_GET_JOB is not set: the worker does not know where to take jobs from. ' +
        'Set it (and RUNPOD_WEBHOOK_POST_OUTPUT, RUNPOD_WEBHOOK_POST_STREAM, RUNPOD_WEBHOOK_PING, RUNPOD_AI_API_KEY, ' +
        'RUNPOD_POD_ID) as the service injects them, e.g. RUNPOD_WEBHOOK_GET_JOB=http://host/v2/<endpoint>/job-take/$ID?',
    );
  }
  const podId = nonEmpty(env.RUNPOD_POD_ID);
  const workerId = podId ?? randomUUID();
  const retryBase = nonNegativeNumber(env.WHARF_WORKER_RETRY_BASE_MS) ?? DEFAULT_RETRY_BASE_MS;
  return Object.freeze({
    workerId,
    podIdSet: podId !== undefined,
    apiKey: env.RUNPOD_AI_API_KEY ?? '',
    // `$ID` only: `$RUNPOD_POD_ID` is deliberately not substituted here, as in Python (spec 1.4 pitfall).
    takeTemplate: takeTemplate.replaceAll('$ID', workerId),
    // Same broken defaults as Python, so a missing variable fails loudly per request instead of silently.
    outputTemplate: (env.RUNPOD_WEBHOOK_POST_OUTPUT ?? 'JOB_DONE_URL').replaceAll('$RUNPOD_POD_ID', workerId),
    streamTemplate: (env.RUNPOD_WEBHOOK_POST_STREAM ?? 'JOB_STREAM_URL').replaceAll('$RUNPOD_POD_ID', workerId),
    pingTemplate: nonEmpty(env.RUNPOD_WEBHOOK_PING)?.replaceAll('$RUNPOD_POD_ID', workerId),
    pingIntervalMs: Math.max(
      MIN_PING_INTERVAL_MS,
      Math.trunc(nonNegativeNumber(env.RUNPOD_PING_INTERVAL) ?? DEFAULT_PING_INTERVAL_MS),
    ),
    hostname: nonEmpty(env.RUNPOD_POD_HOSTNAME) ?? 'unknown',
    endpointId: nonEmpty(env.RUNPOD_ENDPOINT_ID),
    logLevel: nonEmpty(env.RUNPOD_LOG_LEVEL) ?? nonEmpty(env.RUNPOD_DEBUG_LEVEL) ?? 'DEBUG',
    retryWaitsMs: [2 * retryBase, 3 * retryBase],
    resultUnreachableWaitsMs: [2, 3, 5, 10, 10, 10, 10, 10].map((s) => s * retryBase),
  });
}

/** GET job-take (single) or job-take-batch when more than one slot is free (spec 1.6, 1.7). */
export function takeUrl(cfg: WorkerEnv, freeSlots: number, jobInProgress: boolean): string {
  const inProgress = `&job_in_progress=${jobInProgress ? 1 : 0}`;
  if (freeSlots > 1) {
    return `${cfg.takeTemplate.replace('/job-take/', '/job-take-batch/')}&batch_size=${freeSlots}${inProgress}`;
  }
  return cfg.takeTemplate + inProgress;
}

/** The stop channel, or undefined when the template has no `/job-take/` segment to rewrite (Python disables it). */
export function stopUrl(cfg: WorkerEnv): string | undefined {
  return cfg.takeTemplate.includes('/job-take/') ? cfg.takeTemplate.replace('/job-take/', '/job-stop/') : undefined;
}

/** Result and progress posts; job ids are pasted in unescaped, exactly like Python. */
export function outputUrl(cfg: WorkerEnv, jobId: string, isStream: boolean): string {
  return `${cfg.outputTemplate.replaceAll('$ID', jobId)}&isStream=${isStream}`;
}

/** Stream chunks always carry `isStream=false` (spec 1.4). */
export function streamUrl(cfg: WorkerEnv, jobId: string): string {
  return `${cfg.streamTemplate.replaceAll('$ID', jobId)}&isStream=false`;
}

/**
 * The heartbeat merges its parameters into the query like Python's `requests` does: `?` when the template has no
 * query, `&` otherwise, and the comma between job ids arrives as `%2C`.
 */
export function pingUrl(cfg: WorkerEnv, jobIds: readonly string[]): string | undefined {
  if (cfg.pingTemplate === undefined) return undefined;
  const params: string[] = [];
  if (jobIds.length > 0) params.push(`job_id=${encodeURIComponent(jobIds.join(','))}`);
  params.push(`runpod_version=${encodeURIComponent(RUNPOD_VERSION)}`);
  const base = cfg.pingTemplate;
  const sep = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return base + sep + params.join('&');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function nonNegativeNumber(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}
