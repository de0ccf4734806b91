// The server under test: a real Wharf (startServer, the same assembly as `wharf serve`) in its own process, so the
// harness's load generator and the workers do not share its event loop. Answers the harness over IPC: memory, disk,
// a completion counter, seeding the store, in-process SDK workers and CPU profiles of a measured window.

import fs, { readFileSync, statSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { startServer } from '../../src/cli/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { newJobId, RETENTION } from '../../src/domain/index.ts';
import type { WorkerHandle } from '../../src/sdk/worker/index.ts';
import { memory, payload, serveParent } from '../lib/child.ts';
import { Samples } from '../lib/stats.ts';
import { startSdkWorkers } from './sdk-workers.ts';

interface Payload {
  overrides: Record<string, unknown>;
}

// Commits and the time the event loop spent inside them (node:sqlite commits synchronously; with the default
// `--sqlite-fsync off-loop` the fsync is not part of it), the writes they carried (one SAVEPOINT each), and the WAL
// fsyncs the write queue ran on the thread pool (count and time from call to callback): counted by wrapping exec and
// fs.fdatasync in this process only.
// (No process.cpuUsage() around each COMMIT: that syscall pair alone was ~6% of the server's CPU per /run.)
const commits = { commits: 0, commitMs: 0, writes: 0, fsyncs: 0, fsyncMs: 0 };
/** Each fsync's duration in the window, for its tail (a /runsync round trip waits for one). */
let fsyncDurations = new Samples();
const fdatasync = fs.fdatasync;
fs.fdatasync = function (fd: number, callback: (err: NodeJS.ErrnoException | null) => void): void {
  const t0 = performance.now();
  fdatasync(fd, (err) => {
    const ms = performance.now() - t0;
    commits.fsyncs++;
    commits.fsyncMs += ms;
    fsyncDurations.add(ms);
    callback(err);
  });
} as typeof fs.fdatasync;
// The write queue imported fdatasync by name: republish the wrapper to ESM importers.
syncBuiltinESMExports();
// eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with .call below
const exec = DatabaseSync.prototype.exec;
DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string): void {
  if (sql === 'COMMIT') {
    const t0 = performance.now();
    try {
      exec.call(this, sql);
      return;
    } finally {
      commits.commits++;
      commits.commitMs += performance.now() - t0;
    }
  }
  if (sql === 'SAVEPOINT w') commits.writes++;
  exec.call(this, sql);
};

const { overrides } = payload<Payload>();
const config = loadConfig({ argv: [], env: {}, overrides });
const server = await startServer(config, { silent: overrides['logLevel'] === 'silent' });

// Terminal jobs, counted in memory (a COUNT(*) over the jobs table per poll would load the server being measured).
let completed = 0;
let lastCompletedAt = 0;
const waiters = new Set<() => void>();
server.engine.onTerminal(() => {
  completed++;
  lastCompletedAt = performance.timeOrigin + performance.now();
  for (const w of waiters) w();
});

let workers: WorkerHandle[] = [];
const profiler = new Session();

/**
 * Bytes this process caused to be written to storage (Linux `/proc/self/io` write_bytes: the WAL frames, checkpoints
 * and anything else it wrote to files, not its socket traffic); NaN where the kernel does not say.
 */
function storageWriteBytes(): number {
  try {
    return Number(/\nwrite_bytes: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}
let writeBytesAtLastCall = storageWriteBytes();

function dbBytes(): number {
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += statSync(join(config.dataDir, `wharf.db${suffix}`)).size;
    } catch {
      // not there
    }
  }
  return total;
}

serveParent(
  {
    mem: () => memory(),
    /** Commit counters since the last call (then reset). */
    commits: () => {
      const tail = fsyncDurations.summary();
      const written = storageWriteBytes();
      const out = {
        ...commits,
        fsyncP99Ms: tail.p99,
        fsyncMaxMs: tail.max,
        diskWriteBytes: written - writeBytesAtLastCall,
      };
      writeBytesAtLastCall = written;
      for (const k of Object.keys(commits) as Array<keyof typeof commits>) commits[k] = 0;
      fsyncDurations = new Samples();
      return out;
    },
    disk: () => dbBytes(),
    waiters: () => server.engine.bus.waiterCount(),
    completed: () => ({ completed, lastCompletedAt }),
    resetCompleted: () => {
      completed = 0;
      lastCompletedAt = 0;
      return null;
    },
    /** Resolves once `target` jobs reached a final state (or after timeoutMs). */
    waitCompleted: ({ target, timeoutMs }: { target: number; timeoutMs: number }) =>
      new Promise((resolve) => {
        const done = (): void => {
          if (completed < target) return;
          finish();
        };
        const finish = (): void => {
          waiters.delete(done);
          clearTimeout(timer);
          resolve({ completed, lastCompletedAt });
        };
        const timer = setTimeout(finish, timeoutMs);
        waiters.add(done);
        done();
      }),
    /** Queue `count` no-op jobs through the store API, `chunk` submissions per group commit. */
    seed: async ({ endpointId, count, chunk }: { endpointId: string; count: number; chunk: number }) => {
      const t0 = performance.now();
      const policy = server.engine.resolvePolicy(0, undefined);
      for (let done = 0; done < count;) {
        const n = Math.min(chunk, count - done);
        const now = server.engine.clock.now();
        const batch: Array<Promise<unknown>> = [];
        for (let i = 0; i < n; i++) {
          batch.push(
            server.store.submitJob({
              id: newJobId(config.nodeId, false),
              endpointId,
              inputJson: '{"n":1}',
              webhook: null,
              policy,
              policyGiven: false,
              policyJson: null,
              s3ConfigSealed: null,
              mode: 'async',
              retentionMs: RETENTION.async,
              createdAt: now,
            }),
          );
        }
        await Promise.all(batch);
        done += n;
      }
      return { ms: performance.now() - t0 };
    },
    /** How long the store's whole-queue reads take (each blocks the event loop while it runs). */
    storeTimings: async ({ endpointId }: { endpointId: string }) => {
      const time = async (fn: () => Promise<unknown>): Promise<number> => {
        const t0 = performance.now();
        await fn();
        return performance.now() - t0;
      };
      return {
        jobCounts: await time(() => server.store.jobCounts(endpointId)),
        queueSnapshot: await time(() => server.store.queueSnapshot(endpointId)),
        activeEndpointIds: await time(() => server.store.activeEndpointIds()),
      };
    },
    startWorkers: (args: { endpointId: string; n: number; concurrency: number; idPrefix: string }) => {
      workers = startSdkWorkers({ url: server.url, key: config.adminKey!, ...args });
      return null;
    },
    stopWorkers: async () => {
      await Promise.all(workers.map((w) => w.stop({ timeoutMs: 2000 })));
      workers = [];
      return null;
    },
    profileStart: async () => {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 200 });
      await profiler.post('Profiler.start');
      return null;
    },
    profileStop: async ({ path }: { path: string }) => {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(path, JSON.stringify(profile));
      profiler.disconnect();
      return null;
    },
  },
  async () => {
    await Promise.all(workers.map((w) => w.stop({ timeoutMs: 1000 })));
    await server.close();
  },
);

process.send!({ ready: true, url: server.url, pid: process.pid });
