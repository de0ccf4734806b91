// The long-poll wake-up bus (src/engine/bus.ts): broadcast wake-ups, and the single wake-up a new job sends so that
// one idle take reads the queue instead of all of them.
import { describe, expect, it } from 'vitest';
import { Bus } from '../../src/engine/bus.ts';

const settled = async (p: Promise<boolean>): Promise<boolean | 'pending'> =>
  Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 20))]);

describe('Bus', () => {
  it('publish wakes every waiter of the topic and no other', async () => {
    const bus = new Bus();
    const a = bus.arm('queue:e1', 10_000);
    const b = bus.arm('queue:e1', 10_000, undefined, true);
    const other = bus.arm('queue:e2', 10_000, undefined, true);
    bus.publish('queue:e1');
    expect(await a.promise).toBe(true);
    expect(await b.promise).toBe(true);
    expect(a.woken && b.woken).toBe(true);
    expect(await settled(other.promise)).toBe('pending');
    expect(other.woken).toBe(false);
    bus.close();
    expect(await other.promise).toBe(false);
  });

  it('publishOne wakes only the single waiter armed longest ago, then the next one', async () => {
    const bus = new Bus();
    const broadcastOnly = bus.arm('queue:e1', 10_000);
    const first = bus.arm('queue:e1', 10_000, undefined, true);
    const second = bus.arm('queue:e1', 10_000, undefined, true);
    bus.publishOne('queue:e1');
    expect(await first.promise).toBe(true);
    expect(await settled(second.promise)).toBe('pending');
    expect(await settled(broadcastOnly.promise)).toBe('pending');
    bus.publishOne('queue:e1');
    expect(await second.promise).toBe(true);
    // No single waiter left: a take armed without `single` (one that would not look at the queue) is not picked.
    bus.publishOne('queue:e1');
    expect(await settled(broadcastOnly.promise)).toBe('pending');
    expect(bus.waiterCount()).toBe(1);
    bus.close();
  });

  it('a waiter that timed out, was aborted or disposed is never picked', async () => {
    const bus = new Bus();
    const timedOut = bus.arm('queue:e1', 0, undefined, true);
    const controller = new AbortController();
    const aborted = bus.arm('queue:e1', 10_000, controller.signal, true);
    const disposed = bus.arm('queue:e1', 10_000, undefined, true);
    const live = bus.arm('queue:e1', 10_000, undefined, true);
    expect(await timedOut.promise).toBe(false);
    controller.abort();
    expect(await aborted.promise).toBe(false);
    disposed.dispose();
    expect(await disposed.promise).toBe(false);
    bus.publishOne('queue:e1');
    expect(await live.promise).toBe(true);
    expect([timedOut.woken, aborted.woken, disposed.woken]).toEqual([false, false, false]);
    expect(bus.waiterCount()).toBe(0);
  });

  it('listeners (the other nodes) hear publishOne as single and publish as for all; wakeOne stays local', () => {
    const bus = new Bus();
    const sent: Array<[string, boolean]> = [];
    bus.onPublish((topic, single) => sent.push([topic, single]));
    bus.publishOne('queue:e1');
    bus.wakeOne('queue:e1');
    bus.publish('job:j1');
    expect(sent).toEqual([
      ['queue:e1', true],
      ['job:j1', false],
    ]);
  });

  it('a wake-up from another node reaches every waiter, or as many single waiters as it names', async () => {
    const bus = new Bus();
    const broadcastOnly = bus.arm('queue:e1', 10_000);
    const singles = [1, 2, 3].map(() => bus.arm('queue:e1', 10_000, undefined, true));
    bus.deliver('queue:e1', 2);
    expect(await singles[0]!.promise).toBe(true);
    expect(await singles[1]!.promise).toBe(true);
    expect(await settled(singles[2]!.promise)).toBe('pending');
    expect(await settled(broadcastOnly.promise)).toBe('pending');
    // More than there are waiting: the rest is dropped, nothing else is woken.
    bus.deliver('queue:e1', 5);
    expect(await singles[2]!.promise).toBe(true);
    expect(await settled(broadcastOnly.promise)).toBe('pending');
    bus.deliver('queue:e1');
    expect(await broadcastOnly.promise).toBe(true);
  });

  it('onWake hears every wake-up of every topic, published here or delivered from another node, not a wakeAll', () => {
    const bus = new Bus();
    const woken: string[] = [];
    const drop = bus.onWake((topic) => woken.push(topic));
    bus.arm('queue:e3', 10_000);
    bus.publish('queue:e1');
    bus.publishOne('queue:e2');
    bus.deliver('queue:e3');
    bus.deliver('queue:e4', 1);
    bus.wakeOne('queue:e5');
    bus.wakeAll();
    expect(woken).toEqual(['queue:e1', 'queue:e2', 'queue:e3', 'queue:e4']);
    drop();
    bus.publish('queue:e1');
    expect(woken).toHaveLength(4);
  });

  it('a subscription runs at every wake-up of its topic (here, from another node, after a reconnect) until dropped', () => {
    const bus = new Bus();
    const seen: string[] = [];
    const relayed: string[] = [];
    bus.onPublish((topic) => relayed.push(topic));
    const drop = bus.subscribe('accounts', () => seen.push('accounts'));
    bus.subscribe('other', () => seen.push('other'));
    bus.publish('accounts');
    bus.deliver('accounts');
    bus.wakeAll();
    expect(seen.filter((s) => s === 'accounts')).toHaveLength(3);
    expect(relayed).toEqual(['accounts']); // published here: other nodes hear of it
    drop();
    bus.publish('accounts');
    expect(seen.filter((s) => s === 'accounts')).toHaveLength(3);
  });
});
