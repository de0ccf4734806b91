import { readFileSync } from 'node:fs';
import { cliColorWanted, resolveCliConnection, type CliConnection } from '../config/index.ts';
import { WharfClient } from '../sdk/client/index.ts';
import { Args, GLOBAL_OPTIONS, UsageError, type OptionSpecs } from './args.ts';
import { Output, type Sink } from './output.ts';
import { Spinner } from './spinner.ts';

/** The process around a command: passed in (never read from globals) so tests can run the CLI in-process. */
export interface Io {
  env: Readonly<Record<string, string | undefined>>;
  stdout: Sink;
  stderr: Sink;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

export interface Command {
  /** "endpoint create", "run". */
  name: string;
  summary: string;
  /** Positional arguments, `<required>` or `[optional]`. */
  args?: readonly string[];
  /** What follows the name in the usage line when more than args (e.g. "--template <id> [options]"). */
  usage?: string;
  options?: OptionSpecs;
  /** More help: lines shown under the options. */
  details?: readonly string[];
  examples?: readonly string[];
  /** Runs without a server (login reads its own --url/--api-key). */
  local?: boolean;
  /** Its own --help text, for a command that takes none of the usual options (serve). */
  help?: () => string;
  /** The exit status (0 when nothing is returned). */
  run(ctx: Context): Promise<number | void>;
}

/** Everything a command needs: its arguments, the output, the client (made on first use), the spinner. */
export class Context {
  readonly args: Args;
  readonly out: Output;
  readonly io: Io;
  readonly command: Command;
  private made: WharfClient | undefined;

  constructor(command: Command, argv: readonly string[], io: Io) {
    this.command = command;
    this.io = io;
    this.args = new Args(command.name, argv, { ...command.options, ...GLOBAL_OPTIONS });
    const noColor = this.args.flag('no-color');
    this.out = new Output(io, {
      json: this.args.flag('json'),
      color: !noColor && cliColorWanted(io.stdout.isTTY === true, io.env),
      colorErr: !noColor && cliColorWanted(io.stderr.isTTY === true, io.env),
    });
  }

  /** Where to connect and with which key: --url/--api-key > WHARF_URL/WHARF_API_KEY > login file > default. */
  connection(): CliConnection {
    const url = this.args.string('url');
    const apiKey = this.args.string('api-key');
    return resolveCliConnection({ ...(url ? { url } : {}), ...(apiKey ? { apiKey } : {}) }, this.io.env);
  }

  client(): WharfClient {
    if (this.made) return this.made;
    const conn = this.connection();
    if (!conn.apiKey) {
      throw new UsageError(
        'no API key: pass --api-key, set WHARF_API_KEY or run "wharf login" (wharf serve prints the admin key)',
      );
    }
    this.made = new WharfClient({ baseUrl: conn.url, apiKey: conn.apiKey });
    return this.made;
  }

  /** Positional arguments as the command declares them. */
  positionals(): string[] {
    return this.args.expect(this.command.args ?? []);
  }

  spinner(): Spinner {
    return new Spinner(this.io.stderr, this.out.ce);
  }

  readFile(path: string): string {
    return readFileSync(path, 'utf8');
  }

  /** All of stdin (for `--input -`, `login` from a pipe). */
  async readStdin(): Promise<string> {
    let text = '';
    for await (const chunk of this.io.stdin) text += String(chunk);
    return text;
  }
}
