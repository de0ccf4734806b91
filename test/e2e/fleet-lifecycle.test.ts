// The life of real worker processes under the supervisor: graceful shutdown of the server while a job runs, a
// rolling update when the endpoint changes (surge first: a broken release leaves the old worker serving), and
// FlashBoot's standby worker.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, expect, it } from 'vitest';

import { closeFleet, isAlive, sleep, startFleet, waitUntil, workerProcesses, type Fleet } from '../helpers/fleet.ts';
import { ROOT } from '../helpers/processes.ts';
import { startTestServer } from '../helpers/server.ts';

let t: Fleet | undefined;
const dirs: string[] = [];

afterEach(async () => {
  const fleet = t;
  t = undefined;
  if (!fleet) return;
  try {
    await closeFleet(fleet);
  } finally {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }
});

function environ(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

it('on close() (SIGTERM) the worker finishes its running job, the result is stored, no process is left', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-fleet-shutdown-'));
  dirs.push(dataDir);
  t = await startFleet({ dataDir });
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 5 });
  // Long enough that the server still answers when the worker has logged its SIGTERM, even on a slow machine.
  const id = await t.run(ep, { sleepMs: 5000 });
  await t.untilRunning(ep, id);
  const pids = t.pids();
  expect(pids).toHaveLength(1);
  expect(isAlive(pids[0]!)).toBe(true);

  const closing = t.server.close();
  // While the workers are being stopped the server still answers: the worker says it got SIGTERM.
  let sawSigterm = false;
  for (const until = Date.now() + 4_000; !sawSigterm && Date.now() < until; await sleep(25)) {
    const res = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`).catch(() => null);
    if (res?.status !== 200) break; // the server has stopped answering: too late to look
    sawSigterm = (res.json.lines as Array<{ message: string }>).some((l) => /SIGTERM received/.test(l.message));
  }
  expect(sawSigterm).toBe(true);
  await closing;

  expect(t.pids()).toEqual([]);
  expect(isAlive(pids[0]!)).toBe(false);
  expect(workerProcesses([ep])).toEqual([]);

  // The result was stored before the server stopped: a new server on the same data directory has it.
  const again = await startTestServer({ dataDir, executor: 'none' });
  try {
    const res = await again.api('GET', `/v2/${ep}/status/${id}`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'COMPLETED', output: { echo: { sleepMs: 5000 } } });
  } finally {
    await again.server.close();
  }
});

it('a worker that exits on SIGTERM only once its long polls return (the official SDK) stops by itself, no SIGKILL', async () => {
  // The default 20 s polls: held to their end, the worker would outlive the 10 s grace and be killed.
  const dir = mkdtempSync(join(tmpdir(), 'wharf-fleet-sdk-stop-'));
  dirs.push(dir);
  const marker = join(dir, 'exit');
  t = await startFleet({ takeWaitMs: 20_000, stopWaitMs: 20_000 });
  const ep = await t.endpoint(
    { workersMax: 1, idleTimeout: 1 },
    {
      imageName: `file://${join(ROOT, 'test/fixtures/sdk-shutdown-worker')}`,
      dockerStartCmd: ['node', 'worker.ts'],
      env: { EXIT_MARKER: marker },
    },
  );
  expect(await t.waitJob(ep, await t.run(ep, { n: 1 }))).toMatchObject({
    status: 'COMPLETED',
    output: { echo: { n: 1 } },
  });
  const [pid] = t.pids();
  // idleTimeout, then the stop: its waiting take and stop polls are answered, and it exits within a few seconds.
  await waitUntil(() => !isAlive(pid!), 8_000);
  expect(readFileSync(marker, 'utf8')).toBe('clean-exit');
  await waitUntil(async () => (await t!.workers(ep)).length === 0, 5_000);
});

it('rolls workers on an endpoint change: new jobs go to a new-version worker, the old one finishes, then stops', async () => {
  t = await startFleet();
  // The long job outlasts the new worker's cold start on a slow machine; the idle timeout outlasts the whole test.
  const ep = await t.endpoint({ workersMax: 2, idleTimeout: 60, scalerType: 'REQUEST_COUNT', scalerValue: 1 });
  const long = await t.run(ep, { sleepMs: 8000 });
  await t.untilRunning(ep, long);
  const oldWorker = (await t.status(ep, long)).workerId as string;
  const [oldPid] = t.pids();
  expect(environ(oldPid!)).not.toContain('MODEL=v2');

  const patched = await t.api('PATCH', `/v1/endpoints/${ep}`, { env: { MODEL: 'v2' } });
  expect(patched.status).toBe(200);
  const quick = await t.run(ep, { n: 'after update' });
  const q = await t.waitJob(ep, quick, 15_000);
  expect(q.status).toBe('COMPLETED');
  expect(q.workerId).not.toBe(oldWorker);
  // The old worker is still running its job meanwhile.
  expect((await t.status(ep, long)).status).toBe('IN_PROGRESS');

  const pods = await t.workers(ep);
  const newPod = pods.find((w) => w.id === q.workerId);
  const oldPod = pods.find((w) => w.id === oldWorker);
  expect(newPod?.slsVersion).toBeGreaterThan(oldPod?.slsVersion);
  const newPids = t.pids().filter((p) => p !== oldPid);
  expect(newPids.length).toBeGreaterThanOrEqual(1);
  for (const pid of newPids) expect(environ(pid)).toContain('MODEL=v2');

  const l = await t.waitJob(ep, long, 20_000);
  expect(l).toMatchObject({ status: 'COMPLETED', workerId: oldWorker });
  // Then the old worker goes (retired once its replacement was ready: it took nothing after its job); what stays
  // (idleTimeout 60 s) runs the new version: the quick job's worker, and the replacement started beside the busy
  // old worker (surge first), when they are not the same.
  await waitUntil(() => !isAlive(oldPid!) && !t!.pids().includes(oldPid!), 10_000);
  await waitUntil(async () => (await t!.workers(ep)).every((w) => w.id !== oldWorker), 5_000);
  expect(t.pids().length).toBeGreaterThanOrEqual(1);
  for (const pid of t.pids()) expect(environ(pid)).toContain('MODEL=v2');
  const left = await t.workers(ep);
  expect(left.map((w) => w.id)).toContain(q.workerId);
  for (const w of left) expect(w.slsVersion).toBe(newPod?.slsVersion);
});

it('a rollout to a template that cannot start keeps the old worker serving; the fixed one then replaces it', async () => {
  t = await startFleet();
  const ep = await t.endpoint({ workersMin: 1, workersMax: 1, idleTimeout: 60 });
  const first = await t.waitJob(ep, await t.run(ep, { n: 'v1' }));
  expect(first.status).toBe('COMPLETED');
  const oldWorker = first.workerId as string;
  const [oldPid] = t.pids();

  // The new template exits at once: its replacement starts beside the old worker and fails, again and again.
  const templateId = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId as string;
  const broken = await t.api('PATCH', `/v1/templates/${templateId}`, {
    dockerStartCmd: ['node', '-e', 'console.error("boom: bad release"); process.exit(1)'],
  });
  expect(broken.status).toBe(200);
  const h = await t.untilScaling(ep, 'crash-loop');
  expect(h.scaling.message).toContain('boom: bad release');
  // Before surge-first updates, the old worker was stopped as soon as its replacement could start: no worker at all.
  expect(isAlive(oldPid!)).toBe(true);
  const during = await t.waitJob(ep, await t.run(ep, { n: 'during the failed rollout' }), 10_000);
  expect(during).toMatchObject({ status: 'COMPLETED', workerId: oldWorker });

  // The fixed template replaces it: the new worker is up before the old one goes.
  const fixed = await t.api('PATCH', `/v1/templates/${templateId}`, {
    dockerStartCmd: ['node', 'worker.ts'],
    env: { WHARF_WORKER_RETRY_BASE_MS: '100', MODEL: 'v3' },
  });
  expect(fixed.status).toBe(200);
  // Gone, and its pid file too (removed just after the process exits).
  await waitUntil(() => !isAlive(oldPid!) && !t!.pids().includes(oldPid!), 20_000);
  const [newPid] = t.pids();
  expect(newPid).not.toBe(oldPid);
  expect(environ(newPid!)).toContain('MODEL=v3');
  const after = await t.waitJob(ep, await t.run(ep, { n: 'after the fix' }), 10_000);
  expect(after.status).toBe('COMPLETED');
  expect(after.workerId).not.toBe(oldWorker);
  expect(t.pids()).toEqual([newPid]);
});

it('fixing a release whose worker hangs at start keeps the last good worker until the fix is up', async () => {
  t = await startFleet();
  const ep = await t.endpoint({ workersMin: 1, workersMax: 1, idleTimeout: 60 });
  const first = await t.waitJob(ep, await t.run(ep, { n: 'v1' }));
  expect(first.status).toBe('COMPLETED');
  const [goodPid] = t.pids();
  const templateId = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId as string;

  // v2 starts but never calls in: its worker stays initializing beside the good one.
  const hanging = ['node', '-e', 'setInterval(() => {}, 1000)'];
  expect((await t.api('PATCH', `/v1/templates/${templateId}`, { dockerStartCmd: hanging })).status).toBe(200);
  await waitUntil(() => t!.pids().length === 2, 10_000);
  const hungPid = t.pids().find((p) => p !== goodPid)!;
  await sleep(500);
  expect(isAlive(goodPid!)).toBe(true);

  // v3 fixes it: the v2 worker, still starting, goes at once; the good one serves until v3 is up.
  const fixed = await t.api('PATCH', `/v1/templates/${templateId}`, {
    dockerStartCmd: ['node', 'worker.ts'],
    env: { WHARF_WORKER_RETRY_BASE_MS: '100', MODEL: 'v3' },
  });
  expect(fixed.status).toBe(200);
  const after = await t.waitJob(ep, await t.run(ep, { n: 'after the fix' }), 10_000);
  expect(after.status).toBe('COMPLETED');
  await waitUntil(() => !isAlive(hungPid) && !isAlive(goodPid!), 15_000);
  await waitUntil(() => t!.pids().length === 1 && !t!.pids().includes(hungPid), 5_000);
  expect(environ(t.pids()[0]!)).toContain('MODEL=v3');
});

it('under steady load a busy outdated worker is still replaced: it retires after its job once the new one is up', async () => {
  // The default pass interval: a worker between two 1 s jobs is idle for a few ms, so a pass almost never sees it
  // idle (replacing only idle outdated workers left it serving for good under load).
  t = await startFleet({ scaleIntervalMs: 250 });
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 60 });
  const ids: string[] = [];
  const submit = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) ids.push(await t!.run(ep, { sleepMs: 1000, n: ids.length }));
  };
  await submit(3);
  const first = await t.waitJob(ep, ids[0]!);
  const oldWorker = first.workerId as string;
  const [oldPid] = t.pids();

  expect((await t.api('PATCH', `/v1/endpoints/${ep}`, { env: { MODEL: 'v2' } })).status).toBe(200);
  // The queue never empties, so the old worker is never idle at a pass: it must still make way.
  for (const until = Date.now() + 12_000; isAlive(oldPid!) && Date.now() < until; await sleep(100)) {
    if ((await t.health(ep)).jobs.inQueue < 2) await submit(2);
  }
  expect(isAlive(oldPid!)).toBe(false);
  await waitUntil(() => !t!.pids().includes(oldPid!), 5_000);
  const finals = [];
  for (const id of ids) finals.push(await t.waitJob(ep, id, 20_000));
  expect(finals.every((f) => f.status === 'COMPLETED')).toBe(true);
  const newWorkers = new Set(finals.map((f) => f.workerId as string).filter((w) => w !== oldWorker));
  expect(newWorkers.size).toBeGreaterThanOrEqual(1);
  for (const pid of t.pids()) expect(environ(pid)).toContain('MODEL=v2');
});

it('FlashBoot keeps a standby worker after idleTimeout; a job then starts faster than a cold start', async () => {
  t = await startFleet();
  const cold = await t.endpoint({ workersMax: 1, idleTimeout: 1 });
  const flash = await t.endpoint({ workersMax: 1, idleTimeout: 1, flashboot: true });

  // Cold start: the first job waits for a worker process to start.
  const c = await t.waitJob(cold, await t.run(cold, { n: 'cold' }));
  expect(c.status).toBe('COMPLETED');
  const f1 = await t.waitJob(flash, await t.run(flash, { n: 'first' }));
  expect(f1.status).toBe('COMPLETED');

  // After idleTimeout the FlashBoot worker stays, as standby; the other endpoint goes back to zero.
  let h: any;
  await waitUntil(
    async () => {
      h = await t!.health(flash);
      return h.workers.standby === 1;
    },
    10_000,
    () => JSON.stringify(h),
  );
  expect(h.workers).toMatchObject({ standby: 1, idle: 0, running: 0, initializing: 0 });
  const standbyPids = t.pids();
  await sleep(1500);
  expect((await t.health(flash)).workers).toMatchObject({ standby: 1, idle: 0 });
  await waitUntil(async () => (await t!.workers(cold)).length === 0, 10_000);

  const f2 = await t.waitJob(flash, await t.run(flash, { n: 'after standby' }));
  expect(f2).toMatchObject({ status: 'COMPLETED', workerId: f1.workerId });
  console.log(
    `cold start delayTime ${c.delayTime} ms (first FlashBoot job ${f1.delayTime} ms); ` +
      `FlashBoot standby delayTime ${f2.delayTime} ms`,
  );
  expect(f2.delayTime).toBeLessThan(c.delayTime);
  expect(t.pids()).toEqual(standbyPids);

  // A standby of an outdated version is not kept: after an update, no worker is left without jobs.
  await waitUntil(async () => (await t!.health(flash)).workers.standby === 1, 10_000);
  expect((await t.api('PATCH', `/v1/endpoints/${flash}`, { env: { MODEL: 'v2' } })).status).toBe(200);
  await waitUntil(() => !isAlive(standbyPids[0]!), 10_000);
  await waitUntil(async () => (await t!.workers(flash)).length === 0, 5_000);
  expect((await t.health(flash)).workers).toMatchObject({ standby: 0, idle: 0, running: 0, initializing: 0 });
  expect(t.pids()).toEqual([]);
});

it("a FlashBoot standby makes way when another endpoint's start waits for its GPU", async () => {
  t = await startFleet({ gpus: 'NVIDIA A40:1' });
  const gpu = { computeType: 'GPU', gpuTypeIds: ['NVIDIA A40'], gpuCount: 1, workersMax: 1, idleTimeout: 1 };
  const flash = await t.endpoint({ ...gpu, flashboot: true });
  const other = await t.endpoint(gpu);
  expect((await t.waitJob(flash, await t.run(flash, { n: 1 }))).status).toBe('COMPLETED');
  await waitUntil(
    async () => (await t!.health(flash)).workers.standby === 1,
    10_000,
    () => 'the standby',
  );

  // The only GPU is the standby's: the other endpoint's job gets it once the standby is gone.
  expect(await t.waitJob(other, await t.run(other, { n: 2 }), 20_000)).toMatchObject({ status: 'COMPLETED' });
  expect((await t.health(flash)).workers).toMatchObject({ standby: 0 });
  // And the FlashBoot endpoint still starts when it gets work again (a cold start, once the GPU is free).
  expect(await t.waitJob(flash, await t.run(flash, { n: 3 }), 20_000)).toMatchObject({ status: 'COMPLETED' });
}, 60_000);

it('a FlashBoot standby on the only GPU serves again when workersMin is raised: its GPU is its own endpoint’s', async () => {
  t = await startFleet({ gpus: 'NVIDIA A40:1' });
  const flash = await t.endpoint({
    computeType: 'GPU',
    gpuTypeIds: ['NVIDIA A40'],
    gpuCount: 1,
    workersMax: 1,
    idleTimeout: 1,
    flashboot: true,
  });
  expect((await t.waitJob(flash, await t.run(flash, { n: 1 }))).status).toBe('COMPLETED');
  await waitUntil(
    async () => (await t!.health(flash)).workers.standby === 1,
    10_000,
    () => 'the standby',
  );
  const [pid] = t.pids();

  // No job comes to wake it: the supervisor must bring it back rather than wait for a GPU that it holds itself.
  expect((await t.api('PATCH', `/v1/endpoints/${flash}`, { workersMin: 1 })).status).toBe(200);
  let h: any;
  await waitUntil(
    async () => {
      h = await t!.health(flash);
      return h.workers.idle === 1;
    },
    5_000,
    () => JSON.stringify(h),
  );
  expect(h.workers).toMatchObject({ idle: 1, standby: 0, throttled: 0 });
  expect(h.scaling).toBeUndefined();
  expect(t.pids()).toEqual([pid]);
  expect((await t.api('PATCH', `/v1/endpoints/${flash}`, { workersMin: 0, workersMax: 0 })).status).toBe(200);
});
