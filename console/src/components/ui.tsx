import { Component, useEffect, useId, useRef, useState, type ErrorInfo, type ReactNode } from 'react';
import { codeOf, isUnauthorized, messageOf } from '../api.ts';
import { jobError } from '../format.ts';
import { useSessionState } from '../session.tsx';

/** A failure as the server described it (message and code), announced to screen readers. */
export function ErrorBanner({ error, title, onRetry }: { error: unknown; title?: string; onRetry?: () => void }) {
  const { session } = useSessionState();
  if (error === null || error === undefined) return null;
  const code = codeOf(error);
  return (
    <div className="banner banner-error" role="alert">
      <p>
        {title ? <strong>{title}: </strong> : null}
        <span className="error-message">{messageOf(error)}</span>
        {code ? <code className="error-code">{code}</code> : null}
      </p>
      <div className="banner-actions">
        {onRetry ? (
          <button type="button" className="button-small" onClick={onRetry}>
            Retry
          </button>
        ) : null}
        {isUnauthorized(error) && session ? (
          <button type="button" className="button-small" onClick={session.signOut}>
            Sign in again
          </button>
        ) : null}
      </div>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

const TONES: Record<string, string> = {
  COMPLETED: 'ok',
  IN_PROGRESS: 'info',
  IN_QUEUE: 'wait',
  FAILED: 'bad',
  TIMED_OUT: 'bad',
  CANCELLED: 'muted',
  idle: 'ok',
  ready: 'ok',
  running: 'info',
  initializing: 'wait',
  throttled: 'wait',
  standby: 'muted',
  unhealthy: 'bad',
  scaling: 'wait',
  'scaled to zero': 'muted',
  'no workers': 'muted',
  all: 'info',
  read: 'muted',
  restricted: 'wait',
  revoked: 'bad',
  active: 'ok',
};

export function Badge({ value, label }: { value: string; label?: string }) {
  return <span className={`badge badge-${TONES[value] ?? 'muted'}`}>{label ?? value.replace('_', ' ')}</span>;
}

/** A polite live region for "Saved", "Created" and the like. */
export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

/**
 * A destructive action in two steps: the first press asks, the second does it (no browser dialog, so it works
 * the same with a keyboard, a screen reader and in tests).
 */
export function ConfirmButton({
  label,
  confirmLabel,
  what,
  onConfirm,
  disabled,
}: {
  label: string;
  confirmLabel?: string;
  /**
   * What it acts on (a row's name), added to both buttons for screen readers only: a table's rows otherwise offer
   * a list of buttons all called "Delete", as an Edit button would be without its row's name.
   */
  what?: string;
  onConfirm: () => void | Promise<void>;
  disabled?: boolean;
}) {
  const suffix = what ? <span className="visually-hidden"> {what}</span> : null;
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className="button-danger button-small" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
        {suffix}
      </button>
    );
  }
  return (
    <span className="confirm">
      <button
        ref={confirmRef}
        type="button"
        className="button-danger button-small"
        onClick={() => {
          setAsking(false);
          void onConfirm();
        }}
      >
        {confirmLabel ?? `Yes, ${label.toLowerCase()}`}
        {suffix}
      </button>
      <button type="button" className="button-small" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** Tick boxes for a set of choices; `selected` keeps the order in which they were ticked. */
export function Checklist({
  name,
  choices,
  selected,
  onChange,
}: {
  /** The inputs' name (forms and tests find them by it). */
  name?: string;
  choices: ReadonlyArray<{ value: string; label: ReactNode }>;
  selected: readonly string[];
  onChange: (selected: string[]) => void;
}) {
  return (
    <div className="checklist">
      {choices.map((c) => (
        <label key={c.value}>
          <input
            type="checkbox"
            name={name}
            value={c.value}
            checked={selected.includes(c.value)}
            onChange={(e) =>
              onChange(e.target.checked ? [...selected, c.value] : selected.filter((x) => x !== c.value))
            }
          />{' '}
          {c.label}
        </label>
      ))}
    </div>
  );
}

/** A labelled form control with its hint and its error, wired with aria-describedby / aria-invalid. */
export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: ReactNode;
  error?: string | null | undefined;
  children: (props: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean }) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : null, error ? errorId : null].filter(Boolean).join(' ');
  return (
    <div className={`field${error ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...(error ? { 'aria-invalid': true } : {}),
      })}
      {hint ? (
        <small id={hintId} className="hint">
          {hint}
        </small>
      ) : null}
      {error ? (
        <small id={errorId} className="field-error">
          {error}
        </small>
      ) : null}
    </div>
  );
}

/**
 * After a form's own check failed: focus its first field marked invalid, once React has rendered the errors of
 * this submit (docs/console.md: a form that fails the check moves focus to the first bad field).
 */
export function focusFirstInvalid(form: HTMLFormElement): void {
  requestAnimationFrame(() => form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
}

/**
 * A write-only secret (a registry password, a secret's value): typed hidden, never offered by the browser's
 * autocomplete, and never shown again once stored. The page clears it as soon as it is sent.
 */
export function WriteOnlyField({
  label,
  name,
  value,
  error,
  onChange,
}: {
  label: string;
  name: string;
  value: string;
  error?: string | undefined;
  onChange: (value: string) => void;
}) {
  return (
    <Field label={label} error={error} hint="Write-only: stored encrypted, never shown again.">
      {(p) => (
        <input
          {...p}
          name={name}
          type="password"
          autoComplete="new-password"
          value={value}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

/** Keeps a page from going blank on a rendering bug: shows what broke and a way back. */
export class ErrorBoundary extends Component<{ children: ReactNode; resetKey?: string }, { error: unknown }> {
  override state: { error: unknown } = { error: null };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    console.error('console page failed', error, info.componentStack);
  }

  override componentDidUpdate(prev: { resetKey?: string }): void {
    if (prev.resetKey !== this.props.resetKey && this.state.error !== null) this.setState({ error: null });
  }

  override render() {
    if (this.state.error !== null) {
      return (
        <div className="banner banner-error" role="alert">
          <p>
            <strong>This page failed: </strong>
            {messageOf(this.state.error)}
          </p>
          <button type="button" className="button-small" onClick={() => this.setState({ error: null })}>
            Try again
          </button>
        </div>
      );
    }
    return this.props.children;
  }
}

/** A failed job's error: its message, and the traceback (when the worker sent one) folded below it. */
export function JobError({ error }: { error: unknown }) {
  const { message, traceback } = jobError(error);
  return (
    <>
      <pre className="output output-error">{message}</pre>
      {traceback ? (
        <details className="traceback">
          <summary>Traceback</summary>
          <pre className="output" data-testid="traceback">
            {traceback}
          </pre>
        </details>
      ) : null}
    </>
  );
}

export function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: string }) {
  return (
    <div className="stat">
      <dt>{label}</dt>
      <dd>
        {value}
        {hint ? <small className="muted"> {hint}</small> : null}
      </dd>
    </div>
  );
}
