// Probe: /runsync round trips against one warm idle worker (as scenario 2), a few rounds in a row, with the server
// optionally traced by Linux tools during the second round — to see what a round trip waits on, not only how long.
//
//   node bench/probes/runsync-latency.ts                      c=1, three rounds of 4 s
//   CONC=50 ROUNDS=5 node bench/probes/runsync-latency.ts
//   TRACE=sched OUT=/tmp/s.data node bench/probes/...         perf sched record -a (then: perf sched latency -i …)
//   TRACE=cycles OUT=/tmp/c.data node bench/probes/...        perf record -g of the server (then: perf report -i …)
//   TRACE=strace OUT=/tmp/st.txt node bench/probes/...        strace -f -tt -T of the server (slows it several-fold)
//   OVERRIDES='{"sqliteFsync":"in-commit"}' node bench/probes/...   server settings, as the scenarios pass them
//
// Each round prints requests/s, p50, p99 and p99/p50; the process ids are printed so that a trace can be read per
// process (server, worker host, this client).

import { spawn } from 'node:child_process';
import { Ctx } from '../lib/context.ts';
import { closedLoop } from '../lib/load.ts';
import { startSdkWorkers, startWharf, submitRequest } from '../lib/wharf.ts';

const concurrency = Number(process.env['CONC'] ?? 1);
const rounds = Number(process.env['ROUNDS'] ?? 3);
const trace = process.env['TRACE'];
const out = process.env['OUT'] ?? `/tmp/runsync-${trace ?? 'none'}.out`;

const ctx = new Ctx({ quick: false, tiny: false, scenarios: new Set(), out: null, profileDir: null });
const w = await startWharf(ctx, 'probe', { overrides: JSON.parse(process.env['OVERRIDES'] ?? '{}') });
const ep = await w.createEndpoint();
const host = await startSdkWorkers(w, ep, { n: 1, concurrency: 64, idPrefix: 'probe-' });
process.stdout.write(`pids: server ${w.child.pid}, worker host ${host.pid}, client ${process.pid}\n`);

const tracers: Record<string, string[]> = {
  sched: ['perf', 'sched', 'record', '-a', '-o', out, '--', 'sleep', '2'],
  cycles: ['perf', 'record', '-g', '-p', String(w.child.pid), '-o', out, '--', 'sleep', '2'],
  strace: ['strace', '-f', '-tt', '-T', '-o', out, '-p', String(w.child.pid)],
};

for (let round = 0; round < rounds; round++) {
  let stopTracer = async (): Promise<void> => {};
  const argv = round === 1 && trace ? tracers[trace] : undefined;
  if (argv) {
    const proc = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    stopTracer = async () => {
      if (trace === 'strace') proc.kill('SIGINT');
      await exited;
    };
    if (trace === 'strace') await new Promise((r) => setTimeout(r, 500));
  }
  const load = await closedLoop({
    pool: w.pool,
    concurrency,
    durationMs: 4000,
    warmupMs: 1000,
    request: submitRequest(ep, 'runsync'),
  });
  await stopTracer();
  const { p50, p99 } = load.latency;
  process.stdout.write(
    `round ${round + 1}: ${load.rps.toFixed(0)} req/s, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, ` +
      `p99/p50 ${(p99 / p50).toFixed(2)}${argv ? ` (traced: ${out})` : ''}\n`,
  );
}

await host.stop();
await w.close();
ctx.cleanup();
