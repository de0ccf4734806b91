// The `wharf` CLI's management commands as real child processes against a real server on loopback: login and the
// config file, CRUD with --json and tables, keys, errors (one line with the server's code, exit 1), usage
// mistakes (exit 2), colours, and --help for every command.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { COMMANDS } from '../../src/cli/commands/index.ts';
import { SETTINGS } from '../../src/config/index.ts';
import { cliFor, runCli, tempHome } from '../helpers/cli.ts';
import { freePort } from '../helpers/processes.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Each command is a fresh Node process (~0.3 s of CPU): generous limits for loaded CI machines.
vi.setConfig({ testTimeout: 90_000 });

let t: TestServer;
let cli: ReturnType<typeof cliFor>;

beforeAll(async () => {
  t = await startTestServer();
  cli = cliFor(t.url, t.key);
});
afterAll(async () => {
  await t.close();
});

const ECHO = ['--image', 'file://./examples/echo-ts', '--start-cmd', 'node worker.ts'];
const uniq = (p: string) => `${p}-${Math.random().toString(36).slice(2, 8)}`;
const ONE_ERROR_LINE = /^wharf: [A-Z_]+: [^\n]+\n$/;

describe('login and the config file', () => {
  it('login checks the key, writes ~/.config/wharf/config.json with mode 0600, and later commands use it', async () => {
    const home = tempHome();
    const login = await runCli(['login', '--url', t.url, '--api-key', t.key], { env: { HOME: home } });
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(`logged in to ${t.url}`);
    expect(login.stdout).not.toContain(t.key);
    const path = join(home, '.config', 'wharf', 'config.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, '.config', 'wharf')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ url: t.url, apiKey: t.key });

    const [config, list, env, flag] = await Promise.all([
      // No WHARF_* variables and no flags: the file is used.
      runCli(['config', '--json'], { env: { HOME: home } }),
      runCli(['endpoint', 'list', '--json'], { env: { HOME: home } }),
      // flag > env > file.
      runCli(['config', '--json'], { env: { HOME: home, WHARF_URL: 'http://env.example:1' } }),
      runCli(['config', '--json', '--url', 'http://flag.example:2', '--api-key', 'k_flag_123'], {
        env: { HOME: home, WHARF_URL: 'http://env.example:1', WHARF_API_KEY: 'k_env_456' },
      }),
    ]);
    expect(config.json()).toMatchObject({ url: t.url, urlSource: 'file', apiKeySource: 'file', configPath: path });
    expect(list.code).toBe(0);
    expect(Array.isArray(list.json())).toBe(true);
    expect(env.json()).toMatchObject({ url: 'http://env.example:1', urlSource: 'env', apiKeySource: 'file' });
    expect(flag.json()).toMatchObject({ url: 'http://flag.example:2', urlSource: 'flag', apiKeySource: 'flag' });

    const logout = await runCli(['logout'], { env: { HOME: home } });
    expect(logout.code).toBe(0);
    const after = await runCli(['endpoint', 'list'], { env: { HOME: home } });
    expect(after.code).toBe(2);
    expect(after.stderr).toMatch(/^wharf: no API key/);
  });

  it('honours XDG_CONFIG_HOME, reads the key from stdin, and refuses a wrong key without writing anything', async () => {
    const home = tempHome();
    const xdg = join(home, 'xdg');
    const bad = await runCli(['login', '--url', t.url, '--api-key', 'wharf_wrong_key_000000000000'], {
      env: { HOME: home, XDG_CONFIG_HOME: xdg },
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('wharf: UNAUTHORIZED: Missing or invalid API key\n');
    expect(() => statSync(join(xdg, 'wharf', 'config.json'))).toThrow();

    const good = await runCli(['login', '--url', t.url], {
      env: { HOME: home, XDG_CONFIG_HOME: xdg },
      input: `${t.key}\n`,
    });
    expect(good.code).toBe(0);
    expect(JSON.parse(readFileSync(join(xdg, 'wharf', 'config.json'), 'utf8')).apiKey).toBe(t.key);
  });
});

describe('templates and endpoints', () => {
  it('create, list, get, update and delete with --json', async () => {
    const name = uniq('tpl');
    const tpl = await cli(['template', 'create', '--name', name, ...ECHO, '--env', 'A=1', '--json']);
    expect(tpl.code).toBe(0);
    const template = tpl.json();
    expect(template).toMatchObject({
      name,
      dockerStartCmd: ['node', 'worker.ts'],
      env: { A: '1' },
      isServerless: true,
    });
    const [tplList, tplGet, updated] = await Promise.all([
      cli(['template', 'list', '--json']),
      cli(['template', 'get', template.id, '--json']),
      cli(['template', 'update', template.id, '--env', 'B=2', '--json']),
    ]);
    expect(tplList.json().map((x: any) => x.id)).toContain(template.id);
    expect(tplGet.json().name).toBe(name);
    expect(updated.json().env).toEqual({ B: '2' });

    const ep = await cli([
      'endpoint', 'create', '--name', 'cli-test', '--template', template.id, '--cpu-flavor', 'cpu3c',
      '--workers-max', '0', '--idle-timeout', '30s', '--execution-timeout', '2m', '--env', 'MODEL=small', '--json',
    ]); // prettier-ignore
    expect(ep.code).toBe(0);
    const endpoint = ep.json();
    expect(endpoint).toMatchObject({
      name: 'cli-test',
      templateId: template.id,
      computeType: 'CPU',
      workersMax: 0,
      idleTimeout: 30,
      executionTimeoutMs: 120_000,
      env: { MODEL: 'small' },
    });
    const [epList, got, up, inUse] = await Promise.all([
      cli(['endpoint', 'list', '--json']),
      cli(['endpoints', 'get', endpoint.id, '--json']),
      cli(['endpoint', 'update', endpoint.id, '--name', 'renamed', '--flashboot', '--json']),
      cli(['template', 'delete', template.id]),
    ]);
    expect(epList.json().map((x: any) => x.id)).toContain(endpoint.id);
    expect(got.json()).toMatchObject({ id: endpoint.id, workersMin: 0 });
    expect(up.json()).toMatchObject({ name: 'renamed', flashboot: true });
    // The template is in use: the server's code, one line, exit 1.
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toMatch(/^wharf: RESOURCE_IN_USE: /);
    expect(inUse.stderr).toMatch(ONE_ERROR_LINE);

    const del = await cli(['endpoint', 'rm', endpoint.id]);
    expect(del).toMatchObject({ code: 0, stdout: `deleted endpoint ${endpoint.id}\n` });
    const gone = await cli(['endpoint', 'get', endpoint.id]);
    expect(gone).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `wharf: ENDPOINT_NOT_FOUND: Endpoint ${endpoint.id} not found\n`,
    });
    expect((await cli(['template', 'delete', template.id, '--json'])).json()).toEqual({
      id: template.id,
      deleted: true,
    });
  });

  it('template create makes a serverless template unless --data says otherwise', async () => {
    const [serverless, pod] = await Promise.all([
      cli(['template', 'create', '--name', uniq('sls'), ...ECHO, '--json']),
      cli(['template', 'create', '--name', uniq('pod'), ...ECHO, '--data', '{"isServerless": false}', '--json']),
    ]);
    expect(serverless.json().isServerless).toBe(true);
    expect(pod.json().isServerless).toBe(false);
    await Promise.all([serverless, pod].map((r) => cli(['template', 'delete', r.json().id])));
  });

  it('lists reach the server whole: two --volume flags are shown, --endpoint a,b is two endpoints', async () => {
    const volume = async () =>
      (await cli(['volume', 'create', '--name', uniq('v'), '--size', '1', '--data-center', 'EU-RO-1', '--json'])).json()
        .id as string;
    const [tpl, v1, v2] = await Promise.all([
      cli(['template', 'create', '--name', uniq('lists'), ...ECHO, '--json']),
      volume(),
      volume(),
    ]);
    const template = tpl.json().id as string;
    const endpoint = (volumes: string[], json: boolean) =>
      cli([
        'endpoint', 'create', '--template', template, '--cpu-flavor', 'cpu3c', '--workers-max', '0',
        ...volumes.flatMap((v) => ['--volume', v]), ...(json ? ['--json'] : []),
      ]); // prettier-ignore
    const [shown, other] = await Promise.all([endpoint([v1, v2], false), endpoint([`${v1},${v2}`], true)]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^volume +${v1},${v2}$`, 'm'));
    const e1 = /^id +(\S+)$/m.exec(shown.stdout)![1]!;
    const e2 = other.json();
    expect(e2.networkVolumeIds).toEqual([v1, v2]);

    const key = await cli(['keys', 'create', '--name', 'two', '--scope', 'restricted', '--endpoint', `${e1},${e2.id}`]);
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toMatch(new RegExp(`^endpoints +${e1},${e2.id}$`, 'm'));

    await cli(['keys', 'revoke', /^id +(\S+)$/m.exec(key.stdout)![1]!]);
    await Promise.all([cli(['endpoint', 'delete', e1]), cli(['endpoint', 'delete', e2.id])]);
    await Promise.all([
      cli(['template', 'delete', template]),
      cli(['volume', 'delete', v1]),
      cli(['volume', 'delete', v2]),
    ]);
  });

  it('prints tables and key/value blocks for people, coloured only when asked and never with NO_COLOR', async () => {
    const name = uniq('table');
    const template = (await cli(['template', 'create', '--name', name, ...ECHO, '--json'])).json();
    const [table, get, forced, none, flag] = await Promise.all([
      cli(['template', 'list']),
      cli(['template', 'get', template.id]),
      cli(['template', 'list'], { env: { FORCE_COLOR: '1' } }),
      cli(['template', 'list'], { env: { FORCE_COLOR: '1', NO_COLOR: '1' } }),
      cli(['template', 'list', '--no-color'], { env: { FORCE_COLOR: '1' } }),
    ]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID {2,}NAME {2,}IMAGE {2,}START CMD {2,}CATEGORY$/);
    const row = lines.find((l) => l.startsWith(template.id))!;
    expect(row).toContain(name);
    // Columns line up: the name starts where the NAME header does.
    expect(row.indexOf(name)).toBe(lines[0]!.indexOf('NAME'));
    expect(table.stdout).not.toContain('\x1b[');

    expect(get.stdout).toMatch(new RegExp(`^id +${template.id}\\nname +${name}\\n`));
    expect(forced.stdout).toContain('\x1b[1mID');
    expect(none.stdout).not.toContain('\x1b[');
    expect(flag.stdout).not.toContain('\x1b[');
    await cli(['template', 'delete', template.id]);
  });
});

describe('volumes, registry credentials, keys, billing', () => {
  it('volume and registry create, list, get, update and delete', async () => {
    const volumes = async () => {
      const vol = (
        await cli(['volume', 'create', '--name', 'data', '--size', '5', '--data-center', 'EU-RO-1', '--json'])
      ).json();
      expect(vol).toMatchObject({ name: 'data', size: 5, dataCenterId: 'EU-RO-1' });
      expect((await cli(['volume', 'update', vol.id, '--size', '8', '--json'])).json().size).toBe(8);
      expect((await cli(['volume', 'list'])).stdout).toMatch(new RegExp(`${vol.id} +data +8 GB +EU-RO-1`));
      expect((await cli(['volume', 'delete', vol.id])).code).toBe(0);
    };
    const registry = async () => {
      const name = uniq('ghcr');
      const reg = await cli(['registry', 'create', '--name', name, '--username', 'me', '--password-stdin', '--json'], {
        input: 's3cret\n',
      });
      expect(reg.code).toBe(0);
      const auth = reg.json();
      expect(Object.keys(auth).sort()).toEqual(['id', 'name']);
      const [get, list] = await Promise.all([
        cli(['registry', 'get', auth.id, '--json']),
        cli(['registry', 'list', '--json']),
      ]);
      expect(get.json()).toEqual({ id: auth.id, name });
      expect(list.json()).toContainEqual({ id: auth.id, name });
      expect((await cli(['registry', 'delete', auth.id])).code).toBe(0);
    };
    await Promise.all([volumes(), registry()]);
  });

  it('keys create shows the key once; the key works until keys revoke', async () => {
    const created = await cli(['keys', 'create', '--name', 'ci', '--scope', 'read', '--json']);
    expect(created.code).toBe(0);
    const key = created.json();
    expect(key).toMatchObject({ name: 'ci', scope: 'read', revokedAt: null });
    expect(key.key).toMatch(/^wharf_/);
    const [list, asCi, write] = await Promise.all([
      cli(['keys', 'list']),
      cli(['endpoint', 'list', '--json', '--api-key', key.key]),
      cli(['keys', 'create', '--name', 'x', '--api-key', key.key]),
    ]);
    expect(list.stdout).toMatch(new RegExp(`${key.id} +ci +${key.prefix} +read`));
    expect(list.stdout).not.toContain(key.key);
    expect(asCi.code).toBe(0);
    // A read key may not write: FORBIDDEN, one line, exit 1.
    expect(write.code).toBe(1);
    expect(write.stderr).toMatch(/^wharf: FORBIDDEN: /);

    expect((await cli(['keys', 'revoke', key.id])).stdout).toBe(`revoked key ${key.id}\n`);
    const [revoked, unknown] = await Promise.all([
      cli(['endpoint', 'list', '--api-key', key.key]),
      cli(['keys', 'revoke', 'nosuchkey123']),
    ]);
    expect(revoked).toMatchObject({ code: 1, stderr: 'wharf: UNAUTHORIZED: Missing or invalid API key\n' });
    expect(unknown).toMatchObject({ code: 1, stderr: 'wharf: API_KEY_NOT_FOUND: API key nosuchkey123 not found\n' });
  });

  it('billing answers JSON arrays for endpoints, pods and volumes', async () => {
    const kinds = ['endpoints', 'pods', 'volumes'];
    const results = await Promise.all(
      kinds.map((k) => cli(['billing', k, '--bucket', 'day', '--start', '2025-01-01', '--json'])),
    );
    for (const res of results) {
      expect(res.code).toBe(0);
      expect(Array.isArray(res.json())).toBe(true);
    }
  });
});

describe('errors and usage', () => {
  it('a server error is one line with its code and exit 1; an unreachable server too', async () => {
    const port = await freePort();
    const [res, json, invalid, down] = await Promise.all([
      cli(['status', 'nosuchendpoint', 'job-1']),
      cli(['health', 'nosuchendpoint', '--json']),
      cli(['endpoint', 'create', '--template', 'nosuchtpl1']),
      runCli(['endpoint', 'list'], { env: { WHARF_URL: `http://127.0.0.1:${port}`, WHARF_API_KEY: 'k' } }),
    ]);
    expect(res).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'wharf: ENDPOINT_NOT_FOUND: Endpoint nosuchendpoint not found\n',
    });
    expect(json).toMatchObject({ code: 1, stdout: '' });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(ONE_ERROR_LINE);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^wharf: NETWORK_ERROR: GET \/v1\/endpoints: .*ECONNREFUSED.*\n$/);
  });

  // Every usage mistake is checked in-process by test/unit/cli-dispatch.test.ts; here, the exit status of the process.
  it('usage mistakes exit 2 with one line pointing at --help', async () => {
    const [unknown, option, missing, group] = await Promise.all([
      cli(['frobnicate']),
      cli(['endpoint', 'list', '--bogus']),
      cli(['run', 'ep', '--input', '{nope']),
      cli(['endpoint']),
    ]);
    expect(unknown).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'wharf: unknown command "frobnicate" (see "wharf --help")\n',
    });
    expect(option).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'wharf: unknown option --bogus (see "wharf endpoint list --help")\n',
    });
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toMatch(/^wharf: --input is not valid JSON: .+ \(see "wharf run --help"\)\n$/);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain('wharf endpoint create');
  });
});

describe('a reader that stops early', () => {
  it('ends the command quietly with status 0 (wharf … | head -1)', async () => {
    const [help, list] = await Promise.all([
      runCli(['--help'], { closeStdout: true }),
      cli(['template', 'list', '--json'], { closeStdout: true }),
    ]);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(list).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('--help', () => {
  // Every command's help is checked in-process by test/unit/cli-dispatch.test.ts; here, the real process for a few.
  it('works for the program, a group, a command and the server', async () => {
    const [main, help, group, helpCmd, serve] = await Promise.all([
      runCli(['--help']),
      runCli(['help']),
      runCli(['keys', '--help']),
      runCli(['help', 'run']),
      runCli(['serve', '--help']),
    ]);
    for (const res of [main, help, group, helpCmd, serve]) expect(res).toMatchObject({ code: 0, stderr: '' });
    for (const name of COMMANDS.keys()) expect(main.stdout).toContain(name);
    expect(main.stdout).toContain('Exit status: 0 success; 1 ');
    expect(help.stdout).toBe(main.stdout);
    expect(group.stdout).toContain('wharf keys revoke <key-id>');
    expect(helpCmd.stdout).toMatch(/^wharf run — /);
    expect(helpCmd.stdout).toContain('--max-wait <duration>');
    for (const s of SETTINGS) expect(serve.stdout).toContain(s.flag);
    expect(serve.stdout).toContain('WHARF_CONFIG');
    expect(serve.stdout).toBe((await runCli(['help', 'serve'])).stdout);
  });
});
