// The OpenAI-compatible routes (docs/openai.md) against a worker played step by step with the protocol helper, for
// what the example worker cannot show: a job still queued, chunks of every shape and size, a client hanging up at a
// chosen moment, the 300 s limit (a test clock moves past it).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitUntil } from '../helpers/fleet.ts';
import { createEndpoint, protocolWorker, startTestServer, TestClock, type TestServer } from '../helpers/server.ts';

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

  it('chunks of every shape are framed as SSE events, and an answer past one read (over 8 MB) arrives whole', async () => {
    const w = protocolWorker(t, ep, 'framing');
    const pending = post('/chat/completions', { model: 'm', messages: [], stream: true });
    const jobId = (await w.take()).json.id as string;
    await w.stream(jobId, { output: { a: 1 } }); // an object
    await w.stream(jobId, { output: 'data: {"b":2}' }); // SSE text without its blank line
    await w.stream(jobId, { output: ['data: {"c":3}\n', { d: 'é' }] }); // a list of both
    const big = 'x'.repeat(900_000);
    for (let i = 0; i < 12; i++) await w.stream(jobId, { output: { i, big } });
    expect((await w.done(jobId, { output: 'not sent: chunks were' }, true)).status).toBe(200);
    const text = await (await pending).text();
    expect(
      text.startsWith(': keep-alive\n\ndata: {"a":1}\n\ndata: {"b":2}\n\ndata: {"c":3}\n\ndata: {"d":"é"}\n\n'),
    ).toBe(true);
    const events = text.split('\n\n').filter((e) => e.startsWith('data: {"i":'));
    expect(events.map((e) => (JSON.parse(e.slice(6)) as { i: number }).i)).toEqual([...Array(12).keys()]);
    expect(text.match(/data: \[DONE\]/g)).toHaveLength(1);
    expect(text.endsWith('"}\n\ndata: [DONE]\n\n')).toBe(true);
  });

  it("vLLM's error object answers with its status and X-Should-Retry: false, a 5xx too (no client retries it)", async () => {
    // The OpenAI clients retry 408, 409, 429 and 5xx unless told not to; each retry would be another job that fails
    // the same way (docs/openai.md "Errors").
    for (const code of [500, 503, 400, 429]) {
      const w = protocolWorker(t, ep, `vllm-error-${code}`);
      const pending = post('/chat/completions', { model: 'm', messages: [] });
      const jobId = (await w.take()).json.id as string;
      // vLLM's older ErrorResponse for 500 and 400, the current {"error": ErrorInfo} for 503 and 429.
      const info = { message: `engine says ${code}`, type: 'EngineError', param: null, code };
      const output = [code === 500 || code === 400 ? { object: 'error', ...info } : { error: info }];
      expect((await w.done(jobId, { output })).status).toBe(200);
      const res = await pending;
      expect(res.status).toBe(code);
      expect(res.headers.get('x-should-retry'), `code ${code}`).toBe('false');
      expect(await res.json()).toEqual({
        error: { message: `engine says ${code}`, type: 'EngineError', param: null, code },
      });
    }
  });

  it('a client that hangs up during a non-streaming wait cancels the job; its worker is told to stop', async () => {
    const w = protocolWorker(t, ep, 'hangup');
    const ac = new AbortController();
    const pending = post('/completions', { model: 'm', prompt: 'p' }, ac.signal).catch((e: unknown) => e);
    const jobId = (await w.take()).json.id as string;
    ac.abort();
    await pending;
    await waitUntil(
      async () => (await statusOf(jobId)) === 'CANCELLED',
      5000,
      () => `job ${jobId} to be CANCELLED`,
    );
    expect((await w.stops()).json.jobsToStop).toContain(jobId);
  });

  // Last: it moves the clock 301 s on.
  it('a stream without a chunk for 300 s ends with a timeout error event and the job is cancelled', async () => {
    const res = await post('/chat/completions', { model: 'm', messages: [], stream: true });
    const jobId = res.headers.get('x-wharf-job-id')!;
    clock.advance(301_000);
    // The limit is checked each time a keep-alive is due (15 s).
    const text = await res.text();
    expect(text).toMatch(/^: keep-alive\n\n/);
    const last = text.trimEnd().split('\n\n').at(-1)!;
    expect(JSON.parse(last.slice('data: '.length))).toMatchObject({
      error: { type: 'timeout_error', code: 'OPENAI_TIMEOUT' },
    });
    expect(text).not.toMatch(/\[DONE\]/);
    expect(await statusOf(jobId)).toBe('CANCELLED');
  }, 30_000);
});
