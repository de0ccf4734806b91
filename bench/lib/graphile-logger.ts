// A graphile-worker Logger that prints only errors (its default prints a line per job), for the graphile peer's
// producer (bench/scenarios/peer-graphile.ts) and workers (bench/children/worker-host.ts).

import type { Logger } from 'graphile-worker';

export async function quietLogger(): Promise<Logger> {
  const { Logger } = await import('graphile-worker');
  return new Logger(() => (level, message) => {
    if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
  });
}
