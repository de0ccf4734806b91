// Handler code may throw anything (a string, undefined, an object); every boundary turns it into an Error first so
// the worker loop, the error report and the log line never have to guess.

import { RUNPOD_VERSION } from './env.ts';

export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  let text: string;
  if (typeof thrown === 'string') {
    text = thrown;
  } else {
    try {
      text = JSON.stringify(thrown) ?? String(thrown);
    } catch {
      text = String(thrown);
    }
  }
  return new Error(`Non-error thrown: ${text}`, { cause: thrown });
}

export interface ReportIdentity {
  hostname: string;
  workerId: string;
}

/**
 * The `error` value posted when a (non-streaming) handler throws: a JSON-encoded string with the same members the
 * Python SDK sends (spec 1.10), so a server or client that decodes it works with both SDKs.
 */
export function errorReport(thrown: unknown, who: ReportIdentity): string {
  const err = coerceError(thrown);
  return JSON.stringify({
    error_type: err.name,
    error_message: err.message,
    error_traceback: err.stack ?? `${err.name}: ${err.message}`,
    hostname: who.hostname,
    worker_id: who.workerId,
    runpod_version: RUNPOD_VERSION,
  });
}

/** A streaming handler that throws: Python posts this plain (not JSON-encoded) string (spec 1.13). */
export function streamErrorText(thrown: unknown): string {
  const err = coerceError(thrown);
  return `handler: ${err.message} \ntraceback: ${err.stack ?? `${err.name}: ${err.message}`}`;
}

/** Python converts a chunk's `error` member with str(); for non-strings JSON is the readable equivalent. */
export function errorText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
