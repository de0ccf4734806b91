// Pure functions that turn what a handler returned into the body of the result post. The shapes follow the Python
// SDK's `run_job` (spec 1.10) key for key, including its quirks: `{}` posts `{}`, and `error`/`refresh_worker` are
// always popped from a returned object.

export type ResultBody = Record<string, unknown>;

/** Python truthiness: a server marks a job failed iff `error` is truthy in this sense, not in JavaScript's. */
export function pyTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (typeof value === 'number' && Number.isNaN(value)) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isPlainObject(value)) return Object.keys(value).length > 0;
  return true;
}

/** Only plain objects count as Python dicts; a Date or class instance is posted as an opaque `output`. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Iterables other than arrays, strings and byte buffers are streamed (generators, async generators, custom
 * iterables); a returned Buffer is one value, not a stream of bytes.
 */
export function isStreamable(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) return false;
  return Symbol.asyncIterator in value || Symbol.iterator in value;
}

export function resultBody(returned: unknown, refreshWorker: boolean): ResultBody {
  let body: ResultBody;
  if (isPlainObject(returned)) {
    const { error, refresh_worker: refresh, ...rest } = returned;
    body = {};
    // Python removes `output` only when it is exactly `{}`.
    if (Object.keys(rest).length > 0) body.output = rest;
    if (pyTruthy(error)) body.error = error;
    if (pyTruthy(refresh)) body.stopPod = true;
  } else {
    // `undefined` is what a handler that returns nothing gives; Python's None posts `{"output": null}`.
    body = { output: returned === undefined ? null : returned };
  }
  if (refreshWorker) body.stopPod = true;
  return body;
}

export function errorBody(error: unknown, refreshWorker: boolean): ResultBody {
  return refreshWorker ? { error, stopPod: true } : { error };
}

/** The final post of a streaming handler: aggregated chunks, or `[]` (Python still posts it). */
export function streamFinalBody(chunks: readonly unknown[], aggregate: boolean, refreshWorker: boolean): ResultBody {
  const body: ResultBody = { output: aggregate ? chunks : [] };
  if (refreshWorker) body.stopPod = true;
  return body;
}

/** A streamed chunk that is an object with a truthy `error` ends the stream with that error (spec 1.13). */
export function chunkError(chunk: unknown): { error: unknown } | undefined {
  if (isPlainObject(chunk) && pyTruthy(chunk.error)) return { error: chunk.error };
  return undefined;
}

/** JSON text for a body; values JSON cannot encode (BigInt, cycles) become an error the server can show. */
export function encodeBody(body: ResultBody): string {
  try {
    return JSON.stringify(body);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return JSON.stringify({ error: `handler output is not JSON-serialisable: ${message}` });
  }
}
