// Held requests whose clients hang up: every bus waiter and timer they armed must go with them, at whatever moment the
// client leaves (before the wait is armed, or during it), and later requests must still work. And a slow reader of an
// OpenAI stream must not have the server read the job's whole output into memory for it.

import { once } from 'node:events';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitUntil } from '../helpers/fleet.ts';
import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;

beforeAll(async () => {
  // Waits far longer than the test: a waiter still there at its end was left by a client that hung up.
  t = await startTestServer({ takeWaitMs: 60_000, stopWaitMs: 60_000, streamWaitMs: 60_000, statusSyncWaitMs: 60_000 });
});
afterAll(async () => {
  await t?.close();
});

/** A request on its own connection, to be destroyed by the test (its errors are the hang-up's, ignored). */
function open(
  method: string,
  path: string,
  body?: unknown,
): { req: ClientRequest; response: Promise<IncomingMessage> } {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const req = httpRequest(`${t.url}${path}`, {
    method,
    agent: false,
    headers: {
      authorization: `Bearer ${t.key}`,
      'content-type': 'application/json',
      ...(payload !== undefined ? { 'content-length': Buffer.byteLength(payload) } : {}),
    },
  });
  req.on('error', () => {});
  const response = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
  req.end(payload);
  return { req, response };
}

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/**
 * Hold every call of `obj[name]` until release() (the requests have passed the key check but not yet reached their
 * wait), counting the calls held.
 */
function gate<T extends object, K extends keyof T>(obj: T, name: K) {
  const original = obj[name] as (...args: unknown[]) => Promise<unknown>;
  let held = 0;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  (obj as Record<K, unknown>)[name] = async (...args: unknown[]) => {
    held++;
    await opened;
    return original.apply(obj, args);
  };
  return {
    get held() {
      return held;
    },
    release: () => {
      (obj as Record<K, unknown>)[name] = original;
      release();
    },
  };
}

/**
 * Once every request waits at the gate (`atGate`), hangs them all up, gives the server time to see each close, then
 * releases the gate (whatever happened) and gives the requests time to reach their waits (they would arm them within
 * this; the waits are 60 s).
 */
async function hangUpAtGate(reqs: ClientRequest[], atGate: () => boolean, release: () => void): Promise<void> {
  try {
    await waitUntil(atGate, 10_000, () => 'requests to reach the gate');
    for (const req of reqs) req.destroy();
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    release();
  }
  await new Promise((r) => setTimeout(r, 1000));
}

/** Until the bus has `waiters` waiters again: those the hung-up requests armed are gone. */
async function untilWaitersBack(waiters: number): Promise<void> {
  const bus = t.server.engine.bus;
  await waitUntil(
    () => bus.waiterCount() === waiters,
    5000,
    () => `bus waiters ${bus.waiterCount()} → ${waiters}`,
  );
}

describe('clients that hang up', () => {
  it('a hang-up before the wait is armed (runsync, status-sync, stream, job-take, job-stop, logs) ends it at once', async () => {
    const ep = await createEndpoint(t);
    const queued = (await t.api('POST', `/v2/${ep}/run`, { input: { q: 1 } })).json.id as string;
    const bus = t.server.engine.bus;
    const waiters = bus.waiterCount();
    const handles = timers();
    const N = 60;
    const queue = gate(t.server.resources, 'getEndpoint');
    const worker = gate(t.server.resources, 'getEndpointAndWorker');
    const reqs: ClientRequest[] = [];
    for (let i = 0; i < N; i++) {
      reqs.push(open('POST', `/v2/${ep}/runsync?wait=60000`, { input: { i } }).req);
      reqs.push(open('GET', `/v2/${ep}/status-sync/${queued}?wait=60000`).req);
      reqs.push(open('GET', `/v2/${ep}/stream/${queued}?wait=60000`).req);
      reqs.push(open('GET', `/v2/${ep}/job-take/hangup-${i}?gpu=TEST`).req);
      reqs.push(open('GET', `/v2/${ep}/job-stop/hangup-${i}?gpu=TEST`).req);
      reqs.push(open('GET', `/v1/endpoints/${ep}/logs?follow=true`).req);
    }
    await hangUpAtGate(
      reqs,
      () => queue.held === 4 * N && worker.held === 2 * N,
      () => {
        queue.release();
        worker.release();
      },
    );
    await untilWaitersBack(waiters);
    // Their wait timers (60 s) went with them. Some timers of the closed connections last a few seconds more (Node's
    // keep-alive timeouts, 5 s), and the server's own come and go: a bound well under the waits, and some slack.
    await waitUntil(
      () => timers() <= handles + 20,
      20_000,
      () => `timers ${timers()} → ${handles}`,
    );
    // No take handed the queued job to a closed connection: it is still queued, and a live worker gets it at once.
    expect((await t.api('GET', `/v2/${ep}/status/${queued}`)).json.status).toBe('IN_QUEUE');
    const w = protocolWorker(t, ep, 'live-worker');
    expect((await w.take()).json.id).toBe(queued);
  });

  it('hang-ups during the wait leave no waiter or timer behind, and later requests still work', async () => {
    const ep = await createEndpoint(t);
    const queued = (await t.api('POST', `/v2/${ep}/run`, { input: { q: 2 } })).json.id as string;
    const idle = await createEndpoint(t); // its takes wait: nothing is queued there
    const bus = t.server.engine.bus;
    const waiters = bus.waiterCount();
    const handles = timers();
    const N = 100;
    const reqs: ClientRequest[] = [];
    for (let i = 0; i < N; i++) {
      reqs.push(open('POST', `/v2/${ep}/runsync?wait=60000`, { input: { i } }).req);
      reqs.push(open('GET', `/v2/${ep}/status-sync/${queued}?wait=60000`).req);
      reqs.push(open('GET', `/v2/${ep}/stream/${queued}?wait=60000`).req);
      reqs.push(open('GET', `/v2/${ep}/job-stop/during-${i}?gpu=TEST`).req);
      reqs.push(open('GET', `/v2/${idle}/job-take/during-${i}?gpu=TEST`).req);
    }
    // runsync and status-sync arm two waiters each (job and purge), the others one.
    await waitUntil(
      () => bus.waiterCount() >= waiters + 7 * N,
      15_000,
      () => `waiters ${bus.waiterCount()}`,
    );
    for (const req of reqs) req.destroy();
    await untilWaitersBack(waiters);
    await waitUntil(
      () => timers() <= handles + 20,
      20_000,
      () => `timers ${timers()} → ${handles}`,
    );
    const res = await t.api('GET', `/v2/${ep}/status-sync/${queued}?wait=1000`);
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('IN_QUEUE');
    // The takes that hung up are no longer on offer to new jobs: the next job goes to a live one.
    const w = protocolWorker(t, idle, 'after-hang-ups');
    const take = w.take();
    await waitUntil(
      () => bus.waiterCount() > waiters,
      5000,
      () => 'the live take to wait',
    );
    const id = (await t.api('POST', `/v2/${idle}/run`, { input: { after: true } })).json.id as string;
    expect((await take).json.id).toBe(id);
  });

  it('an OpenAI request whose client hangs up before its job is submitted has the job cancelled', async () => {
    const ep = await createEndpoint(t);
    const bus = t.server.engine.bus;
    const waiters = bus.waiterCount();
    const N = 20;
    const held = gate(t.server.resources, 'getEndpoint');
    const reqs: ClientRequest[] = [];
    for (let i = 0; i < N; i++) {
      const stream = i % 2 === 0;
      reqs.push(open('POST', `/v2/${ep}/openai/v1/chat/completions`, { model: 'm', messages: [], stream }).req);
    }
    await hangUpAtGate(
      reqs,
      () => held.held === N,
      () => held.release(),
    );
    await untilWaitersBack(waiters);
    // Nobody reads their answers: no worker may be given them.
    await waitUntil(
      async () => (await t.api('GET', `/v2/${ep}/health`)).json.jobs.inQueue === 0,
      5000,
      () => 'the jobs to be cancelled',
    );
  });

  it('a slow reader of an OpenAI stream: the server stops reading chunks it cannot write; all arrive once read', async () => {
    const ep = await createEndpoint(t);
    const w = protocolWorker(t, ep, 'slow-reader');
    const engine = t.server.engine;
    const original = engine.stream.bind(engine);
    // Chunk text the stream has read from the store for the client (the cursor it moved).
    let read = 0;
    engine.stream = async (...args) => {
      const res = await original(...args);
      if (args[2] === 'openai') read += res.chunks.reduce((n, c) => n + c.length, 0);
      return res;
    };
    try {
      const { req, response } = open('POST', `/v2/${ep}/openai/v1/chat/completions`, {
        model: 'm',
        messages: [],
        stream: true,
      });
      const res = await response;
      res.pause(); // the client reads nothing for now
      const jobId = res.headers['x-wharf-job-id'] as string;
      expect((await w.take()).json.id).toBe(jobId);
      const big = 'x'.repeat(900_000);
      const count = 60; // 54 MB: several reads (8 MiB each), and more than the loopback socket buffers hold
      for (let i = 0; i < count; i++) expect((await w.stream(jobId, { output: { i, big } })).status).toBe(200);
      expect((await w.done(jobId, { output: 'not sent: chunks were' }, true)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1000));
      // Before: the whole answer was read into the response's buffer at once (54 MB for a client reading nothing).
      expect(read).toBeLessThan((count * big.length) / 2);
      res.setEncoding('utf8');
      let text = '';
      res.on('data', (d: string) => (text += d));
      res.resume();
      await once(res, 'end');
      req.destroy();
      const events = text.split('\n\n').filter((e) => e.startsWith('data: {"i":'));
      expect(events.map((e) => (JSON.parse(e.slice(6)) as { i: number }).i)).toEqual([...Array(count).keys()]);
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    } finally {
      // Back to the prototype's method.
      Reflect.deleteProperty(engine, 'stream');
    }
  });
});
