import { useState, type FormEvent } from 'react';
import { createClient } from '../api.ts';
import { ErrorBanner, Field, focusFirstInvalid } from '../components/ui.tsx';
import { useAction, useTitle } from '../hooks.ts';
import { useSessionState } from '../session.tsx';

/** Sign in with an API key: the key is checked against the server, then kept in this tab's sessionStorage. */
export function SignIn() {
  useTitle('Sign in');
  const { signIn } = useSessionState();
  const [key, setKey] = useState('');
  const [empty, setEmpty] = useState(false);
  const check = useAction(async (apiKey: string) => {
    // Any key that may read the management API may use the console.
    await createClient(apiKey).endpoints.list();
    signIn(apiKey);
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = key.trim();
    setEmpty(trimmed === '');
    if (trimmed !== '') void check.run(trimmed);
    else focusFirstInvalid(event.currentTarget as HTMLFormElement);
  };
  return (
    <main id="main" className="signin">
      <form className="card signin-card" onSubmit={submit} noValidate aria-labelledby="signin-title">
        <h1 id="signin-title">
          <span className="brand-mark" aria-hidden="true" /> Wharf console
        </h1>
        <p className="muted">
          Sign in with an API key. It is kept in this browser tab only, until you sign out or close the tab.
        </p>
        <Field
          label="API key"
          hint="The admin key printed by wharf serve, or a key made under API keys."
          error={empty ? 'Enter an API key.' : null}
        >
          {(props) => (
            <input
              {...props}
              type="password"
              name="apiKey"
              // The key is kept in this tab only (docs/console.md): "current-password" invited the browser to save
              // it with the passwords. The data- attributes ask the common password manager extensions the same.
              autoComplete="off"
              data-1p-ignore
              data-lpignore="true"
              data-bwignore
              autoFocus
              spellCheck={false}
              value={key}
              onChange={(e) => setKey(e.target.value)}
            />
          )}
        </Field>
        <ErrorBanner error={check.error} title="Sign-in failed" />
        <button type="submit" className="button-primary" disabled={check.pending}>
          {check.pending ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
