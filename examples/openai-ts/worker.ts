// Example OpenAI-shaped Wharf worker in TypeScript: what Wharf's /v2/{endpointId}/openai/v1/* routes talk to
// (docs/openai.md). It takes jobs of the form the vLLM worker understands,
//
//   { "openai_route": "/v1/chat/completions", "openai_input": { "model": …, "messages": [...], "stream": true } }
//
// and answers like an OpenAI server, without a model: the "assistant" repeats the last user message back, word by
// word. Streams yield chat.completion.chunk objects (chat) or SSE text as the vLLM worker sends it (completions).
//
// Test knobs: `metadata.delay_ms` waits that long before each streamed token; `model: "fail"` throws; `"missing"`,
// `"invalid"`, `"silent"` and `"unstreamed"` answer as described in the handler.

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { start } from '../../src/sdk/worker/index.ts';
import type { HandlerContext, Job } from '../../src/sdk/worker/index.ts';

/** The fields of an OpenAI request this worker reads; the rest is ignored. */
interface OpenAiRequest {
  model?: string;
  messages?: Array<{ role: string; content: unknown }>;
  prompt?: string | string[];
  input?: string | string[];
  stream?: boolean;
  max_tokens?: number;
  max_completion_tokens?: number;
  encoding_format?: 'float' | 'base64';
  tools?: Array<{ type: string; function?: { name: string } }>;
  metadata?: Record<string, string>;
}

interface OpenAiJob {
  openai_route: string;
  openai_input: OpenAiRequest;
}

const MODEL = 'wharf-echo';
const now = (): number => Math.floor(Date.now() / 1000);

/** The reply, as "tokens" (words with their leading space): "You said: <the last user message>". */
function replyTokens(text: string, maxTokens: number | undefined): string[] {
  const words = `You said: ${text}`.split(' ');
  const tokens = words.map((w, i) => (i === 0 ? w : ` ${w}`));
  if (maxTokens === undefined || maxTokens <= tokens.length) return tokens.slice(0, maxTokens);
  // Asked for more: keep talking (the streaming tests need long answers).
  return [...tokens, ...Array.from({ length: maxTokens - tokens.length }, (_, i) => ` more${i}`)];
}

function lastUserText(messages: Array<{ role: string; content: unknown }> = []): string {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : '';
}

function usage(prompt: string, completion: string[]) {
  const promptTokens = prompt.split(/\s+/).filter(Boolean).length;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion.length,
    total_tokens: promptTokens + completion.length,
  };
}

async function* paced<T>(items: T[], delayMs: number, signal: AbortSignal): AsyncGenerator<T> {
  for (const item of items) {
    if (delayMs > 0) await sleep(delayMs, undefined, { signal });
    signal.throwIfAborted();
    yield item;
  }
}

function chat(req: OpenAiRequest, signal: AbortSignal) {
  const prompt = lastUserText(req.messages);
  const tokens = replyTokens(prompt, req.max_tokens ?? req.max_completion_tokens);
  const id = `chatcmpl-${Date.now().toString(36)}`;
  const model = req.model ?? MODEL;
  const tool = req.tools?.find((t) => t.type === 'function')?.function;
  // A whole answer (not streamed): one choice with `message`.
  const whole = (message: Record<string, unknown>, finishReason: string, completion: string[]) => ({
    id,
    object: 'chat.completion',
    created: now(),
    model,
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    usage: usage(prompt, completion),
  });
  if (!req.stream && tool) {
    // Given functions (answered whole only): it calls the first with the message as its argument.
    const call = {
      id: `call-${id}`,
      type: 'function',
      function: { name: tool.name, arguments: JSON.stringify({ text: prompt }) },
    };
    return whole({ role: 'assistant', content: null, tool_calls: [call] }, 'tool_calls', []);
  }
  if (!req.stream) return whole({ role: 'assistant', content: tokens.join('') }, 'stop', tokens);
  const chunk = (delta: Record<string, string>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created: now(),
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  const chunks = [
    chunk({ role: 'assistant', content: '' }, null),
    ...tokens.map((t) => chunk({ content: t }, null)),
    chunk({}, 'stop'),
  ];
  return paced(chunks, Number(req.metadata?.delay_ms ?? 0), signal);
}

function completion(req: OpenAiRequest, signal: AbortSignal) {
  const prompt = Array.isArray(req.prompt) ? String(req.prompt[0] ?? '') : String(req.prompt ?? '');
  const tokens = replyTokens(prompt, req.max_tokens);
  const id = `cmpl-${Date.now().toString(36)}`;
  const model = req.model ?? MODEL;
  const body = (text: string, finish: string | null) => ({
    id,
    object: 'text_completion',
    created: now(),
    model,
    choices: [{ index: 0, text, finish_reason: finish, logprobs: null }],
  });
  if (!req.stream) return { ...body(tokens.join(''), 'stop'), usage: usage(prompt, tokens) };
  // As the vLLM worker streams: SSE text, the end marker included.
  const events = [...tokens.map((t) => body(t, null)), body('', 'stop')].map((c) => `data: ${JSON.stringify(c)}\n\n`);
  return paced([...events, 'data: [DONE]\n\n'], Number(req.metadata?.delay_ms ?? 0), signal);
}

/** A deterministic 8-dimensional "embedding" of a text (a hash), as floats or base64 float32 (the SDK's default). */
function embeddings(req: OpenAiRequest) {
  const inputs = Array.isArray(req.input) ? req.input.map(String) : [String(req.input ?? '')];
  const data = inputs.map((text, index) => {
    const digest = createHash('sha256').update(text).digest();
    const vector = Array.from({ length: 8 }, (_, i) => (digest[i]! - 128) / 128);
    const embedding =
      req.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = inputs.join(' ').split(/\s+/).filter(Boolean).length;
  return { object: 'list', data, model: req.model ?? MODEL, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

async function handler(job: Job<OpenAiJob>, ctx: HandlerContext) {
  const { openai_route: route, openai_input: req = {} } = job.input;
  if (req.model === 'fail') throw new Error('model "fail" failed on purpose');
  // What the vLLM worker answers for a model it does not serve: its error object as the output, not an exception.
  if (req.model === 'missing') {
    return { object: 'error', message: 'The model `missing` does not exist.', type: 'NotFoundError', code: 404 };
  }
  // What the vLLM worker does with a request vLLM refuses (a bad parameter): its handler is a generator, so even a
  // streamed request gets the error object as a stream chunk, not SSE text.
  if (req.model === 'invalid') {
    const error = { object: 'error', message: 'max_tokens must be at least 1', type: 'BadRequestError', code: 400 };
    return req.stream ? paced([error], 0, ctx.signal) : error;
  }
  if (req.model === 'silent') return null;
  // A worker that never streams: its whole answer, even when the request asked for a stream.
  if (req.model === 'unstreamed' && route === '/v1/chat/completions')
    return chat({ ...req, stream: false }, ctx.signal);
  switch (route) {
    case '/v1/models':
      return { object: 'list', data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'wharf' }] };
    case '/v1/chat/completions':
      return chat(req, ctx.signal);
    case '/v1/completions':
      return completion(req, ctx.signal);
    case '/v1/embeddings':
      return embeddings(req);
    default:
      throw new Error(`unsupported OpenAI route ${String(route)}`);
  }
}

start({ handler });
