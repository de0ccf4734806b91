import type { WharfError } from '../../errors/index.ts';

/**
 * Turning worker output into what OpenAI clients read (docs/openai.md): SSE events for streams, the
 * `{"error": {message, type, code}}` body for errors.
 */

/** The OpenAI error `type` for a status, as the official clients classify them. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 502) return 'upstream_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The OpenAI error body for a Wharf error; `code` is the Wharf catalogue code. */
export function openAiErrorBody(error: WharfError): string {
  return JSON.stringify({
    error: { message: error.message, type: openAiErrorType(error.status), param: null, code: error.code },
  });
}

/**
 * One stored stream chunk (`{"output": …}` JSON text) as SSE text. The output is an SSE string already (what the
 * vLLM worker yields: `data: {...}\n\n`, possibly several events), an object (sent as `data: <json>`), or a list of
 * either. Returns '' for a chunk without output.
 */
export function sseOfChunk(chunkJson: string): string {
  let chunk: unknown;
  try {
    chunk = JSON.parse(chunkJson);
  } catch {
    return '';
  }
  if (typeof chunk !== 'object' || chunk === null || !('output' in chunk)) return '';
  return sseOf(chunk.output);
}

function sseOf(output: unknown): string {
  if (output === null || output === undefined) return '';
  if (Array.isArray(output)) return output.map(sseOf).join('');
  if (typeof output === 'string') {
    if (output === '') return '';
    // An event ends with a blank line; a worker that forgot it must not glue two events together.
    return output.endsWith('\n\n') ? output : output.endsWith('\n') ? `${output}\n` : `${output}\n\n`;
  }
  // vLLM's error object, which the vLLM worker yields as a chunk for a request vLLM refuses: an error event, which
  // the OpenAI clients raise (passed on as it is, they would hand it to the caller as a chunk without `choices`).
  const error = vllmErrorOf(output);
  if (error) return `data: ${error.body}\n\n`;
  return `data: ${JSON.stringify(output)}\n\n`;
}

/**
 * The output of a job that completed without streaming, as the events a streaming client reads: SSE text or a list
 * as chunks are; a `chat.completion` becomes one `chat.completion.chunk` whose `delta` is the message (clients read
 * `choices[].delta`). A one-element list is unwrapped first, as for a non-streaming answer.
 */
export function sseOfFinalOutput(outputJson: string): string {
  let out: unknown = JSON.parse(outputJson);
  if (Array.isArray(out) && out.length === 1 && typeof out[0] === 'object' && out[0] !== null) out = out[0];
  if (isChatCompletion(out)) {
    out = {
      ...out,
      object: 'chat.completion.chunk',
      choices: out.choices.map((c) => ({
        index: c.index ?? 0,
        delta: deltaOf(c.message),
        logprobs: c.logprobs ?? null,
        finish_reason: c.finish_reason ?? null,
      })),
    };
  }
  return sseOf(out);
}

type ChatChoice = { index?: number; message?: unknown; logprobs?: unknown; finish_reason?: unknown };

/**
 * A whole message as a chunk's `delta`. A delta's tool calls carry their position (`index`), which a message's do not:
 * the clients build the calls up by it (the openai stream helpers throw on a tool call without one).
 */
function deltaOf(message: unknown): unknown {
  if (typeof message !== 'object' || message === null) return {};
  const toolCalls = (message as { tool_calls?: unknown }).tool_calls;
  if (!Array.isArray(toolCalls)) return message;
  return {
    ...message,
    tool_calls: toolCalls.map((call: unknown, index) =>
      typeof call === 'object' && call !== null ? { index, ...call } : call,
    ),
  };
}

function isChatCompletion(v: unknown): v is { object: 'chat.completion'; choices: ChatChoice[] } {
  return (
    typeof v === 'object' &&
    v !== null &&
    (v as { object?: unknown }).object === 'chat.completion' &&
    Array.isArray((v as { choices?: unknown }).choices)
  );
}

export const SSE_DONE = 'data: [DONE]\n\n';

/** Whether SSE text already carries the end marker (vLLM workers send it themselves). */
export function hasDone(sse: string): boolean {
  return /(^|\n)data: ?\[DONE\]/.test(sse);
}

/**
 * A completed job's output as an HTTP answer: a one-element list is unwrapped (vLLM workers answer `[obj]` through
 * the SDK's aggregated stream); vLLM's own error object (flat or nested: vllmErrorOf) keeps its status.
 */
export function answerOf(outputJson: string): { status: number; body: string } | null {
  let out: unknown = JSON.parse(outputJson);
  if (Array.isArray(out) && out.length === 1) out = out[0];
  if (out === null || out === undefined) return null;
  return vllmErrorOf(out) ?? { status: 200, body: JSON.stringify(out) };
}

/**
 * vLLM's own error response as the OpenAI error body with its status; null for anything else. Older vLLM writes it
 * flat (`{"object": "error", "message", "type", "code": 400}`), newer vLLM nested (`{"error": {"message", "type",
 * "param", "code": 400}}`, the OpenAI shape itself); worker-vllm answers with either, as its vLLM has it. A nested
 * one counts only without an `object` (every success names its object) and with a `message`.
 */
function vllmErrorOf(out: unknown): { status: number; body: string } | null {
  if (typeof out !== 'object' || out === null || Array.isArray(out)) return null;
  let e: { message?: unknown; type?: unknown; param?: unknown; code?: unknown };
  const nested = (out as { error?: unknown }).error;
  if ((out as { object?: unknown }).object === 'error') {
    e = out;
  } else if (
    !('object' in out) &&
    typeof nested === 'object' &&
    nested !== null &&
    typeof (nested as { message?: unknown }).message === 'string'
  ) {
    e = nested;
  } else {
    return null;
  }
  const status = typeof e.code === 'number' && e.code >= 400 && e.code <= 599 ? e.code : 400;
  return {
    status,
    body: JSON.stringify({
      error: {
        message: typeof e.message === 'string' ? e.message : 'the worker reported an error',
        type: typeof e.type === 'string' ? e.type : openAiErrorType(status),
        param: e.param ?? null,
        code: e.code ?? null,
      },
    }),
  };
}
