import { describe, expect, it } from 'vitest';

import { WharfError } from '../../src/errors/index.ts';
import { answerOf, hasDone, openAiErrorBody, sseOfChunk, sseOfFinalOutput } from '../../src/http/openai/sse.ts';

describe('OpenAI route: worker output to HTTP', () => {
  it('unwraps the one-element list vLLM workers answer with; passes anything else through', () => {
    expect(answerOf('[{"object":"chat.completion"}]')).toEqual({ status: 200, body: '{"object":"chat.completion"}' });
    expect(answerOf('{"object":"list","data":[]}')).toEqual({ status: 200, body: '{"object":"list","data":[]}' });
    expect(answerOf('[1,2]')).toEqual({ status: 200, body: '[1,2]' });
    expect(answerOf('null')).toBeNull();
    expect(answerOf('[]')).toEqual({ status: 200, body: '[]' });
  });

  it("keeps the status of vLLM's own error object", () => {
    const res = answerOf('[{"object":"error","message":"bad model","type":"NotFoundError","param":null,"code":404}]');
    expect(res?.status).toBe(404);
    expect(JSON.parse(res!.body)).toEqual({
      error: { message: 'bad model', type: 'NotFoundError', param: null, code: 404 },
    });
    expect(answerOf('{"object":"error","message":"x"}')?.status).toBe(400);
  });

  it("keeps the status of newer vLLM's error response, {error: {message, type, param, code}}", () => {
    // vLLM's ErrorResponse became {"error": ErrorInfo}; worker-vllm yields its model_dump() as the output.
    const res = answerOf(
      '[{"error":{"message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}}]',
    );
    expect(res?.status).toBe(400);
    expect(JSON.parse(res!.body)).toEqual({
      error: { message: 'max_tokens must be at least 1', type: 'BadRequestError', param: null, code: 400 },
    });
    expect(answerOf('{"error":{"message":"engine dead","type":"InternalServerError","code":500}}')?.status).toBe(500);
    // As a stream chunk: the same error event.
    expect(sseOfChunk('{"output":{"error":{"message":"m","type":"T","param":null,"code":404}}}')).toBe(
      'data: {"error":{"message":"m","type":"T","param":null,"code":404}}\n\n',
    );
    // A successful answer is never taken for one: it names its object, and an error needs a message.
    expect(answerOf('{"object":"chat.completion","choices":[],"error":{"message":"x"}}')?.status).toBe(200);
    expect(answerOf('{"error":{"code":500}}')?.status).toBe(200);
    expect(answerOf('{"error":"text"}')?.status).toBe(200);
  });

  it('a job that completed without streaming: its chat.completion as one chunk with a delta, SSE text as it is', () => {
    const completion = {
      id: 'c1',
      object: 'chat.completion',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    };
    const [event] = sseOfFinalOutput(JSON.stringify([completion])).split('\n\n');
    expect(JSON.parse(event!.replace(/^data: /, ''))).toEqual({
      id: 'c1',
      object: 'chat.completion.chunk',
      model: 'm',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, logprobs: null, finish_reason: 'stop' }],
    });
    // Tool calls get the `index` a delta's carry.
    const call = { id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const withTool = {
      ...completion,
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] } }],
    };
    const [toolEvent] = sseOfFinalOutput(JSON.stringify(withTool)).split('\n\n');
    expect(JSON.parse(toolEvent!.replace(/^data: /, '')).choices[0].delta.tool_calls).toEqual([{ index: 0, ...call }]);
    // Aggregated SSE text (a list of strings) is sent as the chunks would have been, not JSON-quoted.
    expect(sseOfFinalOutput('["data: {\\"a\\":1}\\n\\n","data: [DONE]\\n\\n"]')).toBe(
      'data: {"a":1}\n\ndata: [DONE]\n\n',
    );
    expect(sseOfFinalOutput('{"object":"text_completion","choices":[{"text":"x"}]}')).toBe(
      'data: {"object":"text_completion","choices":[{"text":"x"}]}\n\n',
    );
  });

  it('turns stream chunks into SSE: strings as they are, objects as data lines, lists of either', () => {
    expect(sseOfChunk('{"output":"data: {\\"a\\":1}\\n\\n"}')).toBe('data: {"a":1}\n\n');
    expect(sseOfChunk('{"output":"data: {\\"a\\":1}"}')).toBe('data: {"a":1}\n\n');
    expect(sseOfChunk('{"output":{"a":1}}')).toBe('data: {"a":1}\n\n');
    expect(sseOfChunk('{"output":[{"a":1},"data: [DONE]\\n\\n"]}')).toBe('data: {"a":1}\n\ndata: [DONE]\n\n');
    // vLLM's error object, as the vLLM worker streams it: an error event the clients raise.
    expect(sseOfChunk('{"output":{"object":"error","message":"bad","type":"BadRequestError","code":400}}')).toBe(
      'data: {"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}\n\n',
    );
    expect(sseOfChunk('{"metrics":{}}')).toBe('');
    expect(sseOfChunk('not json')).toBe('');
    expect(hasDone('data: {"a":1}\n\ndata: [DONE]\n\n')).toBe(true);
    expect(hasDone('data: {"text":"data: [DONE] inside"}\n\n')).toBe(false);
  });

  it('answers errors in the OpenAI shape with the Wharf code', () => {
    const body = JSON.parse(openAiErrorBody(new WharfError('UNAUTHORIZED')));
    expect(body).toEqual({
      error: { message: 'Missing or invalid API key', type: 'authentication_error', param: null, code: 'UNAUTHORIZED' },
    });
  });
});
