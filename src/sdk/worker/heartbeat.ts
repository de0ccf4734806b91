// Liveness pings (spec 1.14): one at start, then every interval, listing the jobs this worker holds so the service
// can spot a job that vanished without a result. Python runs this in a separate process so pings continue while a
// sync handler blocks; in Node a handler that blocks the event loop blocks pings too (keep handlers async).

import { pingUrl } from './env.ts';
import type { WorkerEnv } from './env.ts';
import { coerceError } from './errors.ts';
import { describeHttpError } from './http.ts';
import type { WorkerHttp } from './http.ts';
import type { WorkerLogger } from './log.ts';

export interface HeartbeatDeps {
  cfg: WorkerEnv;
  http: WorkerHttp;
  log: WorkerLogger;
  /** Ids of the jobs currently held, read at each ping. */
  jobIds: () => string[];
}

export class Heartbeat {
  readonly #deps: HeartbeatDeps;
  #timer: NodeJS.Timeout | undefined;
  readonly #abort = new AbortController();
  #inFlight = false;

  constructor(deps: HeartbeatDeps) {
    this.#deps = deps;
  }

  /** Python starts the heartbeat only when the key, the pod id and the ping URL are all set. */
  get enabled(): boolean {
    const { cfg } = this.#deps;
    return cfg.apiKey !== '' && cfg.podIdSet && cfg.pingTemplate !== undefined;
  }

  start(): void {
    if (!this.enabled || this.#timer !== undefined) return;
    this.#deps.log.log('DEBUG', `Heartbeat every ${this.#deps.cfg.pingIntervalMs} ms`);
    this.#ping();
    // Unref'd: the take loop keeps a running worker alive; a stopped one must not be held open by pings.
    this.#timer = setInterval(() => this.#ping(), this.#deps.cfg.pingIntervalMs).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#abort.abort();
  }

  #ping(): void {
    // A slow service must not pile up pings; the next tick tries again.
    if (this.#inFlight) return;
    const url = pingUrl(this.#deps.cfg, this.#deps.jobIds());
    if (url === undefined) return;
    this.#inFlight = true;
    this.#deps.http
      .request('GET', url, { signal: this.#abort.signal, timeoutMs: 2 * this.#deps.cfg.pingIntervalMs })
      .then(
        (res) => {
          if (res.status >= 400) this.#deps.log.log('DEBUG', `Heartbeat answered HTTP ${res.status}`);
        },
        (err: unknown) => {
          if (!this.#abort.signal.aborted)
            this.#deps.log.log('DEBUG', `Heartbeat failed: ${describeHttpError(coerceError(err))}`);
        },
      )
      .finally(() => {
        this.#inFlight = false;
      });
  }
}
