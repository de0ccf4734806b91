// Graceful shutdown of a real `wharf serve` process: SIGTERM while a managed worker (process executor, the example
// TypeScript worker) runs a job and clients hold long polls. New work is refused at once, the running job finishes
// and its result is stored, every long poll gets an answer (its result, or its state handed back), the process
// exits 0 within the grace period, and no worker process is left.

import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, expect, it } from 'vitest';

import { ECHO_TEMPLATE, waitUntil, workerProcesses } from '../helpers/fleet.ts';
import { freePort, killAll, spawnProc, type Proc } from '../helpers/processes.ts';
import { ADMIN_KEY, request, startTestServer, type ApiResponse } from '../helpers/server.ts';

const GRACE_MS = 10_000;

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function serve(port: number, dataDir: string, executor: 'process' | 'none'): Proc {
  return spawnProc(
    [
      'src/cli/main.ts',
      'serve',
      ...['--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, '--executor', executor],
      ...['--gpus', 'none', '--shutdown-grace-ms', String(GRACE_MS), '--scale-interval-ms', '50'],
      ...['--worker-ping-interval-ms', '1000', '--take-wait-ms', '20000', '--log-level', 'warn'],
    ],
    { PATH: process.env['PATH'], WHARF_ADMIN_KEY: ADMIN_KEY },
  );
}

it(
  'SIGTERM: refuses new work, finishes the running job, answers long polls, exits 0, leaves no worker',
  {
    timeout: 90_000,
  },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-sigterm-'));
    dirs.push(dataDir);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const api = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
      request(`${url}${path}`, method, body, { key: ADMIN_KEY });

    let server = serve(port, dataDir, 'process');
    await server.waitFor(/wharf listening on/, 30_000);
    const tpl = await api('POST', '/v1/templates', { name: 'sigterm', ...ECHO_TEMPLATE });
    expect(tpl.status).toBe(200);
    const endpoint = (name: string, workersMax: number) =>
      api('POST', '/v1/endpoints', { name, templateId: tpl.json.id, computeType: 'CPU', workersMax, idleTimeout: 5 });
    const ep = (await endpoint('sigterm', 1)).json.id as string;
    const idle = (await endpoint('sigterm-idle', 0)).json.id as string;

    // Long enough to be still running after the set-up below, even on a slow machine.
    const running = (await api('POST', `/v2/${ep}/run`, { input: { sleepMs: 6000 } })).json.id as string;
    const deadline = Date.now() + 30_000;
    while ((await api('GET', `/v2/${ep}/status/${running}`)).json.status !== 'IN_PROGRESS') {
      if (Date.now() > deadline) throw new Error('the job never started');
      await sleep(50);
    }
    const queued = (await api('POST', `/v2/${ep}/run`, { input: { queued: true } })).json.id as string;
    expect(workerProcesses([ep])).toHaveLength(1);

    // Long polls in flight: the running job's final status, a /runsync that waits behind it, a stream of the queued
    // job, and an outside worker's take on an endpoint without jobs.
    const settle = (p: Promise<ApiResponse>) =>
      p.then(
        (r) => ({ status: r.status, json: r.json, text: r.text }),
        (e: Error) => e,
      );
    const polls = {
      statusSync: settle(api('GET', `/v2/${ep}/status-sync/${running}?wait=60000`)),
      runsync: settle(api('POST', `/v2/${ep}/runsync?wait=60000`, { input: { sync: true } })),
      stream: settle(api('GET', `/v2/${ep}/stream/${queued}?wait=60000`)),
      take: settle(
        request(`${url}/v2/${idle}/job-take/outside-1?gpu=x&job_in_progress=0`, 'GET', undefined, {
          headers: { authorization: ADMIN_KEY },
        }),
      ),
      openai: settle(api('POST', `/v2/${ep}/openai/v1/chat/completions`, { model: 'm', messages: [] })),
      openaiStream: settle(
        api('POST', `/v2/${ep}/openai/v1/chat/completions`, { model: 'm', messages: [], stream: true }),
      ),
    };
    // Every poll has reached the server: the /runsync job is queued behind the running one (the polls were sent
    // together; a second more lets the others arrive too).
    await waitUntil(
      async () => (await api('GET', `/v2/${ep}/health`)).json.jobs.inQueue >= 2,
      10_000,
      () => 'the /runsync job to be queued',
    );
    await sleep(1000);

    const sigterm = Date.now();
    server.proc.kill('SIGTERM');
    // Wait until the server has begun to shut down (/readyz says so, or nothing listens any more).
    await waitUntil(
      async () => {
        const ready = await settle(api('GET', '/readyz'));
        return ready instanceof Error || ready.status === 503;
      },
      5_000,
      () => 'the server to begin shutting down',
    );
    // An idle worker polling as the official SDK does (again at once after any answer, spec §1.6) has its refused
    // takes held until the server closes, instead of spinning while the running job finishes.
    const spinning = (async () => {
      let takes = 0;
      for (;;) {
        const r = await settle(
          request(`${url}/v2/${idle}/job-take/outside-3?gpu=x`, 'GET', undefined, {
            headers: { authorization: ADMIN_KEY },
          }),
        );
        if (r instanceof Error) return takes;
        takes++;
        expect(r).toMatchObject({ status: 503, json: { code: 'SHUTTING_DOWN' } });
      }
    })();
    // New work is refused (the worker is still finishing its job): 503 SHUTTING_DOWN or no connection; at once,
    // but for takes, which are held.
    const refused = await Promise.all([
      settle(api('POST', `/v2/${ep}/run`, { input: { late: true } })),
      settle(api('GET', '/readyz')),
      settle(
        request(`${url}/v2/${ep}/job-take/outside-2?gpu=x`, 'GET', undefined, {
          headers: { authorization: ADMIN_KEY },
        }),
      ),
    ]);
    for (const r of refused) {
      if (r instanceof Error) continue; // connection refused (the listener is already closed)
      expect(r.status).toBe(503);
      expect(r.json).toMatchObject({ code: 'SHUTTING_DOWN' });
    }

    const exit = await server.exit;
    const tookMs = Date.now() - sigterm;
    // The drain lasted seconds (the running job); unheld, the loop made hundreds of takes in it.
    expect(await spinning).toBeLessThanOrEqual(4);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(tookMs).toBeLessThan(GRACE_MS);
    expect(tookMs).toBeGreaterThanOrEqual(2000); // it waited for the job
    expect(workerProcesses([ep, idle])).toEqual([]);

    // Every long poll was answered, none cut off: with its result, or handed back with the state at shutdown.
    const answered = {
      statusSync: await polls.statusSync,
      runsync: await polls.runsync,
      stream: await polls.stream,
      take: await polls.take,
      openai: await polls.openai,
      openaiStream: await polls.openaiStream,
    };
    for (const [name, r] of Object.entries(answered)) expect(r instanceof Error ? r.message : 'ok', name).toBe('ok');
    const a = answered as Record<string, { status: number; json: any; text: string }>;
    expect(a['statusSync']).toMatchObject({ status: 200, json: { status: 'COMPLETED' } });
    expect(a['runsync']!.status).toBe(200);
    expect(a['runsync']!.json.status).toBe('IN_QUEUE');
    expect(a['stream']!.status).toBe(200);
    expect(a['take']!.status).toBe(204);
    // The OpenAI routes: the plain one answers 503, the stream ends with an error event (it does not spin).
    expect(a['openai']).toMatchObject({ status: 503, json: { error: { code: 'SHUTTING_DOWN' } } });
    expect(a['openaiStream']!.status).toBe(200);
    expect(a['openaiStream']!.text).toMatch(/"code":"SHUTTING_DOWN"/);

    // After a restart: the finished job's result, and the queued jobs, are all there.
    server = serve(port, dataDir, 'none');
    await server.waitFor(/wharf listening on/, 30_000);
    const done = await api('GET', `/v2/${ep}/status/${running}`);
    expect(done.json).toMatchObject({ status: 'COMPLETED', output: { echo: { sleepMs: 6000 } } });
    expect((await api('GET', `/v2/${ep}/status/${queued}`)).json.status).toBe('IN_QUEUE');
    const syncJob = a['runsync']!.json.id as string;
    expect((await api('GET', `/v2/${ep}/status/${syncJob}`)).json.status).toBe('IN_QUEUE');
    const late = await api('GET', `/v2/${ep}/health`);
    expect(late.json.jobs.inQueue).toBe(2); // the refused submission never became a job
    console.log(JSON.stringify({ shutdown: 'sigterm', exitCode: exit.code, tookMs, workersLeft: 0 }));
  },
);

async function rawConnection(url: string): Promise<Socket> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => {}); // reset by the closing server: expected
  socket.resume(); // read whatever comes, to see the end
  await once(socket, 'connect');
  return socket;
}

it('a close is not held by a connection that never sent a request (a client pool spare)', async () => {
  const srv = await startTestServer({ shutdownGraceMs: GRACE_MS });
  const spare = await rawConnection(srv.url);
  const started = Date.now();
  await srv.close();
  // Node counts a never-used connection as busy until its headers timeout (30 s); the close must not wait for it.
  expect(Date.now() - started).toBeLessThan(GRACE_MS / 2);
  await waitUntil(() => spare.destroyed || spare.readableEnded, 5000);
});

it('a request still running when the grace period ends is cut off, and the close completes', async () => {
  const graceMs = 1000;
  const srv = await startTestServer({ shutdownGraceMs: graceMs });
  const slow = await rawConnection(srv.url);
  // A body that never arrives: the request stays in flight (until the 120 s request timeout, without the grace).
  slow.write(
    `POST /v2/none/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"in`,
  );
  await sleep(200);
  const started = Date.now();
  await srv.close();
  const took = Date.now() - started;
  expect(took).toBeGreaterThanOrEqual(graceMs - 50);
  expect(took).toBeLessThan(graceMs + 4000);
  await waitUntil(() => slow.destroyed || slow.readableEnded, 5000);
});
