export { startServer, type StartOptions, type WharfServer } from './server.ts';
