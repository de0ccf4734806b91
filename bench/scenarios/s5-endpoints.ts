// Scenario 5, many endpoints: 10,000 endpoints, each with an idle worker whose job-take long poll is open (one
// keep-alive pool with one socket per poll). Server memory per open poll, and /health latency with them open.
// A process may open at most `ulimit -n` files; where 10,000 sockets do not fit, the largest N that does is
// measured and the figure per poll extrapolated (the report says so).

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Ctx, Result } from '../lib/context.ts';
import { closedLoop, makePool, send, type LoadResult } from '../lib/load.ts';
import { mib, round, sleep, table } from '../lib/stats.ts';
import { ADMIN_KEY, AUTH, startWharf, type Wharf } from '../lib/wharf.ts';

const TARGET = 10_000;
/** Files a process keeps besides the sockets (database, pipes, the pool to the server, node internals). */
const FD_MARGIN = 500;

export async function s5(ctx: Ctx): Promise<Result> {
  const limit = openFileLimit();
  const wanted = ctx.size(TARGET, 200);
  const n = Math.min(wanted, limit - FD_MARGIN);
  const limited = n < wanted;
  ctx.log(`s5: ${n.toLocaleString('en-US')} endpoints with an open take poll each (open-file limit ${limit})`);
  // Polls last as long as the server allows (and are renewed, as a worker does, should the run outlast them).
  const w = await startWharf(ctx, 's5', { overrides: { takeWaitMs: 80_000 } });
  const t0 = performance.now();
  const endpoints = await createEndpoints(w, n);
  const createMs = performance.now() - t0;
  const healthBefore = await healthProbe(ctx, w, endpoints);
  const before = await w.child.call<{ rss: number; heapUsed: number }>('mem');

  const polls = makePool(w.url, n + 16);
  const controller = new AbortController();
  const inFlight: Array<Promise<unknown>> = [];
  let early = 0;
  let firstEarly: string | null = null;
  // Like a worker: an idle take ends with 204 at its deadline and is sent again at once; anything else is an error.
  const poll = async (path: string): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        const a = await send(polls, { method: 'GET', path, headers: { authorization: ADMIN_KEY } }, controller.signal);
        if (a.status === 204) continue;
        early++;
        firstEarly ??= `HTTP ${a.status} ${a.text.slice(0, 200)}`;
      } catch {
        // aborted at the end
      }
      return;
    }
  };
  const openStart = performance.now();
  const base = await w.child.call<number>('waiters');
  // In waves: the server's accept backlog (511) would drop a burst of 10,000 SYNs and stall on retransmits.
  const wave = 500;
  for (let i = 0; i < n; i += wave) {
    for (let j = i; j < Math.min(n, i + wave); j++) {
      const path = `/v2/${endpoints[j]}/job-take/bench-idle-${j}?gpu=CPU&job_in_progress=0`;
      inFlight.push(poll(path));
    }
    const target = Math.min(n, i + wave);
    await waitFor(
      async () => (await w.child.call<number>('waiters')) - base >= target - early,
      60_000,
      async () => `${(await w.child.call<number>('waiters')) - base} of ${target} polls open, ${early} refused`,
    );
    if (early > 0) throw new Error(`s5: ${early} long polls were refused, first: ${firstEarly}`);
  }
  const openMs = performance.now() - openStart;
  await sleep(200);
  const after = await w.child.call<{ rss: number; heapUsed: number }>('mem');
  const healthDuring = await healthProbe(ctx, w, endpoints);
  const open = (await w.child.call<number>('waiters')) - base;

  controller.abort();
  await Promise.allSettled(inFlight);
  await polls.destroy();
  await w.close();

  const perPollRss = (after.rss - before.rss) / open;
  const perPollHeap = (after.heapUsed - before.heapUsed) / open;
  const markdown = [
    table(
      ['measure', 'value'],
      [
        ['endpoints created (REST, c=32)', `${n.toLocaleString('en-US')} in ${round(createMs / 1000)} s`],
        [
          'long polls open (job-take, one socket each)',
          `${open.toLocaleString('en-US')} (opened in ${round(openMs / 1000)} s)`,
        ],
        ['server RSS before / with the polls', `${round(mib(before.rss))} / ${round(mib(after.rss))} MiB`],
        ['memory per idle long poll (RSS)', `${round(perPollRss / 1024)} KiB`],
        ['memory per idle long poll (JS heap)', `${round(perPollHeap / 1024)} KiB`],
        [
          '/health p50 / p99, no polls open',
          `${round(healthBefore.latency.p50)} / ${round(healthBefore.latency.p99)} ms`,
        ],
        [
          `/health p50 / p99, ${open.toLocaleString('en-US')} polls open`,
          `${round(healthDuring.latency.p50)} / ${round(healthDuring.latency.p99)} ms`,
        ],
      ],
    ),
    '',
    limited
      ? `This machine allows ${limit} open files per process, so ${n.toLocaleString('en-US')} polls were measured; ` +
        `${TARGET.toLocaleString('en-US')} would take about ${round(mib(perPollRss * TARGET))} MiB more RSS (extrapolated).`
      : `All ${n.toLocaleString('en-US')} sockets fit in the open-file limit (${limit}) of each process.`,
    'Only the take poll is held here; a real idle SDK worker also keeps a job-stop poll open and pings every few ' +
      'seconds, so a real fleet holds two sockets per worker.',
  ].join('\n');
  return {
    id: '5',
    title: 'Many endpoints with idle long polls',
    markdown,
    json: {
      endpoints: n,
      pollsOpen: open,
      extrapolated: limited,
      rssMiBBefore: round(mib(before.rss)),
      rssMiBWithPolls: round(mib(after.rss)),
      kibPerPollRss: round(perPollRss / 1024),
      kibPerPollHeap: round(perPollHeap / 1024),
      healthP50: round(healthDuring.latency.p50),
      healthP99: round(healthDuring.latency.p99),
      healthP50NoPolls: round(healthBefore.latency.p50),
    },
  };
}

function openFileLimit(): number {
  try {
    const m = /Max open files\s+(\d+|unlimited)/.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m) return m[1] === 'unlimited' ? Infinity : Number(m[1]);
  } catch {
    // not Linux
  }
  return 1024;
}

async function createEndpoints(w: Wharf, n: number): Promise<string[]> {
  const ids: string[] = [];
  const first = await w.createEndpoint();
  ids.push(first);
  const templateId = (await w.api('GET', `/v1/endpoints/${first}`)).json.templateId as string;
  let next = 1;
  const client = async (): Promise<void> => {
    while (next < n) {
      next++;
      const r = await w.api('POST', '/v1/endpoints', {
        name: `many-${next}`,
        templateId,
        workersMax: 0,
      });
      if (r.status !== 200) throw new Error(`endpoint: ${r.status} ${r.text}`);
      ids.push(r.json.id as string);
    }
  };
  await Promise.all(Array.from({ length: 32 }, client));
  return ids;
}

async function healthProbe(ctx: Ctx, w: Wharf, endpoints: string[]): Promise<LoadResult> {
  // Its own socket: every socket of the poll pool is taken.
  const pool = makePool(w.url, 1);
  const r = await closedLoop({
    pool,
    concurrency: 1,
    total: ctx.size(500, 50),
    request: (i) => ({ method: 'GET', path: `/v2/${endpoints[(i * 7919) % endpoints.length]}/health`, headers: AUTH }),
  });
  await pool.close();
  if (r.errors > 0) ctx.log(`s5: /health errors ${r.errors}, first: ${r.firstError}`);
  return r;
}

async function waitFor(ok: () => Promise<boolean>, ms: number, state: () => Promise<string>): Promise<void> {
  const until = performance.now() + ms;
  while (!(await ok())) {
    if (performance.now() > until) throw new Error(`s5: long polls did not open in time (${await state()})`);
    await sleep(20);
  }
}
