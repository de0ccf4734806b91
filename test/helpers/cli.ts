// The `wharf` CLI as a real child process (Node 24 from the devDependencies running src/cli/main.ts), with an
// environment the test controls completely: HOME points at a temporary directory so no real login file is read.

import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { NODE, ROOT } from './processes.ts';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws with the output when it is not). */
  json(): any;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed (stdin is always closed: the CLI never waits on a terminal). */
  input?: string;
  timeoutMs?: number;
  /** Close the reading end of stdout at once, as `wharf … | head -1` does once head has its line. */
  closeStdout?: boolean;
}

/** A fresh HOME for one test file: the login file lands in <home>/.config/wharf/config.json. */
export const tempHome = (): string => mkdtempSync(join(tmpdir(), 'wharf-cli-home-'));

export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ PATH: process.env.PATH, ...opts.env })) if (v !== undefined) env[k] = v;
  const child = spawn(NODE, ['src/cli/main.ts', ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  // The child needs far longer to start than this takes: its first write finds the pipe closed (EPIPE).
  if (opts.closeStdout) child.stdout.destroy();
  else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(opts.input ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`wharf ${args.join(' ')} did not exit:\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr,
        json: () => {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`wharf ${args.join(' ')}: stdout is not JSON:\n${stdout}\nstderr:\n${stderr}`);
          }
        },
      });
    });
  });
}

/** A runner bound to a server and key through WHARF_URL / WHARF_API_KEY, with its own HOME. */
export function cliFor(url: string, key: string, home = tempHome()) {
  return (args: readonly string[], opts: CliOptions = {}) =>
    runCli(args, { ...opts, env: { HOME: home, WHARF_URL: url, WHARF_API_KEY: key, ...opts.env } });
}
