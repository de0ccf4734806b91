// The OpenAI-compatible routes (docs/openai.md) against a worker played step by step with the protocol helper, for
// what the example worker cannot show: a job still queued, chunks of every shape and size, a client hanging up at a
// chosen moment, the 300 s limit (a test clock moves past it).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitUntil } from '../helpers/fleet.ts';
import { createEndpoint, startTestServer, TestClock, type TestServer } from '../helpers/server.ts';

let t: TestServer;
let ep: string;
const clock = new TestClock();

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 500, stopWaitMs: 500, streamWaitMs: 1000 }, { clock });
  ep = await createEndpoint(t);
});
afterAll(async () => {
  await t?.close();
});

function post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${t.url}/v2/${ep}/openai/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

const statusOf = async (jobId: string): Promise<string> =>
  (await t.api('GET', `/v2/${ep}/status/${jobId}`)).json?.status;

describe('OpenAI routes with a protocol worker', () => {
  it('a streamed request answers 200 with its job id at once, while the job still waits for a worker', async () => {
    const started = Date.now();
    const ac = new AbortController();
    const res = await Promise.race([
      post('/chat/completions', { model: 'm', messages: [], stream: true }, ac.signal),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000)),
    ]);
    expect(res, 'no response headers within 5 s').not.toBeNull();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res!.status).toBe(200);
    expect(res!.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const jobId = res!.headers.get('x-wharf-job-id')!;
    expect(await statusOf(jobId)).toBe('IN_QUEUE');
    ac.abort();
    await waitUntil(
      async () => (await statusOf(jobId)) === 'CANCELLED',
      5000,
      () => `job ${jobId} to be CANCELLED`,
    );
  });
});
