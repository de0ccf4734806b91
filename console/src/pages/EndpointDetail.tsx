import { useState } from 'react';
import { ConfirmButton, ErrorBanner, Loading, Notice } from '../components/ui.tsx';
import { jobStats } from '../format.ts';
import { useAction, usePoll, useTitle } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import { useClient } from '../session.tsx';
import type { EndpointView } from '../types.ts';
import { EndpointForm } from './endpoint/EndpointForm.tsx';
import { Jobs } from './endpoint/Jobs.tsx';
import { Logs } from './endpoint/Logs.tsx';
import { Overview, WINDOW_MS, type Sample, type StatSample } from './endpoint/Overview.tsx';
import { RunPanel } from './endpoint/RunPanel.tsx';

const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'run', label: 'Run' },
  { id: 'logs', label: 'Logs' },
  { id: 'settings', label: 'Settings' },
] as const;
type Tab = (typeof TABS)[number]['id'];

const JOBS_PAGE = 100;

function Settings({ endpoint, onSaved }: { endpoint: EndpointView; onSaved: () => void }) {
  const client = useClient();
  const [saved, setSaved] = useState(0);
  // What the last save answered: the form starts again from it (the polled endpoint catches up a moment later).
  const [current, setCurrent] = useState<EndpointView | null>(null);
  const templateId = (current ?? endpoint).templateId;
  const refs = usePoll(
    `settings-refs:${templateId}`,
    async () => {
      const [templates, volumes] = await Promise.all([client.templates.list(), client.volumes.list()]);
      // The list leaves out a template made for one endpoint (GraphQL saveEndpoint's inline `template:`): without
      // it the drop-down showed the first template as if it were the one in use.
      if (templates.some((t) => t.id === templateId)) return { templates, volumes };
      return { templates: [...templates, await client.templates.get(templateId)], volumes };
    },
    60_000,
  );
  const save = useAction(async (body: Record<string, unknown>) => {
    setCurrent(await client.endpoints.update(endpoint.id, body));
    setSaved((n) => n + 1);
    onSaved();
  });
  const remove = useAction(async () => {
    await client.endpoints.delete(endpoint.id);
    navigate('/endpoints');
  });
  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <ErrorBanner error={refs.error} title="Could not load templates and volumes" onRetry={refs.refresh} />
      {refs.data ? (
        <EndpointForm
          key={`${endpoint.id}:${saved}`}
          endpoint={current ?? endpoint}
          templates={refs.data.templates}
          volumes={refs.data.volumes}
          submitLabel="Save settings"
          onSubmit={(body) => void save.run(body)}
          error={save.error}
          pending={save.pending}
        />
      ) : (
        <Loading what="settings" />
      )}
      {saved > 0 && !save.pending && !save.error ? <Notice>Settings saved.</Notice> : null}
      <div className="danger-zone">
        <h3>Delete this endpoint</h3>
        <p className="muted">Its queued jobs are dropped and its workers stopped.</p>
        <ErrorBanner error={remove.error} title="Could not delete the endpoint" />
        <ConfirmButton label="Delete endpoint" onConfirm={() => remove.run()} disabled={remove.pending} />
      </div>
    </section>
  );
}

export function EndpointDetailPage({ id, tab }: { id: string; tab: string | undefined }) {
  const client = useClient();
  const active: Tab = TABS.some((t) => t.id === tab) ? (tab as Tab) : 'overview';
  const ep = client.endpoint(id);
  const endpoint = usePoll(`endpoint:${id}`, () => client.endpoints.get(id, { includeWorkers: true }), 3000);
  // The live series: one point per poll, kept for the chart window (the page is keyed by endpoint id).
  const [samples, setSamples] = useState<Sample[]>([]);
  const [statSamples, setStatSamples] = useState<StatSample[]>([]);
  const [now, setNow] = useState(() => Date.now());
  const health = usePoll(
    `health:${id}`,
    async () => {
      const h = await ep.health();
      const t = Date.now();
      setNow(t);
      setSamples((old) => [
        ...old.filter((s) => s.t > t - WINDOW_MS),
        { t, inQueue: h.jobs.inQueue, inProgress: h.jobs.inProgress },
      ]);
      return h;
    },
    2000,
  );
  const requests = usePoll(
    `requests:${id}`,
    async () => {
      const page = await ep.requests({ limit: JOBS_PAGE });
      const t = Date.now();
      const point = { t, stats: jobStats(page.requests, t, page.nextCursor !== null) };
      setStatSamples((old) => [...old.filter((s) => s.t > t - WINDOW_MS), point]);
      return page;
    },
    4000,
  );
  const stats = statSamples[statSamples.length - 1]?.stats;
  const name = endpoint.data?.name || id;
  useTitle(`${name} · ${TABS.find((t) => t.id === active)!.label}`);

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/endpoints">Endpoints</Link> <span aria-hidden="true">›</span> <span aria-current="page">{name}</span>
      </nav>
      <div className="page-head">
        <h1>
          {name} <span className="muted mono small">{id}</span>
        </h1>
      </div>
      <ErrorBanner error={endpoint.error} title="Could not load the endpoint" onRetry={endpoint.refresh} />
      {active === 'overview' ? <ErrorBanner error={health.error} title="Could not load health" /> : null}
      <nav aria-label="Endpoint sections" className="tabs">
        <ul>
          {TABS.map((t) => (
            <li key={t.id}>
              <Link
                to={`/endpoints/${encodeURIComponent(id)}${t.id === 'overview' ? '' : `/${t.id}`}`}
                aria-current={t.id === active ? 'page' : undefined}
              >
                {t.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <div className="tab-panel">
        {active === 'overview' ? (
          <Overview
            endpointId={id}
            onPurged={() => {
              health.refresh();
              requests.refresh();
            }}
            endpoint={endpoint.data}
            health={health.data}
            stats={stats}
            samples={samples}
            statSamples={statSamples}
            now={now}
          />
        ) : null}
        {active === 'jobs' ? (
          <Jobs
            endpointId={id}
            jobs={requests.data?.requests}
            loading={requests.loading}
            error={requests.error}
            refresh={requests.refresh}
          />
        ) : null}
        {active === 'run' ? <RunPanel endpointId={id} onSubmitted={requests.refresh} /> : null}
        {active === 'logs' ? <Logs endpointId={id} /> : null}
        {active === 'settings' ? (
          endpoint.data ? (
            <Settings endpoint={endpoint.data} onSaved={endpoint.refresh} />
          ) : (
            <Loading what="the endpoint" />
          )
        ) : null}
      </div>
    </>
  );
}

export function NewEndpointPage() {
  useTitle('New endpoint');
  const client = useClient();
  const refs = usePoll(
    'new-endpoint-refs',
    async () => {
      const [templates, volumes] = await Promise.all([client.templates.list(), client.volumes.list()]);
      return { templates, volumes };
    },
    60_000,
  );
  const create = useAction(async (body: Record<string, unknown>) => {
    const e = await client.endpoints.create(body as unknown as Parameters<typeof client.endpoints.create>[0]);
    navigate(`/endpoints/${encodeURIComponent(e.id)}`);
  });
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to="/endpoints">Endpoints</Link> <span aria-hidden="true">›</span> <span aria-current="page">New</span>
      </nav>
      <h1>New endpoint</h1>
      <ErrorBanner error={refs.error} title="Could not load templates" onRetry={refs.refresh} />
      {refs.loading ? <Loading what="templates" /> : null}
      {refs.data && refs.data.templates.length === 0 ? (
        <p className="banner banner-info">
          An endpoint runs a template. <Link to="/templates">Create a template</Link> first.
        </p>
      ) : null}
      {refs.data ? (
        <EndpointForm
          templates={refs.data.templates}
          volumes={refs.data.volumes}
          submitLabel="Create endpoint"
          onSubmit={(body) => void create.run(body)}
          error={create.error}
          pending={create.pending}
        />
      ) : null}
    </>
  );
}
