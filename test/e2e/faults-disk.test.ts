// Storage faults, real ones: the data directory on a small tmpfs that fills up, and on an ext4 file system that the
// kernel turns read-only after an error (errors=remount-ro, as a failing disk does). Requests that need a write
// fail with 503 STORE_UNAVAILABLE and a message that says why; reads of acknowledged jobs keep working; when space
// returns the server recovers by itself, and nothing acknowledged is ever lost.
//
// Both need mount: as root, or through passwordless sudo (CI runners); the read-only case also a loop device and
// mkfs.ext4. Where they are missing the tests are skipped, and say so.

import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { afterEach, expect, it } from 'vitest';

import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';

const run = (cmd: string, args: string[]): string => execFileSync(cmd, args, { stdio: 'pipe' }).toString();
const isRoot = process.getuid?.() === 0;
/** A command that needs root: run directly as root, else through `sudo -n` (fails at once without a password). */
const root = (cmd: string, args: string[]): string => (isRoot ? run(cmd, args) : run('sudo', ['-n', cmd, ...args]));
/** The tmpfs belongs to the user running the tests, who is not root under sudo. */
const owner = `uid=${process.getuid?.() ?? 0},gid=${process.getgid?.() ?? 0}`;

/** Whether this machine lets the tests mount file systems. */
function probeMount(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  const dir = mkdtempSync(join(tmpdir(), 'wharf-mnt-probe-'));
  try {
    root('mount', ['-t', 'tmpfs', '-o', `size=1m,${owner}`, 'tmpfs', dir]);
    root('umount', [dir]);
    return null;
  } catch (error) {
    return `mount is not permitted here: ${String((error as Error).message).split('\n')[0]}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const noMount = probeMount();
/** mkfs.ext4 and e2fsck live in sbin, which a user's PATH may lack. */
const sbin = (name: string): string => ['/usr/sbin', '/sbin'].map((d) => join(d, name)).find(existsSync) ?? name;
const noLoop =
  noMount ??
  (existsSync('/dev/loop-control') && existsSync('/sys/fs/ext4') && existsSync(sbin('mkfs.ext4'))
    ? null
    : 'no loop device, ext4 support or mkfs.ext4');
if (noMount) console.log(`faults-disk: tmpfs test skipped (${noMount})`);
if (noLoop) console.log(`faults-disk: read-only test skipped (${noLoop})`);

const mounts: string[] = [];
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.server.close().catch(() => undefined);
  for (const m of mounts.splice(0).reverse()) {
    try {
      root('umount', ['-l', m]);
    } catch {
      // already unmounted
    }
    rmSync(m, { recursive: true, force: true });
  }
});

async function server(dataDir: string): Promise<TestServer> {
  const t = await startTestServer({ dataDir, takeWaitMs: 200 });
  servers.push(t);
  return t;
}

/** Submits until a request is refused; every 200 is recorded as acknowledged. */
async function submitUntilRefused(t: TestServer, ep: string, acked: Map<string, unknown>, padKb: number) {
  for (let i = 0; i < 2000; i++) {
    const input = { i, pad: 'x'.repeat(padKb * 1024) };
    const res = await t.api('POST', `/v2/${ep}/run`, { input });
    if (res.status === 200) acked.set(res.json.id, input);
    else return res;
  }
  throw new Error('the disk never filled');
}

/** Takes and completes every queued job as a worker would, echoing the input. */
async function completeAll(t: TestServer, ep: string, workerId: string): Promise<void> {
  const w = protocolWorker(t, ep, workerId);
  for (;;) {
    const res = await w.takeBatch(100);
    if (res.status === 204) {
      const h = await t.api('GET', `/v2/${ep}/health`);
      if (h.json.jobs.inQueue === 0 && h.json.jobs.inProgress === 0) return;
      continue;
    }
    expect(res.status).toBe(200);
    for (const job of res.json as Array<{ id: string; input: unknown }>) {
      expect((await w.done(job.id, { output: { echo: job.input } })).status).toBe(200);
    }
  }
}

async function expectAllCompleted(t: TestServer, ep: string, acked: Map<string, unknown>): Promise<void> {
  for (const [id, input] of acked) {
    const res = await t.api('GET', `/v2/${ep}/status/${id}`);
    expect(res.status, id).toBe(200);
    expect(res.json.status, id).toBe('COMPLETED');
    expect(res.json.output, id).toEqual({ echo: input });
  }
}

it.skipIf(noMount)(
  'disk full: writes get 503 STORE_UNAVAILABLE, reads work, the server recovers when space returns',
  { timeout: 120_000 },
  async () => {
    const mnt = mkdtempSync(join(tmpdir(), 'wharf-full-'));
    mounts.push(mnt);
    root('mount', ['-t', 'tmpfs', '-o', `size=24m,${owner}`, 'tmpfs', mnt]);
    const dataDir = join(mnt, 'data');
    let t = await server(dataDir);
    const ep = await createEndpoint(t);
    const acked = new Map<string, unknown>();
    for (let i = 0; i < 20; i++) {
      const input = { before: i };
      acked.set((await t.api('POST', `/v2/${ep}/run`, { input })).json.id, input);
    }
    const done = protocolWorker(t, ep, 'full-w0');
    const first = (await done.takeBatch(5)).json as Array<{ id: string; input: unknown }>;
    for (const job of first) await done.done(job.id, { output: { echo: job.input } });

    // Fill the file system.
    const filler = join(mnt, 'filler');
    const fd = openSync(filler, 'w');
    const chunk = Buffer.alloc(256 * 1024, 1);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      closeSync(fd);
    }

    // Writes fail (once the WAL cannot grow) with the one clear answer; what was answered 200 stays acknowledged.
    const refused = await submitUntilRefused(t, ep, acked, 64);
    expect(refused.status).toBe(503);
    expect(refused.json).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(/^The job store is unavailable: .*full/i),
    });
    for (let i = 0; i < 3; i++) {
      const again = await t.api('POST', `/v2/${ep}/run`, { input: { pad: 'y'.repeat(64 * 1024) } });
      expect(again.status).toBe(503);
    }
    // Reads still answer: queued and completed jobs, health, lists.
    for (const [id] of [...acked].slice(0, 20)) {
      const s = await t.api('GET', `/v2/${ep}/status/${id}`);
      expect(s.status, id).toBe(200);
    }
    const completed = await t.api('GET', `/v2/${ep}/status/${first[0]!.id}`);
    expect(completed.json).toMatchObject({ status: 'COMPLETED', output: { echo: first[0]!.input } });
    expect((await t.api('GET', `/v2/${ep}/health`)).status).toBe(200);
    expect((await t.api('GET', '/v1/endpoints')).status).toBe(200);
    // A worker's take needs a write: refused the same way, not a 500.
    expect((await done.take()).status).toBe(503);

    // Space returns: the same process takes writes again.
    rmSync(filler);
    let recovered = false;
    for (let i = 0; i < 50 && !recovered; i++) {
      const input = { after: i };
      const res = await t.api('POST', `/v2/${ep}/run`, { input });
      if (res.status === 200) {
        acked.set(res.json.id, input);
        recovered = true;
      } else {
        expect(res.status).toBe(503);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(recovered).toBe(true);
    for (let i = 0; i < 20; i++) {
      const input = { afterRecovery: i };
      const res = await t.api('POST', `/v2/${ep}/run`, { input });
      expect(res.status).toBe(200);
      acked.set(res.json.id, input);
    }
    await completeAll(t, ep, 'full-w1');
    await expectAllCompleted(t, ep, acked);

    // And all of it is on disk: a new server on the same directory has every job.
    await t.server.close();
    t = await server(dataDir);
    await expectAllCompleted(t, ep, acked);
    console.log(JSON.stringify({ fault: 'disk-full', acknowledged: acked.size, lost: 0 }));
  },
);

it.skipIf(noLoop)(
  'read-only (ext4 errors=remount-ro): writes get 503, reads work, nothing acknowledged is lost after repair',
  { timeout: 120_000 },
  async () => {
    const work = mkdtempSync(join(tmpdir(), 'wharf-ro-'));
    const mnt = join(work, 'mnt');
    mkdirSync(mnt);
    const image = join(work, 'disk.img');
    run('truncate', ['-s', '48M', image]);
    run(sbin('mkfs.ext4'), ['-q', '-F', image]);
    root('mount', ['-o', 'loop,errors=remount-ro', image, mnt]);
    mounts.push(work, mnt);
    if (!isRoot) root('chown', [owner.replace(/uid=(\d+),gid=(\d+)/, '$1:$2'), mnt]);
    const device = basename(run('findmnt', ['-n', '-o', 'SOURCE', mnt]).trim());
    const dataDir = join(mnt, 'data');
    let t = await server(dataDir);
    const ep = await createEndpoint(t);
    const acked = new Map<string, unknown>();
    for (let i = 0; i < 30; i++) {
      const input = { before: i };
      acked.set((await t.api('POST', `/v2/${ep}/run`, { input })).json.id, input);
    }
    const w = protocolWorker(t, ep, 'ro-w0');
    const first = (await w.takeBatch(5)).json as Array<{ id: string; input: unknown }>;
    for (const job of first) expect((await w.done(job.id, { output: { echo: job.input } })).status).toBe(200);

    // The kernel finds an error and turns the file system read-only under the running server.
    root('sh', ['-c', `echo 1 > /sys/fs/ext4/${device}/trigger_fs_error`]);
    expect(run('findmnt', ['-n', '-o', 'OPTIONS', mnt])).toMatch(/(^|,)ro(,|$)|emergency_ro/);

    const refused = await t.api('POST', `/v2/${ep}/run`, { input: { during: 1 } });
    expect(refused.status).toBe(503);
    expect(refused.json).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(/^The job store is unavailable: disk I\/O error .*read-only/),
    });
    expect((await w.take()).status).toBe(503);
    expect([409, 503]).toContain((await w.done(first[0]!.id, { output: 'late' })).status);
    // Reads of acknowledged jobs keep working.
    for (const [id] of acked) expect((await t.api('GET', `/v2/${ep}/status/${id}`)).status, id).toBe(200);
    const completed = await t.api('GET', `/v2/${ep}/status/${first[0]!.id}`);
    expect(completed.json).toMatchObject({ status: 'COMPLETED', output: { echo: first[0]!.input } });

    // An emergency read-only file system cannot be made writable again while files are open: the operator stops
    // the server, repairs the file system and starts it again. Graceful close must not hang or throw.
    await t.server.close();
    root('umount', [mnt]);
    try {
      run(sbin('e2fsck'), ['-f', '-y', image]);
    } catch {
      // exit status 1: errors were corrected
    }
    root('mount', ['-o', 'loop,errors=remount-ro', image, mnt]);
    t = await server(dataDir);
    await completeAll(t, ep, 'ro-w1');
    await expectAllCompleted(t, ep, acked);
    console.log(JSON.stringify({ fault: 'read-only', acknowledged: acked.size, lost: 0 }));
  },
);
