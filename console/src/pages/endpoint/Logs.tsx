import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { ErrorBanner } from '../../components/ui.tsx';
import { time } from '../../format.ts';
import { useClient } from '../../session.tsx';
import type { LogLine } from '../../types.ts';

const KEEP = 2000;
const PAGE = 500;

/**
 * The endpoint's worker output. "Follow" tails it with long polls (`follow=true`: the server holds the request
 * until lines come, up to 20 s); otherwise the newest lines are loaded once and on "Refresh".
 */
export function Logs({ endpointId }: { endpointId: string }) {
  const client = useClient();
  const [lines, setLines] = useState<LogLine[]>([]);
  const [follow, setFollow] = useState(true);
  const [workerId, setWorkerId] = useState('');
  const [jobId, setJobId] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [generation, setGeneration] = useState(0);
  const box = useRef<HTMLOListElement>(null);
  const stick = useRef(true);

  // Filters apply on Enter / "Apply", not on every keystroke.
  const [applied, setApplied] = useState<{ workerId?: string; jobId?: string }>({});

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    let after = 0;
    let fresh = true;
    const add = (more: LogLine[]) => {
      // The first answer replaces what an earlier filter showed.
      if (fresh) setLines(more.slice(-KEEP));
      else if (more.length > 0) setLines((old) => [...old, ...more].slice(-KEEP));
      fresh = false;
    };
    const run = async () => {
      try {
        // The first read pages through what is there already.
        for (;;) {
          const page = await client.logs(endpointId, { ...applied, after, limit: PAGE }, { signal });
          add(page.lines);
          after = page.next;
          setError(null);
          if (page.lines.length < PAGE) break;
        }
        while (follow && !signal.aborted) {
          const page = await client.logs(endpointId, { ...applied, after, limit: PAGE, follow: true }, { signal });
          add(page.lines);
          after = page.next;
          setError(null);
          // Never more than two requests a second, however busy the log.
          await new Promise((r) => setTimeout(r, 500));
        }
      } catch (e) {
        if (signal.aborted) return;
        setError(e);
        // Try again a little later while following.
        if (follow) setTimeout(() => !signal.aborted && setGeneration((g) => g + 1), 3000);
      }
    };
    void run();
    return () => controller.abort();
  }, [client, endpointId, follow, applied, generation]);

  // Keep the newest line in view while following, unless the reader scrolled up.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);

  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">Logs</h2>
      <form
        className="toolbar"
        aria-label="Log filters"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({
            ...(workerId.trim() ? { workerId: workerId.trim() } : {}),
            ...(jobId.trim() ? { jobId: jobId.trim() } : {}),
          });
          setGeneration((g) => g + 1);
        }}
      >
        <label className="inline">
          <input type="checkbox" name="follow" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
        <label className="inline">
          Worker{' '}
          <input
            name="workerId"
            value={workerId}
            onChange={(e) => setWorkerId(e.target.value)}
            placeholder="all"
            size={14}
          />
        </label>
        <label className="inline">
          Job{' '}
          <input name="jobId" value={jobId} onChange={(e) => setJobId(e.target.value)} placeholder="all" size={14} />
        </label>
        <button type="submit" className="button-small">
          Apply / refresh
        </button>
        <button type="button" className="button-small" onClick={() => setLines([])}>
          Clear
        </button>
      </form>
      <ErrorBanner error={error} title="Could not read the logs" />
      <ol
        ref={box}
        className="logs"
        role="log"
        aria-label="Worker output"
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.length === 0 ? <li className="muted">No output yet{follow ? ' — waiting for lines…' : '.'}</li> : null}
        {lines.map((l) => (
          <li key={l.seq} className={l.stream === 'stderr' ? 'stderr' : undefined}>
            <time dateTime={l.time}>{time(l.time)}</time> <span className="log-worker">{l.workerId}</span>{' '}
            {l.jobId ? <span className="log-job">{l.jobId.slice(0, 8)}</span> : null}{' '}
            <span className="log-message">{l.message}</span>
          </li>
        ))}
      </ol>
      <p className="muted small">
        {follow ? 'Following: new lines appear as workers write them.' : 'Paused.'} Showing the last {KEEP} lines at
        most.
      </p>
    </section>
  );
}
