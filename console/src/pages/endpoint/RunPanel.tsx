import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Badge, ErrorBanner, Field, JobError } from '../../components/ui.tsx';
import { json, ms } from '../../format.ts';
import type { WharfClient } from '../../api.ts';
import { useClient } from '../../session.tsx';
import { isFinalStatus, type JobStatusView } from '../../types.ts';

type Mode = 'async' | 'sync';

/** How long /runsync holds the request by default, in seconds (the server allows 1–300). */
const DEFAULT_WAIT_S = 60;
/** Each /status-sync long poll while a sync job is followed after /runsync answered. */
const FOLLOW_WAIT_MS = 60_000;

/**
 * The job's final status: /status-sync long polls until it is final. /runsync answers when its wait is over even
 * if the job is still queued or running (long jobs: LLM generation, training steps), and the panel then goes on
 * following it, its Cancel button live, as in async mode.
 */
async function untilFinal(
  ep: ReturnType<WharfClient['endpoint']>,
  job: JobStatusView,
  signal: AbortSignal,
): Promise<JobStatusView> {
  let status = job;
  while (!isFinalStatus(status.status)) status = await ep.statusSync(status.id, { wait: FOLLOW_WAIT_MS, signal });
  return status;
}

/** The wait box: whole seconds 1–300, or a message. */
function parseWait(text: string): { waitMs: number } | { error: string } {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(n) || n < 1 || n > 300) {
    return { error: 'Enter a whole number of seconds from 1 to 300.' };
  }
  return { waitMs: n * 1000 };
}

const EXAMPLE = '{\n  "prompt": "Hello from the Wharf console",\n  "stream": 3\n}';

/** Parse the input box: a JSON object, or a message saying what is wrong. */
function parseInput(text: string): { input: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `The input is not valid JSON: ${(e as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: 'The input must be a JSON object, for example {"prompt": "hi"}.' };
  }
  return { input: value as Record<string, unknown> };
}

/**
 * Submit a job with a JSON input, async (/run, then the /stream output as it comes) or sync (/runsync), and cancel
 * it while it runs.
 */
export function RunPanel({ endpointId, onSubmitted }: { endpointId: string; onSubmitted: () => void }) {
  const client = useClient();
  const [text, setText] = useState(EXAMPLE);
  const [mode, setMode] = useState<Mode>('async');
  const [webhook, setWebhook] = useState('');
  const [waitText, setWaitText] = useState(String(DEFAULT_WAIT_S));
  const [waitError, setWaitError] = useState<string | null>(null);
  const [inputError, setInputError] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);
  const [jobId, setJobId] = useState<string | null>(null);
  const [status, setStatus] = useState<JobStatusView | null>(null);
  const [chunks, setChunks] = useState<unknown[]>([]);
  const [note, setNote] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const waitRef = useRef<HTMLInputElement>(null);

  useEffect(() => () => abort.current?.abort(), []);

  // While a job runs, its status (queue reason, progress) is read every 1.5 s.
  useEffect(() => {
    if (!jobId || !running) return;
    let stopped = false;
    const ep = client.endpoint(endpointId);
    const tick = async () => {
      try {
        const s = await ep.status(jobId);
        if (!stopped) setStatus((old) => (old && isFinalStatus(old.status) ? old : s));
      } catch {
        // The stream shows failures; this is only a progress view.
      }
    };
    const timer = setInterval(() => void tick(), 1500);
    void tick();
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client, endpointId, jobId, running]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const parsed = parseInput(text);
    if ('error' in parsed) {
      setInputError(parsed.error);
      inputRef.current?.focus();
      return;
    }
    setInputError(null);
    const wait = parseWait(waitText);
    if (mode === 'sync' && 'error' in wait) {
      setWaitError(wait.error);
      // The box is in the Options fold: open it, or focus goes nowhere.
      const details = waitRef.current?.closest('details');
      if (details) details.open = true;
      waitRef.current?.focus();
      return;
    }
    setWaitError(null);
    setError(null);
    setNote(null);
    setChunks([]);
    setStatus(null);
    setJobId(null);
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    const ep = client.endpoint(endpointId);
    const request = { input: parsed.input, ...(webhook.trim() ? { webhook: webhook.trim() } : {}) };
    try {
      if (mode === 'async') {
        const res = await ep.run(request, { signal: controller.signal });
        setJobId(res.id);
        setStatus({ id: res.id, status: res.status });
        onSubmitted();
        for await (const chunk of ep.stream(res.id, { signal: controller.signal })) {
          setChunks((c) => [...c, chunk]);
        }
        setStatus(await ep.status(res.id, { signal: controller.signal }));
      } else {
        // One /runsync (timeoutMs = its wait: the SDK's own status-sync follow-up gave up after a total): once it
        // answers, the job id is known, so Cancel works while untilFinal follows the job for as long as it takes.
        const waitMs = 'waitMs' in wait ? wait.waitMs : DEFAULT_WAIT_S * 1000;
        const first = await ep.runSync(request, { signal: controller.signal, timeoutMs: waitMs, wait: waitMs });
        setJobId(first.id);
        setStatus(first);
        onSubmitted();
        const final = await untilFinal(ep, first, controller.signal);
        setStatus(final);
      }
    } catch (e) {
      if (!controller.signal.aborted) setError(e);
    } finally {
      if (abort.current === controller) abort.current = null;
      setRunning(false);
    }
  };

  const cancel = async () => {
    if (jobId) {
      try {
        const res = await client.endpoint(endpointId).cancel(jobId);
        setNote(`Cancel sent: the job is ${res.status.replace('_', ' ').toLowerCase()}.`);
      } catch (e) {
        setError(e);
      }
    } else {
      // runsync has not told us the job id yet: stop waiting (the job itself goes on).
      abort.current?.abort();
      setNote('Stopped waiting. A sync job keeps running on the server; find it under Jobs.');
    }
  };

  return (
    <section aria-labelledby="run-title">
      <h2 id="run-title">Run a job</h2>
      <form className="form" onSubmit={(e) => void submit(e)} noValidate aria-labelledby="run-title">
        <Field label="Input (JSON)" error={inputError} hint='The handler receives this as job["input"].'>
          {(props) => (
            <textarea
              {...props}
              ref={inputRef}
              name="input"
              className="code"
              rows={7}
              spellCheck={false}
              value={text}
              onChange={(e) => setText(e.target.value)}
            />
          )}
        </Field>
        <fieldset className="field">
          <legend>Mode</legend>
          <div className="radios">
            <label>
              <input
                type="radio"
                name="mode"
                value="async"
                checked={mode === 'async'}
                onChange={() => setMode('async')}
              />{' '}
              Async (/run, streamed output)
            </label>
            <label>
              <input type="radio" name="mode" value="sync" checked={mode === 'sync'} onChange={() => setMode('sync')} />{' '}
              Sync (/runsync)
            </label>
          </div>
        </fieldset>
        <details className="options">
          <summary>Options</summary>
          <Field label="Webhook URL" hint="Optional: the final status is POSTed here.">
            {(props) => (
              <input
                {...props}
                name="webhook"
                type="url"
                value={webhook}
                onChange={(e) => setWebhook(e.target.value)}
              />
            )}
          </Field>
          <Field
            label="Server wait (s)"
            error={waitError}
            hint="Sync: how long /runsync holds the request before it answers with the job's status (1–300). A job still running then is followed until it ends."
          >
            {(props) => (
              <input
                {...props}
                ref={waitRef}
                name="wait"
                type="text"
                inputMode="numeric"
                value={waitText}
                onChange={(e) => setWaitText(e.target.value)}
              />
            )}
          </Field>
        </details>
        <div className="button-row">
          <button type="submit" className="button-primary" disabled={running}>
            {running ? 'Running…' : 'Run'}
          </button>
          <button type="button" className="button-danger" disabled={!running} onClick={() => void cancel()}>
            Cancel job
          </button>
        </div>
      </form>
      <ErrorBanner error={error} title="The job could not run" />
      {note ? <p role="status">{note}</p> : null}
      {jobId || status ? (
        <div className="card run-result">
          <p>
            {status ? <Badge value={status.status} /> : null} Job <span className="mono">{jobId ?? status?.id}</span>
            {status?.delayTime !== undefined ? <> · delay {ms(status.delayTime)}</> : null}
            {status?.executionTime !== undefined ? <> · execution {ms(status.executionTime)}</> : null}
          </p>
          {status?.queueReason ? (
            <p className="muted">
              Waiting: {status.queueReason.message ?? status.queueReason.reason}{' '}
              <code>{status.queueReason.reason}</code>
            </p>
          ) : null}
          {mode === 'async' || chunks.length > 0 ? (
            <>
              <h3>Stream</h3>
              <ol className="stream" role="log" aria-label="Streamed output" data-testid="stream">
                {chunks.map((c, i) => (
                  <li key={i}>
                    <code>{JSON.stringify(c) ?? 'undefined'}</code>
                  </li>
                ))}
                {chunks.length === 0 ? (
                  <li className="muted">{running ? 'Waiting for output…' : 'No chunks.'}</li>
                ) : null}
              </ol>
            </>
          ) : null}
          {status && isFinalStatus(status.status) ? (
            <>
              <h3>Result</h3>
              {status.output !== undefined ? (
                <pre className="output" data-testid="output">
                  {json(status.output)}
                </pre>
              ) : null}
              {status.error !== undefined && status.error !== null ? <JobError error={status.error} /> : null}
            </>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
