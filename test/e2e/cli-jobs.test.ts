// The `wharf` CLI's job commands as real child processes, against a server that runs real worker processes of the
// example TypeScript worker (process executor): run --sync/--wait/--stream, status, stream, cancel, retry, purge,
// health, jobs and logs, with their exit statuses.

import { spawn } from 'node:child_process';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { cliFor } from '../helpers/cli.ts';
import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';
import { NODE, ROOT } from '../helpers/processes.ts';

// Each command is a fresh Node process (~0.3 s of CPU): generous limits for loaded CI machines.
vi.setConfig({ testTimeout: 90_000 });

let fleet: Fleet;
let ep: string;
let cli: ReturnType<typeof cliFor>;

beforeAll(async () => {
  fleet = await startFleet();
  ep = await fleet.endpoint({ workersMax: 1, idleTimeout: 120 });
  cli = cliFor(fleet.url, fleet.key);
});
afterAll(async () => {
  await closeFleet(fleet);
});

describe('running jobs', () => {
  it('run --sync prints the output (a worker is started for it) and exits 0', async () => {
    const res = await cli(['run', ep, '--input', '{"hello": "world"}', '--sync']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toMatch(
      /^id +sync-[0-9a-f-]+-e1\nstatus +COMPLETED\nworker +\S+\ndelay +.+\nexecution +.+\noutput\n/,
    );
    expect(res.stdout).toContain('{\n  "echo": {\n    "hello": "world"\n  }\n}\n');

    const json = await cli(['run', ep, '--input', '{"n": 2}', '--sync', '--json', '--ttl', '10m', '--timeout', '1m']);
    expect(json.code).toBe(0);
    expect(json.json()).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 2 } } });
  });

  it('run returns the id at once; status and status --wait report the job', async () => {
    const submitted = await cli(['run', ep, '--input', '{"sleepMs": 300}', '--json']);
    expect(submitted.code).toBe(0);
    const { id, status } = submitted.json();
    expect(status).toBe('IN_QUEUE');
    const now = await cli(['status', ep, id, '--json']);
    expect(now.code).toBe(0);
    expect(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']).toContain(now.json().status);
    const done = await cli(['status', ep, id, '--wait']);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(new RegExp(`^id +${id}\\nstatus +COMPLETED\\n`));
    expect(done.stdout).toContain('"sleepMs": 300');

    const listed = await cli(['jobs', ep, '--json']);
    expect(listed.json().requests.map((r: any) => r.id)).toContain(id);
    const table = await cli(['jobs', ep, '--limit', '5']);
    expect(table.stdout).toMatch(/^ID +STATUS +CREATED +DELAY +EXECUTION +WORKER +RETRIES\n/);
    expect(table.stdout).toMatch(new RegExp(`${id} +COMPLETED`));
  });

  it('stream prints every chunk as a JSON line; run --stream submits and streams', async () => {
    const { id } = (await cli(['run', ep, '--input', '{"stream": 3}', '--json'])).json();
    const res = await cli(['stream', ep, id]);
    expect(res).toMatchObject({ code: 0, stdout: '{"chunk":0}\n{"chunk":1}\n{"chunk":2}\n' });
    const both = await cli(['run', ep, '--input', '{"stream": 2}', '--stream', '--json']);
    expect(both).toMatchObject({ code: 0, stdout: '{"chunk":0}\n{"chunk":1}\n' });
  });

  it('a failed job exits 1 with its error on one line; retry queues it again', async () => {
    const res = await cli(['run', ep, '--input', '{"fail": "boom"}', '--wait']);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/status +FAILED\n/);
    expect(res.stdout).toMatch(/error +Error: boom\n/);
    const id = /^id +(\S+)/.exec(res.stdout)![1]!;
    expect(res.stderr).toBe(`wharf: job ${id} FAILED: Error: boom\n`);
    // Plain status reports, whatever the state: exit 0.
    expect((await cli(['status', ep, id])).code).toBe(0);

    const retried = await cli(['retry', ep, id, '--json']);
    expect(retried.code).toBe(0);
    expect(retried.json()).toEqual({ id, status: 'IN_QUEUE' });
    const again = await cli(['status', ep, id, '--wait', '--json']);
    expect(again.code).toBe(1);
    expect(again.json()).toMatchObject({ id, status: 'FAILED' });
  });

  it("shows a failed job's error with its control characters escaped, not obeyed by the terminal", async () => {
    // What `wharf logs` does for the same worker text: a worker must not clear or retitle the reader's terminal.
    const res = await cli([
      'run',
      ep,
      '--input',
      JSON.stringify({ fail: '\u001b[2J\u001b]0;pwned\u0007gone' }),
      '--wait',
    ]);
    expect(res.code).toBe(1);
    expect(res.stdout + res.stderr).not.toContain('\u001b');
    expect(res.stdout + res.stderr).not.toContain('\u0007');
    expect(res.stdout).toMatch(/error +Error: \\x1b\[2J\\x1b\]0;pwned\\x07gone\n/);
    const id = /^id +(\S+)/.exec(res.stdout)![1]!;
    expect(res.stderr).toBe(`wharf: job ${id} FAILED: Error: \\x1b[2J\\x1b]0;pwned\\x07gone\n`);
    // --json is for programs: the error as the API has it.
    const json = await cli(['status', ep, id, '--json']);
    expect(JSON.stringify(json.json().error)).toContain('\\u001b[2J');
  });

  it('cancel stops a running job', async () => {
    const { id } = (await cli(['run', ep, '--input', '{"sleepMs": 20000}', '--json'])).json();
    await fleet.untilRunning(ep, id);
    const res = await cli(['cancel', ep, id]);
    expect(res).toMatchObject({ code: 0, stdout: `job ${id} CANCELLED\n` });
    expect((await cli(['status', ep, id, '--json'])).json().status).toBe('CANCELLED');
    const waited = await cli(['status', ep, id, '--wait']);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toBe(`wharf: job ${id} CANCELLED\n`);
  });
});

describe('queue and endpoint state', () => {
  it('purge empties a queue no worker takes from; status and health say why jobs wait', async () => {
    const idle = await fleet.endpoint({ workersMax: 0 });
    const runs = await Promise.all([1, 2, 3].map(() => cli(['run', idle, '--json'])));
    const ids = runs.map((r) => r.json().id as string);
    const [status, health, human] = await Promise.all([
      cli(['status', idle, ids[0]!]),
      cli(['health', idle, '--json']),
      cli(['health', idle]),
    ]);
    expect(status.stdout).toMatch(/status +IN_QUEUE\nwaiting +max-workers-zero: /);
    expect(health.json()).toMatchObject({ jobs: { inQueue: 3 }, scaling: { reason: 'max-workers-zero' } });
    expect(human.stdout).toMatch(
      /^jobs +completed 0 {2}failed 0 .*inQueue 3.*\nworkers .*\nscaling +max-workers-zero: /,
    );

    // --max-wait runs out: exit 1, the job untouched.
    const waited = await cli(['run', idle, '--wait', '--max-wait', '1s']);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toMatch(/^wharf: job \S+ is still IN_QUEUE after 1.00 s \(wharf status /);
    // The same with --sync, whose /runsync window is used up first: the time given is the whole --max-wait.
    const synced = await cli(['run', idle, '--sync', '--max-wait', '2s']);
    expect(synced.code).toBe(1);
    expect(synced.stderr).toMatch(/^wharf: job \S+ is still IN_QUEUE after 2.00 s \(wharf status /);

    const purge = await cli(['purge', idle]);
    expect(purge).toMatchObject({ code: 0, stdout: `removed 5 queued jobs from ${idle}\n` });
    expect((await cli(['purge', idle, '--json'])).json()).toEqual({ removed: 0, status: 'completed' });
    expect((await cli(['health', idle, '--json'])).json().jobs.inQueue).toBe(0);
  });

  it('health shows the running worker; endpoint get --workers lists it', async () => {
    expect((await cli(['run', ep, '--sync', '--json'])).code).toBe(0);
    const res = await cli(['health', ep, '--json']);
    expect(res.code).toBe(0);
    const h = res.json();
    expect(h.workers.idle + h.workers.running).toBe(1);
    expect(h.jobs.completed).toBeGreaterThan(0);
    const get = await cli(['endpoint', 'get', ep, '--workers']);
    expect(get.stdout).toMatch(/\nWORKER +STATE +DESIRED +STARTED +\$\/HR\n\S+ +(idle|running) +RUNNING /);
  });
});

describe('logs', () => {
  it("prints the workers' lines, filters by job, and follows new lines", async () => {
    const { id } = (await cli(['run', ep, '--input', '{"x": 1}', '--sync', '--json'])).json();
    const all = await cli(['logs', ep, '--json']);
    const lines = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.some((l) => l.jobId === id)).toBe(true);
    const mine = await cli(['logs', ep, '--job', id]);
    expect(mine.code).toBe(0);
    const text = mine.stdout.trim().split('\n');
    expect(text.length).toBeGreaterThan(0);
    for (const line of text) expect(line).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z \\S+ ${id} .+`));

    // --follow: a real child that keeps printing until killed.
    const follow = spawn(NODE, ['src/cli/main.ts', 'logs', ep, '--follow', '--json'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: '/nonexistent', WHARF_URL: fleet.url, WHARF_API_KEY: fleet.key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    follow.stdout.on('data', (c: Buffer) => (out += c.toString()));
    try {
      await waitUntil(
        () => out.includes(id),
        10_000,
        () => out,
      );
      const next = (await cli(['run', ep, '--input', '{"y": 2}', '--sync', '--json'])).json().id;
      await waitUntil(
        () => out.includes(next),
        15_000,
        () => out,
      );
    } finally {
      follow.kill('SIGKILL');
    }
  });
});
