// The example worker (examples/echo-ts/worker.ts) as a real child process against a loopback service: what a Wharf
// executor will run. Covers what only a process can show: signals, exit codes and stdout log lines.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { waitUntil } from '../helpers/fleet.ts';
import { FakeService } from './sdk-worker.fake-service.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Node 24 from the project's devDependencies: the SDK runs TypeScript directly.
const NODE = fileURLToPath(new URL('../../node_modules/.bin/node', import.meta.url));

interface Child {
  proc: ChildProcess;
  stdout: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let fake: FakeService;
let children: Child[];

beforeEach(async () => {
  fake = await FakeService.start();
  children = [];
});

afterEach(async () => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exit));
  await fake.close();
});

function spawnExample(env: Record<string, string | undefined> = {}): Child {
  const proc = spawn(NODE, ['examples/echo-ts/worker.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...fake.env({ RUNPOD_LOG_LEVEL: 'INFO', ...env }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const child = { proc, stdout: () => out, exit };
  children.push(child);
  return child;
}

const doneFor = (jobId: string) =>
  fake.waitFor((r) => r.kind === 'done' && r.url.includes(`/${jobId}?`) && !r.body.includes('IN_PROGRESS'), 10_000);

describe('example worker process', () => {
  it('echoes, streams, reports progress and failures, and logs JSON lines per job', async () => {
    fake.push(
      { id: 'ex-1', input: { a: 1 } },
      { id: 'ex-2', input: { stream: 2 } },
      { id: 'ex-3', input: { progress: true } },
      { id: 'ex-4', input: { fail: 'nope' } },
      { id: 'ex-5', input: { refresh: true } },
    );
    const child = spawnExample({ RUNPOD_ENDPOINT_ID: 'ep' });
    expect((await doneFor('ex-1')).body).toBe('{"output":{"echo":{"a":1}}}');
    expect((await doneFor('ex-2')).body).toBe('{"output":[]}');
    expect(fake.bodies('stream', 'ex-2')).toEqual([{ output: { chunk: 0 } }, { output: { chunk: 1 } }]);
    await doneFor('ex-3');
    expect(fake.of('done', 'ex-3').map((r) => r.body)).toEqual([
      '{"status":"IN_PROGRESS","output":{"pct":50}}',
      '{"status":"IN_PROGRESS","output":"almost"}',
      '{"output":{"echo":{"progress":true}}}',
    ]);
    const failed = JSON.parse((await doneFor('ex-4')).body) as { error: string };
    expect(JSON.parse(failed.error)).toMatchObject({ error_type: 'Error', error_message: 'nope', worker_id: 'w-1' });
    expect((await doneFor('ex-5')).body).toBe('{"output":{"echo":{"refresh":true}},"stopPod":true}');

    child.proc.kill('SIGTERM');
    expect(await child.exit).toEqual({ code: 0, signal: null });
    const lines = child
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { requestId: string | null; message: string; level: string });
    expect(lines).toContainEqual({ requestId: 'ex-1', message: 'Job taken', level: 'INFO' });
    expect(lines.some((l) => l.requestId === null && l.level === 'INFO')).toBe(true);
  });

  it('on SIGTERM finishes the running job, takes no new one and exits 0', async () => {
    fake.push({ id: 'term-1', input: { sleepMs: 2_000 } });
    const child = spawnExample();
    // Once the worker logged the job as taken (not merely asked for it: a stop during the take would abort the take
    // and lose the job the fake already handed out), ask it to leave while the job runs.
    await waitUntil(
      () => /term-1.*Job taken/.test(child.stdout()),
      10_000,
      () => `term-1 taken: ${child.stdout()}`,
    );
    const signalledAt = Date.now();
    child.proc.kill('SIGTERM');
    fake.push({ id: 'term-2', input: {} });
    expect(await child.exit).toEqual({ code: 0, signal: null });
    expect(fake.of('done', 'term-1').map((r) => r.body)).toEqual(['{"output":{"echo":{"sleepMs":2000}}}']);
    expect(fake.requests.filter((r) => r.kind === 'take' && r.at > signalledAt)).toHaveLength(0);
    expect(fake.of('done', 'term-2')).toHaveLength(0);
    expect(child.stdout()).toContain('SIGTERM received');
  });

  it('a handler that exits the process mid-job leaves no result behind', async () => {
    fake.push({ id: 'crash-1', input: { crash: 3 } });
    const child = spawnExample();
    expect(await child.exit).toEqual({ code: 3, signal: null });
    expect(fake.of('done')).toHaveLength(0);
  });

  it('a job stopped by the service is cancelled in the handler and gets no result', async () => {
    fake.push({ id: 'stop-1', input: { sleepMs: 60_000 } }, { id: 'stop-2', input: { a: 2 } });
    const child = spawnExample();
    await fake.waitFor((r) => r.kind === 'ping' && r.url.includes('job_id=stop-1'), 10_000);
    fake.stopJobs(['stop-1']);
    expect((await doneFor('stop-2')).body).toBe('{"output":{"echo":{"a":2}}}');
    expect(fake.of('done', 'stop-1')).toHaveLength(0);
    child.proc.kill('SIGTERM');
    expect((await child.exit).code).toBe(0);
  });
});
