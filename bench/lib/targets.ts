// The issue's targets (2-core machine), checked against this run's figures.

import type { Result } from './context.ts';
import { round, table } from './stats.ts';

interface Target {
  what: string;
  scenario: string;
  key: string;
  /** Pass when the measured value satisfies this. */
  ok: (v: number) => boolean;
  goal: string;
  unit?: string;
  /** Appended to `what` from the scenario's figures (the peers: which guarantee the peer's acknowledgement gives). */
  detail?: (json: Record<string, unknown>) => string;
  /** The peers: the figure saying whether that run's acknowledgements were durable. */
  durableKey?: string;
}

/**
 * The peer targets: Wharf's end-to-end jobs/s over the peer's, measured in the peer's scenario right before the peer
 * under the same load. A Wharf /run is acknowledged after an fsynced commit; the label says whether the peer's add
 * is (the durable peers on PostgreSQL: the like-for-like comparison) or not (BullMQ on Redis without AOF fsync on
 * every write: the in-memory reference).
 */
function peerTarget(scenario: string, name: string, key: string, durableKey = 'durableAck'): Target {
  return {
    what: `end-to-end jobs/s, Wharf / ${name}`,
    scenario,
    key,
    ok: (v) => v > 1,
    goal: '> 1',
    durableKey,
    detail: (json) => {
      if (json[durableKey] === true) return 'peer acks after an fsynced commit, as Wharf does: like for like';
      if (json[durableKey] === false) return 'peer acks before its add is on disk: the in-memory reference';
      return '';
    },
  };
}

const TARGETS: Target[] = [
  {
    what: 'end-to-end async jobs/s vs hello-world req/s',
    scenario: '1',
    key: 'e2eRatioToHello',
    ok: (v) => v >= 0.25,
    goal: '≥ 0.25',
  },
  {
    what: '/runsync overhead p50, c=1',
    scenario: '2',
    key: 'overheadP50c1',
    ok: (v) => v <= 1,
    goal: '≤ 1 ms',
    unit: 'ms',
  },
  {
    what: '/runsync overhead p99, c=1',
    scenario: '2',
    key: 'overheadP99c1',
    ok: (v) => v <= 3,
    goal: '≤ 3 ms',
    unit: 'ms',
  },
  { what: '/runsync p99 / p50, c=50', scenario: '2', key: 'p99OverP50c50', ok: (v) => v <= 3, goal: '≤ 3' },
  {
    what: 'cold start (median)',
    scenario: '3',
    key: 'coldMedianMs',
    ok: (v) => v <= 300,
    goal: '≤ 300 ms',
    unit: 'ms',
  },
  {
    what: 'FlashBoot start (median)',
    scenario: '3',
    key: 'flashbootMedianMs',
    ok: (v) => v <= 50,
    goal: '≤ 50 ms',
    unit: 'ms',
  },
  {
    what: '/run p99 with 1M queued vs empty (c=50)',
    scenario: '4',
    key: 'runP99Ratio',
    ok: (v) => v <= 2,
    goal: '≤ 2×',
  },
  peerTarget('graphile', 'graphile-worker (PostgreSQL)', 'wharfOverGraphile'),
  peerTarget('pgboss', 'pg-boss (PostgreSQL)', 'wharfOverPgboss'),
  peerTarget('bullmq', 'BullMQ (Redis as configured)', 'wharfOverBullmq'),
  peerTarget('bullmq', 'BullMQ (Redis, AOF fsynced on every write)', 'wharfOverDurableBullmq', 'durableRunAck'),
];

export function targets(results: Result[]): Result | null {
  const rows: Array<Array<string | number>> = [];
  const json: Record<string, unknown> = {};
  for (const t of TARGETS) {
    const r = results.find((x) => x.id === t.scenario);
    const v = r?.json[t.key];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    const pass = t.ok(v);
    const figures = r?.json ?? {};
    const detail = t.detail?.(figures) ?? '';
    rows.push([
      detail ? `${t.what} (${detail})` : t.what,
      `${round(v)}${t.unit ? ` ${t.unit}` : ''}`,
      t.goal,
      pass ? 'met' : 'missed',
    ]);
    const durable = t.durableKey === undefined ? undefined : figures[t.durableKey];
    json[t.key] = { value: round(v), met: pass, ...(typeof durable === 'boolean' ? { durableAck: durable } : {}) };
  }
  if (rows.length === 0) return null;
  return { id: 'targets', title: 'Targets', markdown: table(['target', 'measured', 'goal', ''], rows), json };
}
