// Hostile input (property-based, fast-check): every route of /v1, /v2, /graphql and the worker protocol, taken from
// the app's own /v1/openapi.json, gets arbitrary methods, path parameters (traversal, unicode, huge, empty), query
// strings, headers (content types, keys) and bodies (malformed JSON, wrong types, deep nesting, huge numbers and
// strings, GraphQL documents built from the schema). No answer may be a 5xx, every 4xx carries the one error shape,
// no body shows internals, nothing is logged as an unhandled error, and the heap stays bounded.
//
// Most cases go through app.inject() (the whole Fastify pipeline without sockets) on an app built over the parts of
// a running server; a fake worker completes the jobs the fuzz submits, so /runsync and the OpenAI routes answer.
// Set WHARF_FUZZ_SEED to replay a run; WHARF_FUZZ_RUNS to run longer.

import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { buildWharfSchema } from '../../src/http/graphql/schema.ts';
import { buildApp } from '../../src/http/index.ts';
import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';

const SEED = Number(process.env['WHARF_FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
/** Property runs, one case each; up to WINDOW cases are in flight at once. */
const RUNS = Number(process.env['WHARF_FUZZ_RUNS'] ?? 20_000);
const WINDOW = 32;
/** A long poll (status-sync, stream, runsync, job-take) may legitimately outlast this; anything else may not. */
const HOLD_MS = 1500;
const SLOW_MS = 20_000;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let t: TestServer;
let app: FastifyInstance;
let schema: GraphQLSchema;
/** Endpoint with a fake worker that completes every job at once (queue and OpenAI routes). */
let epA: string;
/** Endpoint nobody serves: the worker-protocol routes take its jobs (so they never steal epA's). */
let epB: string;
const ids: Record<string, string[]> = {};
let routes: Array<{ method: string; path: string }> = [];
const errorLogs: string[] = [];
let stopWorker = false;
let workerLoop: Promise<void> | undefined;

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 50, stopWaitMs: 50, streamWaitMs: 50, statusSyncWaitMs: 1000 });
  epA = await createEndpoint(t, { name: 'fuzz-a' });
  epB = await createEndpoint(t, { name: 'fuzz-b' });
  const s = t.server;
  app = buildApp(
    {
      store: s.store,
      engine: s.engine,
      workers: s.workers,
      accounts: s.accounts,
      resources: s.resources,
      volumes: s.volumes,
      registryAuths: s.registryAuths,
      secrets: s.secrets,
      billing: s.billing,
    },
    {
      logLevel: 'warn',
      // Only lines at error level and above are kept: an unhandled error is a bug even when the answer was a 4xx.
      logStream: {
        write: (line: string) => {
          if (/"level":(50|60)/.test(line)) errorLogs.push(line.slice(0, 2000));
        },
      },
    },
  );
  await app.ready();
  schema = buildWharfSchema();

  // Real ids so that cases reach past the 404s: a template, a job of each endpoint, a worker, a key, a volume.
  const tpl = await t.api('GET', '/v1/templates');
  const runA = await t.api('POST', `/v2/${epA}/run`, { input: { seed: 1 } });
  const runB = await t.api('POST', `/v2/${epB}/run`, { input: { seed: 2 } });
  const key = await t.api('POST', '/v1/keys', { name: 'fuzz', scope: 'read' });
  const vol = await t.api('POST', '/v1/networkvolumes', { name: 'fuzz', size: 10, dataCenterId: 'LOCAL' });
  const reg = await t.api('POST', '/v1/containerregistryauth', { name: 'fuzz', username: 'u', password: 'p' });
  await protocolWorker(t, epB, 'fuzz-worker-b').ping();
  ids['endpointId'] = [epA, epB];
  ids['jobId'] = [runA.json?.id, runB.json?.id].filter(Boolean);
  ids['workerId'] = ['fuzz-worker-b'];
  ids['templateId'] = (tpl.json as Array<{ id: string }>).map((x) => x.id);
  ids['keyId'] = [key.json?.id].filter(Boolean);
  ids['networkVolumeId'] = [vol.json?.id].filter(Boolean);
  ids['containerRegistryAuthId'] = [reg.json?.id].filter(Boolean);
  ids['podId'] = ['fuzz-worker-b'];
  ids['userId'] = [t.server.adminUserId];

  const doc = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  for (const [path, ops] of Object.entries(doc.json().paths as Record<string, object>)) {
    for (const method of Object.keys(ops)) routes.push({ method: method.toUpperCase(), path });
  }
  routes = routes.filter((r) => r.path !== '/v1/docs'); // HTML, no JSON error shape to check

  // The fake worker of epA: takes batches and answers each job with its input.
  const w = protocolWorker(t, epA, 'fuzz-worker-a');
  workerLoop = (async () => {
    while (!stopWorker) {
      const res = await w.takeBatch(64).catch(() => null);
      if (!res || res.status !== 200) continue;
      await Promise.all(
        (res.json as Array<{ id: string; input: unknown }>).map((job) =>
          w.done(job.id, { output: job.input }).catch(() => undefined),
        ),
      );
    }
  })();
}, 60_000);

afterAll(async () => {
  stopWorker = true;
  await workerLoop;
  await app?.close();
  await t?.close();
});

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries

const TRAVERSAL = [
  '..',
  '../..',
  '../../../../etc/passwd',
  '..%2f..%2f..%2fadmin-key',
  '%2e%2e%2f%2e%2e%2fwharf.db',
  '..\\..\\windows',
  '%00',
  'a%00b',
  '%',
  '%zz',
  '%c0%af',
  '.',
  '%2F',
  ';',
  '*',
  'null',
  'undefined',
  '0',
  '-1',
  'NaN',
  '1e309',
  '__proto__',
  'constructor',
  'prototype',
  '%F0%9F%92%A9',
  '%E2%80%AE',
  '$ID',
  'w1&job_in_progress=1&batch_size=99999',
  'x&job_id=a,b,c',
];

/** Arbitraries are built once each (building one costs far more than drawing from it). */
function memo<T>(build: (key: string) => T): (key: string) => T {
  const cache = new Map<string, T>();
  return (key) => {
    if (!cache.has(key)) cache.set(key, build(key));
    return cache.get(key)!;
  };
}

const segment = memo((name: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...(ids[name]?.length ? ids[name] : ['none'])) },
    { weight: 3, arbitrary: fc.constantFrom(...TRAVERSAL) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.integer({ min: 500, max: 3000 }).map((n) => 'x'.repeat(n)) },
    { weight: 1, arbitrary: fc.constant('') },
  ),
);

/** Path parameters by name; the worker protocol only ever names epB (its takes must not steal epA's jobs). */
function pathArb(path: string): fc.Arbitrary<string> {
  const worker = /job-take|job-stop|ping\/|job-done|job-stream/.test(path);
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const parts = names.map((n) =>
    n === 'endpointId' && worker ? fc.oneof(fc.constant(epB), segment('workerId')) : segment(n),
  );
  return fc.tuple(...parts).map((values) => {
    let i = 0;
    return path.replace(/\{(\w+)\}/g, () => values[i++]!);
  });
}

const KNOWN_QUERY = [
  'wait',
  'ttl',
  'batch_size',
  'job_in_progress',
  'job_id',
  'gpu',
  'isStream',
  'api_key',
  'limit',
  'cursor',
  'status',
  'includeWorkers',
  'includeTemplate',
  'startTime',
  'endTime',
  'bucketSize',
  'grouping',
  'query',
  'variables',
  'operationName',
  'workerId',
  'since',
  'reason',
  'check',
  'runpod_version',
  '__proto__',
];

const scalarText = fc.oneof(
  fc.constantFrom('0', '-1', '1', '1e309', '-1e309', 'NaN', 'Infinity', '9007199254740993', '0x10', '', 'true', 'null'),
  fc.integer().map(String),
  fc.double().map(String),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom(...TRAVERSAL),
);

const queryArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(fc.oneof(fc.constantFrom(...KNOWN_QUERY), fc.string({ maxLength: 10 })), scalarText), {
        maxLength: 5,
      })
      .map((pairs) => `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('?', '?&&&', '?a', '?%', '?a=%zz', '?wait=1&wait=2', '?a[b][c]=1') },
  { weight: 1, arbitrary: fc.integer({ min: 2000, max: 6000 }).map((n) => `?limit=${'9'.repeat(n)}`) },
);

/** JSON nested `depth` levels deep, as text (JSON.stringify itself would overflow for the deep ones). */
const nested = (depth: number, kind: 'array' | 'object'): string =>
  kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** Deeply nested bodies, built once: at the top, or under a field the routes read. */
const deepBodies = memo(() => [
  ...[100, 999, 1000, 1001, 5000, 10_000, 100_000].flatMap((depth) =>
    (['array', 'object'] as const).flatMap((kind) => [
      nested(depth, kind),
      `{"input":${nested(depth, kind)}}`,
      `{"input":{"a":${nested(depth, kind)}},"webhook":"http://x"}`,
      `{"output":${nested(depth, kind)}}`,
      `{"query":"{ myself { id } }","variables":${nested(depth, kind)}}`,
      `{"query":"mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }","variables":{"i":{"env":${nested(depth, kind)}}}}`,
      `{"name":"n","imageName":"file://./x","env":${nested(depth, kind)}}`,
    ]),
  ),
  // GraphQL documents: selections, list values and arguments nested deeper than a recursive parser can follow.
  ...[1000, 2000, 5000, 9000].flatMap((n) => [
    JSON.stringify({ query: `{ myself ${'{ a '.repeat(n)}${'}'.repeat(n)} }` }),
    JSON.stringify({ query: `query($x: Int = ${'['.repeat(n)}1${']'.repeat(n)}) { myself { id } }` }),
    JSON.stringify({ query: `{ pod(input: ${'{a: '.repeat(n)}1${'}'.repeat(n)}) { id } }` }),
  ]),
]);

/** Large bodies, built once: just under and over the 1 MB default limit, and well over it. */
const hugeBodies = memo(() =>
  [100_000, 1_100_000, 3_000_000].flatMap((n) => [
    JSON.stringify({ input: { s: 'x'.repeat(n) } }),
    JSON.stringify({ name: 'y'.repeat(n), imageName: 'file://./x' }),
    JSON.stringify({ output: 'z'.repeat(n) }),
    JSON.stringify({ query: `{ myself { id } } ${'#'.repeat(n)}` }),
    `{"input":{${Array.from({ length: n / 20 }, (_, i) => `"k${i}":${i}`).join(',')}}}`,
    `{"input":{"a":[${Array.from({ length: n / 4 }, () => '0').join(',')}]}}`,
  ]),
);

const jsonText = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v));

/** Field names of every REST and queue body, so objects with wrong types reach the validators and handlers. */
const FIELDS = [
  'input',
  'webhook',
  'policy',
  's3Config',
  'ttl',
  'executionTimeout',
  'lowPriority',
  'name',
  'imageName',
  'dockerStartCmd',
  'dockerArgs',
  'env',
  'templateId',
  'workersMin',
  'workersMax',
  'idleTimeout',
  'computeType',
  'gpuTypeIds',
  'gpuCount',
  'scalerType',
  'scalerValue',
  'networkVolumeId',
  'dataCenterIds',
  'flashboot',
  'executionTimeoutMs',
  'size',
  'dataCenterId',
  'username',
  'password',
  'scope',
  'endpointIds',
  'isAdmin',
  'query',
  'variables',
  'operationName',
  'output',
  'error',
  'status',
  'stopPod',
  'refresh_worker',
  'messages',
  'model',
  'stream',
  'prompt',
  'containerDiskInGb',
  'volumeInGb',
  'ports',
  'isServerless',
  'readme',
  'containerRegistryAuthId',
];

const weird = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER,
    2 ** 64,
    0.5,
    '',
    ' ',
    '\u0000',
    '\ud800',
    '😀'.repeat(100),
    '../../etc/passwd',
    'file:///etc/passwd',
    'http://169.254.169.254/latest',
    'javascript:alert(1)',
    [],
    {},
    [null],
    JSON.parse('{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}') as unknown,
  ),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
);

const shapedObject = fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 8 })), weird, {
  maxKeys: 8,
});

/** A GraphQL document for one operation of the schema, with variables of the right, wrong or absent shape. */
const gqlArb = memo((): fc.Arbitrary<string> => {
  const ops: Array<{
    kind: 'query' | 'mutation';
    name: string;
    args: Array<{ name: string; type: GraphQLInputType }>;
  }> = [];
  for (const kind of ['query', 'mutation'] as const) {
    const root = kind === 'query' ? schema.getQueryType() : schema.getMutationType();
    for (const f of Object.values(root?.getFields() ?? {})) {
      ops.push({ kind, name: f.name, args: f.args.map((a) => ({ name: a.name, type: a.type })) });
    }
  }
  const selection = (name: string): string => {
    const root = schema.getQueryType()!.getFields()[name] ?? schema.getMutationType()!.getFields()[name];
    const type = getNamedType(root!.type);
    if (isScalarType(type) || isEnumType(type)) return '';
    const fields = Object.keys((type as { getFields(): Record<string, unknown> }).getFields());
    return `{ ${fields.filter((f) => ['id', 'name', '__typename'].includes(f)).join(' ') || '__typename'} }`;
  };
  const perOp = ops.flatMap((op) => {
    const decl = op.args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const call = op.args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const doc = `${op.kind}${decl ? ` (${decl})` : ''} { ${op.name}${call ? `(${call})` : ''} ${selection(op.name)} }`;
    return [true, false].map((typed) =>
      fc
        .record(
          Object.fromEntries(op.args.map((a) => [a.name, typed ? inputValue(a.type, 0) : weird])) as Record<
            string,
            fc.Arbitrary<unknown>
          >,
          { requiredKeys: [] },
        )
        .map((variables) => JSON.stringify({ query: doc, variables })),
    );
  });
  return fc.oneof(...perOp);
});

/** A value for a GraphQL input type: mostly well typed, sometimes not, so both coercion and resolvers are hit. */
function inputValue(type: GraphQLInputType, depth: number): fc.Arbitrary<unknown> {
  const inner = isNonNullType(type) ? type.ofType : type;
  if (depth > 3) return weird;
  if (isListType(inner)) return fc.array(inputValue(inner.ofType, depth + 1), { maxLength: 3 });
  if (isEnumType(inner)) return fc.oneof(fc.constantFrom(...inner.getValues().map((v) => v.name)), weird);
  if (isInputObjectType(inner)) {
    const fields = inner.getFields();
    return fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record(
          Object.fromEntries(Object.values(fields).map((f) => [f.name, inputValue(f.type, depth + 1)])) as Record<
            string,
            fc.Arbitrary<unknown>
          >,
          { requiredKeys: [] },
        ),
      },
      { weight: 1, arbitrary: weird },
    );
  }
  if (isScalarType(inner)) {
    const typed: Record<string, fc.Arbitrary<unknown>> = {
      Int: fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31, 2 ** 53)),
      Float: fc.double({ noNaN: true }),
      Boolean: fc.boolean(),
      String: fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 30 }),
        ...ids['endpointId']!.map((v) => fc.constant(v)),
      ),
      ID: fc.string({ maxLength: 20 }),
    };
    return fc.oneof(
      { weight: 4, arbitrary: typed[inner.name] ?? fc.jsonValue({ maxDepth: 2 }) },
      { weight: 1, arbitrary: weird },
    );
  }
  return weird;
}

type BodyKind = { text: string | undefined; label: string };

const bodyArb = (path: string): fc.Arbitrary<BodyKind> =>
  bodyFor(path === '/graphql' ? 'graphql' : /\/(run|runsync)$/.test(path) ? 'submit' : 'other');

const bodyFor = memo((family: string): fc.Arbitrary<BodyKind> => {
  const gql = family === 'graphql';
  const submit = family === 'submit';
  const b = (label: string, arb: fc.Arbitrary<string | undefined>): fc.Arbitrary<BodyKind> =>
    arb.map((text) => ({ text, label }));
  return fc.oneof(
    { weight: 12, arbitrary: b('none', fc.constant(undefined)) },
    { weight: 16, arbitrary: b('json', jsonText) },
    {
      weight: 24,
      arbitrary: b(
        'shaped',
        shapedObject.map((o) => JSON.stringify(o)),
      ),
    },
    {
      weight: submit ? 24 : 4,
      arbitrary: b(
        'submit',
        fc
          .record(
            { input: fc.oneof(fc.jsonValue({ maxDepth: 3 }), shapedObject), webhook: weird, policy: shapedObject },
            { requiredKeys: ['input'] },
          )
          .map((o) => JSON.stringify(o)),
      ),
    },
    {
      weight: gql ? 48 : 4,
      arbitrary: gql ? b('graphql', gqlArb('')) : b('graphql', fc.constant('{"query":"{ myself { id } }"}')),
    },
    {
      weight: 12,
      arbitrary: b(
        'malformed',
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 60 }),
          fc.constantFrom(
            '{',
            '[',
            '{"a":',
            '{"a":1,}',
            "{'a':1}",
            'nul',
            '"\\ud800',
            '{"input":{}}}',
            '\u0000',
            '\ufeff{}',
          ),
          jsonText.map((s) => s.slice(0, Math.max(0, s.length - 1))),
        ),
      ),
    },
    {
      weight: 8,
      arbitrary: b('deep', fc.constantFrom(...deepBodies(''))),
    },
    {
      weight: 8,
      arbitrary: b(
        'numbers',
        fc
          .constantFrom('1e400', '-1e400', '123456789012345678901234567890', '1e-400', '-0', '0.0000001', '4e9')
          .chain((n) =>
            fc.constantFrom(
              `{"input":{"x":${n}},"policy":{"ttl":${n},"executionTimeout":${n}}}`,
              `{"workersMax":${n},"workersMin":${n},"idleTimeout":${n},"size":${n},"gpuCount":${n}}`,
              `{"output":${n}}`,
              `${n}`,
            ),
          ),
      ),
    },
    {
      weight: 1,
      arbitrary: b('huge', fc.constantFrom(...hugeBodies(''))),
    },
    {
      weight: 8,
      arbitrary: b(
        'unicode',
        fc
          .string({ unit: 'binary', maxLength: 80 })
          .map((s) => `{"input":{"s":${JSON.stringify(s)}},"name":${JSON.stringify(s)},"output":${JSON.stringify(s)}}`),
      ),
    },
  );
});

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/graphql',
  'application/xml',
  '',
  'garbage',
  '*/*',
  'application/json, text/plain',
  'application/vnd.api+json',
];

const GOOD = 'good';
const keyArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(GOOD) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('Bearer', 'Bearer ', 'Basic YWRtaW46YWRtaW4=', 'wharf_', 'Bearer wharf_test_admin_key_012345678'),
      fc.integer({ min: 513, max: 9000 }).map((n) => `Bearer ${'k'.repeat(n)}`),
      fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    ),
  },
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

interface Case {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: BodyKind;
}

const caseArb = memo((): fc.Arbitrary<Case> =>
  fc.oneof(
    ...routes.map((route) =>
      fc
        .record({
          method: fc.oneof(
            { weight: 5, arbitrary: fc.constant(route.method) },
            { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
          ),
          path: pathArb(route.path),
          query: queryArb,
          key: keyArb,
          bareKey: fc.boolean(),
          contentType: fc.oneof(
            { weight: 4, arbitrary: fc.constant('application/json') },
            { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
          ),
          extra: fc.dictionary(
            fc.constantFrom(
              'accept',
              'x-request-id',
              'content-encoding',
              'accept-encoding',
              'origin',
              'x-forwarded-for',
              'charset',
            ),
            fc.oneof(
              fc.constantFrom('gzip', 'br', '*/*', 'text/event-stream', 'identity', 'deflate'),
              fc.string({ unit: 'grapheme-ascii', maxLength: 200 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
            ),
            { maxKeys: 2 },
          ),
          body: bodyArb(route.path),
        })
        .map((c) => {
          const headers: Record<string, string> = { ...c.extra };
          const key = c.key === GOOD ? t.key : c.key;
          if (key !== undefined && key !== '')
            headers['authorization'] = c.bareKey || c.key !== GOOD ? key : `Bearer ${key}`;
          if (c.body.text !== undefined && c.contentType !== '') headers['content-type'] = c.contentType;
          return { method: c.method, url: `${c.path}${c.query}`, headers, body: c.body };
        }),
    ),
  ),
);

// ---------------------------------------------------------------------------------------------------------------
// The check of one answer

const LONG_POLL = /\/(status-sync|stream|runsync|job-take|job-take-batch|job-stop)\/|\/runsync(\?|$)|\/openai\//;
/** What a response must never show: stack frames, source paths, Node internals, raw exception names. */
const INTERNALS =
  /\n\s+at |at [\w.<>]+ \(|node:internal|\/work\/|\/src\/|\.ts:\d+|\bTypeError\b|\bRangeError\b|SqliteError|ERR_SQLITE|SQLITE_/;

const stats = { cases: 0, fiveXx: 0, held: 0, byStatus: new Map<number, number>(), byLabel: new Map<string, number>() };
const failures: string[] = [];

function describeCase(c: Case): string {
  const body = c.body.text === undefined ? '' : ` body[${c.body.label}]=${c.body.text.slice(0, 300)}`;
  return `${c.method} ${c.url.slice(0, 300)} ${JSON.stringify(c.headers).slice(0, 300)}${body}`;
}

async function within<T>(p: Promise<T>, ms: number): Promise<T | 'held'> {
  let timer: NodeJS.Timeout | undefined;
  const held = new Promise<'held'>((resolve) => {
    timer = setTimeout(() => resolve('held'), ms);
  });
  return Promise.race([p, held]).finally(() => clearTimeout(timer));
}

async function runCase(c: Case): Promise<void> {
  stats.cases++;
  stats.byLabel.set(c.body.label, (stats.byLabel.get(c.body.label) ?? 0) + 1);
  const pending = app.inject({
    method: c.method as 'GET',
    url: c.url,
    headers: c.headers,
    ...(c.body.text === undefined ? {} : { payload: c.body.text }),
  });
  let res = await within(pending, HOLD_MS);
  if (res === 'held') {
    if (LONG_POLL.test(c.url)) {
      stats.held++;
      return;
    }
    // Anything else must answer, if late (a loaded CI machine parsing megabytes).
    res = await within(pending, SLOW_MS);
    if (res === 'held') {
      failures.push(`no answer within ${SLOW_MS} ms: ${describeCase(c)}`);
      return;
    }
  }
  stats.byStatus.set(res.statusCode, (stats.byStatus.get(res.statusCode) ?? 0) + 1);
  const problem = checkAnswer(c, res.statusCode, res.headers, res.body);
  if (problem) failures.push(`${problem}: ${res.statusCode} ${res.body.slice(0, 300)} ← ${describeCase(c)}`);
}

function checkAnswer(
  c: Case,
  status: number,
  headers: Record<string, string | string[] | number | undefined>,
  body: string,
): string | null {
  if (status >= 500) {
    stats.fiveXx++;
    return 'a 5xx';
  }
  if (headers['x-content-type-options'] !== 'nosniff') return 'no x-content-type-options: nosniff';
  if (INTERNALS.test(body)) return 'internals in the body';
  if (/"INTERNAL"/.test(body)) return 'an INTERNAL error inside a 2xx (GraphQL field error)';
  if (status < 400 || c.method === 'HEAD') return null;
  let json: any;
  try {
    json = JSON.parse(body);
  } catch {
    return 'an error body that is not JSON';
  }
  const path = c.url.split('?')[0]!;
  if (
    path === '/graphql' &&
    c.method !== 'PUT' &&
    c.method !== 'PATCH' &&
    c.method !== 'DELETE' &&
    c.method !== 'OPTIONS'
  ) {
    const e = json?.errors?.[0];
    return typeof e?.message === 'string' && typeof e?.extensions?.code === 'string'
      ? null
      : 'not the GraphQL error shape';
  }
  // The OpenAI routes answer in OpenAI's shape; a request refused before routing gets the usual one.
  if (path.includes('/openai/') && typeof json?.error?.message === 'string') return null;
  const keys = Object.keys(json ?? {})
    .sort()
    .join(',');
  if (typeof json?.code !== 'string' || typeof json?.message !== 'string' || !/^code,(details,)?message$/.test(keys)) {
    return 'not the {code, message, details?} error shape';
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------

it('every route answers hostile input without a 5xx, internals or unbounded memory', { timeout: 300_000 }, async () => {
  expect(routes.length).toBeGreaterThan(50);
  // Built before the heap is measured: the arbitraries and the large bodies they draw from live for the whole run.
  const cases = caseArb('');
  fc.sample(cases, { numRuns: 10, seed: SEED });
  const started = Date.now();
  const cpu = process.cpuUsage();
  let heapWarm = 0;
  const warmUp = Math.floor(RUNS / 10);
  // A rolling window of WINDOW cases in flight: one held long poll never stalls the others.
  const inFlight = new Set<Promise<void>>();
  // fc.check, not fc.assert: a counterexample can hold megabytes of body; `failures` describes it briefly.
  const run = await fc.check(
    fc.asyncProperty(cases, async (c) => {
      while (inFlight.size >= WINDOW) await Promise.race(inFlight);
      const p: Promise<void> = runCase(c).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (stats.cases === warmUp) {
        // The baseline, once routes are compiled and caches (auth, GraphQL documents) have filled.
        await Promise.all(inFlight);
        gc();
        heapWarm = process.memoryUsage().heapUsed;
      }
      return failures.length === 0;
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  await Promise.all(inFlight);
  if (run.failed && failures.length === 0)
    failures.push(`the property failed: ${String(run.errorInstance).slice(0, 2000)}`);
  // Heap growth after the warm-up, after a full collection (jobs live in SQLite, not in the heap).
  gc();
  const growthMb = Math.round((process.memoryUsage().heapUsed - heapWarm) / 1e5) / 10;
  console.log(
    JSON.stringify({
      fuzz: 'http',
      seed: SEED,
      cases: stats.cases,
      fiveXx: stats.fiveXx,
      heldLongPolls: stats.held,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      cpuSeconds: Math.round(process.cpuUsage(cpu).user / 1e5) / 10,
      heapGrowthAfterWarmUpMb: growthMb,
      statuses: Object.fromEntries([...stats.byStatus].sort((a, b) => a[0] - b[0])),
      bodies: Object.fromEntries(stats.byLabel),
    }),
  );
  expect(failures.slice(0, 10), `seed ${SEED}`).toEqual([]);
  expect(errorLogs.slice(0, 5), `seed ${SEED}`).toEqual([]);
  expect(stats.fiveXx).toBe(0);
  expect(stats.cases).toBe(RUNS);
  expect(growthMb).toBeLessThan(48);
  // Still up and serving.
  expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  expect((await t.api('GET', '/v1/endpoints')).status).toBe(200);
});

// ---------------------------------------------------------------------------------------------------------------
// Over a real socket: what app.inject() cannot send. Raw request lines and header bytes Node's parser must judge,
// lying Content-Lengths, broken chunked encodings, and bodies trickled in pieces.

const RAW_RUNS = Number(process.env['WHARF_FUZZ_RAW_RUNS'] ?? 400);

// Mostly well-formed, so that most cases get past Node's parser to the routes; sometimes not at all.
const headerName = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom('Content-Type', 'Content-Length', 'Transfer-Encoding', 'Expect', 'Accept', 'X-A'),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 12 }) },
);
const headerValue = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom('application/json', 'text/plain', 'chunked', '100-continue', '0', '99999999999'),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 9000, max: 20_000 }).map((n) => 'v'.repeat(n)) },
);

interface RawCase {
  head: string;
  body: string;
  pieces: number;
}

const rawCaseArb = (): fc.Arbitrary<RawCase> =>
  fc
    .record({
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH') },
        { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
      ),
      path: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...routes).chain((r) => pathArb(r.path)) },
        { weight: 1, arbitrary: fc.constantFrom('/', '//', '/..', '/%', '/v2/../../etc/passwd', '*', 'http://x/v1') },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
      ),
      query: queryArb,
      version: fc.constantFrom(...Array<string>(12).fill('HTTP/1.1'), 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', ''),
      key: fc.boolean(),
      headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 3 }),
      body: fc.oneof(
        fc.constant(''),
        jsonText,
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom('5\r\nhello\r\n0\r\n\r\n', 'zz\r\nxx\r\n', '0\r\n\r\n', '{"input":{}}'),
      ),
      lengthDelta: fc.constantFrom(0, 0, 0, -3, 5, null),
      pieces: fc.constantFrom(1, 1, 1, 3, 6),
    })
    .map((c) => {
      const lines = [`${c.method} ${c.path}${c.query} ${c.version}`, 'Host: fuzz', 'Connection: close'];
      if (c.key) lines.push(`Authorization: Bearer ${t.key}`);
      for (const [n, v] of c.headers) lines.push(`${n}: ${v}`);
      if (c.lengthDelta !== null)
        lines.push(`Content-Length: ${Math.max(0, Buffer.byteLength(c.body) + c.lengthDelta)}`);
      return { head: `${lines.join('\r\n')}\r\n\r\n`, body: c.body, pieces: c.pieces };
    });

/** Sends one raw case, the body in `pieces` parts 30 ms apart; resolves with what came back before close or 1.5 s. */
function sendRaw(port: number, c: RawCase): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(out);
    };
    const timer = setTimeout(done, 1500);
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => {
      void (async () => {
        socket.write(Buffer.from(c.head, 'latin1'));
        const size = Math.ceil(c.body.length / c.pieces) || 1;
        for (let i = 0; i < c.body.length && !socket.destroyed; i += size) {
          if (i > 0) await new Promise((r) => setTimeout(r, 30));
          socket.write(c.body.slice(i, i + size));
        }
      })();
    });
  });
}

it('what the HTTP parser refuses is answered in the one error shape too', async () => {
  const port = Number(new URL(t.url).port);
  const cases: Array<[string, number, string]> = [
    ['GARBAGE\r\n\r\n', 400, 'VALIDATION_FAILED'],
    ['GET /v2/x/health HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n', 400, 'VALIDATION_FAILED'],
    [`GET /v2/x/health HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
  ];
  for (const [head, status, code] of cases) {
    const out = await sendRaw(port, { head, body: '', pieces: 1 });
    expect(out.startsWith(`HTTP/1.1 ${status} `), out.slice(0, 200)).toBe(true);
    const body = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ code, message: expect.any(String) });
  }
});

it(
  'raw requests over a socket: malformed HTTP and trickled bodies get a 4xx or a close, never a 5xx',
  {
    timeout: 120_000,
  },
  async () => {
    // The fuzzed app itself on a socket: its error log is the one watched.
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const raw = { cases: 0, answered: 0, fiveXx: 0, statuses: new Map<number, number>() };
    const problems: string[] = [];
    const inFlight = new Set<Promise<void>>();
    const result = await fc.check(
      fc.asyncProperty(rawCaseArb(), async (c) => {
        while (inFlight.size >= 16) await Promise.race(inFlight);
        raw.cases++;
        const p: Promise<void> = sendRaw(port, c)
          .then((out) => {
            for (const m of out.matchAll(/HTTP\/1\.[01] (\d{3})/g)) {
              const status = Number(m[1]);
              raw.answered++;
              raw.statuses.set(status, (raw.statuses.get(status) ?? 0) + 1);
              if (status >= 500) {
                raw.fiveXx++;
                problems.push(`${status} for ${JSON.stringify(c.head.slice(0, 300))}: ${out.slice(0, 300)}`);
              }
            }
            if (INTERNALS.test(out))
              problems.push(`internals for ${JSON.stringify(c.head.slice(0, 300))}: ${out.slice(0, 300)}`);
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
        return problems.length === 0;
      }),
      { seed: SEED, numRuns: RAW_RUNS, endOnFailure: true },
    );
    await Promise.all(inFlight);
    console.log(
      JSON.stringify({
        fuzz: 'raw-socket',
        seed: SEED,
        cases: raw.cases,
        answered: raw.answered,
        fiveXx: raw.fiveXx,
        statuses: Object.fromEntries([...raw.statuses].sort((a, b) => a[0] - b[0])),
      }),
    );
    expect(problems.slice(0, 5), `seed ${SEED}`).toEqual([]);
    expect(result.failed && problems.length === 0 ? String(result.errorInstance) : 'ok').toBe('ok');
    expect(raw.cases).toBe(RAW_RUNS);
    expect(raw.answered).toBeGreaterThan(RAW_RUNS / 2);
    expect(errorLogs.slice(0, 5)).toEqual([]);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  },
);
