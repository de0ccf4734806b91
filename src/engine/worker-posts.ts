import { LIMITS, type WorkerResult } from '../domain/index.ts';
import { compactJson, jsonTooDeep, members, nonFiniteAsNull, TOO_DEEP } from '../domain/json.ts';
import { WharfError } from '../errors/index.ts';

/**
 * What a worker posts, classified (spec/worker-protocol.md §1.10–1.13). Bodies arrive with a form-urlencoded
 * content type but hold JSON text, so they are parsed here from the raw string.
 */
export type WorkerPost = { kind: 'progress'; outputJson: string } | { kind: 'final'; result: WorkerResult };

/**
 * A worker's JSON body: `body` for reading its members, `text` the JSON text it was parsed from (NaN and Infinity
 * written as null), for storing members as the worker wrote them (domain/json.ts members).
 */
export function parseWorkerJson(raw: string): { body: Record<string, unknown>; text: string } {
  if (jsonTooDeep(raw)) throw new WharfError('VALIDATION_FAILED', { reason: TOO_DEEP });
  let text = raw;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const fixed = nonFiniteAsNull(raw);
    if (fixed === null) throw new WharfError('INVALID_JSON', { reason: (error as Error).message });
    try {
      value = JSON.parse(fixed);
      text = fixed;
    } catch {
      throw new WharfError('INVALID_JSON', { reason: (error as Error).message });
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WharfError(
      'VALIDATION_FAILED',
      { reason: 'the body must be a JSON object' },
      { details: [{ field: 'body', message: 'must be a JSON object' }] },
    );
  }
  return { body: value as Record<string, unknown>, text };
}

/** A job-done body: progress when status is IN_PROGRESS, else final; FAILED iff `error` is truthy. */
export function classifyDone(raw: string): WorkerPost {
  const { body, text } = parseWorkerJson(raw);
  // Output and error as the worker wrote them, from one scan of the body.
  const sent = members(text);
  if (body['status'] === 'IN_PROGRESS') {
    return { kind: 'progress', outputJson: sent.get('output') ?? 'null' };
  }
  const failed = Boolean(body['error']);
  return {
    kind: 'final',
    result: {
      status: failed ? 'FAILED' : 'COMPLETED',
      outputJson: 'output' in body ? (sent.get('output') ?? 'null') : null,
      errorJson: failed ? (sent.get('error') ?? 'null') : null,
      stopPod: body['stopPod'] === true,
    },
  };
}

/**
 * A job-stream body becomes one or more chunks of at most 1 MB (interface §4.1 rule 3). A string output that is
 * larger is split into several chunks; any other oversized chunk is refused (it cannot be split meaningfully).
 */
export function streamChunks(raw: string): string[] {
  const { body, text: sent } = parseWorkerJson(raw);
  if (!('output' in body)) {
    throw new WharfError(
      'VALIDATION_FAILED',
      { reason: 'a stream chunk needs an `output` member' },
      { details: [{ field: 'output', message: 'is required' }] },
    );
  }
  // Kept as the worker wrote it (its numbers as sent); measured, and when large stored, without the white space
  // Python's json.dumps puts between tokens.
  let text = sent.trim();
  if (Buffer.byteLength(text) > LIMITS.streamChunkBytes) text = compactJson(text);
  if (Buffer.byteLength(text) <= LIMITS.streamChunkBytes) return [text];
  const output = body['output'];
  const tooLarge = new WharfError('PAYLOAD_TOO_LARGE', { limit: '1 MB per stream chunk' });
  if (typeof output !== 'string') throw tooLarge;
  // Every piece carries the body's other members, as the worker wrote them.
  let rest = '';
  for (const [name, value] of members(text)) if (name !== 'output') rest += `${JSON.stringify(name)}:${value},`;
  const chunk = (piece: string): string => `{${rest}"output":${JSON.stringify(piece)}}`;
  // The other members take at most half a chunk, so that the pieces, each carrying them, store at most about twice
  // what was posted.
  const room = LIMITS.streamChunkBytes - Buffer.byteLength(chunk(''));
  if (room < LIMITS.streamChunkBytes / 2) throw tooLarge;
  // Pieces sized by the output's bytes per character once escaped, halved while one comes out over the limit
  // (escaping is not spread evenly: a run of control characters takes 6 bytes each).
  const chars = Array.from(output);
  const perChar = Math.max(1, Buffer.byteLength(JSON.stringify(output)) / chars.length);
  const chunks: string[] = [];
  for (let i = 0; i < chars.length;) {
    let n = Math.max(1, Math.floor(room / perChar));
    let piece = chunk(chars.slice(i, i + n).join(''));
    while (Buffer.byteLength(piece) > LIMITS.streamChunkBytes && n > 1) {
      n = Math.ceil(n / 2);
      piece = chunk(chars.slice(i, i + n).join(''));
    }
    chunks.push(piece);
    i += n;
  }
  return chunks;
}
