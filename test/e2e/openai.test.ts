// The OpenAI-compatible routes with the official `openai` npm client, against the example OpenAI worker
// (examples/openai-ts/worker.ts) running as a real process with the RUNPOD_* variables an executor injects.

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitUntil } from '../helpers/fleet.ts';
import { killAll, spawnProc, type Proc } from '../helpers/processes.ts';
import { createEndpoint, startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
let ep: string;
let worker: Proc;
let client: OpenAI;

/** The example OpenAI worker as a process, with the worker-protocol variables a Wharf executor injects. */
function spawnOpenAiWorker(url: string, endpointId: string, apiKey: string, podId = 'openaiworker01'): Proc {
  const base = `${url}/v2/${endpointId}`;
  return spawnProc(['examples/openai-ts/worker.ts'], {
    PATH: process.env.PATH,
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=x`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=x`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=x`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=x`,
    RUNPOD_AI_API_KEY: apiKey,
    RUNPOD_POD_ID: podId,
    RUNPOD_PING_INTERVAL: '1000',
    RUNPOD_ENDPOINT_ID: endpointId,
    WHARF_WORKER_RETRY_BASE_MS: '100',
  });
}

beforeAll(async () => {
  t = await startTestServer({ takeWaitMs: 1000, stopWaitMs: 500, streamWaitMs: 1000, leaseMs: 5000 });
  ep = await createEndpoint(t);
  worker = spawnOpenAiWorker(t.url, ep, t.key);
  // maxRetries 0: a retried request would hide what the server answered the first time.
  client = new OpenAI({ baseURL: `${t.url}/v2/${ep}/openai/v1`, apiKey: t.key, maxRetries: 0 });
});
afterAll(async () => {
  await killAll();
  await t?.close();
});

const messages = [{ role: 'user' as const, content: 'hello there' }];

describe('OpenAI-compatible routes with the official client', () => {
  it('chat completion: the worker’s chat.completion object is the answer', async () => {
    const res = await client.chat.completions.create({ model: 'wharf-echo', messages });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]?.message).toEqual({ role: 'assistant', content: 'You said: hello there' });
    expect(res.choices[0]?.finish_reason).toBe('stop');
    expect(res.usage?.completion_tokens).toBe(4);
  });

  it('streaming chat: chunks arrive as SSE events until [DONE]', async () => {
    const stream = await client.chat.completions.create({ model: 'wharf-echo', messages, stream: true });
    const deltas: string[] = [];
    const finishes: Array<string | null> = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      deltas.push(chunk.choices[0]?.delta.content ?? '');
      finishes.push(chunk.choices[0]?.finish_reason ?? null);
    }
    expect(deltas.join('')).toBe('You said: hello there');
    expect(deltas.length).toBe(6); // role chunk, 4 tokens, final chunk
    expect(finishes.at(-1)).toBe('stop');
  });

  it('completions, plain and streamed (the worker sends vLLM-style SSE text with its own [DONE])', async () => {
    const res = await client.completions.create({ model: 'wharf-echo', prompt: 'good morning' });
    expect(res.object).toBe('text_completion');
    expect(res.choices[0]?.text).toBe('You said: good morning');

    const raw = await fetch(`${t.url}/v2/${ep}/openai/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'wharf-echo', prompt: 'good morning', stream: true }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await raw.text();
    expect(text.match(/data: \[DONE\]/g)).toHaveLength(1);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);

    const stream = await client.completions.create({ model: 'wharf-echo', prompt: 'good morning', stream: true });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
    expect(streamed).toBe('You said: good morning');
  });

  it('embeddings (the client asks for base64 and decodes it)', async () => {
    const res = await client.embeddings.create({ model: 'wharf-echo', input: ['one', 'two'] });
    expect(res.data).toHaveLength(2);
    expect(res.data[0]?.embedding).toHaveLength(8);
    expect(res.data[0]?.embedding).not.toEqual(res.data[1]?.embedding);
    const floats = await client.embeddings.create({ model: 'wharf-echo', input: 'one', encoding_format: 'float' });
    expect(floats.data[0]?.embedding.map((x) => Math.round(x * 1e4))).toEqual(
      res.data[0]?.embedding.map((x) => Math.round(x * 1e4)),
    );
  });

  it('models list', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['wharf-echo']);
  });

  it('a failed job is a 502 with an OpenAI error body that the client raises, and is not retried', async () => {
    const retrying = new OpenAI({ baseURL: `${t.url}/v2/${ep}/openai/v1`, apiKey: t.key, maxRetries: 2 });
    const before = (await t.api('GET', `/v2/${ep}/requests?limit=500`)).json.requests.length as number;
    const error = await retrying.chat.completions.create({ model: 'fail', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(502);
    expect(apiError.message).toMatch(/failed on purpose/);
    expect(apiError.code).toBe('OPENAI_JOB_FAILED');
    // x-should-retry: false kept the client from running the failing job twice more.
    const after = (await t.api('GET', `/v2/${ep}/requests?limit=500`)).json.requests.length as number;
    expect(after - before).toBe(1);
  });

  it('a job that fails while streaming ends the stream with an error event, which the client raises', async () => {
    const stream = await client.chat.completions.create({ model: 'fail', messages, stream: true });
    const error = await (async () => {
      for await (const _chunk of stream) {
        // nothing arrives before the error
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/failed on purpose/);
  });

  it('a streamed request whose job completes without streaming: its error output or no output is an error', async () => {
    const drain = async (model: string): Promise<unknown> => {
      const stream = await client.chat.completions.create({ model, messages, stream: true });
      const chunks: unknown[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    };
    // vLLM's error object as the output: raised with its message, as without streaming (404 there).
    const missing = await drain('missing').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.APIError);
    expect((missing as Error).message).toMatch(/does not exist/);
    await expect(client.chat.completions.create({ model: 'missing', messages })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    // A whole answer (the worker does not stream): one chunk whose delta carries the message.
    const whole = (await drain('unstreamed')) as Array<{
      object: string;
      choices: Array<{ delta: { content?: string } }>;
    }>;
    expect(whole).toHaveLength(1);
    expect(whole[0]!.object).toBe('chat.completion.chunk');
    expect(whole[0]!.choices[0]!.delta.content).toBeTruthy();
    // A whole answer with a tool call, read by the client's stream helper, which needs each tool call's `index`.
    const runner = client.chat.completions.stream({
      model: 'unstreamed',
      messages,
      tools: [{ type: 'function', function: { name: 'echo', parameters: { type: 'object' } } }],
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: 'echo', arguments: '{"text":"hello there"}' },
    });
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    // No output at all: an error, not an empty success.
    const silent = await drain('silent').catch((e: unknown) => e);
    expect(silent).toBeInstanceOf(OpenAI.APIError);
    expect((silent as Error).message).toMatch(/without output/);
  });

  it('vLLM’s error object streamed as a chunk (how the vLLM worker refuses a bad streamed request) is raised', async () => {
    const stream = await client.chat.completions.create({ model: 'invalid', messages, stream: true });
    const chunks: unknown[] = [];
    const error = await (async () => {
      for await (const chunk of stream) chunks.push(chunk);
    })().catch((e: unknown) => e);
    // Not handed to the caller as a chat.completion.chunk without choices.
    expect(chunks).toEqual([]);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/max_tokens must be at least 1/);
    await expect(client.chat.completions.create({ model: 'invalid', messages })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
  });

  it('a bad key is an AuthenticationError, an unknown endpoint a NotFoundError', async () => {
    const badKey = new OpenAI({ baseURL: `${t.url}/v2/${ep}/openai/v1`, apiKey: 'nope', maxRetries: 0 });
    await expect(badKey.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const nowhere = new OpenAI({ baseURL: `${t.url}/v2/nosuchendpoint/openai/v1`, apiKey: t.key, maxRetries: 0 });
    await expect(nowhere.chat.completions.create({ model: 'm', messages })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    // A path Wharf does not serve: a 404 in OpenAI's error shape, which the client reads (its message included).
    const unserved = await client.responses.create({ model: 'wharf-echo', input: 'hi' }).catch((e: unknown) => e);
    expect(unserved).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unserved as Error).message).toMatch(/No route POST .*\/openai\/v1\/responses/);
    const raw = await fetch(`${t.url}/v2/${ep}/openai/v1/responses`, { method: 'POST' });
    expect(raw.status).toBe(401); // the key first, as on every route
  });

  it('a client that hangs up mid-stream cancels the job, and the worker is free again', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'wharf-echo',
        messages,
        stream: true,
        max_tokens: 200,
        metadata: { delay_ms: '100' },
      })
      .withResponse();
    const jobId = response.headers.get('x-wharf-job-id');
    expect(jobId).toBeTruthy();
    let received = 0;
    for await (const _chunk of stream) {
      if (++received === 3) break; // leaving the loop aborts the request
    }
    let status = '';
    await waitUntil(
      async () => {
        status = (await t.api('GET', `/v2/${ep}/status/${jobId}`)).json?.status;
        return status === 'CANCELLED';
      },
      10_000,
      () => `job ${jobId} to be CANCELLED, is ${status}`,
    );
    // The worker was told to stop: the next request is served at once, not after 200 tokens × 100 ms.
    const started = Date.now();
    const res = await client.chat.completions.create({ model: 'wharf-echo', messages });
    expect(res.choices[0]?.message.content).toBe('You said: hello there');
    expect(Date.now() - started).toBeLessThan(8000);
    expect(worker.alive()).toBe(true);
  });

  // Last: it kills the worker.
  it('a worker lost mid-stream ends the stream with an error, not with a rerun of the answer after its start', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'wharf-echo', messages, stream: true, max_tokens: 40, metadata: { delay_ms: '100' } })
      .withResponse();
    const jobId = response.headers.get('x-wharf-job-id');
    let text = '';
    let killed = false;
    const read = (async () => {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        // The worker dies after part of the answer; another takes the job once the lease (5 s) runs out.
        if (text.includes('more2') && !killed) {
          killed = true;
          await worker.kill('SIGKILL');
          worker = spawnOpenAiWorker(t.url, ep, t.key, 'openaiworker02');
        }
      }
    })().catch((e: unknown) => e);
    const error = await read;
    expect(text.match(/You said/g)).toHaveLength(1);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/lost/);
    // Nobody reads the rerun: the job is cancelled, not left to run for nothing.
    expect((await t.api('GET', `/v2/${ep}/status/${jobId}`)).json.status).toBe('CANCELLED');
  }, 30_000);
});
