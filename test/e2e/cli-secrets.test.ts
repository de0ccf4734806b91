// The `wharf secret` commands as real child processes against a real server on loopback: create (--value and
// --value-stdin), list (table and --json), delete, their usage mistakes (exit 2) and the server's refusals (one line
// with its code, exit 1). A secret's value goes to the server and is never printed back.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { cliFor } from '../helpers/cli.ts';
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

const uniq = (p: string) => `${p}_${Math.random().toString(36).slice(2, 8)}`;

describe('wharf secret', () => {
  it('create with --value and with --value-stdin, list without the values, delete by id', async () => {
    const [inline, piped] = [uniq('hf'), uniq('openai')];
    const [a, b] = await Promise.all([
      cli(['secret', 'create', '--name', inline, '--value', 'hf_inline_value_123', '--description', 'read token']),
      // One trailing newline (what echo adds) is not part of the value.
      cli(['secret', 'create', '--name', piped, '--value-stdin', '--json'], { input: 'sk-piped-value-456\n' }),
    ]);
    expect(a).toMatchObject({ code: 0, stderr: '' });
    expect(a.stdout).toMatch(new RegExp(`^id +c[a-z0-9]{24}\\nname +${inline}\\ndescription +read token\\n$`));
    expect(a.stdout).not.toContain('hf_inline_value_123');
    const id = /^id +(\S+)$/m.exec(a.stdout)![1]!;
    expect(b).toMatchObject({ code: 0, stderr: '' });
    expect(b.stdout).not.toContain('sk-piped-value');
    const secret = b.json();
    expect(secret).toMatchObject({ name: piped, description: '' });
    expect(Object.keys(secret).sort()).toEqual(['createdAt', 'description', 'id', 'name']);

    const [table, json, alias] = await Promise.all([
      cli(['secret', 'list']),
      cli(['secret', 'list', '--json']),
      cli(['secrets', 'ls']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID {2,}NAME {2,}DESCRIPTION$/);
    expect(table.stdout).toMatch(new RegExp(`^${id} +${inline} +read token$`, 'm'));
    // An empty description is shown as '-', as other empty cells are.
    expect(table.stdout).toMatch(new RegExp(`^${secret.id} +${piped} +-$`, 'm'));
    expect(alias.stdout).toBe(table.stdout);
    const listed = json.json();
    expect(listed).toContainEqual({ ...secret });
    expect(listed.map((s: any) => s.id)).toContain(id);
    for (const out of [table.stdout, json.stdout]) {
      expect(out).not.toContain('hf_inline_value_123');
      expect(out).not.toContain('sk-piped-value-456');
    }

    const [del, delJson] = await Promise.all([
      cli(['secret', 'delete', id]),
      cli(['secrets', 'rm', secret.id, '--json']),
    ]);
    expect(del).toMatchObject({ code: 0, stdout: `deleted secret ${id}\n`, stderr: '' });
    expect(delJson.json()).toEqual({ id: secret.id, deleted: true });
    const after = (await cli(['secret', 'list', '--json'])).json().map((s: any) => s.id);
    expect(after).not.toContain(id);
    expect(after).not.toContain(secret.id);
  });

  it('usage mistakes exit 2 before any request: both or neither value flag, an empty value', async () => {
    const [both, neither, empty, emptyStdin, noName] = await Promise.all([
      cli(['secret', 'create', '--name', 'x', '--value', 'v', '--value-stdin'], { input: 'v\n' }),
      cli(['secret', 'create', '--name', 'x']),
      cli(['secret', 'create', '--name', 'x', '--value', '']),
      cli(['secret', 'create', '--name', 'x', '--value-stdin'], { input: '\n' }),
      cli(['secret', 'create', '--value', 'v']),
    ]);
    for (const res of [both, neither]) {
      expect(res).toMatchObject({
        code: 2,
        stdout: '',
        stderr: 'wharf: give exactly one of --value and --value-stdin (see "wharf secret create --help")\n',
      });
    }
    // As registry create's --password: an empty --value is a missing one; an empty stdin is an empty value.
    expect(empty).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'wharf: --value is required (see "wharf secret create --help")\n',
    });
    expect(emptyStdin).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'wharf: the value is empty (see "wharf secret create --help")\n',
    });
    expect(noName).toMatchObject({ code: 2, stdout: '' });
    expect(noName.stderr).toMatch(/^wharf: --name is required/);
    expect((await cli(['secret', 'list', '--json'])).json()).not.toContainEqual(expect.objectContaining({ name: 'x' }));
  });

  it("a duplicate name and an unknown id are the server's NAME_TAKEN and SECRET_NOT_FOUND, one line, exit 1", async () => {
    const name = uniq('dup');
    const first = await cli(['secret', 'create', '--name', name, '--value', 'first-value', '--json']);
    expect(first.code).toBe(0);
    const [dup, unknown, malformed] = await Promise.all([
      cli(['secret', 'create', '--name', name, '--value', 'second-value']),
      cli(['secret', 'delete', 'c000000000000000000000000']),
      cli(['secret', 'delete', 'nope']),
    ]);
    expect(dup).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `wharf: NAME_TAKEN: A secret named ${name} already exists\n`,
    });
    expect(dup.stderr).not.toContain('second-value');
    expect(unknown).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'wharf: SECRET_NOT_FOUND: Secret c000000000000000000000000 not found\n',
    });
    expect(malformed).toMatchObject({ code: 1, stdout: '' });
    expect(malformed.stderr).toMatch(/^wharf: VALIDATION_FAILED: [^\n]+\n$/);
    expect((await cli(['secret', 'delete', first.json().id])).code).toBe(0);
  });
});
