// Jobs through workers the supervisor started (process executor, examples/echo-ts): cancel through the stop
// channel, streaming and progress through the SDK, and the worker logs API.

import { afterEach, beforeEach, expect, it } from 'vitest';

import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';

let t: Fleet;

beforeEach(async () => {
  t = await startFleet();
});
afterEach(async () => {
  await closeFleet(t);
});

async function logs(ep: string, query = ''): Promise<Array<Record<string, any>>> {
  const res = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000${query}`);
  expect(res.status).toBe(200);
  return res.json.lines;
}

it('cancels a running job through the stop channel; the worker stays and takes the next job', async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 5 });
  const id = await t.run(ep, { sleepMs: 20_000 });
  await t.untilRunning(ep, id);
  const worker = (await t.status(ep, id)).workerId as string;
  const pids = t.pids();
  expect(pids).toHaveLength(1);
  // The handler runs (a stop that overtakes the take answer would keep the job from starting at all instead).
  await waitUntil(async () => (await logs(ep, `&jobId=${id}`)).some((l) => /Job taken/.test(l.message)), 10_000);

  const res = await t.api('POST', `/v2/${ep}/cancel/${id}`);
  expect(res.status).toBe(200);
  expect((await t.status(ep, id)).status).toBe('CANCELLED');

  // The SDK aborted the handler's signal: it says so in the job's log, and posts nothing for it.
  await waitUntil(async () => (await logs(ep, `&jobId=${id}`)).some((l) => /Stop requested/.test(l.message)), 5_000);
  await waitUntil(async () => (await logs(ep, `&jobId=${id}`)).some((l) => /no result posted/.test(l.message)), 5_000);
  await waitUntil(async () => {
    const h = await t.health(ep);
    return h.workers.idle === 1 && h.workers.running === 0;
  }, 5_000);

  const next = await t.run(ep, { after: 'cancel' });
  const s = await t.waitJob(ep, next, 10_000);
  expect(s).toMatchObject({ status: 'COMPLETED', output: { echo: { after: 'cancel' } }, workerId: worker });
  expect(t.pids()).toEqual(pids);
  expect((await t.status(ep, id)).status).toBe('CANCELLED');
});

it('streams chunks to /stream and shows progress in /status while the job runs', async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 5 });

  const streamed = await t.run(ep, { stream: 5 });
  const seen: unknown[] = [];
  for (let i = 0; i < 100; i++) {
    const res = await t.api('GET', `/v2/${ep}/stream/${streamed}`);
    expect(res.status).toBe(200);
    seen.push(...(res.json.stream as unknown[]));
    if (res.json.status === 'COMPLETED') break;
  }
  expect(seen).toEqual([0, 1, 2, 3, 4].map((chunk) => ({ output: { chunk } })));
  expect((await t.status(ep, streamed)).status).toBe('COMPLETED');

  const slow = await t.run(ep, { progress: true, sleepMs: 2000 });
  let running: any;
  await waitUntil(
    async () => {
      running = await t.status(ep, slow);
      return running.status === 'IN_PROGRESS' && running.output === 'almost';
    },
    10_000,
    () => JSON.stringify(running),
  );
  const final = await t.waitJob(ep, slow, 10_000);
  expect(final).toMatchObject({ status: 'COMPLETED', output: { echo: { progress: true, sleepMs: 2000 } } });
});

it("returns the workers' log lines, filterable by job id and worker id", async () => {
  const ep = await t.endpoint({ workersMax: 1, idleTimeout: 5 });
  const a = await t.run(ep, { n: 'a' });
  const b = await t.run(ep, { n: 'b', fail: 'bad input b' });
  expect((await t.waitJob(ep, a)).status).toBe('COMPLETED');
  const sb = await t.waitJob(ep, b);
  expect(sb.status).toBe('FAILED');

  const all = await logs(ep);
  const worker = sb.workerId as string;
  expect(all.length).toBeGreaterThan(3);
  expect(all.every((l) => l.workerId === worker)).toBe(true);
  expect(all.some((l) => l.jobId === null && /started/.test(l.message))).toBe(true);
  const seqs = all.map((l) => l.seq as number);
  expect(seqs).toEqual([...seqs].sort((x, y) => x - y));

  const ofB = await logs(ep, `&jobId=${b}`);
  expect(ofB.length).toBeGreaterThan(0);
  expect(ofB.every((l) => l.jobId === b)).toBe(true);
  expect(ofB.some((l) => l.level === 'ERROR' && l.message.includes('bad input b'))).toBe(true);
  const ofA = await logs(ep, `&jobId=${a}`);
  expect(ofA.some((l) => l.message === 'Job taken')).toBe(true);
  expect(ofA.some((l) => l.message.includes('bad input b'))).toBe(false);

  // The worker keeps logging (its heartbeat, the stop channel): compare up to the last line seen above.
  const last = seqs[seqs.length - 1]!;
  const byWorker = (await logs(ep, `&workerId=${worker}`)).filter((l) => l.seq <= last);
  expect(byWorker).toEqual(all);
  expect(await logs(ep, '&workerId=nobody')).toEqual([]);
  // `after` is a cursor: only lines newer than it.
  expect((await logs(ep, `&after=${last}`)).every((l) => l.seq > last)).toBe(true);
  expect((await logs(ep, `&after=${seqs[0]}`))[0]?.seq).toBe(seqs[1]);
});

it('refreshWorker recycles the worker after each job without counting it as a crash', async () => {
  // The supervisor retires a worker that posted stopPod and stops it on its next pass; with a slow pass the worker
  // exits by itself first, the case where a recycle could be mistaken for a crash.
  await t.close();
  t = await startFleet({ scaleIntervalMs: 1000 });
  // A worker that stops itself (exit code 0) after every result, as the SDK's refreshWorker option does.
  const script =
    "import { start } from '../../src/sdk/worker/index.ts'; " +
    'start({ handler: (job) => ({ echo: job.input }), refreshWorker: true });';
  const ep = await t.endpoint(
    { workersMax: 1, idleTimeout: 5 },
    { dockerStartCmd: ['node', '--input-type=module', '-e', script] },
  );
  const started = Date.now();
  const workers = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const s = await t.waitJob(ep, await t.run(ep, { i }), 15_000);
    expect(s).toMatchObject({ status: 'COMPLETED', output: { echo: { i } } });
    workers.add(s.workerId as string);
    const h = await t.health(ep);
    expect(h.scaling?.reason).not.toBe('crash-loop');
  }
  // Four jobs, four workers, and no crash loop: with recycles counted as failures the third would report one, and
  // the starts would wait 1 s, 2 s, 4 s.
  expect(workers.size).toBe(4);
  // (The fleet status is refreshed on the next pass, up to 1 s later here.)
  await waitUntil(async () => (await t.health(ep)).scaling === undefined, 3000);
  console.log(`4 recycled workers in ${Date.now() - started} ms`);
});
