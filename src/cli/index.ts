export { startServer, type StartOptions, type WharfServer } from './server.ts';
export { ensureExamples, EXAMPLES } from './examples.ts';
