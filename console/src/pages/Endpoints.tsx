import { messageOf } from '../api.ts';
import { Badge, Empty, ErrorBanner, Loading } from '../components/ui.tsx';
import { jobStats, type JobStats } from '../format.ts';
import { usePoll, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import { useClient } from '../session.tsx';
import { WORKER_STATES, type EndpointView, type Health } from '../types.ts';

/** What one word says about an endpoint, from its health. */
export function endpointStatus(e: EndpointView, h: Health | undefined): string {
  if (!h) return 'unknown';
  const w = h.workers;
  if (w.running > 0) return 'running';
  if (w.idle > 0) return 'ready';
  if ((w.unhealthy ?? 0) > 0 && w.initializing === 0) return 'unhealthy';
  if (w.initializing > 0 || h.scaling) return 'scaling';
  if (e.workersMax === 0) return 'scaled to zero';
  return 'no workers';
}

export function WorkerCounts({ health }: { health: Health | undefined }) {
  if (!health) return <span className="muted">—</span>;
  const shown = WORKER_STATES.filter((s) => (health.workers[s] ?? 0) > 0);
  if (shown.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="chips" aria-label="Workers by state">
      {shown.map((s) => (
        <li key={s}>
          <Badge value={s} label={`${health.workers[s] ?? 0} ${s}`} />
        </li>
      ))}
    </ul>
  );
}

interface Row {
  endpoint: EndpointView;
  health?: Health;
  stats?: JobStats;
  error?: unknown;
}

const PAGE = 100;

export function EndpointsPage() {
  useTitle('Endpoints');
  const client = useClient();
  const poll = usePoll(
    'endpoints',
    async (): Promise<Row[]> => {
      const list = await client.endpoints.list();
      return Promise.all(
        list.map(async (endpoint): Promise<Row> => {
          const ep = client.endpoint(endpoint.id);
          const [health, requests] = await Promise.allSettled([ep.health(), ep.requests({ limit: PAGE })]);
          const row: Row = { endpoint };
          if (health.status === 'fulfilled') row.health = health.value;
          else row.error = health.reason;
          if (requests.status === 'fulfilled') {
            row.stats = jobStats(requests.value.requests, Date.now(), requests.value.nextCursor !== null);
          } else row.error ??= requests.reason;
          return row;
        }),
      );
    },
    5000,
  );
  return (
    <>
      <div className="page-head">
        <h1 id="endpoints-title">Endpoints</h1>
        <Link to="/endpoints/new" className="button button-primary">
          New endpoint
        </Link>
      </div>
      <ErrorBanner error={poll.error} title="Could not load endpoints" onRetry={poll.refresh} />
      {poll.loading ? <Loading what="endpoints" /> : null}
      {poll.data && poll.data.length === 0 ? (
        <Empty>
          No endpoints yet. <Link to="/endpoints/new">Create one</Link> from a <Link to="/templates">template</Link>.
        </Empty>
      ) : null}
      {poll.data && poll.data.length > 0 ? (
        <div className="table-wrap">
          {/* Named by the page's heading, as DataTable names the other pages' tables. */}
          <table className="table responsive" aria-labelledby="endpoints-title" aria-describedby="endpoints-note">
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">Status</th>
                <th scope="col">Workers</th>
                <th scope="col" className="num">
                  In queue
                </th>
                <th scope="col" className="num">
                  In progress
                </th>
                <th scope="col" className="num">
                  Jobs/min
                </th>
                <th scope="col">Type</th>
              </tr>
            </thead>
            <tbody>
              {poll.data.map((row) => {
                const e = row.endpoint;
                const status = endpointStatus(e, row.health);
                return (
                  <tr key={e.id} data-endpoint-id={e.id}>
                    <th scope="row" data-label="Endpoint">
                      <Link to={`/endpoints/${encodeURIComponent(e.id)}`}>{e.name || e.id}</Link>
                      <div className="muted mono small">{e.id}</div>
                      {row.error ? <div className="field-error small">{messageOf(row.error)}</div> : null}
                    </th>
                    <td data-label="Status">
                      <Badge value={status} />
                    </td>
                    <td data-label="Workers">
                      <WorkerCounts health={row.health} />
                      <div className="muted small">
                        min {e.workersMin} · max {e.workersMax}
                      </div>
                    </td>
                    <td data-label="In queue" className="num">
                      {row.health?.jobs.inQueue ?? '—'}
                    </td>
                    <td data-label="In progress" className="num">
                      {row.health?.jobs.inProgress ?? '—'}
                    </td>
                    <td data-label="Jobs/min" className="num">
                      {row.stats ? row.stats.perMinute : '—'}
                    </td>
                    <td data-label="Type">{e.computeType}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <p id="endpoints-note" className="muted small">
            Updated every 5 s. Jobs/min counts jobs that finished in the last minute.
          </p>
        </div>
      ) : null}
    </>
  );
}
