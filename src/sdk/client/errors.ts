/**
 * Codes the client itself gives to failures that never reached a server answer. Every other code is the server's
 * (docs/errors.md), copied unchanged.
 */
export const CLIENT_ERROR_CODES = {
  /** The per-request timeout (`timeoutMs`, plus the long-poll wait where there is one) ran out. */
  timeout: 'TIMEOUT',
  /** No HTTP answer at all: connection refused or reset, DNS failure, CORS refusal in a browser. */
  network: 'NETWORK_ERROR',
  /** A 2xx answer whose body is not the JSON the route promises. */
  invalidResponse: 'INVALID_RESPONSE',
  /** `runSync` or `stream` ran past the caller's overall `timeoutMs`. */
  jobTimeout: 'CLIENT_TIMEOUT',
} as const;

export interface WharfApiErrorInit {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  /** From the Retry-After header of a 429 or 503. */
  retryAfterMs?: number | undefined;
  /** The server's request id (`x-request-id`), to find the request in the server log. */
  requestId?: string | undefined;
  cause?: unknown;
}

/**
 * Any failed call. `status` is the HTTP status (0 when no answer came back), `code` the server's stable error code
 * (`JOB_NOT_FOUND`, `RATE_LIMITED`, …) or one of CLIENT_ERROR_CODES, `details` the server's `details` when it sent
 * some (the field that failed validation, a rate limit's numbers).
 */
export class WharfApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly retryAfterMs?: number | undefined;
  readonly requestId?: string | undefined;

  constructor(init: WharfApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'WharfApiError';
    this.status = init.status;
    this.code = init.code;
    if (init.details !== undefined) this.details = init.details;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.requestId !== undefined) this.requestId = init.requestId;
  }
}

/** True for a WharfApiError, optionally of one code: `isWharfApiError(e, 'JOB_NOT_FOUND')`. */
export function isWharfApiError(error: unknown, code?: string): error is WharfApiError {
  return error instanceof WharfApiError && (code === undefined || error.code === code);
}
