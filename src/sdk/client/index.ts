// Wharf's TypeScript client: the queue API (/v2), the management API (/v1) and GraphQL, over fetch only, so the
// same module runs in Node, other runtimes and browsers.
//
//   import { WharfClient } from './src/sdk/client/index.ts';
//   const wharf = new WharfClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.WHARF_API_KEY! });
//   const job = await wharf.endpoint('my-endpoint').runSync<{ prompt: string }, { text: string }>({ prompt: 'hi' });
//   if (job.status === 'COMPLETED') console.log(job.output?.text);

export { WharfClient, type CallOptions, type GraphqlError } from './client.ts';
export {
  EndpointClient,
  toSubmission,
  type RequestsQuery,
  type RunSyncOptions,
  type StatusOptions,
  type StatusSyncOptions,
  type StreamEnd,
  type StreamOptions,
} from './endpoint.ts';
export { CLIENT_ERROR_CODES, WharfApiError, isWharfApiError, type WharfApiErrorInit } from './errors.ts';
export { CLIENT_VERSION, Transport, backoffMs, parseRetryAfter, type ClientOptions, type RetryClass } from './http.ts';
export * from './types.ts';
