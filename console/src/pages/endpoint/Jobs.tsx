import { useState } from 'react';
import { DataTable } from '../../components/table.tsx';
import { Badge, Empty, ErrorBanner, JobError, Loading, Notice } from '../../components/ui.tsx';
import { dateTime, jobError, json, ms } from '../../format.ts';
import { useAction, usePoll } from '../../hooks.ts';
import { useClient } from '../../session.tsx';
import { isFinalStatus, type JobSummary } from '../../types.ts';

/** What a job's row offers: cancel while it may still run, retry once it failed or timed out, else nothing. */
function rowAction(j: JobSummary): 'cancel' | 'retry' | null {
  if (j.status === 'IN_QUEUE' || j.status === 'IN_PROGRESS') return 'cancel';
  if (j.status === 'FAILED' || j.status === 'TIMED_OUT') return 'retry';
  return null;
}

/** One job's full status (output, error, queue reason), refreshed until it is final. */
function JobDetail({ endpointId, jobId, onClose }: { endpointId: string; jobId: string; onClose: () => void }) {
  const client = useClient();
  const poll = usePoll(`job:${endpointId}:${jobId}`, () => client.endpoint(endpointId).status(jobId), 2000);
  const job = poll.data;
  return (
    <section className="card job-detail" aria-labelledby="job-detail-title">
      <div className="page-head">
        <h3 id="job-detail-title">
          Job <span className="mono">{jobId}</span>
        </h3>
        <button type="button" className="button-small" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorBanner error={poll.error} title="Could not load the job" />
      {poll.loading ? <Loading what="the job" /> : null}
      {job ? (
        <>
          <p>
            <Badge value={job.status} /> delay {ms(job.delayTime)} · execution {ms(job.executionTime)}
            {job.workerId ? (
              <>
                {' '}
                · worker <span className="mono">{job.workerId}</span>
              </>
            ) : null}
          </p>
          {job.queueReason ? (
            <p className="muted">
              Waiting: {job.queueReason.message ?? job.queueReason.reason} <code>{job.queueReason.reason}</code>
            </p>
          ) : null}
          {job.output !== undefined ? (
            <>
              <h4>Output</h4>
              <pre className="output">{json(job.output)}</pre>
            </>
          ) : null}
          {job.error !== undefined && job.error !== null ? (
            <>
              <h4>Error</h4>
              <JobError error={job.error} />
            </>
          ) : null}
          {!isFinalStatus(job.status) ? <p className="muted small">Updating until the job finishes…</p> : null}
        </>
      ) : null}
    </section>
  );
}

export function Jobs({
  endpointId,
  jobs,
  loading,
  error,
  refresh,
}: {
  endpointId: string;
  jobs: readonly JobSummary[] | undefined;
  loading: boolean;
  error: unknown;
  refresh: () => void;
}) {
  const client = useClient();
  const [selected, setSelected] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const act = useAction(async (kind: 'cancel' | 'retry', id: string) => {
    const ep = client.endpoint(endpointId);
    const res = kind === 'cancel' ? await ep.cancel(id) : await ep.retry(id);
    setDone(`Job ${id} is now ${res.status.replace('_', ' ').toLowerCase()}.`);
    refresh();
  });
  return (
    <section aria-labelledby="jobs-title">
      <h2 id="jobs-title">Recent jobs</h2>
      <ErrorBanner error={error} title="Could not load jobs" onRetry={refresh} />
      <ErrorBanner error={act.error} title="The action failed" />
      {done ? <Notice>{done}</Notice> : null}
      {loading ? <Loading what="jobs" /> : null}
      {jobs && jobs.length === 0 ? <Empty>No jobs yet. Run one from the Run tab.</Empty> : null}
      {selected ? <JobDetail endpointId={endpointId} jobId={selected} onClose={() => setSelected(null)} /> : null}
      {/* No empty message of its own: "No jobs yet" stands above the open job, the table below it. */}
      <DataTable
        labelledBy="jobs-title"
        rows={jobs}
        rowAttributes={(j) => ({ 'data-job-id': j.id })}
        columns={[
          {
            header: 'Job',
            cell: (j) => (
              <>
                <button
                  type="button"
                  className="link mono"
                  aria-pressed={selected === j.id}
                  onClick={() => setSelected(selected === j.id ? null : j.id)}
                  title="Show output"
                >
                  {j.id}
                </button>
                {j.error ? <div className="field-error small">{jobError(j.error).message}</div> : null}
              </>
            ),
          },
          {
            header: 'Status',
            cell: (j) => (
              <>
                <Badge value={j.status} />
                {j.retries > 0 ? <span className="muted small"> ×{j.retries + 1}</span> : null}
              </>
            ),
          },
          { header: 'Submitted', cell: (j) => dateTime(j.createdAt) },
          { header: 'Delay', num: true, cell: (j) => ms(j.delayTime) },
          { header: 'Execution', num: true, cell: (j) => ms(j.executionTime) },
          { header: 'Worker', className: 'mono small', cell: (j) => j.workerId ?? '—' },
        ]}
        actions={(j) => {
          const kind = rowAction(j);
          return kind ? (
            <button
              type="button"
              className="button-small"
              disabled={act.pending}
              onClick={() => void act.run(kind, j.id)}
            >
              {kind === 'cancel' ? 'Cancel' : 'Retry'}
              <span className="visually-hidden"> job {j.id}</span>
            </button>
          ) : null;
        }}
      />
    </section>
  );
}
