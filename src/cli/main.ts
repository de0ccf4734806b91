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
  // A reader that stops early (`wharf logs ep | head -1`) closes the pipe, and the next write fails with EPIPE. It
  // had what it wanted: the command ends at once and quietly, with status 0 — not Node's unhandled-error stack and
  // exit 1, nor a 141 (death by SIGPIPE) that would fail a `set -o pipefail` script over a reader that was done.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    process.stderr.write(`wharf: cannot write to stdout: ${error.message}\n`);
    process.exit(1);
  });
  // Errors go to stderr; when nobody reads that any more they are lost, but the command still ends with its status.
  process.stderr.on('error', () => {});
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
