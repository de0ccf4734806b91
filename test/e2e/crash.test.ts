// Durability (DESIGN.md §1 principles 1–3): the server as a real process is killed with SIGKILL under load and
// restarted on the same data directory. Nothing it acknowledged may be lost, and every job completes exactly once.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { ADMIN_KEY, request, type ApiResponse } from '../helpers/server.ts';
import { freePort, killAll, spawnExampleWorker, spawnProc, workerLog, type Proc } from '../helpers/processes.ts';

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ServerProc {
  proc: Proc;
  url: string;
}

async function serve(port: number, dataDir: string, executor = 'none', extra: string[] = []): Promise<ServerProc> {
  const proc = spawnProc(
    [
      'src/cli/main.ts',
      'serve',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
      '--executor',
      executor,
      '--take-wait-ms',
      '1000',
      '--stop-wait-ms',
      '1000',
      '--lease-ms',
      '3000',
      '--lost-job-grace-ms',
      '1500',
      '--sweep-interval-ms',
      '100',
      '--log-level',
      'warn',
      ...extra,
    ],
    { PATH: process.env.PATH, WHARF_ADMIN_KEY: ADMIN_KEY },
  );
  const m = await proc.waitFor(/wharf listening on (http:\/\/[^\s]+)/, 20_000);
  return { proc, url: m[1]! };
}

const api = (s: ServerProc, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
  request(`${s.url}${path}`, method, body, { key: ADMIN_KEY });

async function createEndpoint(s: ServerProc): Promise<string> {
  const tpl = await api(s, 'POST', '/v1/templates', {
    name: 'crash-tpl',
    imageName: 'file://./examples/echo-ts',
    dockerStartCmd: ['node', 'worker.ts'],
  });
  expect(tpl.status).toBe(200);
  const ep = await api(s, 'POST', '/v1/endpoints', { name: 'crash', templateId: tpl.json.id, workersMax: 0 });
  expect(ep.status).toBe(200);
  return ep.json.id as string;
}

interface Acked {
  id: string;
  input: { loop: number; n: number; text: string };
}

/** `loops` concurrent submitters; each stops at its first failed request (the server died). */
function submitters(s: ServerProc, ep: string, loops: number, max: number) {
  const acked: Acked[] = [];
  let failures = 0;
  let stopped = false;
  let issued = 0;
  const loop = async (l: number): Promise<void> => {
    for (let n = 0; !stopped && issued < max; n++) {
      issued++;
      const input = { loop: l, n, text: `job ${l}/${n} ✓` };
      try {
        const res = await api(s, 'POST', `/v2/${ep}/run`, { input });
        if (res.status !== 200 || typeof res.json?.id !== 'string') {
          failures++;
          return;
        }
        acked.push({ id: res.json.id as string, input });
      } catch {
        failures++;
        return;
      }
    }
  };
  const all = Promise.all(Array.from({ length: loops }, (_, l) => loop(l)));
  return {
    acked,
    failures: () => failures,
    done: all,
    stop: () => {
      stopped = true;
    },
  };
}

async function waitUntil(pred: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(25);
  }
}

/** Status of every job, a few requests at a time. */
async function statuses(s: ServerProc, ep: string, ids: string[]): Promise<Map<string, ApiResponse>> {
  const out = new Map<string, ApiResponse>();
  for (let i = 0; i < ids.length; i += 32) {
    const batch = ids.slice(i, i + 32);
    const res = await Promise.all(batch.map((id) => api(s, 'GET', `/v2/${ep}/status/${id}`)));
    batch.forEach((id, k) => out.set(id, res[k]!));
  }
  return out;
}

async function drained(s: ServerProc, ep: string): Promise<boolean> {
  const h = await api(s, 'GET', `/v2/${ep}/health`);
  return h.status === 200 && h.json.jobs.inQueue === 0 && h.json.jobs.inProgress === 0;
}

/** Per job id, how often the worker logged `message` for it. */
function countLog(w: Proc, message: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const l of workerLog(w)) {
    if (l.message === message && l.requestId) counts.set(l.requestId, (counts.get(l.requestId) ?? 0) + 1);
  }
  return counts;
}

function expectCompletedOnce(w: Proc, jobs: Acked[], finals: Map<string, ApiResponse>): void {
  const posted = countLog(w, 'Result posted');
  for (const job of jobs) {
    const res = finals.get(job.id)!;
    expect(res.status, job.id).toBe(200);
    expect(res.json.status, job.id).toBe('COMPLETED');
    // The worker echoes its input: each job carries its own result, not a neighbour's.
    expect(res.json.output, job.id).toEqual({ echo: job.input });
    // At most one result post for the job was accepted (2xx) by the server, across both server lives. None is
    // possible: the server committed the result and was killed before it answered, and the worker's retry then got
    // 409 (the job was already final); the job is COMPLETED with its output all the same.
    expect(posted.get(job.id) ?? 0, job.id).toBeLessThanOrEqual(1);
  }
}

describe('kill -9 of the server', () => {
  it('during concurrent submissions: every acknowledged job survives and completes exactly once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-crash-'));
    dirs.push(dataDir);
    const port = await freePort();
    let s = await serve(port, dataDir);
    const ep = await createEndpoint(s);

    const load = submitters(s, ep, 8, 2000);
    await waitUntil(() => load.acked.length >= 200, 20_000, '200 acknowledged submissions');
    await s.proc.kill('SIGKILL');
    await load.done;
    const acked = [...load.acked];
    // The kill landed mid-load: submissions were still in flight and failed.
    expect(load.failures()).toBeGreaterThan(0);
    expect(acked.length).toBeGreaterThanOrEqual(200);
    expect(new Set(acked.map((a) => a.id)).size).toBe(acked.length);

    s = await serve(port, dataDir);
    const after = await statuses(
      s,
      ep,
      acked.map((a) => a.id),
    );
    for (const a of acked) {
      expect(after.get(a.id)!.status, a.id).toBe(200);
      expect(after.get(a.id)!.json.status, a.id).toBe('IN_QUEUE');
    }

    const w = spawnExampleWorker({ url: s.url, endpointId: ep, podId: 'crash-w1', apiKey: ADMIN_KEY });
    await waitUntil(() => drained(s, ep), 20_000, 'the queue drained');
    const finals = await statuses(
      s,
      ep,
      acked.map((a) => a.id),
    );
    expectCompletedOnce(w, acked, finals);
    const health = await api(s, 'GET', `/v2/${ep}/health`);
    expect(health.json.jobs.failed).toBe(0);
    expect(health.json.jobs.completed).toBeGreaterThanOrEqual(acked.length);
  });

  it('while a worker completes jobs: no accepted result is lost, every job completes exactly once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-crash-'));
    dirs.push(dataDir);
    const port = await freePort();
    let s = await serve(port, dataDir);
    const ep = await createEndpoint(s);
    const load = submitters(s, ep, 8, 300);
    await load.done;
    const jobs = [...load.acked];
    expect(jobs.length).toBe(300);

    const w = spawnExampleWorker({
      url: s.url,
      endpointId: ep,
      podId: 'crash-w2',
      apiKey: ADMIN_KEY,
      env: { WHARF_WORKER_RETRY_BASE_MS: '100' },
    });
    await waitUntil(() => countLog(w, 'Result posted').size >= 100, 20_000, '100 results posted');
    await s.proc.kill('SIGKILL');
    const acceptedBeforeKill = [...countLog(w, 'Result posted').keys()];
    expect(acceptedBeforeKill.length).toBeGreaterThanOrEqual(100);
    expect(acceptedBeforeKill.length).toBeLessThan(jobs.length);

    // Same port and data directory: the running worker reconnects by itself.
    s = await serve(port, dataDir);
    const survived = await statuses(s, ep, acceptedBeforeKill);
    for (const id of acceptedBeforeKill) {
      expect(survived.get(id)!.json.status, id).toBe('COMPLETED');
    }

    await waitUntil(() => drained(s, ep), 20_000, 'the queue drained after the restart');
    const finals = await statuses(
      s,
      ep,
      jobs.map((j) => j.id),
    );
    expectCompletedOnce(w, jobs, finals);
    // A result the server accepted before dying was never run again.
    const taken = countLog(w, 'Job taken');
    for (const id of acceptedBeforeKill) expect(taken.get(id), id).toBe(1);
    expect(w.alive()).toBe(true);
  });
});

describe('kill -9 of the server with workers it started', () => {
  it('a crash loop of the server uses up no attempt of the jobs its workers were running', async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-crash-fleet-'));
    dirs.push(dataDir);
    // Two hand-outs allowed: before the fix, the second restart failed the job ("worker … was lost (server
    // restarted) on attempt 2 of 2") though no worker ever failed it.
    const flags = ['--max-attempts', '2', '--scale-interval-ms', '100', '--worker-ping-interval-ms', '1000'];
    let s = await serve(port, dataDir, 'process', flags);
    const tpl = await api(s, 'POST', '/v1/templates', {
      name: 'crash-fleet',
      imageName: 'file://./examples/echo-ts',
      dockerStartCmd: ['node', 'worker.ts'],
    });
    const ep = (
      await api(s, 'POST', '/v1/endpoints', {
        name: 'crash-fleet',
        templateId: tpl.json.id,
        computeType: 'CPU',
        workersMax: 1,
        idleTimeout: 60,
      })
    ).json.id as string;
    const id = (await api(s, 'POST', `/v2/${ep}/run`, { input: { sleepMs: 120_000 } })).json.id as string;
    const running = async (): Promise<boolean> =>
      (await api(s, 'GET', `/v2/${ep}/status/${id}`)).json?.status === 'IN_PROGRESS';
    try {
      for (let restart = 1; restart <= 3; restart++) {
        await waitUntil(running, 30_000, `the job running before restart ${restart}`);
        await s.proc.kill('SIGKILL');
        // The restarted server stops the previous run's worker (an orphan) and hands its job back to the queue.
        s = await serve(port, dataDir, 'process', flags);
      }
      await waitUntil(running, 30_000, 'the job running after the last restart');
      const status = (await api(s, 'GET', `/v2/${ep}/status/${id}`)).json;
      expect(status).toMatchObject({ status: 'IN_PROGRESS', retries: 3 });
      expect((await api(s, 'POST', `/v2/${ep}/cancel/${id}`)).json.status).toBe('CANCELLED');
    } finally {
      // SIGTERM: the server stops the worker it started (a SIGKILL would leave it behind).
      await s.proc.kill('SIGTERM');
      await waitUntil(() => !s.proc.alive(), 30_000, 'the server to stop');
    }
  }, 180_000);
});
