// The per-request lazy logger (src/http/plugins/lazy-logger.ts) on a real pino: lines and bindings exactly as eager
// children would write them, and no pino child built while nothing is written.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LazyLogger } from '../../src/http/plugins/lazy-logger.ts';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const root = pino({ level, base: null, timestamp: false }, stream);
  let childrenBuilt = 0;
  // pino children inherit from their parent's object, so this counts every child built anywhere in the chain.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with apply below
  const realChild = root.child;
  root.child = function (this: typeof root, ...args: Parameters<typeof root.child>) {
    childrenBuilt++;
    return realChild.apply(this, args);
  } as typeof root.child;
  return { root, lines, built: () => childrenBuilt };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('LazyLogger', () => {
  it('builds no pino child for lines below the level', async () => {
    const { root, lines, built } = capture('warn');
    const log = new LazyLogger(root, root, { reqId: 'r1' }).child({ endpointId: 'ep' }).child({ jobId: 'j' });
    log.info({ a: 1 }, 'not written');
    log.debug('nor this');
    expect(log.isLevelEnabled('info')).toBe(false);
    expect(log.isLevelEnabled('warn')).toBe(true);
    await flush();
    expect(lines).toEqual([]);
    expect(built()).toBe(0);
  });

  it('writes lines at or above the level with every binding, in order, built once', async () => {
    const { root, lines, built } = capture('info');
    const log = new LazyLogger(root, root, { reqId: 'r1' }).child({ endpointId: 'ep' }).child({ jobId: 'j' });
    log.info({ a: 1 }, 'first');
    log.warn('second');
    await flush();
    expect(lines).toEqual([
      { level: 30, reqId: 'r1', endpointId: 'ep', jobId: 'j', a: 1, msg: 'first' },
      { level: 40, reqId: 'r1', endpointId: 'ep', jobId: 'j', msg: 'second' },
    ]);
    expect(built()).toBe(3); // the chain reqId → endpointId → jobId, once, for both lines
    expect(log.bindings()).toEqual({ reqId: 'r1', endpointId: 'ep', jobId: 'j' });
  });

  it('a child with a level of its own decides for itself', async () => {
    const { root, lines } = capture('warn');
    const log = new LazyLogger(root, root, { reqId: 'r2' }, { level: 'debug' });
    expect(log.isLevelEnabled('debug')).toBe(true);
    expect(log.level).toBe('debug');
    log.debug('route-level debug');
    await flush();
    expect(lines).toMatchObject([{ level: 20, reqId: 'r2', msg: 'route-level debug' }]);
  });
});
