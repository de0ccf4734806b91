// The console talks to the server only through the project's TypeScript client SDK (src/sdk/client).
import { WharfApiError, WharfClient } from '../../src/sdk/client/index.ts';

export { WharfApiError, WharfClient };

/** Long polls (logs follow: 20 s, runsync: up to the wait asked) must finish before the client gives up. */
const TIMEOUT_MS = 120_000;

export function createClient(apiKey: string): WharfClient {
  return new WharfClient({ baseUrl: window.location.origin, apiKey, timeoutMs: TIMEOUT_MS, retries: 1 });
}

/** What a person should read about a failure: the server's own message when there is one. */
export function messageOf(error: unknown): string {
  if (error instanceof WharfApiError) return error.message;
  if (error instanceof TypeError) return `Cannot reach the Wharf server (${error.message}).`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The server's error code (docs/errors.md), when the failure came from the server. */
export function codeOf(error: unknown): string | null {
  return error instanceof WharfApiError ? error.code : null;
}

export function isUnauthorized(error: unknown): boolean {
  return error instanceof WharfApiError && error.status === 401 && error.code === 'UNAUTHORIZED';
}
