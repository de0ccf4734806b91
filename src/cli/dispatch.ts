import { CliConfigError } from '../config/index.ts';
import { CLIENT_ERROR_CODES, isWharfApiError } from '../sdk/client/index.ts';
import { UsageError } from './args.ts';
import { groupCommands, lookup, SECTIONS } from './commands/index.ts';
import { JobWaitTimeout } from './commands/jobs.ts';
import { Context, type Io } from './context.ts';
import { commandHelp, groupHelp, mainHelp } from './help.ts';
import { Output } from './output.ts';

/** Exit statuses (docs/cli.md): success, the server refused or the job did not complete, usage error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const isHelp = (a: string | undefined): boolean => a === '--help' || a === '-h' || a === 'help';

/**
 * Run one client command to its exit status. `wharf serve` is not handled here (main.ts starts the server and the
 * process then lives on); everything else is: help, lookup, parsing, the command, and the one error line.
 */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  // Until a command has parsed its --json and --no-color, errors are plain text.
  const plain = new Output(io, { json: false, color: false, colorErr: false });
  const wantsHelp = argv.some((a) => a === '--help' || a === '-h');
  if (argv.length === 0 || (isHelp(argv[0]) && argv.length === 1)) {
    io.stdout.write(mainHelp(SECTIONS));
    return EXIT.ok;
  }
  // `wharf help endpoint create` is `wharf endpoint create --help`.
  const words = isHelp(argv[0]) ? argv.slice(1) : argv;
  const found = lookup(words);
  if (!found.command) {
    if (found.group) {
      const help = groupHelp(found.group, groupCommands(found.group));
      if (wantsHelp || isHelp(argv[0]) || isHelp(found.word)) {
        io.stdout.write(help);
        return EXIT.ok;
      }
      if (found.word === '') {
        io.stderr.write(help);
        return EXIT.usage;
      }
      plain.error(`unknown command "${found.group} ${found.word}" (see "wharf ${found.group} --help")`);
      return EXIT.usage;
    }
    plain.error(`unknown command "${found.word}" (see "wharf --help")`);
    return EXIT.usage;
  }
  const command = found.command;
  if (wantsHelp || isHelp(argv[0])) {
    io.stdout.write(command.help?.() ?? commandHelp(command));
    return EXIT.ok;
  }

  let out = plain;
  try {
    const ctx = new Context(command, found.rest, io);
    out = ctx.out;
    ctx.positionals();
    return (await command.run(ctx)) ?? EXIT.ok;
  } catch (error) {
    return report(out, error);
  }
}

/** One line for every failure, and the exit status that goes with it. */
export function report(out: Output, error: unknown): number {
  if (error instanceof UsageError) {
    // Point at the command's help when the mistake is in how it was called (not for a missing key).
    out.error(`${error.message}${error.command ? ` (see "wharf ${error.command} --help")` : ''}`);
    return EXIT.usage;
  }
  if (error instanceof CliConfigError) {
    out.error(error.message);
    return EXIT.usage;
  }
  if (isWharfApiError(error)) {
    let message = error.message;
    if (error.code === CLIENT_ERROR_CODES.network) {
      // "GET /v1/endpoints: fetch failed" says little; the cause says why (ECONNREFUSED, ENOTFOUND…).
      const cause = (error.cause as { cause?: { message?: string } } | undefined)?.cause?.message;
      if (cause) message = `${message} (${cause})`;
    }
    out.error(message.replace(/\s*\n\s*/g, ' '), error.code);
    return EXIT.failed;
  }
  if (error instanceof JobWaitTimeout) {
    out.error(error.message);
    return EXIT.failed;
  }
  const e = error as Error;
  out.error(e?.message ?? String(error));
  return EXIT.failed;
}
