// Help, dispatch and usage errors of the `wharf` CLI, in-process (runCli with a captured stdout/stderr): every
// command answers --help; every mistake is one line and exit 2, found before any request is sent (the URL below
// is unreachable: a request would fail with exit 1). test/e2e/cli.test.ts runs the real process.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { COMMANDS, SECTIONS } from '../../src/cli/commands/index.ts';
import { runCli } from '../../src/cli/dispatch.ts';

async function run(argv: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env,
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from([]),
  });
  return { code, stdout, stderr };
}

describe('wharf --help', () => {
  it.each([...COMMANDS.keys()].filter((n) => n !== 'serve'))('wharf %s --help', async (name) => {
    const res = await run([...name.split(' '), '--help']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toMatch(new RegExp(`^wharf ${name} — .+\\n\\nUsage:\\n  wharf ${name}`));
    expect(res.stdout).toContain('Global options:');
    // -h and `wharf help <command>` are the same.
    expect((await run([...name.split(' '), '-h'])).stdout).toBe(res.stdout);
    expect((await run(['help', ...name.split(' ')])).stdout).toBe(res.stdout);
  });

  it('wharf help serve is wharf serve --help: the server settings, --config among them, no client options', async () => {
    const res = await run(['help', 'serve']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toMatch(/^wharf serve — /);
    expect(res.stdout).toMatch(/--config <file> +WHARF_CONFIG +JSON config file/);
    expect(res.stdout).toContain('--port');
    for (const option of ['--json', '--no-color', '--api-key', '--url']) expect(res.stdout).not.toContain(option);
    expect((await run(['serve', '--help'])).stdout).toBe(res.stdout);
  });

  it('documents every option of every command', async () => {
    for (const command of COMMANDS.values()) {
      if (command.name === 'serve') continue;
      const { stdout } = await run([...command.name.split(' '), '--help']);
      for (const option of Object.keys(command.options ?? {})) expect(stdout).toContain(`--${option}`);
    }
  });

  it('lists every command in the main help, with the exit statuses and the connection precedence', async () => {
    const { code, stdout } = await run([]);
    expect(code).toBe(0);
    for (const section of SECTIONS) expect(stdout).toContain(`${section.title}:`);
    for (const name of COMMANDS.keys()) expect(stdout).toContain(`  ${name}`);
    expect(stdout).toContain('Exit status: 0 success; 1 the server refused the request or the job did not complete');
    expect(stdout).toContain('WHARF_URL/WHARF_API_KEY');
  });

  it('accepts the plural and short forms people type', async () => {
    for (const argv of [
      ['endpoints', 'ls'],
      ['ep', 'list'],
      ['templates', 'list'],
      ['key', 'list'],
      ['volumes', 'show', 'x'],
      ['secrets', 'ls'],
      ['secrets', 'rm', 'x'],
    ]) {
      const res = await run([...argv, '--help']);
      expect({ argv, code: res.code }).toEqual({ argv, code: 0 });
    }
    expect((await run(['endpoints', 'rm', '--help'])).stdout).toMatch(/^wharf endpoint delete/);
  });

  it('exits 2 for unknown commands and a group without a command', async () => {
    expect(await run(['nope'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'wharf: unknown command "nope" (see "wharf --help")\n',
    });
    const group = await run(['template']);
    expect(group.code).toBe(2);
    expect(group.stderr).toMatch(/^wharf template — 5 commands/);
    expect((await run(['template', '--help'])).code).toBe(0);
  });

  it('refuses a client command without an API key (exit 2) before any request', async () => {
    const res = await run(['endpoint', 'list'], { HOME: '/nonexistent-home' });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^wharf: no API key: pass --api-key, set WHARF_API_KEY or run "wharf login"/);
  });
});

describe('usage errors', () => {
  const env = { HOME: '/nonexistent-home', WHARF_URL: 'http://127.0.0.1:9', WHARF_API_KEY: 'k' };
  it.each([
    [['endpoint', 'frob'], /^wharf: unknown command "endpoint frob" \(see "wharf endpoint --help"\)$/],
    [['endpoint', 'list', '--bogus'], /^wharf: unknown option --bogus \(see "wharf endpoint list --help"\)$/],
    // The category is set on create only: an update flag that would be ignored is refused instead.
    [['template', 'update', 't1', '--category', 'NVIDIA'], /^wharf: unknown option --category/],
    [['run', 'ep', '--input'], /^wharf: --input needs a value/],
    [['status', 'ep'], /^wharf: missing <job> \(see "wharf status --help"\)$/],
    [['cancel', 'a', 'b', 'c'], /^wharf: unexpected argument 'c'/],
    [['endpoint', 'list', 'extra'], /^wharf: unexpected argument 'extra'/],
    [['run', 'ep', '--input', '{nope'], /^wharf: --input is not valid JSON/],
    [['run', 'ep', '--input', '[1]'], /^wharf: --input must be a JSON object/],
    [['run', 'ep', '--input', '@/nonexistent/job.json'], /^wharf: --input: cannot read \/nonexistent\/job.json/],
    [['run', 'ep', '--ttl', 'soon'], /^wharf: --ttl expects a duration/],
    [['run', 'ep', '--timeout', '5 m'], /^wharf: --timeout expects a duration/],
    [['run', 'ep', '--sync', '--wait'], /^wharf: --sync and --wait cannot be used together/],
    [['run', 'ep', '--max-wait', '5s'], /^wharf: --max-wait applies to --sync and --wait only/],
    [['status', 'ep', 'job', '--max-wait', '5s'], /^wharf: --max-wait applies to --wait only/],
    [['run', 'ep', '--webhook'], /^wharf: --webhook needs a value/],
    [['endpoint', 'create'], /^wharf: --template is required/],
    [['endpoint', 'create', '--template', 't', '--env', 'X'], /^wharf: --env expects KEY=VALUE/],
    [['endpoint', 'update', 'x', '--workers-max', 'lots'], /^wharf: --workers-max expects a whole number/],
    // idleTimeout is whole seconds, 1 to 3600 (the help's 1s-1h): a value outside is refused, not rounded into it.
    [['endpoint', 'update', 'x', '--idle-timeout', '0'], /^wharf: --idle-timeout must be whole seconds from 1s to 1h/],
    [['endpoint', 'update', 'x', '--idle-timeout', '500ms'], /^wharf: --idle-timeout must be whole seconds/],
    [['endpoint', 'update', 'x', '--idle-timeout', '1500ms'], /^wharf: --idle-timeout must be whole seconds/],
    [['endpoint', 'create', '--template', 't', '--idle-timeout', '2h'], /^wharf: --idle-timeout must be whole/],
    [['endpoint', 'update', 'x', '--flashboot', '--no-flashboot'], /^wharf: --flashboot and --no-flashboot/],
    [['endpoint', 'update', 'x', '--data', '[]'], /^wharf: --data must be a JSON object/],
    [['template', 'create', '--name', 'n'], /^wharf: --image is required/],
    [['template', 'create', '--name', 'n', '--image', 'i', '--start-cmd', '[1]'], /^wharf: --start-cmd must be/],
    [['volume', 'create', '--name', 'v'], /^wharf: --size is required/],
    [['volume', 'update', 'v'], /^wharf: give --name or --size/],
    [['volume', 'update', 'v', '--name', ''], /^wharf: --name must not be empty/],
    [['registry', 'create', '--name', 'r', '--username', 'u'], /^wharf: give exactly one of --password/],
    [['secret', 'create', '--name', 's'], /^wharf: give exactly one of --value and --value-stdin/],
    [['secret', 'create', '--name', 's', '--value', 'v', '--value-stdin'], /^wharf: give exactly one of --value/],
    [['secret', 'create', '--name', 's', '--value', ''], /^wharf: --value is required/],
    [['secret', 'create', '--value', 'v'], /^wharf: --name is required/],
    [['secret', 'delete'], /^wharf: missing <secret> \(see "wharf secret delete --help"\)$/],
    [['keys', 'create', '--name', 'x', '--scope', 'god'], /^wharf: --scope must be one of all, read, restricted/],
    [['billing', 'cats'], /^wharf: expected one of endpoints, pods, volumes/],
    [['billing', '--start', 'yesterday'], /^wharf: --start expects a date/],
    // Date.parse would read these as March 2 and May 1.
    [['billing', '--start', '2026-02-30'], /^wharf: --start expects a date such as 2025-01-31, got '2026-02-30'/],
    [['billing', '--end', '2026-04-31T10:00:00Z'], /^wharf: --end expects a date/],
    [['billing', 'pods', '--endpoint', 'ep'], /^wharf: --endpoint applies to billing endpoints only/],
    [['billing', 'volumes', '--grouping', 'podId'], /^wharf: --grouping does not apply to volumes/],
    [['logs', 'ep', '--limit', '0'], /^wharf: --limit must be between 1 and 5000/],
  ])('wharf %j', async (argv, message) => {
    const res = await run(argv, env);
    expect(res).toMatchObject({ code: 2, stdout: '' });
    expect(res.stderr.endsWith('\n')).toBe(true);
    expect(res.stderr.trimEnd()).toMatch(message);
    expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('reports a broken login file as a usage error', async () => {
    const home = mkdtempSync(join(tmpdir(), 'wharf-cli-home-'));
    mkdirSync(join(home, '.config', 'wharf'), { recursive: true });
    writeFileSync(join(home, '.config', 'wharf', 'config.json'), '{broken');
    const res = await run(['endpoint', 'list'], { HOME: home });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^wharf: \S+config.json is not valid JSON: /);
    expect((await run(['logout'], { HOME: home })).code).toBe(0);
  });
});
