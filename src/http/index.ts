export { buildApp, type AppOptions } from './app.ts';
export type { AppDeps } from './context.ts';
export { WINDOW_MS } from './plugins/rate-limit.ts';
