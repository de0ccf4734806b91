// Multi-node (DESIGN.md §3 "Multi-node", docs/multinode.md): three `wharf serve` processes on loopback share one
// PostgreSQL schema. Wake-ups cross nodes through LISTEN/NOTIFY, one node leads, and under load the leader is killed
// with SIGKILL and another node restarted: no acknowledged job is lost, none completes twice, leadership moves.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { freePort, killAll, ROOT, spawnExampleWorker, spawnProc, workerLog, type Proc } from '../helpers/processes.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { gql } from '../helpers/graphql.ts';
import { ADMIN_KEY, request, type ApiResponse } from '../helpers/server.ts';

const unavailable = await pgUnavailable('Multi-node end-to-end test');
const SECRET_KEY = randomBytes(32).toString('base64');
const dirs: string[] = [];
afterEach(async () => {
  // Gracefully: a node killed outright would leave the workers its process executor started running.
  await killAll({ graceMs: 10_000 });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(dropSchemas);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  name: string;
  port: number;
  dataDir: string;
  proc: Proc;
  url: string;
}

async function startNode(name: string, store: string, port: number, dataDir: string, extra: string[]): Promise<Node> {
  const proc = spawnProc(
    [
      ...['src/cli/main.ts', 'serve', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir],
      ...['--store', store, '--node-id', name, '--executor', 'none', '--log-level', 'warn'],
      ...['--lease-ms', '3000', '--lost-job-grace-ms', '1500', '--sweep-interval-ms', '100', '--stop-wait-ms', '1000'],
      // The shared counters are checked below; the load itself must not hit them.
      ...['--rate-limit-overrides', 'run=1000000/100000,status=1000000/100000,purge-queue=2'],
      ...['--requests-per-worker', '1'],
      ...extra,
    ],
    { PATH: process.env.PATH, WHARF_ADMIN_KEY: ADMIN_KEY, WHARF_SECRET_KEY: SECRET_KEY },
  );
  const m = await proc.waitFor(/wharf listening on (http:\/\/[^\s]+)/, 30_000);
  return { name, port, dataDir, proc, url: m[1]! };
}

async function cluster(extra: string[] = []): Promise<{ store: string; nodes: Node[] }> {
  const store = schemaUrl(newSchema());
  // Started together: migrations and the admin bootstrap must be safe when several nodes start at once.
  const nodes = await Promise.all(
    ['na', 'nb', 'nc'].map(async (name) => {
      const dataDir = mkdtempSync(join(tmpdir(), `wharf-mn-${name}-`));
      dirs.push(dataDir);
      return startNode(name, store, await freePort(), dataDir, extra);
    }),
  );
  return { store, nodes };
}

const api = (n: Node, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
  request(`${n.url}${path}`, method, body, { key: ADMIN_KEY });

async function leaders(nodes: Node[]): Promise<Node[]> {
  const ready = await Promise.all(nodes.map((n) => request(`${n.url}/readyz`, 'GET').catch(() => null)));
  return nodes.filter((_, i) => ready[i]?.json?.leader === true);
}

async function waitUntil<T>(probe: () => Promise<T | null | false>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(25);
  }
}

async function createEndpoint(n: Node): Promise<string> {
  const tpl = await api(n, 'POST', '/v1/templates', { name: 'mn', imageName: 'file://./examples/echo-ts' });
  expect(tpl.status).toBe(200);
  const ep = await api(n, 'POST', '/v1/endpoints', { name: 'mn', templateId: tpl.json.id, workersMax: 0 });
  expect(ep.status).toBe(200);
  return ep.json.id as string;
}

/** A CPU endpoint (workersMax 1) whose process workers run test/fixtures/env-worker, made on node `n`. */
async function envWorkerEndpoint(n: Node, name: string, env: Record<string, string> = {}): Promise<string> {
  const tpl = await api(n, 'POST', '/v1/templates', {
    name,
    imageName: `file://${join(ROOT, 'test/fixtures/env-worker')}`,
    dockerStartCmd: ['node', 'worker.ts'],
    env,
  });
  expect(tpl.status).toBe(200);
  const created = await api(n, 'POST', '/v1/endpoints', {
    name,
    templateId: tpl.json.id,
    computeType: 'CPU',
    workersMax: 1,
  });
  expect(created.status).toBe(200);
  return created.json.id as string;
}

/** The job's status body once it is COMPLETED, asked of node `n`. */
const completed = (n: Node, ep: string, jobId: string): Promise<any> =>
  waitUntil(
    async () => {
      const r = await api(n, 'GET', `/v2/${ep}/status/${jobId}`);
      return r.json?.status === 'COMPLETED' ? r.json : null;
    },
    20_000,
    'the job',
  );

const worker = (n: Node, ep: string, podId: string): Proc =>
  spawnExampleWorker({
    url: n.url,
    endpointId: ep,
    podId,
    apiKey: ADMIN_KEY,
    env: { WHARF_WORKER_RETRY_BASE_MS: '100' },
  });

describe.skipIf(unavailable !== null)('multi-node: three wharf serve nodes sharing one PostgreSQL', () => {
  it('one leader; a job submitted on A is taken at once by a worker polling B; runsync, stream and limits cross nodes', async () => {
    // A 20 s take poll: without the cross-node wake-up a job would wait for the poll to end, not milliseconds.
    const { nodes } = await cluster(['--take-wait-ms', '20000', '--stream-wait-ms', '5000']);
    const [a, b, c] = nodes as [Node, Node, Node];
    expect(await waitUntil(async () => (await leaders(nodes)).length === 1, 10_000, 'one leader')).toBe(true);
    const ep = await createEndpoint(a);
    worker(b, ep, 'mn-w1');
    // Warm-up: the worker process is up and long-polling B.
    expect((await api(a, 'POST', `/v2/${ep}/runsync`, { input: { warm: true } })).json.status).toBe('COMPLETED');

    // /runsync on A completes from the result the worker posted to B; the take happened within milliseconds.
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await api(a, 'POST', `/v2/${ep}/runsync`, { input: { i } });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: 'COMPLETED', output: { echo: { i } } });
      delays.push(res.json.delayTime as number);
      await sleep(50); // the worker is back in its long poll on B
    }
    console.log(`multi-node: cross-node take delays (ms): ${delays.join(', ')}`);
    // Without the wake-up a job would wait for the worker's 20 s poll to end; a busy machine may add a second or two.
    for (const d of delays) expect(d).toBeLessThan(3000);

    // /stream on C sees the chunks the worker posts to B.
    const run = await api(a, 'POST', `/v2/${ep}/run`, { input: { stream: 5 } });
    const seen: unknown[] = [];
    let status = 'IN_QUEUE';
    for (let k = 0; k < 20 && status !== 'COMPLETED'; k++) {
      const s = await api(c, 'GET', `/v2/${ep}/stream/${run.json.id}`);
      expect(s.status).toBe(200);
      status = s.json.status;
      for (const chunk of s.json.stream ?? []) seen.push(chunk.output);
    }
    expect(status).toBe('COMPLETED');
    expect(seen).toEqual([0, 1, 2, 3, 4].map((chunk) => ({ chunk })));

    // Rate-limit counters are shared: purge-queue allows 2 per 10 s, spent on A and B, refused on C.
    expect((await api(a, 'POST', `/v2/${ep}/purge-queue`)).status).toBe(200);
    expect((await api(b, 'POST', `/v2/${ep}/purge-queue`)).status).toBe(200);
    expect((await api(c, 'POST', `/v2/${ep}/purge-queue`)).status).toBe(429);

    // A key revoked on A stops working on B and C at once, though both had just resolved (and cached) it.
    const made = await api(a, 'POST', '/v1/keys', { name: 'mn-revoked' });
    expect(made.status).toBe(200);
    const withKey = (n: Node) => request(`${n.url}/v1/endpoints`, 'GET', undefined, { key: made.json.key as string });
    for (const n of [b, c]) expect((await withKey(n)).status).toBe(200);
    expect((await api(a, 'DELETE', `/v1/keys/${made.json.id}`)).status).toBe(204);
    // The NOTIFY's trip: well inside the 5 s a cached resolution would otherwise be trusted.
    const revokedAt = Date.now();
    for (const n of [b, c]) {
      await waitUntil(async () => (await withKey(n)).status === 401, 5000, `the revocation to reach ${n.name}`);
    }
    expect(Date.now() - revokedAt).toBeLessThan(4000);
  }, 120_000);

  it("why jobs wait is shown on every node, from the leader's autoscaler, and by the next leader after a failover", async () => {
    const { nodes } = await cluster(['--executor', 'process', '--gpus', 'none']);
    const leader = await waitUntil(async () => (await leaders(nodes))[0] ?? null, 10_000, 'a leader');
    const followers = nodes.filter((n) => n !== leader) as [Node, Node];
    const ep = await createEndpoint(followers[0]);
    const job = await api(followers[1], 'POST', `/v2/${ep}/run`, { input: { n: 1 } });
    expect(job.status).toBe(200);
    // The leader's autoscaler says why (here: a GPU endpoint on nodes without GPUs); every node shows the same.
    const scalingOn = async (n: Node) => (await api(n, 'GET', `/v2/${ep}/health`)).json?.scaling ?? null;
    const why = await waitUntil(() => scalingOn(leader), 15_000, 'the scaling reason on the leader');
    expect(why.reason).toBe('never-placeable');
    for (const n of nodes) {
      await waitUntil(
        async () => JSON.stringify(await scalingOn(n)) === JSON.stringify(why),
        15_000,
        `the scaling reason on ${n.name}`,
      );
      const status = await api(n, 'GET', `/v2/${ep}/status/${job.json.id}`);
      expect(status.json).toMatchObject({ status: 'IN_QUEUE', queueReason: why });
    }
    // The leader dies and the endpoint changes (a data center no node is in): the next leader's view, not the dead
    // one's, is what every node shows from then on.
    await leader.proc.kill('SIGKILL');
    const next = await waitUntil(async () => (await leaders(followers))[0] ?? null, 10_000, 'a new leader');
    const other = followers.find((n) => n !== next)!;
    const patched = await api(other, 'PATCH', `/v1/endpoints/${ep}`, { dataCenterIds: ['CA-MTL-1'] });
    expect(patched.status).toBe(200);
    for (const n of [next, other]) {
      const now = await waitUntil(
        async () => {
          const scaling = await scalingOn(n);
          return scaling?.message?.includes('dataCenterIds') ? scaling : null;
        },
        15_000,
        `the new leader's reason on ${n.name}`,
      );
      expect(now.reason).toBe('never-placeable');
    }
  }, 90_000);

  it("a secret created on another node than the leader's starts the workers that lacked it at once", async () => {
    const { nodes } = await cluster(['--executor', 'process', '--gpus', 'none']);
    const leader = await waitUntil(async () => (await leaders(nodes))[0] ?? null, 10_000, 'a leader');
    const follower = nodes.find((n) => n !== leader)!;
    const ep = await envWorkerEndpoint(follower, 'needs-secret', { HF_TOKEN: '{{ RUNPOD_SECRET_hf_late }}' });
    const job = await api(follower, 'POST', `/v2/${ep}/run`, { input: { names: ['HF_TOKEN'] } });
    expect(job.status).toBe(200);
    // The leader's starts fail, naming the secret; after four the next is 8 s away (1, 2, 4, 8 s).
    const attempts = new Set<string>();
    await waitUntil(
      async () => {
        const workers = (await api(follower, 'GET', `/v1/endpoints/${ep}?includeWorkers=true`)).json.workers ?? [];
        for (const w of workers) if (/secret "hf_late"/.test(w.workerStateReason ?? '')) attempts.add(w.id);
        return attempts.size >= 4;
      },
      20_000,
      'four failed starts',
    );
    const at = Date.now();
    const secret = await gql(
      follower.url,
      ADMIN_KEY,
      'mutation ($input: SecretCreateInput) { secretCreate(input: $input) { id } }',
      { input: { name: 'hf_late', value: 'late-value' } },
    );
    expect(secret.json.errors, secret.text).toBeUndefined();
    const done = await completed(follower, ep, job.json.id);
    expect(done.output).toEqual({ env: { HF_TOKEN: 'late-value' } });
    expect(Date.now() - at).toBeLessThan(4_000);
  }, 90_000);

  it('a job queued on a follower at an endpoint without workers starts one on the leader at once, not at its next pass', async () => {
    // The autoscaler's period is a minute: only the job's own wake-up, crossing from the follower, can start the
    // worker within the bound below (the leader's supervisor heard only the jobs submitted on its own node).
    const { nodes } = await cluster(['--executor', 'process', '--gpus', 'none', '--scale-interval-ms', '60000']);
    const leader = await waitUntil(async () => (await leaders(nodes))[0] ?? null, 10_000, 'a leader');
    const follower = nodes.find((n) => n !== leader)!;
    await sleep(1000); // the leader's first pass, at its election, is over: the next is a minute away
    const ep = await envWorkerEndpoint(follower, 'cold');
    // The leader's pass for the endpoint's creation (its change reaches the leader at the next pass) is not awaited
    // here: a minute away, it cannot start anything in time, and an endpoint with no jobs starts no worker.
    const at = Date.now();
    const job = await api(follower, 'POST', `/v2/${ep}/run`, { input: { names: [] } });
    expect(job.status).toBe(200);
    const done = await completed(follower, ep, job.json.id);
    expect(done.output).toEqual({ env: {} });
    // A cold start here takes well under a second; the next pass would have come up to a minute later.
    expect(Date.now() - at).toBeLessThan(15_000);
  }, 90_000);

  it('kill -9 of the leader under load, then a restart of another node: nothing acknowledged lost, nothing done twice', async () => {
    const { store, nodes } = await cluster(['--take-wait-ms', '2000']);
    const leader = await waitUntil(async () => (await leaders(nodes))[0] ?? null, 10_000, 'a leader');
    const followers = nodes.filter((n) => n !== leader) as [Node, Node];
    const ep = await createEndpoint(followers[0]);
    const workers = [worker(followers[0], ep, 'mn-w1'), worker(followers[1], ep, 'mn-w2')];

    // Submitters spread over all three nodes; one stops at its first failure (its node died or restarts).
    const acked: Array<{ id: string; input: unknown }> = [];
    let failures = 0;
    let stop = false;
    let budget = 150;
    const loop = async (l: number, target: () => Node): Promise<void> => {
      for (let n = 0; !stop; n++) {
        // Load, not a flood: past the budget of the current phase the loops idle, so that the two workers can drain
        // every acknowledged job in the time given below even on a busy machine.
        if (acked.length >= budget) {
          await sleep(20);
          continue;
        }
        const input = { loop: l, n };
        try {
          const res = await api(target(), 'POST', `/v2/${ep}/run`, { input });
          if (res.status !== 200) throw new Error(`status ${res.status}`);
          acked.push({ id: res.json.id as string, input });
          await sleep(10);
        } catch {
          failures++;
          await sleep(200); // the node is gone: keep the load on the others
        }
      }
    };
    const live = new Set<Node>(nodes);
    const pick = (l: number) => () => [...live][l % live.size]!;
    const load = Promise.all(Array.from({ length: 6 }, (_, l) => loop(l, pick(l))));

    await waitUntil(async () => acked.length >= 100, 30_000, '100 acknowledged jobs');
    // Killed with requests in flight; the submitters notice by themselves (refused submissions).
    await leader.proc.kill('SIGKILL');
    const killedAt = Date.now();
    live.delete(leader);
    const next = await waitUntil(async () => (await leaders(followers))[0] ?? null, 10_000, 'a new leader');
    const handOverMs = Date.now() - killedAt;
    console.log(`multi-node: leadership moved from ${leader.name} to ${next.name} in ${handOverMs} ms`);
    expect(handOverMs).toBeLessThan(5000);

    // Restart the new leader gracefully on the same port: the role moves again, its worker reconnects by itself.
    const before = acked.length;
    budget = before + 150;
    await waitUntil(async () => acked.length >= before + 80, 30_000, '80 more acknowledged jobs');
    const restartAt = acked.length;
    budget = restartAt + 150;
    live.delete(next);
    await next.proc.kill('SIGTERM');
    const last = followers.find((n) => n !== next)!;
    await waitUntil(async () => (await leaders([last]))[0] ?? null, 10_000, 'the last node leads');
    const restarted = await startNode(next.name, store, next.port, next.dataDir, ['--take-wait-ms', '2000']);
    live.add(restarted);
    await waitUntil(async () => acked.length >= restartAt + 100, 30_000, '100 more acknowledged jobs');
    stop = true;
    await load;
    expect(failures).toBeGreaterThan(0);

    // Drained; every acknowledged job completed exactly once, with its own result.
    const check = [last, restarted];
    let jobs: unknown;
    await waitUntil(
      async () => {
        const h = await api(last, 'GET', `/v2/${ep}/health`);
        jobs = h.json?.jobs;
        return h.json?.jobs?.inQueue === 0 && h.json?.jobs?.inProgress === 0;
      },
      120_000,
      'the queue drained',
    ).catch((error: unknown) => {
      throw new Error(
        `${String(error)}; jobs: ${JSON.stringify(jobs)}; workers alive: ${workers.map((w) => w.alive())}`,
      );
    });
    const posted = new Map<string, number>();
    for (const w of workers) {
      for (const line of workerLog(w)) {
        if (line.message === 'Result posted' && line.requestId) {
          posted.set(line.requestId, (posted.get(line.requestId) ?? 0) + 1);
        }
      }
    }
    expect(new Set(acked.map((j) => j.id)).size).toBe(acked.length);
    for (let i = 0; i < acked.length; i += 50) {
      const batch = acked.slice(i, i + 50);
      const res = await Promise.all(batch.map((j, k) => api(check[k % 2]!, 'GET', `/v2/${ep}/status/${j.id}`)));
      batch.forEach((j, k) => {
        expect(res[k]!.json, j.id).toMatchObject({ status: 'COMPLETED', output: { echo: j.input } });
        expect(posted.get(j.id) ?? 0, j.id).toBe(1);
      });
    }
    const health = await api(restarted, 'GET', `/v2/${ep}/health`);
    expect(health.json.jobs.failed).toBe(0);
    console.log(`multi-node: ${acked.length} acknowledged jobs, ${failures} refused submissions, all completed once`);
  }, 180_000);
});
