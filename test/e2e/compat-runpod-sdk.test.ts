// The official JavaScript client, npm `runpod-sdk` (facts §3.2), pointed at Wharf with
// `runpodSdk(key, { baseUrl: <server>/v2 })` and driven against a real worker process (the example TypeScript
// worker). Assertions are on what the SDK hands its caller: `started`, `completed`, `succeeded`, `output`, the
// items of its stream generator, and that it treats every Wharf success as exactly HTTP 200.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import runpodSdk from 'runpod-sdk';

import { createEndpoint, startTestServer, type TestServer } from '../helpers/server.ts';
import { killAll, spawnExampleWorker } from '../helpers/processes.ts';

type SdkEndpoint = NonNullable<ReturnType<ReturnType<typeof runpodSdk>['endpoint']>>;

let t: TestServer;
let endpoint: SdkEndpoint;
/** An endpoint no worker serves: its jobs stay queued. */
let queued: SdkEndpoint;
const podId = `pod-jssdk-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 1000, stopWaitMs: 1000, streamWaitMs: 1000 });
  const epId = await createEndpoint(t);
  const sdk = runpodSdk(t.key, { baseUrl: `${t.url}/v2` });
  endpoint = sdk.endpoint(epId)!;
  queued = sdk.endpoint(await createEndpoint(t))!;
  spawnExampleWorker({ url: t.url, endpointId: epId, podId, apiKey: t.key });
});
afterAll(async () => {
  await killAll();
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** endpoint.status() until `pred` holds; the SDK's status() adds started/completed/succeeded. */
async function until(id: string, pred: (s: any) => boolean): Promise<any> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const s: any = await endpoint.status(id);
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

describe('runpod-sdk against Wharf', () => {
  it('runSync: a job done within the first wait comes back completed and succeeded', async () => {
    const res: any = await endpoint.runSync({ input: { prompt: 'hi' } }, 20_000);
    expect(res).toMatchObject({
      started: true,
      completed: true,
      succeeded: true,
      status: 'COMPLETED',
      output: { echo: { prompt: 'hi' } },
      workerId: podId,
    });
    expect(res.id).toEqual(expect.any(String));
    expect(typeof res.executionTime).toBe('number');
    expect(typeof res.delayTime).toBe('number');
  });

  it("runSync: a job outlasting /runsync's wait is followed through the SDK's /status-sync loop", async () => {
    // runSync(request, 2000): /runsync?wait=2000 answers IN_PROGRESS, then /status-sync/{id}?wait=… until final.
    // Its HTTP library (xior) calls the global fetch at request time, so a pass-through spy sees every request.
    const realFetch = globalThis.fetch;
    const calls: string[] = [];
    const spy = vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      const url = input instanceof Request ? input.url : input instanceof URL ? input.href : input;
      calls.push(`${init?.method ?? 'GET'} ${url.slice(t.url.length)}`);
      return realFetch(input, init);
    });
    try {
      const res: any = await endpoint.runSync({ input: { sleepMs: 3000 } }, 2000);
      expect(res).toMatchObject({
        started: true,
        completed: true,
        succeeded: true,
        status: 'COMPLETED',
        output: { echo: { sleepMs: 3000 } },
      });
      const base = `/v2/${endpoint.endpointId}`;
      expect(calls[0]).toBe(`POST ${base}/runsync?wait=2000`);
      const syncs = calls.slice(1);
      expect(syncs.length).toBeGreaterThanOrEqual(1);
      for (const c of syncs) expect(c).toMatch(new RegExp(`^GET ${base}/status-sync/${res.id}\\?wait=\\d+$`));
    } finally {
      spy.mockRestore();
    }
  });

  it('runSync: a failed job is completed but not succeeded, with the error', async () => {
    const res: any = await endpoint.runSync({ input: { fail: 'nope' } }, 20_000);
    expect(res).toMatchObject({ started: true, completed: true, succeeded: false, status: 'FAILED' });
    expect(JSON.parse(res.error)).toMatchObject({ error_message: 'nope' });
  });

  it('run then status: IN_QUEUE at once, then completed with the output', async () => {
    const run: any = await endpoint.run({ input: { n: 1 }, policy: { ttl: 60_000 } });
    expect(run).toEqual({ id: expect.any(String), status: 'IN_QUEUE' });
    const first: any = await endpoint.status(run.id);
    expect(first).toMatchObject({ id: run.id, started: true });
    const done = await until(run.id, (s) => s.completed);
    expect(done).toMatchObject({ succeeded: true, status: 'COMPLETED', output: { echo: { n: 1 } } });
    const sync: any = await endpoint.statusSync(run.id, 5000);
    expect(sync).toMatchObject({ completed: true, succeeded: true, output: { echo: { n: 1 } } });
  });

  it('stream: the async generator yields every chunk item and stops once the job is final', async () => {
    const run: any = await endpoint.run({ input: { stream: 3 } });
    const items: unknown[] = [];
    for await (const item of endpoint.stream(run.id)) items.push(item);
    expect(items).toEqual([{ output: { chunk: 0 } }, { output: { chunk: 1 } }, { output: { chunk: 2 } }]);
    const s: any = await endpoint.status(run.id);
    expect(s).toMatchObject({ completed: true, succeeded: true });
  });

  it('cancel: a running job is CANCELLED; status says completed, not succeeded', async () => {
    const run: any = await endpoint.run({ input: { sleepMs: 30_000 } });
    await until(run.id, (s) => s.status === 'IN_PROGRESS');
    const res: any = await endpoint.cancel(run.id);
    expect(res).toEqual({ id: run.id, status: 'CANCELLED' });
    const s: any = await endpoint.status(run.id);
    expect(s).toMatchObject({ started: true, completed: true, succeeded: false, status: 'CANCELLED' });
    // The stream of a cancelled job ends at once (CANCELLED is final for this SDK).
    const items: unknown[] = [];
    for await (const item of endpoint.stream(run.id)) items.push(item);
    expect(items).toEqual([]);
  });

  it('health and purgeQueue', async () => {
    const health: any = await endpoint.health();
    expect(Object.keys(health.jobs).sort()).toEqual(['completed', 'failed', 'inProgress', 'inQueue', 'retried']);
    for (const k of ['idle', 'initializing', 'ready', 'running', 'throttled']) {
      expect(typeof health.workers[k]).toBe('number');
    }
    expect(health.workers.idle + health.workers.running).toBeGreaterThanOrEqual(1);
    expect(health.jobs.completed).toBeGreaterThanOrEqual(1);

    await queued.run({ input: { n: 1 } });
    await queued.run({ input: { n: 2 } });
    expect(((await queued.health()) as any).jobs.inQueue).toBe(2);
    expect(await queued.purgeQueue()).toEqual({ removed: 2, status: 'completed' });
    expect(((await queued.health()) as any).jobs.inQueue).toBe(0);
  });

  it('errors: its HTTP library rejects on Wharf 4xx answers', async () => {
    await expect(endpoint.status('no-such-job')).rejects.toThrow('Request failed with status code 404');
    const stranger = runpodSdk('wrong-key', { baseUrl: `${t.url}/v2` }).endpoint(queued.endpointId)!;
    await expect(stranger.health()).rejects.toThrow('Request failed with status code 401');
  });
});
