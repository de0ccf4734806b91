// Security headers and limits: nosniff on every answer, a header size limit, slow clients cut off without cutting
// long polls, no internals in error answers, and no secret (API keys, worker keys, registry passwords, webhook
// secrets, template env, S3 secrets) in the server's log at any level.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startServer, type WharfServer } from '../../src/cli/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { buildApp } from '../../src/http/index.ts';
import { ECHO_TEMPLATE, FLEET, waitUntil } from '../helpers/fleet.ts';
import { ADMIN_KEY, FAST, createEndpoint, request, startTestServer, type TestServer } from '../helpers/server.ts';

/** One raw HTTP exchange: writes `parts` (a pause of `gapMs` between them), returns all the server sent. */
function raw(port: number, parts: Array<string | Buffer>, gapMs = 0, waitMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, waitMs);
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('error', (e) => (out === '' ? reject(e) : resolve(out)));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('connect', () => {
      void (async () => {
        for (const p of parts) {
          if (socket.destroyed) return;
          socket.write(p);
          if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        }
      })();
    });
  });
}

const statusOf = (response: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);

/** What an error answer must never show. */
const INTERNALS = /\n\s+at |node:internal|\/work\/|\/src\/|\.ts:\d+|TypeError|RangeError|SqliteError|boom/;

describe('headers, limits and error bodies', () => {
  let t: TestServer;
  let ep: string;
  let app: FastifyInstance;
  let port: number;

  beforeAll(async () => {
    t = await startTestServer();
    ep = await createEndpoint(t);
    // The same app with slow-client limits short enough to test: 500 ms for headers, 1 s for the whole request.
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
      { logLevel: 'silent', clientTimeouts: { headersMs: 500, requestMs: 1000, checkEveryMs: 100 } },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    port = typeof address === 'object' && address ? address.port : 0;
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  it('sends x-content-type-options: nosniff on successes, errors and refusals before routing', async () => {
    const answers = [
      await t.api('GET', '/healthz'),
      await t.api('GET', `/v2/${ep}/health`),
      await t.api('GET', '/v1/nope'),
      await t.api('GET', `/v2/${ep}/status/x`, undefined, { key: 'wrong' }),
      await t.api('POST', `/v2/${ep}/run`, undefined, { raw: '{bad' }),
      await t.api('GET', `/v1/templates/${'x'.repeat(2000)}`),
      await t.api('GET', '/v1/templates/%zz'),
      await t.api('POST', '/graphql', { query: '{ nope }' }),
    ];
    for (const a of answers) {
      expect(a.headers.get('x-content-type-options'), `${a.status} ${a.text}`).toBe('nosniff');
      expect(a.headers.get('x-powered-by')).toBeNull();
      if (a.status >= 400) expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    }
    // Refused before routing: the one error shape, not Fastify's.
    expect(answers[5]!.status).toBe(400);
    expect(answers[5]!.json).toEqual({ code: 'VALIDATION_FAILED', message: expect.stringMatching(/too long/) });
    expect(answers[6]!.json).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('refuses headers over 16 KB with 431 and keeps serving', async () => {
    const big = await raw(port, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    expect(statusOf(big)).toBe(431);
    const many = Array.from({ length: 3000 }, (_, i) => `X-H${i}: 1\r\n`).join('');
    expect(statusOf(await raw(port, [`GET /healthz HTTP/1.1\r\nHost: x\r\n${many}\r\n`]))).toBe(431);
    const ok = await raw(port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expect(statusOf(ok)).toBe(200);
  });

  it('answers malformed HTTP with a 4xx and no internals', async () => {
    const cases = [
      'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
      'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
      'POST /v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
      'POST /v1/templates HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
      'POST /v1/templates HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
      'GET /v2/../../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET /v1/networkvolumes/..%2f..%2fadmin-key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET /healthz\u0000 HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET /v2/${ep}/status/\u00ff\u00fe HTTP/1.1\r\nHost: x\r\nAuthorization: \u00ff\u0080\r\nConnection: close\r\n\r\n`,
    ];
    for (const c of cases) {
      const out = await raw(port, [c], 0, 3000);
      const status = statusOf(out);
      expect(status, JSON.stringify(c)).toBeGreaterThanOrEqual(400);
      expect(status, JSON.stringify(c)).toBeLessThan(500);
      expect(out).not.toMatch(INTERNALS);
      expect(out).not.toMatch(/root:x:0/);
    }
    expect((await request(`http://127.0.0.1:${port}/healthz`, 'GET')).status).toBe(200);
  });

  it('cuts off slow headers and slow bodies with 408, but not a long poll that answers late', async () => {
    const t0 = Date.now();
    const slowHeaders = raw(port, ['GET /healthz HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n'], 400);
    const slowBody = raw(
      port,
      [
        `POST /v2/${ep}/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"input":',
        ...Array.from({ length: 20 }, () => ' '),
      ],
      200,
    );
    // A job nobody takes: /status-sync holds the request for 2.5 s, longer than the 1 s request timeout.
    const job = await t.api('POST', `/v2/${ep}/run`, { input: { held: true } });
    const longPoll = request(
      `http://127.0.0.1:${port}/v2/${ep}/status-sync/${job.json.id}?wait=2500`,
      'GET',
      undefined,
      {
        key: ADMIN_KEY,
      },
    );
    const [h, b, lp] = await Promise.all([slowHeaders, slowBody, longPoll]);
    expect(statusOf(h)).toBe(408);
    expect(statusOf(b)).toBe(408);
    // The one error shape, also from the HTTP parser.
    expect(JSON.parse(h.slice(h.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'REQUEST_TIMEOUT' });
    expect(lp.status).toBe(200);
    expect(lp.json.status).toBe('IN_QUEUE');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2400);
    // Nothing half-sent was acknowledged.
    const health = await t.api('GET', `/v2/${ep}/health`);
    expect(health.json.jobs.inQueue).toBe(1);
  });

  it('refuses a 25 MB body with 413 on every route family', async () => {
    const body = Buffer.alloc(25 * 1024 * 1024, 'a');
    for (const path of [
      `/v2/${ep}/run`,
      `/v2/${ep}/runsync`,
      `/v2/${ep}/job-done/w1/j1`,
      '/v1/templates',
      '/graphql',
    ]) {
      const res = await request(`${t.url}${path}`, 'POST', undefined, { key: ADMIN_KEY, raw: body.toString() });
      expect(res.status, path).toBe(413);
      const json = path === '/graphql' ? res.json.errors[0].extensions : res.json;
      expect(json.code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('a body that is not JSON is refused without an excerpt of it (a password it breaks at)', async () => {
    const bodies: Array<[string, string, string]> = [
      ['/v1/containerregistryauth', '{"name":"r","username":"u","password":hunter2SECRET}', 'hunter2'],
      ['/v1/containerregistryauth', 'TOPSECRETPW', 'TOPSECRET'],
      [`/v2/${ep}/run`, '{"input":{},"s3Config":{"accessSecret":s3SECRETvalue}}', 's3SECRET'],
      ['/graphql', '{"query":"{ myself { id } }","variables":{"pw":hunter2SECRET}}', 'hunter2'],
    ];
    for (const [path, raw, secret] of bodies) {
      const res = await t.api('POST', path, undefined, { raw });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain('INVALID_JSON');
      expect(res.text, path).not.toContain(secret);
      // What went wrong is still said.
      expect(res.text).toMatch(/Unexpected token/);
    }
  });

  it('shows no stack trace or exception text when a handler fails', async () => {
    const store = t.server.store;
    const counts = store.jobCounts.bind(store);
    const list = store.listEndpoints.bind(store);
    const boom = async (): Promise<never> => {
      throw new TypeError('boom at /work/main/src/store/x.ts:12:3');
    };
    store.jobCounts = boom;
    store.listEndpoints = boom;
    try {
      const res = await t.api('GET', `/v2/${ep}/health`);
      expect(res.status).toBe(500);
      expect(res.json).toEqual({
        code: 'INTERNAL',
        message: expect.stringMatching(/^Internal error \(request [\w-]+\)$/),
      });
      const gql = await t.api('POST', '/graphql', { query: '{ myself { endpoints { id } } }' });
      expect(gql.json.errors[0]).toMatchObject({ extensions: { code: 'INTERNAL' } });
      const rest = await t.api('GET', '/v1/endpoints');
      expect(rest.status).toBe(500);
      for (const text of [res.text, gql.text, rest.text]) expect(text).not.toMatch(INTERNALS);
    } finally {
      store.jobCounts = counts;
      store.listEndpoints = list;
    }
  });
});

describe('secrets in the log', () => {
  const lines: string[] = [];
  let server: WharfServer;
  let dataDir: string;
  let hook: Server;
  let hookUrl: string;
  const hookBodies: string[] = [];

  const SECRETS = {
    admin: ADMIN_KEY,
    garbageKey: 'wharf_not_a_real_key_but_looks_like_one_42',
    registryPassword: 'reg-pass-Z9q7VxKc1',
    envSecret: 'hf_envSecretValue_77aa',
    s3Secret: 's3-secret-AbCdEf0123',
    gqlPassword: 'gql-reg-pass-Q1w2E3',
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wharf-secrets-'));
    hook = createServer((req, res) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => {
        hookBodies.push(JSON.stringify(req.headers) + b);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const address = hook.address();
    hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    const config = loadConfig({
      argv: [],
      env: {},
      overrides: { ...FAST, ...FLEET, dataDir, logLevel: 'trace', webhookRetryDelayMs: 100 },
    });
    server = await startServer(config, { logStream: { write: (l: string) => void lines.push(l) } });
  });
  afterAll(async () => {
    await server?.close();
    await new Promise((r) => hook?.close(r));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs none of the keys, passwords and secrets a session uses', { timeout: 60_000 }, async () => {
    const api = (method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY, headers = {}) =>
      request(`${server.url}${path}`, method, body, { key, headers });
    const created = await api('POST', '/v1/keys', { name: 'k', scope: 'all' });
    expect(created.status).toBe(200);
    const userKey = created.json.key as string;
    const secret = (await api('POST', '/v1/webhook-secret')).json.secret as string;
    expect(typeof secret).toBe('string');
    const reg = await api('POST', '/v1/containerregistryauth', {
      name: 'r',
      username: 'u',
      password: SECRETS.registryPassword,
    });
    expect(reg.status).toBe(200);
    const gql = await api(
      'POST',
      `/graphql?api_key=${encodeURIComponent(userKey)}`,
      {
        query: 'mutation($i: SaveRegistryAuthInput) { saveRegistryAuth(input: $i) { id } }',
        variables: { i: { name: 'r2', username: 'u', password: SECRETS.gqlPassword } },
      },
      null,
    );
    expect(gql.status).toBe(200);
    // A managed worker (it gets a worker key) runs a job with a webhook, an S3 secret and a secret in its env.
    const ep = await createEndpoint(
      { api: (m, p, b) => api(m, p, b) },
      { computeType: 'CPU', workersMin: 0, workersMax: 1, idleTimeout: 5 },
      { ...ECHO_TEMPLATE, env: { ...ECHO_TEMPLATE.env, HF_TOKEN: SECRETS.envSecret } },
    );
    const job = await api(
      'POST',
      `/v2/${ep}/run`,
      {
        input: { n: 1 },
        webhook: hookUrl,
        s3Config: { accessId: 'id', accessSecret: SECRETS.s3Secret, bucketName: 'b', endpointUrl: 'http://s3' },
      },
      userKey,
    );
    expect(job.status).toBe(200);
    let workerKey = '';
    await waitUntil(async () => {
      workerKey ||= workerKeyOf(ep);
      const s = await api('GET', `/v2/${ep}/status/${job.json.id}`);
      return s.json.status === 'COMPLETED';
    }, 30_000);
    await waitUntil(() => hookBodies.length > 0, 10_000);
    expect(workerKey).not.toBe('');
    // Keys sent every way a client may send them, right and wrong.
    await api('GET', '/v1/endpoints', undefined, null, { authorization: SECRETS.garbageKey });
    await api('GET', `/graphql?api_key=${SECRETS.garbageKey}&query=%7Bmyself%7Bid%7D%7D`, undefined, null);
    await api('GET', `/v2/${ep}/ping/w-x?gpu=x`, undefined, null, { authorization: workerKey });
    await api('GET', '/v1/endpoints', undefined, null, { authorization: `Bearer ${userKey}` });

    const log = lines.join('');
    // The requests that carried the secrets were logged (trace level): the check below looks at real lines. (Not a
    // line count: how many status polls the wait above makes depends on how fast the worker starts.)
    const routes = new Set(lines.map((l) => (JSON.parse(l) as { route?: string }).route));
    for (const route of [
      '/v1/keys',
      '/v1/containerregistryauth',
      '/graphql',
      '/v2/:endpointId/run',
      '/v2/:endpointId/job-done/:workerId/:jobId',
      '/v2/:endpointId/ping/:workerId',
      '/v1/endpoints',
    ]) {
      expect(routes.has(route), `no log line for ${route}`).toBe(true);
    }
    for (const [name, value] of Object.entries({ ...SECRETS, userKey, webhookSecret: secret, workerKey })) {
      expect(log.includes(value), `${name} appears in the log`).toBe(false);
    }
  });

  /** The worker key the executor gave a worker of `ep`: read from the worker process's environment. */
  function workerKeyOf(ep: string): string {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let env: string[];
      try {
        env = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      } catch {
        continue;
      }
      if (!env.includes(`RUNPOD_ENDPOINT_ID=${ep}`)) continue;
      const key = env.find((v) => v.startsWith('RUNPOD_AI_API_KEY='));
      if (key) return key.slice('RUNPOD_AI_API_KEY='.length);
    }
    return '';
  }
});
