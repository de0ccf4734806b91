// Wharf's TypeScript client (src/sdk/client) against a real server and a real worker process (the example
// TypeScript worker): queue operations, management CRUD, error codes, retries on 429 honouring Retry-After, aborts
// and timeouts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  WharfApiError,
  WharfClient,
  backoffMs,
  isWharfApiError,
  parseRetryAfter,
  toSubmission,
  type EndpointClient,
  type JobStatus,
} from '../../src/sdk/client/index.ts';
import { createEndpoint, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/fleet.ts';
import { killAll, spawnExampleWorker } from '../helpers/processes.ts';

interface EchoIn {
  text?: string;
  sleepMs?: number;
  stream?: number;
  fail?: string;
  n?: number;
}
interface EchoOut {
  echo: EchoIn;
}

let t: TestServer;
let wharf: WharfClient;
let ep: EndpointClient;
/** An endpoint without any worker: its jobs stay IN_QUEUE. */
let idle: EndpointClient;
const podId = `pod-client-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 1000, stopWaitMs: 1000, streamWaitMs: 1000 });
  wharf = new WharfClient({ baseUrl: `${t.url}/`, apiKey: t.key });
  const epId = await createEndpoint(t);
  ep = wharf.endpoint(epId);
  idle = wharf.endpoint(await createEndpoint(t));
  spawnExampleWorker({
    url: t.url,
    endpointId: epId,
    podId,
    apiKey: t.key,
    env: { WHARF_WORKER_RETRY_BASE_MS: '100' },
  });
});
afterAll(async () => {
  await killAll();
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<O>(e: EndpointClient, id: string, pred: (s: JobStatus<O>) => boolean): Promise<JobStatus<O>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const s = await e.status<O>(id);
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

async function rejection(p: Promise<unknown>): Promise<WharfApiError> {
  const error = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WharfApiError);
  return error as WharfApiError;
}

describe('queue operations against a worker process', () => {
  it('runSync wraps a bare input and resolves with the typed output', async () => {
    const job = await ep.runSync<EchoIn, EchoOut>({ text: 'héllo ✓' }, { wait: 20_000 });
    expect(job).toMatchObject({ status: 'COMPLETED', output: { echo: { text: 'héllo ✓' } }, workerId: podId });
    expect(job.id).toMatch(/^sync-/);
    expect(typeof job.delayTime).toBe('number');
    expect(typeof job.executionTime).toBe('number');
    const text: string | undefined = job.output?.echo.text;
    expect(text).toBe('héllo ✓');
  });

  it('runSync keeps waiting through /status-sync when the job outlasts the first wait', async () => {
    const started = Date.now();
    const job = await ep.runSync<EchoIn, EchoOut>({ sleepMs: 1800, n: 1 }, { wait: 1000, timeoutMs: 20_000 });
    expect(job).toMatchObject({ status: 'COMPLETED', output: { echo: { sleepMs: 1800, n: 1 } } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1700);
  });

  it('runSync returns the last non-final status when its timeoutMs runs out', async () => {
    const started = Date.now();
    const job = await idle.runSync({ n: 2 }, { timeoutMs: 1000 });
    expect(job.status).toBe('IN_QUEUE');
    expect(job.id).toMatch(/^sync-/);
    expect(Date.now() - started).toBeLessThan(5000);
    await idle.cancel(job.id);
  });

  it('statusSync and stream with a wait under 1000 ms allow for the server waiting its 1000 ms minimum', async () => {
    // Each request's timeout is the client's timeoutMs plus the wait asked for: a 0 taken as such would give up on
    // the server's one-second wait after 500 ms.
    const short = new WharfClient({ baseUrl: t.url, apiKey: t.key, timeoutMs: 500 }).endpoint(idle.endpointId);
    const { id } = await idle.run({ n: 20 });
    expect(await short.statusSync(id, { wait: 0 })).toMatchObject({ id, status: 'IN_QUEUE' });
    const iterate = async () => {
      for await (const _ of short.stream(id, { wait: 0, timeoutMs: 100 })) void _;
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'CLIENT_TIMEOUT' });
    await idle.cancel(id);
  });

  it('run passes a full request through (policy, webhook) and status/statusSync report it', async () => {
    const sub = await ep.run({ input: { n: 3 }, policy: { ttl: 120_000, executionTimeout: 60_000 } });
    expect(sub.status).toBe('IN_QUEUE');
    const done = await ep.statusSync<EchoOut>(sub.id, { wait: 10_000 });
    expect(done).toMatchObject({ id: sub.id, status: 'COMPLETED', output: { echo: { n: 3 } } });
    expect(await ep.status(sub.id)).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 3 } } });
    expect(toSubmission({ input: 'text' })).toEqual({ input: { input: 'text' } });
    expect(toSubmission([1])).toEqual({ input: [1] });
  });

  it('stream yields each chunk output in order and ends when the job is final and drained', async () => {
    const { id } = await ep.run({ stream: 4 });
    const chunks: { chunk: number }[] = [];
    for await (const c of ep.stream<{ chunk: number }>(id)) chunks.push(c);
    expect(chunks).toEqual([0, 1, 2, 3].map((chunk) => ({ chunk })));
    // The iterator's return value says how the job ended; a second read of a drained stream yields nothing.
    const it2 = ep.stream(id);
    const end = await it2.next();
    expect(end).toEqual({ done: true, value: { status: 'COMPLETED' } });
  });

  it('cancel stops a running job; its stream then ends CANCELLED', async () => {
    const { id } = await ep.run({ sleepMs: 30_000 });
    await until(ep, id, (s) => s.status === 'IN_PROGRESS');
    expect(await ep.cancel(id)).toEqual({ id, status: 'CANCELLED' });
    expect((await ep.status(id)).status).toBe('CANCELLED');
    const it2 = ep.stream(id);
    expect(await it2.next()).toEqual({ done: true, value: { status: 'CANCELLED' } });
    // Cancelling again is harmless: the job's state is reported.
    expect(await ep.cancel(id)).toEqual({ id, status: 'CANCELLED' });
  });

  it('a failing job, then retry requeues it under the same id', async () => {
    const failed = await ep.runSync({ fail: 'the model refused' }, { wait: 10_000 });
    expect(failed.status).toBe('FAILED');
    expect(JSON.parse(failed.error as string)).toMatchObject({ error_message: 'the model refused' });
    const { id } = await ep.run({ fail: 'again' });
    await ep.statusSync(id, { wait: 10_000 });
    expect(await ep.retry(id)).toEqual({ id, status: 'IN_QUEUE' });
    expect((await ep.statusSync(id, { wait: 10_000 })).status).toBe('FAILED');
    const done = await ep.runSync({ n: 4 });
    const err = await rejection(ep.retry(done.id));
    expect(err).toMatchObject({ status: 400, code: 'JOB_NOT_RETRYABLE' });
  });

  it('purgeQueue, health and requests', async () => {
    const a = await idle.run({ n: 5 });
    const b = await idle.run({ n: 6 });
    const health = await idle.health();
    expect(health.jobs.inQueue).toBe(2);
    expect(health.workers).toMatchObject({ idle: 0, running: 0 });
    // Newest first, a page at a time (two jobs submitted in the same ms may come in either order).
    const page = await idle.requests({ limit: 1 });
    expect(page.requests).toHaveLength(1);
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await idle.requests({ limit: 10, cursor: page.nextCursor! });
    const ids = [...page.requests, ...next.requests].map((r) => r.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(new Set(ids).size).toBe(ids.length);
    expect(await idle.purgeQueue()).toEqual({ removed: 2, status: 'completed' });
    expect((await idle.health()).jobs.inQueue).toBe(0);
    const busy = await ep.health();
    expect(busy.workers.idle + busy.workers.running).toBeGreaterThanOrEqual(1);
  });
});

describe('errors carry the server code', () => {
  it('unknown job, unknown endpoint, bad key, invalid body', async () => {
    expect(await rejection(ep.status('no-such-job'))).toMatchObject({ status: 404, code: 'JOB_NOT_FOUND' });
    expect(await rejection(wharf.endpoint('nosuchendpoint').health())).toMatchObject({
      status: 404,
      code: 'ENDPOINT_NOT_FOUND',
    });
    const stranger = new WharfClient({ baseUrl: t.url, apiKey: 'wharf_not_a_key' });
    const unauthorized = await rejection(stranger.endpoints.list());
    expect(unauthorized).toMatchObject({ status: 401, code: 'UNAUTHORIZED', name: 'WharfApiError' });
    expect(unauthorized.requestId).toEqual(expect.any(String));
    const invalid = await rejection(ep.run({ input: { a: 1 }, policy: { ttl: 5 } }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    expect(invalid.details).toEqual([expect.objectContaining({ field: 'policy.ttl' })]);
    expect(isWharfApiError(invalid, 'VALIDATION_FAILED')).toBe(true);
    expect(await rejection(wharf.templates.get('nosuchtemplate'))).toMatchObject({ code: 'TEMPLATE_NOT_FOUND' });
  });

  it('GraphQL: data on success, the first error code on failure', async () => {
    const data = await wharf.graphql<{ myself: { id: string } }>('query { myself { id } }');
    expect(data.myself.id).toEqual(expect.any(String));
    const bad = await rejection(wharf.graphql('query { nosuchfield }'));
    expect(bad.status).toBe(400);
    expect(bad.message).toContain('nosuchfield');
    const missing = await rejection(
      wharf.graphql('mutation D($id: String!) { deleteEndpoint(id: $id) }', { id: 'nosuchendpoint' }),
    );
    expect(missing).toMatchObject({ status: 200, code: 'ENDPOINT_NOT_FOUND' });
  });
});

describe('management CRUD', () => {
  it('templates and endpoints', async () => {
    const tpl = await wharf.templates.create({
      name: `client-tpl-${Date.now()}`,
      imageName: 'img:1',
      env: { A: '1' },
      isServerless: true,
    });
    expect(tpl).toMatchObject({ imageName: 'img:1', env: { A: '1' }, isServerless: true });
    expect((await wharf.templates.list()).map((x) => x.id)).toContain(tpl.id);
    expect((await wharf.templates.update(tpl.id, { readme: 'hi' })).readme).toBe('hi');
    expect((await wharf.templates.get(tpl.id)).readme).toBe('hi');

    const e = await wharf.endpoints.create({ name: 'client-ep', templateId: tpl.id, workersMax: 0 });
    expect(e).toMatchObject({ name: 'client-ep', templateId: tpl.id, workersMax: 0, workersMin: 0 });
    const listed = await wharf.endpoints.list({ includeTemplate: true, includeWorkers: true });
    const mine = listed.find((x) => x.id === e.id)!;
    expect(mine.template?.id).toBe(tpl.id);
    expect(mine.workers).toEqual([]);
    expect((await wharf.endpoints.update(e.id, { idleTimeout: 30, name: 'renamed' })).idleTimeout).toBe(30);
    expect((await wharf.endpoints.get(e.id)).name).toBe('renamed');
    // A CPU endpoint's flavors and vCPUs read back typed, as the REST answer carries them.
    const cpu = await wharf.endpoints.create({
      name: 'client-cpu',
      templateId: tpl.id,
      computeType: 'CPU',
      cpuFlavorIds: ['cpu3g'],
      vcpuCount: 4,
      workersMax: 0,
    });
    const { cpuFlavorIds, vcpuCount } = await wharf.endpoints.get(cpu.id);
    expect({ cpuFlavorIds, vcpuCount }).toEqual({ cpuFlavorIds: ['cpu3g'], vcpuCount: 4 });
    await wharf.endpoints.delete(cpu.id);
    expect(await rejection(wharf.templates.delete(tpl.id))).toMatchObject({ status: 409, code: 'RESOURCE_IN_USE' });
    await expect(wharf.endpoints.delete(e.id)).resolves.toBeUndefined();
    expect(await rejection(wharf.endpoints.get(e.id))).toMatchObject({ code: 'ENDPOINT_NOT_FOUND' });
    await wharf.templates.delete(tpl.id);
  });

  it('network volumes and registry auths', async () => {
    const v = await wharf.volumes.create({ name: 'data', size: 10, dataCenterId: 'EU-RO-1' });
    expect(v).toMatchObject({ name: 'data', size: 10, dataCenterId: 'EU-RO-1' });
    expect(await wharf.volumes.update(v.id, { size: 20 })).toMatchObject({ id: v.id, size: 20 });
    expect((await wharf.volumes.get(v.id)).size).toBe(20);
    expect((await wharf.volumes.list()).map((x) => x.id)).toContain(v.id);
    await wharf.volumes.delete(v.id);
    expect(await rejection(wharf.volumes.get(v.id))).toMatchObject({ code: 'NETWORK_VOLUME_NOT_FOUND' });

    const auth = await wharf.registryAuths.create({ name: `reg-${Date.now()}`, username: 'u', password: 'p' });
    expect(Object.keys(auth).sort()).toEqual(['id', 'name']);
    expect(await wharf.registryAuths.get(auth.id)).toEqual(auth);
    expect(await wharf.registryAuths.list()).toContainEqual(auth);
    await wharf.registryAuths.delete(auth.id);
    expect(await rejection(wharf.registryAuths.get(auth.id))).toMatchObject({ code: 'REGISTRY_AUTH_NOT_FOUND' });

    // Secrets (GraphQL underneath): the value goes in once and never comes back.
    const secret = await wharf.secrets.create({ name: 'hf_token', value: 'hf_s3cr3t', description: 'Hugging Face' });
    expect(secret).toMatchObject({ name: 'hf_token', description: 'Hugging Face' });
    expect(await wharf.secrets.list()).toEqual([secret]);
    expect(JSON.stringify(await wharf.secrets.list())).not.toContain('hf_s3cr3t');
    expect(await rejection(wharf.secrets.create({ name: 'hf_token', value: 'x' }))).toMatchObject({
      code: 'NAME_TAKEN',
    });
    await wharf.secrets.delete(secret.id);
    expect(await wharf.secrets.list()).toEqual([]);
    expect(await rejection(wharf.secrets.delete(secret.id))).toMatchObject({ code: 'SECRET_NOT_FOUND' });
  });

  it('keys: created once, listed without the key, revoked at once', async () => {
    const k = await wharf.keys.create({ name: 'client-read', scope: 'read' });
    expect(k.key).toMatch(/^wharf_/);
    expect((await wharf.keys.list()).find((x) => x.id === k.id)).not.toHaveProperty('key');
    const reader = new WharfClient({ baseUrl: t.url, apiKey: k.key });
    expect(Array.isArray(await reader.endpoints.list())).toBe(true);
    expect(await rejection(reader.keys.create({ name: 'nope' }))).toMatchObject({ code: 'FORBIDDEN' });
    await wharf.keys.revoke(k.id);
    expect(await rejection(reader.endpoints.list())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('pods, billing, logs, webhook secret', async () => {
    const pods = await wharf.pods.list({ endpointId: ep.endpointId });
    expect(pods.map((p) => p.id)).toContain(podId);
    expect(await wharf.pods.get(podId)).toMatchObject({ id: podId, endpointId: ep.endpointId });
    expect(await rejection(wharf.pods.get('nosuchpod'))).toMatchObject({ code: 'POD_NOT_FOUND' });
    expect(Array.isArray(await wharf.billing.endpoints({ bucketSize: 'hour', grouping: 'endpointId' }))).toBe(true);
    expect(Array.isArray(await wharf.billing.pods({ grouping: 'gpuTypeId' }))).toBe(true);
    expect(Array.isArray(await wharf.billing.networkVolumes({ bucketSize: 'day' }))).toBe(true);
    expect(await rejection(wharf.billing.pods({ bucketSize: 'fortnight' as 'day' }))).toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    const logs = await wharf.logs(ep.endpointId, { limit: 10 });
    expect(logs).toEqual({ lines: expect.any(Array), next: expect.any(Number) });
    const secret = await wharf.webhookSecret();
    expect(secret.secret).toEqual(expect.any(String));
    const rotated = await wharf.rotateWebhookSecret();
    expect(rotated.secret).not.toBe(secret.secret);
  });
});

describe('aborts and timeouts', () => {
  it("the caller's AbortSignal ends a long poll at once, with the signal's reason", async () => {
    const { id } = await idle.run({ n: 7 });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 200);
    const error = await idle.statusSync(id, { wait: 20_000, signal: ac.signal }).catch((e: unknown) => e);
    expect((error as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2000);

    const ac2 = new AbortController();
    setTimeout(() => ac2.abort(new Error('user left')), 200);
    const iterate = async () => {
      for await (const _ of idle.stream(id, { signal: ac2.signal })) void _;
    };
    await expect(iterate()).rejects.toThrow('user left');
    await expect(idle.health({ signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    await idle.cancel(id);
  });

  it('a request with no answer within timeoutMs fails with TIMEOUT; stream timeoutMs caps the iteration', async () => {
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal!.reason as Error)),
      );
    const slow = new WharfClient({ baseUrl: t.url, apiKey: t.key, timeoutMs: 150, fetch: hanging });
    const started = Date.now();
    expect(await rejection(slow.endpoints.list())).toMatchObject({ status: 0, code: 'TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(1000);

    const { id } = await idle.run({ n: 8 });
    const iterate = async () => {
      for await (const _ of idle.stream(id, { timeoutMs: 600, wait: 200 })) void _;
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'CLIENT_TIMEOUT' });
    await idle.cancel(id);
  });
});

describe('retries', () => {
  /** A fetch answering from a script, recording what was asked. */
  function scripted(answers: (() => Response | Promise<Response>)[]) {
    const calls: { method: string; url: string; at: number }[] = [];
    const f: typeof fetch = async (url, init) => {
      calls.push({
        method: init?.method ?? 'GET',
        url: url instanceof Request ? url.url : url.toString(),
        at: Date.now(),
      });
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      return next();
    };
    return { f, calls };
  }
  const json =
    (status: number, body: unknown, headers: Record<string, string> = {}) =>
    () =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
  const down = () => {
    throw new TypeError('fetch failed');
  };

  it('reads retry 5xx and network errors with backoff; submissions only 429', async () => {
    const a = scripted([json(503, { code: 'SHUTTING_DOWN', message: 'x' }), down, json(200, [])]);
    const c1 = new WharfClient({ baseUrl: 'http://wharf.invalid', apiKey: 'k', fetch: a.f });
    expect(await c1.endpoints.list()).toEqual([]);
    expect(a.calls).toHaveLength(3);
    expect(a.calls[1]!.at - a.calls[0]!.at).toBeGreaterThanOrEqual(120);

    const b = scripted([json(503, { code: 'SHUTTING_DOWN', message: 'x' })]);
    const c2 = new WharfClient({ baseUrl: 'http://wharf.invalid', apiKey: 'k', fetch: b.f });
    expect(await rejection(c2.endpoint('e').run({ a: 1 }))).toMatchObject({ status: 503, code: 'SHUTTING_DOWN' });
    expect(b.calls).toHaveLength(1);

    const d = scripted([down]);
    const c3 = new WharfClient({ baseUrl: 'http://wharf.invalid', apiKey: 'k', fetch: d.f });
    expect(await rejection(c3.templates.create({ name: 'n', imageName: 'i' }))).toMatchObject({
      status: 0,
      code: 'NETWORK_ERROR',
    });
    expect(d.calls).toHaveLength(1);

    const e = scripted([json(429, { code: 'RATE_LIMITED', message: 'x' }, { 'retry-after': '0' }), json(200, {})]);
    const c4 = new WharfClient({ baseUrl: 'http://wharf.invalid', apiKey: 'k', fetch: e.f });
    expect(await c4.endpoint('e').run({ a: 1 })).toEqual({});
    expect(e.calls.map((c) => c.method)).toEqual(['POST', 'POST']);

    const g = scripted([json(429, { code: 'RATE_LIMITED', message: 'x' }, { 'retry-after': '3600' })]);
    const c5 = new WharfClient({ baseUrl: 'http://wharf.invalid', apiKey: 'k', fetch: g.f });
    expect(await rejection(c5.endpoint('e').health())).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 3_600_000 });

    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(backoffMs(0, () => 0)).toBe(125);
    expect(backoffMs(10, () => 1)).toBe(8000);
  });

  it('a real 429 (rate limit override) is retried after Retry-After; retries: 0 surfaces it', async () => {
    const limited = await startTestServer({
      rateLimits: 'on',
      // /status and /status-sync share one slot at a time; purge-queue once per 10 s.
      rateLimitOverrides: 'status=1000/1,purge-queue=1',
    });
    try {
      const epId = await createEndpoint(limited);
      const seen: { status: number; retryAfter: string | null; at: number }[] = [];
      const recording: typeof fetch = async (url, init) => {
        const res = await fetch(url, init);
        seen.push({ status: res.status, retryAfter: res.headers.get('retry-after'), at: Date.now() });
        return res;
      };
      const c = new WharfClient({ baseUrl: limited.url, apiKey: limited.key, fetch: recording });
      const e = c.endpoint(epId);
      const { id } = await e.run({ n: 1 });
      // A long poll holds the only /status slot for 1 s; the plain status call meanwhile gets 429 Retry-After: 1.
      const holder = new WharfClient({ baseUrl: limited.url, apiKey: limited.key }).endpoint(epId);
      const held = holder.statusSync(id, { wait: 1000 });
      // The long poll holds the slot once a probe that would not hold it for long (no wait, no retries) is refused. A
      // probe that took the slot first only sends the long poll into its own retry after Retry-After.
      const probe = new WharfClient({ baseUrl: limited.url, apiKey: limited.key, retries: 0 }).endpoint(epId);
      let refused: unknown = null;
      await waitUntil(
        async () => {
          refused = await probe.status(id).then(
            () => null,
            (e: unknown) => e,
          );
          return refused !== null;
        },
        5000,
        () => 'the long poll to hold the /status slot',
      );
      expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
      seen.length = 0;
      const status = await e.status(id);
      expect(status).toMatchObject({ id, status: 'IN_QUEUE' });
      expect(seen[0]).toMatchObject({ status: 429, retryAfter: '1' });
      expect(seen.at(-1)!.status).toBe(200);
      for (let i = 1; i < seen.length; i++) {
        if (seen[i - 1]!.status === 429) expect(seen[i]!.at - seen[i - 1]!.at).toBeGreaterThanOrEqual(990);
      }
      await held;

      const once = new WharfClient({ baseUrl: limited.url, apiKey: limited.key, retries: 0 }).endpoint(epId);
      expect(await once.purgeQueue()).toEqual({ removed: 1, status: 'completed' });
      const err = await rejection(once.purgeQueue());
      expect(err).toMatchObject({ status: 429, code: 'RATE_LIMITED', details: { limit: 1, kind: 'rate' } });
      expect(err.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(err.retryAfterMs).toBeLessThanOrEqual(10_000);
    } finally {
      await limited.close();
    }
  });
});
