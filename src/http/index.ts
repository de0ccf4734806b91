export { buildApp, type AppOptions } from './app.ts';
export type { AppDeps } from './context.ts';
export { trackConnections } from './connections.ts';
export { parseOverrides as parseRateLimitOverrides, WINDOW_MS } from './plugins/rate-limit.ts';
export { parseCorsOrigins, type CorsOrigins } from './plugins/cors.ts';
