import { useState } from 'react';
import { BarChart, type Bar } from '../components/charts.tsx';
import { Empty, ErrorBanner, Field, Loading, Stat } from '../components/ui.tsx';
import { money, ms } from '../format.ts';
import { usePoll, useTitle } from '../hooks.ts';
import { useClient } from '../session.tsx';
import type { BillingRecord } from '../types.ts';

const RANGES = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3600_000, bucket: 'hour' },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000, bucket: 'day' },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000, bucket: 'day' },
} as const;
type Range = keyof typeof RANGES;
type Grouping = 'endpointId' | 'gpuTypeId';

const STEP = { hour: 3600_000, day: 86_400_000 } as const;

/** Every bucket start (UTC) from `start` to now, so that idle periods show as empty bars. */
function bucketStarts(start: number, now: number, bucket: 'hour' | 'day'): number[] {
  const step = STEP[bucket];
  const first = Math.floor(start / step) * step;
  const out: number[] = [];
  for (let t = first; t <= now; t += step) out.push(t);
  return out;
}

function label(t: number, bucket: 'hour' | 'day'): string {
  const iso = new Date(t).toISOString();
  return bucket === 'hour' ? `${iso.slice(11, 13)}:00` : iso.slice(5, 10);
}

export function BillingPage() {
  useTitle('Billing');
  const client = useClient();
  const [range, setRange] = useState<Range>('24h');
  const [grouping, setGrouping] = useState<Grouping>('endpointId');
  const r = RANGES[range];
  const poll = usePoll(
    `billing:${range}:${grouping}`,
    async () => {
      const now = Date.now();
      const startTime = new Date(now - r.ms).toISOString();
      const [usage, volumes, endpoints] = await Promise.all([
        client.billing.endpoints({ bucketSize: r.bucket, startTime, grouping }),
        client.billing.networkVolumes({ bucketSize: r.bucket, startTime }),
        client.endpoints.list(),
      ]);
      return { now, start: now - r.ms, usage, volumes, endpoints };
    },
    30_000,
  );

  const data = poll.data;
  // Endpoints are told apart by id: names need not be unique, and a name that several endpoints share gets each
  // one's id, or their usage would be added up as if one endpoint's.
  const endpoints = data?.endpoints ?? [];
  const uses = new Map<string, number>();
  for (const e of endpoints) uses.set(e.name, (uses.get(e.name) ?? 0) + 1);
  const names = new Map(
    endpoints.map((e) => [e.id, !e.name ? e.id : uses.get(e.name) === 1 ? e.name : `${e.name} (${e.id})`]),
  );
  const groupOf = (rec: BillingRecord): string => {
    const key = rec[grouping] ?? 'other';
    return grouping === 'endpointId' ? (names.get(key) ?? key) : key;
  };
  const groups = [...new Set((data?.usage ?? []).map(groupOf))].sort();
  let bars: Bar[] = [];
  const totals = new Map<string, { amount: number; ms: number }>();
  if (data) {
    const byTime = new Map<number, Map<string, number>>();
    for (const rec of data.usage) {
      const t = Math.floor(new Date(rec.time).getTime() / STEP[r.bucket]) * STEP[r.bucket];
      const g = groupOf(rec);
      const m = byTime.get(t) ?? new Map<string, number>();
      m.set(g, (m.get(g) ?? 0) + rec.amount);
      byTime.set(t, m);
      const tot = totals.get(g) ?? { amount: 0, ms: 0 };
      tot.amount += rec.amount;
      tot.ms += rec.timeBilledMs;
      totals.set(g, tot);
    }
    bars = bucketStarts(data.start, data.now, r.bucket).map((t) => ({
      label: label(t, r.bucket),
      parts: [...(byTime.get(t) ?? new Map<string, number>()).entries()].map(([group, value]) => ({ group, value })),
    }));
  }
  const compute = [...totals.values()].reduce((a, t) => a + t.amount, 0);
  const storage = (data?.volumes ?? []).reduce((a, v) => a + v.amount, 0);

  return (
    <>
      <h1>Billing</h1>
      <p className="muted">What workers and network volumes cost, from the server's usage records (UTC buckets).</p>
      <form className="toolbar" aria-label="Billing period" onSubmit={(e) => e.preventDefault()}>
        <Field label="Period">
          {(p) => (
            <select {...p} name="range" value={range} onChange={(e) => setRange(e.target.value as Range)}>
              {Object.entries(RANGES).map(([k, v]) => (
                <option key={k} value={k}>
                  {v.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Group by">
          {(p) => (
            <select {...p} name="grouping" value={grouping} onChange={(e) => setGrouping(e.target.value as Grouping)}>
              <option value="endpointId">Endpoint</option>
              <option value="gpuTypeId">GPU / CPU type</option>
            </select>
          )}
        </Field>
      </form>
      <ErrorBanner error={poll.error} title="Could not load billing" onRetry={poll.refresh} />
      {poll.loading ? <Loading what="billing" /> : null}
      {data ? (
        <>
          <dl className="stats">
            <Stat label="Workers" value={money(compute)} />
            <Stat label="Network volumes" value={money(storage)} />
            <Stat label="Total" value={money(compute + storage)} />
          </dl>
          <BarChart title={`Worker cost per ${r.bucket} (USD)`} bars={bars} groups={groups} format={(v) => money(v)} />
          {totals.size === 0 ? (
            <Empty>No worker usage in this period.</Empty>
          ) : (
            <div className="table-wrap">
              <table className="table">
                <caption>Worker usage by {grouping === 'endpointId' ? 'endpoint' : 'GPU / CPU type'}</caption>
                <thead>
                  <tr>
                    <th scope="col">{grouping === 'endpointId' ? 'Endpoint' : 'Type'}</th>
                    <th scope="col" className="num">
                      Time billed
                    </th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {[...totals.entries()]
                    .sort((a, b) => b[1].amount - a[1].amount)
                    .map(([g, t]) => (
                      <tr key={g}>
                        <th scope="row">{g}</th>
                        <td className="num">{ms(t.ms)}</td>
                        <td className="num">{money(t.amount)}</td>
                      </tr>
                    ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      ) : null}
    </>
  );
}
