import { LIMITS, type WorkerResult } from '../domain/index.ts';
import { jsonTooDeep, TOO_DEEP } from '../domain/json.ts';
import { WharfError } from '../errors/index.ts';

/**
 * What a worker posts, classified (spec/worker-protocol.md §1.10–1.13). Bodies arrive with a form-urlencoded
 * content type but hold JSON text, so they are parsed here from the raw string.
 */
export type WorkerPost = { kind: 'progress'; outputJson: string } | { kind: 'final'; result: WorkerResult };

export function parseWorkerJson(raw: string): Record<string, unknown> {
  if (jsonTooDeep(raw)) throw new WharfError('VALIDATION_FAILED', { reason: TOO_DEEP });
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new WharfError('INVALID_JSON', { reason: (error as Error).message });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WharfError(
      'VALIDATION_FAILED',
      { reason: 'the body must be a JSON object' },
      { details: [{ field: 'body', message: 'must be a JSON object' }] },
    );
  }
  return value as Record<string, unknown>;
}

/** A job-done body: progress when status is IN_PROGRESS, else final; FAILED iff `error` is truthy. */
export function classifyDone(raw: string): WorkerPost {
  const body = parseWorkerJson(raw);
  if (body['status'] === 'IN_PROGRESS') {
    return { kind: 'progress', outputJson: JSON.stringify(body['output'] ?? null) };
  }
  const failed = Boolean(body['error']);
  return {
    kind: 'final',
    result: {
      status: failed ? 'FAILED' : 'COMPLETED',
      outputJson: 'output' in body ? JSON.stringify(body['output']) : null,
      errorJson: failed ? JSON.stringify(body['error']) : null,
      stopPod: body['stopPod'] === true,
    },
  };
}

/**
 * A job-stream body becomes one or more chunks of at most 1 MB (interface §4.1 rule 3). A string output that is
 * larger is split into several chunks; any other oversized chunk is refused (it cannot be split meaningfully).
 */
export function streamChunks(raw: string): string[] {
  const body = parseWorkerJson(raw);
  if (!('output' in body)) {
    throw new WharfError(
      'VALIDATION_FAILED',
      { reason: 'a stream chunk needs an `output` member' },
      { details: [{ field: 'output', message: 'is required' }] },
    );
  }
  const text = JSON.stringify(body);
  if (Buffer.byteLength(text) <= LIMITS.streamChunkBytes) return [text];
  const output = body['output'];
  if (typeof output !== 'string') {
    throw new WharfError('PAYLOAD_TOO_LARGE', { limit: '1 MB per stream chunk' });
  }
  const { output: _drop, ...rest } = body;
  const overhead = Buffer.byteLength(JSON.stringify({ ...rest, output: '' }));
  // Worst case JSON escaping makes a character 6 bytes (\uXXXX); size pieces so every chunk stays under 1 MB.
  const piece = Math.max(1, Math.floor((LIMITS.streamChunkBytes - overhead) / 6));
  const chunks: string[] = [];
  const chars = Array.from(output);
  for (let i = 0; i < chars.length; i += piece) {
    chunks.push(JSON.stringify({ ...rest, output: chars.slice(i, i + piece).join('') }));
  }
  return chunks;
}
