/**
 * The error catalogue: every error Wharf returns has a stable code, an HTTP status and a message template.
 * REST, the queue API and GraphQL all map from here; docs/errors.md is generated from this table and a test checks
 * that the two agree. Codes are never reused or renamed: clients match on them.
 */
export interface ErrorSpec {
  readonly status: number;
  /** Message template; `{name}` placeholders are filled from the error's params. */
  readonly message: string;
  /** One line for docs/errors.md: when the error happens and what to do. */
  readonly doc: string;
}

export const ERRORS = {
  // 400: the request itself is wrong.
  INVALID_JSON: {
    status: 400,
    message: 'The request body is not valid JSON: {reason}',
    doc: 'The body could not be parsed as JSON (a leading UTF-8 byte order mark is ignored, not the cause).',
  },
  VALIDATION_FAILED: {
    status: 400,
    message: 'Invalid request: {reason}',
    doc: 'A field is missing, has the wrong type or is out of bounds; `details` names the field.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Unsupported content type {contentType}; send application/json',
    doc: 'Management and queue routes accept JSON bodies only.',
  },
  UNSUPPORTED_CONTENT_ENCODING: {
    status: 415,
    message: 'Unsupported content encoding {encoding}; send the body uncompressed',
    doc: 'The body carries a `Content-Encoding` (gzip, deflate, br …): bodies are read as sent, uncompressed.',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'The request line and headers are larger than the server accepts',
    doc: 'Headers or URL over the HTTP parser limit (16 KB in all): send less in them.',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'The request was not received in time',
    doc: 'The client took too long to send its headers (30 s) or its whole request (120 s); the connection is closed.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: 'The request body is larger than the {limit} allowed on this route',
    doc: '`/run` accepts 10 MB, `/runsync` 20 MB, a stream chunk 1 MB, a worker post 20 MB (a result over it fails its job).',
  },
  JOB_NOT_RETRYABLE: {
    status: 400,
    message: 'Job {jobId} is {status}; only FAILED or TIMED_OUT jobs can be retried',
    doc: '`/retry` was called on a job that is not FAILED or TIMED_OUT.',
  },
  IMAGE_NOT_SUPPORTED: {
    status: 400,
    message: '{reason}',
    doc: "The template's `imageName` cannot be run by the configured executor.",
  },
  RESOURCE_IN_USE: {
    status: 409,
    message: '{resource} {id} is in use: {reason}',
    doc: 'The resource cannot be deleted or changed while another resource uses it.',
  },
  NAME_TAKEN: {
    status: 409,
    message: 'A {resource} named {name} already exists',
    doc: 'Template, registry auth and secret names are unique per user.',
  },
  ENDPOINT_HAS_WORKERS: {
    status: 409,
    message:
      'Endpoint {endpointId} has workersMin {workersMin} and workersMax {workersMax}; set both to 0 with saveEndpoint before deleting it',
    doc: 'GraphQL `deleteEndpoint` is refused until the endpoint is scaled to zero (`workersMin` and `workersMax` both 0).',
  },
  PODS_NOT_SUPPORTED: {
    status: 400,
    message: 'Wharf runs serverless workers only; {reason}',
    doc: 'Pods cannot be created, updated or started: create an endpoint instead (its workers are listed as pods).',
  },

  // 401/403: who is asking.
  UNAUTHORIZED: {
    status: 401,
    message: 'Missing or invalid API key',
    doc: 'Send `Authorization: Bearer <key>` (or the bare key on the queue API, `?api_key=` on GraphQL).',
  },
  FORBIDDEN: {
    status: 401,
    message: 'This API key is not allowed to {action}',
    doc: 'The key is valid but its scope does not allow the operation (read-only or restricted key, or a worker key used outside its endpoint).',
  },

  // 404: what is asked for does not exist (or belongs to someone else, which is reported the same way).
  ROUTE_NOT_FOUND: { status: 404, message: 'No route {method} {url}', doc: 'The path or method does not exist.' },
  ENDPOINT_NOT_FOUND: {
    status: 404,
    message: 'Endpoint {endpointId} not found',
    doc: 'Unknown endpoint id, or an endpoint of another user.',
  },
  TEMPLATE_NOT_FOUND: { status: 404, message: 'Template {templateId} not found', doc: 'Unknown template id.' },
  JOB_NOT_FOUND: { status: 404, message: 'Job {jobId} not found', doc: 'Unknown job id on this endpoint.' },
  JOB_EXPIRED: {
    status: 404,
    message: 'Job {jobId} expired: its ttl ran out and it was deleted',
    doc: "The job's `ttl` (counted from submission) ran out; the job was deleted whatever its state.",
  },
  JOB_RESULTS_EXPIRED: {
    status: 404,
    message: 'The results of job {jobId} expired and were deleted',
    doc: 'Results are kept 30 minutes after completion for `/run`, 1 minute for `/runsync` (5 minutes with `wait`).',
  },
  WORKER_NOT_FOUND: { status: 404, message: 'Worker {workerId} not found', doc: 'Unknown worker id.' },
  NETWORK_VOLUME_NOT_FOUND: {
    status: 404,
    message: 'Network volume {networkVolumeId} not found',
    doc: 'Unknown network volume id, or a volume of another user.',
  },
  REGISTRY_AUTH_NOT_FOUND: {
    status: 404,
    message: 'Container registry auth {containerRegistryAuthId} not found',
    doc: 'A well-formed but unknown registry auth id, or one of another user (a malformed id is a 400).',
  },
  SECRET_NOT_FOUND: {
    status: 404,
    message: 'Secret {secretId} not found',
    doc: 'A well-formed but unknown secret id, or one of another user (a malformed id is a 400).',
  },
  POD_NOT_FOUND: {
    status: 404,
    message: 'Pod {podId} not found',
    doc: 'No worker of one of your endpoints has this id.',
  },
  API_KEY_NOT_FOUND: { status: 404, message: 'API key {keyId} not found', doc: 'Unknown API key id of this user.' },
  USER_NOT_FOUND: { status: 404, message: 'User {userId} not found', doc: 'Unknown user id.' },

  // 409: the request raced with another change.
  STALE_ATTEMPT: {
    status: 409,
    message: 'Worker {workerId} no longer holds job {jobId}; the result was refused',
    doc: 'A worker posted for a job that was cancelled, timed out, expired or handed to another attempt. Nothing was changed.',
  },
  JOB_ALREADY_FINISHED: {
    status: 409,
    message: 'Job {jobId} is already {status}',
    doc: 'The job reached a final state earlier; the request changes nothing.',
  },

  // 429 and 5xx.
  RATE_LIMITED: {
    status: 429,
    message: 'Too many requests to {operation}; retry after {retryAfterS} s',
    doc: 'Over the rate limit.',
  },

  // 502/504: the worker behind an OpenAI-compatible request (docs/openai.md) did not give an answer.
  OPENAI_JOB_FAILED: {
    status: 502,
    message: 'The worker did not answer: job {jobId} ended {status}{detail}',
    doc: "The job behind an `/openai/*` request FAILED, was CANCELLED or TIMED_OUT, or completed without output; the message carries the worker's error.",
  },
  OPENAI_TIMEOUT: {
    status: 504,
    message: 'No answer from a worker within {seconds} s; job {jobId} was cancelled',
    doc: 'An `/openai/*` request waited 300 s without a result (or, streaming, without a chunk); its job was cancelled.',
  },
  OPENAI_STREAM_INTERRUPTED: {
    status: 502,
    message:
      'The worker streaming job {jobId} was lost after part of the answer was sent; the job was cancelled rather than run again from its start',
    doc: 'A streamed `/openai/*` request whose worker was lost mid-answer (its job went back to the queue): a new attempt would repeat the part already sent.',
  },
  STORE_UNAVAILABLE: {
    status: 503,
    message: 'The job store is unavailable: {reason}',
    doc: 'The database cannot be written (disk full, read-only, connection lost). Nothing was acknowledged; retry.',
  },
  SHUTTING_DOWN: {
    status: 503,
    message: 'The server is shutting down; retry on another node',
    doc: 'Sent during graceful shutdown.',
  },
  SECRET_UNREADABLE: {
    status: 500,
    message:
      "{what} cannot be decrypted with this server's secret key (--secret-key / WHARF_SECRET_KEY, else <data-dir>/secret.key): it was sealed with another one",
    doc: "A secret kept encrypted at rest (a job's s3Config, a webhook secret, a user's secret a worker's env references) was sealed with another secret key: start the server with the key it was sealed with (the same on every node), or replace the secret (`POST /v1/webhook-secret` rotates the webhook secret).",
  },
  INTERNAL: {
    status: 500,
    message: 'Internal error (request {requestId})',
    doc: 'A bug. The server log has the details under the request id.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;
