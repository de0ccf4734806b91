import { Type } from 'typebox';
import { POLICY } from '../../domain/index.ts';

export const EndpointParams = Type.Object({ endpointId: Type.String({ minLength: 1, maxLength: 128 }) });
export const JobParams = Type.Object({
  endpointId: Type.String({ minLength: 1, maxLength: 128 }),
  jobId: Type.String({ minLength: 1, maxLength: 256 }),
});

export const Policy = Type.Object(
  {
    executionTimeout: Type.Optional(
      Type.Integer({
        minimum: POLICY.executionTimeoutMs.min,
        maximum: POLICY.executionTimeoutMs.max,
        description: 'ms',
      }),
    ),
    lowPriority: Type.Optional(Type.Boolean()),
    ttl: Type.Optional(Type.Integer({ minimum: POLICY.ttlMs.min, maximum: POLICY.ttlMs.max, description: 'ms' })),
  },
  { additionalProperties: false },
);

export const S3Config = Type.Object(
  {
    accessId: Type.String(),
    accessSecret: Type.String(),
    bucketName: Type.String(),
    endpointUrl: Type.String(),
    objectPath: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/**
 * Submission body (interface §2.2). Unknown top-level members are ignored, as clients send extras (webhookV2). An
 * optional member sent as null is taken as absent (the routes' nullMeansAbsent hook, before this schema is checked).
 */
export const SubmitBody = Type.Object(
  {
    input: Type.Object({}, { additionalProperties: true, description: "The handler's input" }),
    webhook: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL notified on completion' }),
    ),
    policy: Type.Optional(Policy),
    s3Config: Type.Optional(S3Config),
  },
  { additionalProperties: true, description: 'An optional member (at any depth) sent as null is taken as absent.' },
);

/**
 * A `wait` (on /runsync, /status-sync and /stream) under the documented 1000 ms minimum waits 1000 ms rather than
 * being refused or answered at once: the Go SDK's RunSync, StatusSync and Stream with `Timeout: 0` send `wait=0` on
 * every call of a loop that resends at once until the job is final or 3 s have passed (with a 2 s client timeout, so
 * the 90 s default would fail it). Answered at once, that loop spins: thousands of requests that spend the status or
 * stream rate limit of the user's endpoint and end in a 429. runpod-sdk clamps its own waits to the same floor.
 */
const Wait = Type.Optional(
  Type.Integer({
    minimum: 0,
    maximum: POLICY.runsyncWaitMs.max,
    description: `ms; under ${POLICY.runsyncWaitMs.min} waits ${POLICY.runsyncWaitMs.min}`,
  }),
);
export const WaitQuery = Type.Object({ wait: Wait });
/**
 * `/status?ttl=` has no floor (interface §4.1 gives none; the 10 s minimum is policy.ttl's at submission): the hosted
 * service documents `?ttl=6000` as the way to have a fetched result removed sooner. A ttl the job has already
 * outlived answers with the job as read, then the job is gone.
 */
export const StatusQuery = Type.Object({
  ttl: Type.Optional(Type.Integer({ minimum: 0, maximum: POLICY.ttlMs.max })),
});
