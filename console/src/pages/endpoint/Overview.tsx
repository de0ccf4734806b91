import { LineChart, type Series } from '../../components/charts.tsx';
import { DataTable } from '../../components/table.tsx';
import { useState } from 'react';
import { Badge, ConfirmButton, ErrorBanner, Notice, Stat } from '../../components/ui.tsx';
import { ago, ms, type JobStats } from '../../format.ts';
import { useAction } from '../../hooks.ts';
import { useClient } from '../../session.tsx';
import type { EndpointView, Health } from '../../types.ts';
import { endpointStatus, WorkerCounts } from '../Endpoints.tsx';

export interface Sample {
  t: number;
  inQueue: number;
  inProgress: number;
}
export interface StatSample {
  t: number;
  stats: JobStats;
}

/** The live series are kept this long. */
export const WINDOW_MS = 5 * 60_000;
const MIN_WINDOW_MS = 60_000;

/**
 * POST /purge-queue: drop the jobs still waiting (those in progress go on), then say how many went and refresh the
 * figures that count them.
 */
function PurgeQueue({ endpointId, onPurged }: { endpointId: string; onPurged: () => void }) {
  const client = useClient();
  const [removed, setRemoved] = useState<number | null>(null);
  const purge = useAction(async () => {
    setRemoved(null);
    const res = await client.endpoint(endpointId).purgeQueue();
    setRemoved(res.removed);
    onPurged();
  });
  return (
    <div className="purge-queue">
      <ConfirmButton label="Purge queue" onConfirm={() => purge.run()} disabled={purge.pending} />{' '}
      <span className="muted small">Drops the jobs waiting in the queue; jobs in progress go on.</span>
      <ErrorBanner error={purge.error} title="Could not purge the queue" />
      {removed !== null ? (
        <Notice>
          Purged {removed} queued job{removed === 1 ? '' : 's'}.
        </Notice>
      ) : null}
    </div>
  );
}

export function Overview({
  endpointId,
  onPurged,
  endpoint,
  health,
  stats,
  samples,
  statSamples,
  now,
}: {
  endpointId: string;
  /** After a purge: refresh the polled figures. */
  onPurged: () => void;
  endpoint: EndpointView | undefined;
  health: Health | undefined;
  stats: JobStats | undefined;
  samples: readonly Sample[];
  statSamples: readonly StatSample[];
  now: number;
}) {
  const queue: Series[] = [
    { name: 'In queue', points: samples.map((s) => ({ t: s.t, v: s.inQueue })) },
    { name: 'In progress', points: samples.map((s) => ({ t: s.t, v: s.inProgress })) },
  ];
  const throughput: Series[] = [
    { name: 'Jobs/min', points: statSamples.map((s) => ({ t: s.t, v: s.stats.perMinute })) },
  ];
  const latency: Series[] = [
    { name: 'Execution p50', points: statSamples.map((s) => ({ t: s.t, v: s.stats.execP50 })) },
    { name: 'Execution p95', points: statSamples.map((s) => ({ t: s.t, v: s.stats.execP95 })) },
    { name: 'Delay p95', points: statSamples.map((s) => ({ t: s.t, v: s.stats.delayP95 })) },
  ];
  // The charts span the time this page has been open (at least a minute, at most WINDOW_MS).
  const first = Math.min(samples[0]?.t ?? now, statSamples[0]?.t ?? now);
  const span = Math.min(WINDOW_MS, Math.max(MIN_WINDOW_MS, now - first));
  const workers = endpoint?.workers ?? [];
  return (
    <>
      <section aria-labelledby="health-title">
        <h2 id="health-title">Health</h2>
        {health?.scaling ? (
          <div className="banner banner-info" role="status">
            <p>
              <strong>Jobs are waiting: </strong>
              {health.scaling.message ?? health.scaling.reason} <code>{health.scaling.reason}</code>
            </p>
          </div>
        ) : null}
        <dl className="stats">
          <Stat label="Status" value={endpoint ? <Badge value={endpointStatus(endpoint, health)} /> : '—'} />
          <Stat label="In queue" value={health?.jobs.inQueue ?? '—'} />
          <Stat label="In progress" value={health?.jobs.inProgress ?? '—'} />
          <Stat label="Completed" value={health?.jobs.completed ?? '—'} />
          <Stat label="Failed" value={health?.jobs.failed ?? '—'} />
          <Stat label="Retried" value={health?.jobs.retried ?? '—'} />
          <Stat label="Jobs/min" value={stats ? stats.perMinute : '—'} />
          <Stat
            label="Execution p50 / p95"
            value={stats ? `${ms(stats.execP50)} / ${ms(stats.execP95)}` : '—'}
            hint={stats ? `of ${stats.sample} recent` : undefined}
          />
          <Stat label="Delay p50 / p95" value={stats ? `${ms(stats.delayP50)} / ${ms(stats.delayP95)}` : '—'} />
        </dl>
        <div className="stat-workers">
          <span className="muted">Workers: </span>
          <WorkerCounts health={health} />
        </div>
        <PurgeQueue endpointId={endpointId} onPurged={onPurged} />
      </section>
      <section aria-labelledby="charts-title">
        <h2 id="charts-title">Live</h2>
        <div className="charts">
          <LineChart title="Queue depth" series={queue} windowMs={span} now={now} />
          <LineChart title="Throughput (jobs/min)" series={throughput} windowMs={span} now={now} />
          <LineChart title="Latency" series={latency} windowMs={span} now={now} format={(v) => ms(v)} />
        </div>
        <p className="muted small">
          Measured while this page is open (up to the last 5 minutes), from /health every 2 s and /requests every 4 s.
        </p>
      </section>
      <section aria-labelledby="workers-title">
        <h2 id="workers-title">Workers</h2>
        <DataTable
          labelledBy="workers-title"
          rows={workers}
          empty="No workers right now. They start when jobs arrive (or when minimum workers is above 0)."
          rowAttributes={(w) => ({ 'data-worker-id': w.id, 'data-state': w.workerState })}
          columns={[
            { header: 'Worker', className: 'mono', cell: (w) => w.id },
            { header: 'State', cell: (w) => <Badge value={w.workerState} /> },
            { header: 'Reason', cell: (w) => w.workerStateReason ?? <span className="muted">—</span> },
            { header: 'Started', cell: (w) => ago(w.lastStartedAt, now) },
            { header: 'Last change', cell: (w) => ago(w.lastStatusChange, now) },
            { header: '$/h', num: true, cell: (w) => w.costPerHr.toFixed(3) },
          ]}
        />
      </section>
    </>
  );
}
