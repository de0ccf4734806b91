import { describe, expect, it } from 'vitest';

import { decideScaling, surgeAllowance } from '../../src/fleet/autoscaler.ts';
import type {
  FleetMemory,
  QueueSnapshot,
  ScalerPolicy,
  ScalingDecision,
  WorkerState,
  WorkerView,
} from '../../src/fleet/autoscaler.ts';

const policy = (over: Partial<ScalerPolicy> = {}): ScalerPolicy => ({
  workersMin: 0,
  workersMax: 3,
  idleTimeoutS: 5,
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  version: 1,
  ...over,
});
const queue = (over: Partial<QueueSnapshot> = {}): QueueSnapshot => ({
  inQueue: 0,
  inQueueLowPriority: 0,
  inProgress: 0,
  oldestQueuedAgeMs: null,
  ...over,
});
const w = (id: string, state: WorkerState, over: Partial<WorkerView> = {}): WorkerView => ({
  id,
  state,
  version: 1,
  idleForMs: 0,
  runningJobs: state === 'running' ? 1 : 0,
  ...over,
});

interface Case {
  name: string;
  policy?: Partial<ScalerPolicy>;
  queue?: Partial<QueueSnapshot>;
  workers?: WorkerView[];
  capacity?: number;
  fleet?: FleetMemory;
  expect: Partial<ScalingDecision>;
}

const cases: Case[] = [
  { name: 'nothing to do', expect: { desired: 0, start: 0, stop: [], reason: 'no-demand' } },
  {
    name: 'scale from zero does not wait scalerValue',
    queue: { inQueue: 1, oldestQueuedAgeMs: 0 },
    expect: { desired: 1, start: 1, reason: 'scale-from-zero' },
  },
  {
    name: 'scale from zero with workersMax 0 stays at zero',
    policy: { workersMax: 0 },
    queue: { inQueue: 1, oldestQueuedAgeMs: 0 },
    expect: { desired: 0, start: 0, reason: 'at-max' },
  },
  {
    name: 'scale from zero without capacity is wanted but not started',
    queue: { inQueue: 1, oldestQueuedAgeMs: 0 },
    capacity: 0,
    expect: { desired: 1, start: 0, reason: 'scale-from-zero' },
  },
  {
    name: 'queue delay below scalerValue keeps the busy workers',
    queue: { inQueue: 2, inProgress: 1, oldestQueuedAgeMs: 3_000 },
    workers: [w('a', 'running')],
    expect: { desired: 1, start: 0, reason: 'busy-workers' },
  },
  {
    name: 'queue delay above scalerValue adds one worker',
    queue: { inQueue: 2, inProgress: 1, oldestQueuedAgeMs: 5_000 },
    workers: [w('a', 'running')],
    expect: { desired: 2, start: 1, reason: 'queue-delay' },
  },
  {
    name: 'initializing workers count as busy, and no worker is added while one is starting',
    queue: { inQueue: 2, oldestQueuedAgeMs: 5_000 },
    workers: [w('a', 'running'), w('b', 'initializing')],
    expect: { desired: 2, start: 0, reason: 'busy-workers' },
  },
  {
    name: 'a cold start outlasting scalerValue does not ratchet the fleet up (one job, one worker starting)',
    queue: { inQueue: 1, oldestQueuedAgeMs: 60_000 },
    workers: [w('a', 'initializing')],
    expect: { desired: 1, start: 0, reason: 'busy-workers' },
  },
  {
    name: 'once the started worker is up and busy, a queue still waiting adds one',
    queue: { inQueue: 1, inProgress: 1, oldestQueuedAgeMs: 60_000 },
    workers: [w('a', 'running')],
    expect: { desired: 2, start: 1, reason: 'queue-delay' },
  },
  {
    name: 'no extra worker while an idle one exists',
    queue: { inQueue: 1, inProgress: 1, oldestQueuedAgeMs: 5_000 },
    workers: [w('a', 'running'), w('b', 'idle', { idleForMs: 60_000 })],
    expect: { desired: 2, start: 0, stop: [], reason: 'busy-workers' },
  },
  {
    name: 'queue delay at workersMax',
    queue: { inQueue: 9, inProgress: 3, oldestQueuedAgeMs: 50_000 },
    workers: [w('a', 'running'), w('b', 'running'), w('c', 'running')],
    expect: { desired: 3, start: 0, reason: 'at-max' },
  },
  {
    name: 'a throttled worker keeps its slot without ratcheting up',
    queue: { inQueue: 3, inProgress: 1, oldestQueuedAgeMs: 50_000 },
    workers: [w('a', 'running'), w('t', 'throttled')],
    capacity: 0,
    expect: { desired: 2, start: 0 },
  },
  {
    name: 'a throttled worker is placed once capacity appears',
    queue: { inQueue: 3, inProgress: 1, oldestQueuedAgeMs: 50_000 },
    workers: [w('a', 'running'), w('t', 'throttled')],
    capacity: 1,
    expect: { desired: 2, start: 1 },
  },
  {
    name: 'throttled workers are dropped when the queue is empty',
    queue: { inProgress: 1 },
    workers: [w('a', 'running'), w('t', 'throttled')],
    expect: { desired: 1, start: 0, reason: 'busy-workers' },
  },
  {
    name: 'low-priority jobs never add workers',
    queue: { inQueueLowPriority: 10 },
    expect: { desired: 0, start: 0 },
  },
  {
    name: 'low-priority jobs keep idle workers that serve them',
    queue: { inQueueLowPriority: 2 },
    workers: [w('a', 'idle', { idleForMs: 60_000 })],
    expect: { desired: 0, start: 0, stop: [] },
  },
  {
    name: 'workersMin is kept',
    policy: { workersMin: 2 },
    expect: { desired: 2, start: 2, reason: 'min-workers' },
  },
  {
    name: 'workersMin is capped by capacity',
    policy: { workersMin: 2 },
    capacity: 1,
    expect: { desired: 2, start: 1, reason: 'min-workers' },
  },
  {
    name: 'workersMax wins over a larger workersMin',
    policy: { workersMin: 4, workersMax: 2 },
    expect: { desired: 2, start: 2 },
  },
  {
    name: 'request count from zero',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 3, workersMax: 5 },
    queue: { inQueue: 5, inProgress: 2, oldestQueuedAgeMs: 0 },
    expect: { desired: 3, start: 3, reason: 'scale-from-zero' },
  },
  {
    name: 'request count with a worker',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 3, workersMax: 5 },
    queue: { inQueue: 5, inProgress: 2, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running')],
    expect: { desired: 3, start: 2, reason: 'request-count' },
  },
  {
    name: 'request count rounds up',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 10 },
    queue: { inProgress: 1 },
    workers: [w('a', 'running')],
    expect: { desired: 1, start: 0, reason: 'request-count' },
  },
  {
    name: 'request count ignores low-priority jobs',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1 },
    queue: { inQueueLowPriority: 7 },
    expect: { desired: 0, start: 0, reason: 'no-demand' },
  },
  {
    name: 'request count: low-priority jobs one worker took in a batch start no workers',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 5 },
    queue: { inProgress: 4, inProgressLowPriority: 4 },
    workers: [w('a', 'running', { runningJobs: 4 })],
    expect: { desired: 1, start: 0, stop: [] },
  },
  {
    name: 'request count: a normal job queued behind low-priority work gets its own worker, and only that',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 5 },
    queue: { inQueue: 1, inProgress: 4, inProgressLowPriority: 4, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running', { runningJobs: 4 })],
    expect: { desired: 2, start: 1, reason: 'request-count' },
  },
  {
    name: 'request count: a low-priority job beside a normal one on a worker with room adds none',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 4, workersMax: 5 },
    queue: { inProgress: 2, inProgressLowPriority: 1 },
    workers: [w('a', 'running', { runningJobs: 2 })],
    expect: { desired: 1, start: 0 },
  },
  {
    name: 'idle workers past the timeout stop, longest idle first',
    workers: [w('a', 'idle', { idleForMs: 6_000 }), w('b', 'idle', { idleForMs: 10_000 })],
    expect: {
      desired: 0,
      stop: [
        { workerId: 'b', reason: 'idle-timeout' },
        { workerId: 'a', reason: 'idle-timeout' },
      ],
      reason: 'idle-timeout',
    },
  },
  {
    name: 'idle workers within the timeout stay',
    workers: [w('a', 'idle', { idleForMs: 4_999 })],
    expect: { desired: 0, stop: [], reason: 'no-demand' },
  },
  {
    name: 'idle-timeout keeps workersMin',
    policy: { workersMin: 1 },
    workers: [w('a', 'idle', { idleForMs: 6_000 }), w('b', 'idle', { idleForMs: 10_000 })],
    expect: { desired: 1, start: 0, stop: [{ workerId: 'b', reason: 'idle-timeout' }] },
  },
  {
    name: 'running workers are never stopped',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1 },
    workers: [w('a', 'running'), w('b', 'running'), w('c', 'initializing')],
    expect: { desired: 0, start: 0, stop: [] },
  },
  {
    name: 'unhealthy workers are not live',
    policy: { workersMin: 1 },
    workers: [w('u', 'unhealthy')],
    expect: { desired: 1, start: 1 },
  },
  {
    name: 'above max stops idle workers at once',
    policy: { workersMax: 1 },
    workers: [w('a', 'idle'), w('b', 'idle', { idleForMs: 10 }), w('c', 'idle', { idleForMs: 5 })],
    expect: {
      desired: 0,
      stop: [
        { workerId: 'b', reason: 'above-max' },
        { workerId: 'c', reason: 'above-max' },
      ],
      reason: 'above-max',
    },
  },
  {
    name: 'above max never stops running workers: it retires them',
    policy: { workersMax: 1 },
    queue: { inProgress: 2 },
    workers: [w('a', 'running'), w('b', 'running'), w('c', 'idle')],
    expect: {
      desired: 1,
      start: 0,
      stop: [{ workerId: 'c', reason: 'above-max' }],
      retire: [{ workerId: 'a', reason: 'above-max' }],
    },
  },
  {
    name: 'workersMax lowered under a steady queue: busy workers beyond it retire (they finish their jobs), least busy first',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 1 },
    queue: { inQueue: 20, inProgress: 4, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running', { runningJobs: 2 }), w('b', 'running'), w('c', 'running')],
    expect: {
      desired: 1,
      start: 0,
      stop: [],
      retire: [
        { workerId: 'b', reason: 'above-max' },
        { workerId: 'c', reason: 'above-max' },
      ],
      reason: 'above-max',
    },
  },
  {
    name: 'workersMax 0 retires the last busy worker; the queue waits',
    policy: { workersMax: 0 },
    queue: { inQueue: 5, inProgress: 1, oldestQueuedAgeMs: 60_000 },
    workers: [w('a', 'running')],
    expect: { desired: 0, start: 0, stop: [], retire: [{ workerId: 'a', reason: 'above-max' }] },
  },
  {
    name: 'above max, workers still starting retire before busy ones',
    policy: { workersMax: 1 },
    queue: { inQueue: 3, inProgress: 1, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running'), w('b', 'initializing'), w('c', 'initializing')],
    expect: {
      stop: [],
      retire: [
        { workerId: 'b', reason: 'above-max' },
        { workerId: 'c', reason: 'above-max' },
      ],
    },
  },
  {
    name: 'above max, idle workers go before busy ones retire',
    policy: { workersMax: 1 },
    queue: { inQueue: 3, inProgress: 2, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running'), w('b', 'running'), w('c', 'idle')],
    expect: { stop: [{ workerId: 'c', reason: 'above-max' }], retire: [{ workerId: 'a', reason: 'above-max' }] },
  },
  {
    name: 'workersMax raised while a worker retired beyond it finishes its job: it is taken back, nothing starts',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 2 },
    queue: { inQueue: 20, inProgress: 2, oldestQueuedAgeMs: 0 },
    workers: [w('a', 'running'), w('b', 'running', { retiring: true, retiredFor: 'above-max' })],
    expect: { desired: 2, start: 0, held: 0, stop: [], retire: [], reinstate: ['b'] },
  },
  {
    name: 'workersMax raised by one: one retired worker is taken back (the busiest), the other finishes and goes',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 2 },
    queue: { inQueue: 20, inProgress: 4, oldestQueuedAgeMs: 0 },
    workers: [
      w('a', 'running'),
      w('b', 'running', { retiring: true, retiredFor: 'above-max' }),
      w('c', 'running', { retiring: true, retiredFor: 'above-max', runningJobs: 2 }),
    ],
    expect: { desired: 2, start: 0, stop: [], retire: [], reinstate: ['c'] },
  },
  {
    name: 'workersMax still taken: a retired worker stays retired; one retired for another reason is never taken back',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 1, workersMax: 2, version: 2 },
    queue: { inQueue: 20, inProgress: 3, oldestQueuedAgeMs: 0 },
    workers: [
      w('a', 'running', { version: 2 }),
      w('b', 'running', { retiring: true, retiredFor: 'above-max' }),
      w('c', 'running', { retiring: true, version: 2 }),
    ],
    expect: { desired: 2, reinstate: [] },
  },
  {
    name: 'rolling update starts a replacement beside an idle outdated worker (surge), stopping nothing yet',
    policy: { workersMin: 1, version: 2 },
    workers: [w('old', 'idle', { idleForMs: 1 })],
    capacity: 1,
    expect: { desired: 1, start: 1, surge: 1, stop: [], reason: 'rolling-update' },
  },
  {
    name: 'rolling update keeps the outdated worker while its replacement initializes',
    policy: { workersMin: 1, workersMax: 1, version: 2 },
    workers: [w('old', 'idle', { idleForMs: 1 }), w('new', 'initializing', { version: 2 })],
    capacity: 5,
    expect: { desired: 1, start: 0, surge: 0, stop: [] },
  },
  {
    name: 'rolling update stops the outdated worker once its replacement is ready, even at workersMax',
    policy: { workersMin: 1, workersMax: 1, version: 2 },
    workers: [w('old', 'idle', { idleForMs: 1 }), w('new', 'idle', { version: 2 })],
    capacity: 5,
    expect: { desired: 1, start: 0, surge: 0, stop: [{ workerId: 'old', reason: 'outdated-version' }] },
  },
  {
    name: 'surge goes at most surgeAllowance (one for workersMax 3) beyond workersMax',
    policy: { workersMin: 3, workersMax: 3, version: 2 },
    workers: [w('o1', 'idle'), w('o2', 'idle'), w('o3', 'idle')],
    capacity: 5,
    expect: { desired: 3, start: 1, surge: 1, stop: [], reason: 'rolling-update' },
  },
  {
    name: 'surge below workersMax replaces several outdated workers at once, within capacity',
    policy: { workersMin: 3, workersMax: 6, version: 2 },
    workers: [w('o1', 'idle'), w('o2', 'idle'), w('o3', 'idle'), w('n1', 'initializing', { version: 2 })],
    capacity: 1,
    expect: { desired: 3, start: 1, surge: 1, stop: [] },
  },
  {
    name: 'a retiring worker is not demand: no start for the job it finishes (QUEUE_DELAY)',
    policy: { workersMax: 10 },
    queue: { inProgress: 1 },
    workers: [w('leaving', 'running', { retiring: true })],
    expect: { desired: 0, start: 0 },
  },
  {
    name: 'with no GPU free, no outdated worker makes way while the fleet is short of desired',
    policy: { workersMin: 2, workersMax: 2, version: 2 },
    workers: [w('o1', 'idle')],
    capacity: 0,
    expect: { desired: 2, start: 0, stop: [], retire: [] },
  },
  {
    name: 'a fleet that its GPUs cap below desired still rolls: with no GPU free, one outdated worker makes way',
    policy: { workersMax: 4, scalerType: 'REQUEST_COUNT', scalerValue: 4, version: 2 },
    queue: { inQueue: 20, inProgress: 2, oldestQueuedAgeMs: 0 },
    workers: [w('o0', 'running'), w('o1', 'running', { runningJobs: 2 })],
    capacity: 0,
    fleet: { largestServing: 2 },
    expect: { desired: 4, start: 0, stop: [], retire: [{ workerId: 'o0', reason: 'outdated-version' }] },
  },
  {
    name: 'after making way, the next outdated worker waits while the fleet is smaller than it was (GPU taken)',
    policy: { workersMin: 2, workersMax: 2, version: 2 },
    workers: [w('o1', 'idle')],
    capacity: 0,
    fleet: { largestServing: 2 },
    expect: { stop: [], retire: [] },
  },
  {
    name: 'a one-GPU host with workersMin 2 rolls its one worker',
    policy: { workersMin: 2, workersMax: 2, version: 2 },
    workers: [w('o0', 'idle')],
    capacity: 0,
    fleet: { largestServing: 1 },
    expect: { stop: [{ workerId: 'o0', reason: 'outdated-version' }] },
  },
  {
    name: 'above workersMax, busy outdated workers retire even without a stand-in (workersMax lowered)',
    policy: { workersMax: 2, version: 2 },
    queue: { inQueue: 5, inProgress: 3, oldestQueuedAgeMs: 0 },
    workers: [w('o0', 'running'), w('o1', 'running'), w('o2', 'running')],
    expect: { stop: [], retire: [{ workerId: 'o0', reason: 'outdated-version' }] },
  },
  {
    name: 'an idle worker standing in for a busy outdated one is kept from the idle timeout',
    policy: { scalerType: 'REQUEST_COUNT', scalerValue: 10, version: 2 },
    queue: { inProgress: 2 },
    workers: [w('o1', 'running'), w('o2', 'running'), w('c1', 'idle', { version: 2, idleForMs: 60_000 })],
    expect: { start: 0, stop: [], retire: [{ workerId: 'o1', reason: 'outdated-version' }] },
  },
  {
    name: 'surge with workersMax 8 may start two beyond it (surgeAllowance: a quarter, at least one)',
    policy: { workersMin: 8, workersMax: 8, version: 2 },
    workers: Array.from({ length: 8 }, (_, i) => w(`o${i}`, 'idle')),
    capacity: 10,
    expect: { desired: 8, start: 2, surge: 2, stop: [] },
  },
  {
    name: 'rolling update without capacity frees one outdated worker',
    policy: { workersMin: 2, version: 2 },
    workers: [w('o1', 'idle', { idleForMs: 1 }), w('o2', 'idle', { idleForMs: 2 })],
    capacity: 0,
    expect: { desired: 2, start: 0, stop: [{ workerId: 'o2', reason: 'outdated-version' }] },
  },
  {
    name: 'rolling update waits while a replacement is initializing',
    policy: { workersMin: 2, version: 2 },
    workers: [w('new', 'initializing', { version: 2 }), w('old', 'idle', { idleForMs: 1 })],
    capacity: 0,
    expect: { desired: 2, start: 0, stop: [] },
  },
  {
    name: 'an outdated busy worker gets a replacement beside it and keeps its job',
    policy: { workersMin: 1, version: 2 },
    queue: { inProgress: 1 },
    workers: [w('old', 'running')],
    expect: { desired: 1, start: 1, surge: 1, stop: [], retire: [], reason: 'rolling-update' },
  },
  {
    name: 'an outdated busy worker retires once its replacement is ready: it finishes its job and takes no more',
    policy: { workersMin: 1, version: 2 },
    queue: { inProgress: 1 },
    workers: [w('old', 'running'), w('new', 'idle', { version: 2 })],
    expect: { desired: 1, start: 0, stop: [], retire: [{ workerId: 'old', reason: 'outdated-version' }] },
  },
  {
    name: 'under steady load every busy outdated worker is replaced (review: surge only for idle ones never ran)',
    policy: { workersMax: 2, version: 2 },
    queue: { inQueue: 20, inProgress: 2, oldestQueuedAgeMs: 60_000 },
    workers: [w('o1', 'running'), w('o2', 'running')],
    capacity: 4,
    expect: { desired: 2, start: 1, surge: 1, stop: [], retire: [] },
  },
  {
    name: 'at workersMax a ready surge worker retires the least busy outdated one, not itself (above-max)',
    policy: { workersMax: 1, version: 2 },
    queue: { inProgress: 1 },
    workers: [w('old', 'running'), w('new', 'idle', { version: 2 })],
    expect: { stop: [], retire: [{ workerId: 'old', reason: 'outdated-version' }] },
  },
  {
    name: 'a ready surge worker idle past the timeout is kept; the busy outdated one retires',
    policy: { workersMax: 3, idleTimeoutS: 5, version: 2 },
    queue: { inProgress: 1 },
    workers: [w('old', 'running'), w('new', 'idle', { version: 2, idleForMs: 6000 })],
    expect: { stop: [], retire: [{ workerId: 'old', reason: 'outdated-version' }] },
  },
  {
    name: 'a retiring worker holds its slot but is not counted: a worker starts for the demand it leaves',
    policy: { workersMax: 2 },
    queue: { inProgress: 1, inQueue: 1, oldestQueuedAgeMs: 0 },
    workers: [w('leaving', 'running', { retiring: true })],
    expect: { desired: 1, start: 1, surge: 0, stop: [], retire: [] },
  },
  {
    name: 'surplus outdated idle workers stop without waiting for the idle timeout',
    policy: { version: 2 },
    workers: [w('old', 'idle')],
    capacity: 0,
    expect: { desired: 0, start: 0, stop: [{ workerId: 'old', reason: 'outdated-version' }], reason: 'rolling-update' },
  },
  {
    name: 'idle-timeout keeps workersMin current-version workers while outdated ones are busy',
    policy: { workersMin: 2, version: 2 },
    queue: { inProgress: 2 },
    workers: [
      w('o1', 'running'),
      w('o2', 'running'),
      w('n1', 'idle', { version: 2, idleForMs: 60_000 }),
      w('n2', 'idle', { version: 2, idleForMs: 60_000 }),
    ],
    expect: { desired: 2, start: 0, stop: [] },
  },
  {
    name: 'above-max keeps workersMin current-version workers',
    policy: { workersMin: 2, workersMax: 2, version: 2 },
    queue: { inProgress: 2 },
    workers: [w('o1', 'running'), w('o2', 'running'), w('n1', 'idle', { version: 2 }), w('n2', 'idle', { version: 2 })],
    expect: { desired: 2, start: 0, stop: [] },
  },
];

describe('decideScaling — table', () => {
  it.each(cases)('$name', (c) => {
    const decision = decideScaling(policy(c.policy), queue(c.queue), c.workers ?? [], c.capacity ?? 10, c.fleet);
    expect(decision).toMatchObject(c.expect);
  });
});

/** mulberry32: a seeded PRNG so a failing random case can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STATES: WorkerState[] = ['initializing', 'idle', 'running', 'throttled', 'unhealthy'];
const LIVE = new Set<WorkerState>(['initializing', 'idle', 'running']);

function randomInput(r: () => number): [ScalerPolicy, QueueSnapshot, WorkerView[], number] {
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const workersMin = int(0, 4);
  const p = policy({
    workersMin,
    workersMax: int(workersMin, 6),
    idleTimeoutS: int(0, 20),
    scalerType: r() < 0.5 ? 'QUEUE_DELAY' : 'REQUEST_COUNT',
    scalerValue: int(1, 10),
    version: int(1, 3),
  });
  const inQueue = r() < 0.4 ? 0 : int(1, 20);
  const inProgress = int(0, 10);
  const q = queue({
    inQueue,
    inQueueLowPriority: r() < 0.5 ? 0 : int(1, 10),
    inProgress,
    inProgressLowPriority: r() < 0.5 ? 0 : int(0, inProgress),
    oldestQueuedAgeMs: inQueue > 0 ? int(0, 20_000) : null,
  });
  const workers = Array.from({ length: int(0, 8) }, (_, i) => {
    const state = STATES[int(0, STATES.length - 1)] ?? 'idle';
    const retiring = state === 'running' && r() < 0.2;
    return w(`w${i}`, state, {
      version: p.version - int(0, 1),
      idleForMs: state === 'idle' ? int(0, 30_000) : 0,
      retiring,
      ...(retiring && r() < 0.5 ? { retiredFor: 'above-max' as const } : {}),
    });
  });
  const capacity = r() < 0.1 ? Infinity : int(0, 4);
  return [p, q, workers, capacity];
}

describe('decideScaling — invariants over random inputs', () => {
  it('holds for 20,000 random inputs', () => {
    for (let seed = 1; seed <= 20_000; seed += 1) {
      const [p, q, workers, capacity] = randomInput(rng(seed));
      const snapshot = JSON.stringify(workers);
      const d = decideScaling(p, q, workers, capacity);
      const ctx = `seed ${seed}: ${JSON.stringify({ p, q, workers, capacity, d })}`;
      expect(JSON.stringify(workers), ctx).toBe(snapshot); // inputs are not mutated
      expect(decideScaling(p, q, workers, capacity), ctx).toEqual(d); // deterministic

      expect(d.desired, ctx).toBeGreaterThanOrEqual(p.workersMin);
      expect(d.desired, ctx).toBeLessThanOrEqual(p.workersMax);
      expect(Number.isInteger(d.start) && d.start >= 0 && d.start <= capacity, ctx).toBe(true);

      const byId = new Map(workers.map((x) => [x.id, x]));
      const current = (x: WorkerView): boolean => x.version >= p.version;
      const stopped = new Set(d.stop.map((s) => s.workerId));
      expect(stopped.size, ctx).toBe(d.stop.length);
      for (const s of d.stop) {
        const target = byId.get(s.workerId);
        expect(target?.state, ctx).toBe('idle'); // never a running, initializing, throttled or unhealthy worker
        if (s.reason === 'idle-timeout') expect(target?.idleForMs, ctx).toBeGreaterThanOrEqual(p.idleTimeoutS * 1000);
        if (s.reason === 'outdated-version') expect(target?.version, ctx).toBeLessThan(p.version);
      }

      // Only current-version workers retired beyond workersMax are taken back, as far as workersMax has room.
      const reinstated = new Set(d.reinstate);
      expect(reinstated.size, ctx).toBe(d.reinstate.length);
      for (const id of d.reinstate) {
        const target = byId.get(id);
        expect([target?.retiring, target?.retiredFor, current(target!)], ctx).toEqual([true, 'above-max', true]);
        expect(LIVE.has(target!.state), ctx).toBe(true);
      }
      const servingBeforeAll = workers.filter((x) => LIVE.has(x.state) && !x.retiring).length;
      if (reinstated.size > 0) expect(servingBeforeAll + reinstated.size, ctx).toBeLessThanOrEqual(p.workersMax);

      const retired = new Set(d.retire.map((s) => s.workerId));
      expect(retired.size, ctx).toBe(d.retire.length);
      for (const s of d.retire) {
        const target = byId.get(s.workerId);
        // Only busy or starting outdated workers retire, or busy ones beyond workersMax, and not twice.
        expect(['running', 'initializing'], ctx).toContain(target?.state);
        expect(target?.retiring ?? false, ctx).toBe(false);
        expect(reinstated.has(s.workerId), ctx).toBe(false);
        if (s.reason !== 'above-max')
          expect([s.reason, target!.version < p.version], ctx).toEqual(['outdated-version', true]);
        expect(stopped.has(s.workerId), ctx).toBe(false);
      }

      const live = workers.filter((x) => LIVE.has(x.state));
      const liveAfter = live.filter((x) => !stopped.has(x.id));
      // Serving: neither retiring before (unless taken back) nor retired now.
      const servingAfter = liveAfter.filter((x) => (!x.retiring || reinstated.has(x.id)) && !retired.has(x.id));
      const normalStart = d.start - d.surge;
      // Beyond workersMax no worker keeps serving (not counting replacements still starting during an update).
      const unproven = live.some((x) => !x.retiring && !current(x))
        ? servingAfter.filter((x) => current(x) && x.state === 'initializing').length
        : 0;
      expect(servingAfter.length - unproven, ctx).toBeLessThanOrEqual(
        Math.max(p.workersMax, Math.min(p.workersMin, live.filter((x) => current(x) && !x.retiring).length)),
      );
      // Plain starts stay within workersMax, retiring workers included: they hold their slots until stopped.
      if (normalStart > 0) expect(liveAfter.length + normalStart, ctx).toBeLessThanOrEqual(p.workersMax);
      expect(d.throttled >= 0 && d.held >= 0 && d.surgeFor.length === d.surge, ctx).toBe(true);
      if (normalStart > 0) expect(servingAfter.length + normalStart, ctx).toBeLessThanOrEqual(d.desired);
      if (d.surge > 0) {
        // A surge replaces outdated workers left serving, and stays within workersMax + surgeAllowance.
        const outdatedLeft = servingAfter.filter((x) => x.state !== 'initializing' && !current(x)).length;
        expect(d.surge, ctx).toBeLessThanOrEqual(outdatedLeft);
        expect(liveAfter.length + d.start, ctx).toBeLessThanOrEqual(p.workersMax + surgeAllowance(p.workersMax));
        expect(servingAfter.filter(current).length + d.start, ctx).toBeLessThanOrEqual(d.desired);
        expect(d.reason, ctx).toBe('rolling-update');
      }
      // An outdated worker leaves only when the serving workers left, not counting replacements still initializing,
      // cover desired, or (capacity 0, no replacement in flight) to free its slot.
      const outdatedLeaving = [...d.stop, ...d.retire].filter(
        (s) => byId.get(s.workerId)!.version < p.version && byId.get(s.workerId)!.state !== 'initializing',
      );
      if (outdatedLeaving.length > 0 && capacity > 0) {
        const ready = servingAfter.filter((x) => !(x.state === 'initializing' && current(x))).length;
        expect(ready, ctx).toBeGreaterThanOrEqual(Math.min(d.desired, p.workersMax));
      }
      expect(servingAfter.filter(current).length, ctx).toBeGreaterThanOrEqual(
        Math.min(p.workersMin, live.filter((x) => current(x) && !x.retiring).length),
      );
      // Outdated workers still starting are retired at once: they were not serving yet.
      const servingBefore = live.filter((x) => !x.retiring && !(x.state === 'initializing' && !current(x))).length;
      const outdatedStops = [...d.stop, ...d.retire].filter(
        (s) => s.reason === 'outdated-version' && byId.get(s.workerId)!.state !== 'initializing',
      ).length;
      if (capacity > 0) {
        // Starts are made, or held for slots that workers still finishing or stopping take.
        expect(servingAfter.length + d.start + d.held, ctx).toBeGreaterThanOrEqual(
          Math.min(d.desired, servingBefore + capacity),
        );
      } else {
        const slack = outdatedStops > 0 ? 1 : 0;
        expect(servingAfter.length, ctx).toBeGreaterThanOrEqual(Math.min(d.desired, servingBefore) - slack);
      }

      // Low-priority jobs never add workers: the same input without the queued ones scales the same way, and while
      // no normal job waits, without the running ones starts no fewer. (A normal job that waits may need a worker
      // because low-priority jobs hold the slots of the live ones: that start is the normal job's.)
      const withoutLow = decideScaling(p, { ...q, inQueueLowPriority: 0 }, workers, capacity);
      expect([withoutLow.desired, withoutLow.start], ctx).toEqual([d.desired, d.start]);
      if (q.inQueue === 0) {
        const low = q.inProgressLowPriority ?? 0;
        const noLowRunning = { ...q, inProgress: q.inProgress - low, inProgressLowPriority: 0 };
        const serving = live.filter((x) => !x.retiring).length;
        const without = decideScaling(p, noLowRunning, workers, capacity).desired;
        expect(d.desired, ctx).toBeLessThanOrEqual(Math.max(without, Math.min(serving, p.workersMax)));
      }

      if (q.inQueue > 0 && live.length === 0 && p.workersMax >= 1 && capacity >= 1) {
        expect(d.start, ctx).toBeGreaterThanOrEqual(1); // scale from zero at once
      }
    }
  });
});
