import { ERRORS, type ErrorCode } from './catalogue.ts';

export type ErrorParams = Record<string, string | number | boolean | undefined>;

/** An error with a catalogue code. Everything that reaches a client is one of these. */
export class WharfError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    params: ErrorParams = {},
    extra: { details?: unknown; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(formatMessage(ERRORS[code].message, params), { cause: extra.cause });
    this.name = 'WharfError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = extra.details;
    this.headers = extra.headers;
  }

  toBody(): { code: ErrorCode; message: string; details?: unknown } {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function formatMessage(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (_m, key: string) => {
    const value = params[key];
    return value === undefined ? `{${key}}` : String(value);
  });
}

/** Normalise anything thrown into an Error, keeping the original as `cause` (user code can throw anything). */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  if (typeof thrown === 'string') return new Error(thrown);
  let text: string;
  try {
    text = JSON.stringify(thrown);
  } catch {
    text = String(thrown);
  }
  return new Error(`Non-error thrown: ${text}`, { cause: thrown });
}

/** A VALIDATION_FAILED error naming the field it is about (`details: [{field, message}]`), with the reason as message. */
export function invalidField(field: string, reason: string): WharfError {
  return new WharfError('VALIDATION_FAILED', { reason }, { details: [{ field, message: reason }] });
}
