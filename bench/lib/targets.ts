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
  {
    what: 'end-to-end jobs/s, Wharf / BullMQ',
    scenario: 'bullmq',
    key: 'wharfOverBullmq',
    ok: (v) => v > 1,
    goal: '> 1',
  },
];

export function targets(results: Result[]): Result | null {
  const rows: Array<Array<string | number>> = [];
  const json: Record<string, unknown> = {};
  for (const t of TARGETS) {
    const r = results.find((x) => x.id === t.scenario);
    const v = r?.json[t.key];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    const pass = t.ok(v);
    rows.push([t.what, `${round(v)}${t.unit ? ` ${t.unit}` : ''}`, t.goal, pass ? 'met' : 'missed']);
    json[t.key] = { value: round(v), met: pass };
  }
  if (rows.length === 0) return null;
  return { id: 'targets', title: 'Targets', markdown: table(['target', 'measured', 'goal', ''], rows), json };
}
