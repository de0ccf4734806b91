export { buildApp, type AppOptions } from './app.ts';
export type { AppDeps } from './context.ts';
