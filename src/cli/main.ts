#!/usr/bin/env node
// The `wharf` command: `wharf serve` runs the server; every other command is a client of a running server
// (src/cli/commands/*, through the TypeScript client SDK). Exit status: 0 ok, 1 failure, 2 usage error.
import { runCli } from './dispatch.ts';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'serve') {
    // Loaded on demand: client commands start without the server's modules.
    const { serve } = await import('./commands/serve.ts');
    return serve(argv.slice(1));
  }
  process.exitCode = await runCli(argv, {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`wharf: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
