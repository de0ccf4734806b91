#!/usr/bin/env node
import { ConfigError, loadConfig } from '../config/index.ts';
import { fileURLToPath } from 'node:url';
import { ensureExamples, EXAMPLES } from './examples.ts';
import { startServer } from './server.ts';

const HELP = `wharf — self-hosted serverless compute

Usage:
  wharf serve [--port 8000] [--host 127.0.0.1] [--data-dir ./.wharf] [--examples] ...
  wharf help

Run "wharf serve --help" for every server flag.`;

async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help')) {
    const { SETTINGS } = await import('../config/index.ts');
    const lines = SETTINGS.map(
      (s) => `  ${s.flag.padEnd(28)} ${s.env.padEnd(30)} ${s.doc} (default ${JSON.stringify(s.default)})`,
    );
    process.stdout.write(
      `wharf serve — run the server in the foreground\n\nFlags and environment variables:\n${lines.join('\n')}\n`,
    );
    return;
  }
  let config;
  try {
    config = loadConfig({ argv });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`wharf: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const server = await startServer(config);
  if (server.generatedAdminKey) {
    process.stdout.write(
      `\nAdmin API key (shown once, also saved to ${config.dataDir}/admin-key with mode 0600):\n  ${server.generatedAdminKey}\n\n`,
    );
  }
  if (config.examples) {
    const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
    await ensureExamples(server, repoRoot);
    const list = EXAMPLES.map((e) => `  ${e.name.padEnd(12)} ${server.url}/v2/${e.endpointId}`).join('\n');
    process.stdout.write(`Example endpoints:\n${list}\n`);
  }
  process.stdout.write(`wharf listening on ${server.url}  (queue API ${server.url}/v2, REST ${server.url}/v1)\n`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`wharf: ${signal} received, shutting down\n`);
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`wharf: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(): Promise<void> {
  const [command = 'help', ...rest] = process.argv.slice(2);
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${HELP}\n`);
      return;
    default:
      process.stderr.write(`wharf: unknown command ${command}\n${HELP}\n`);
      process.exit(2);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`wharf: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
