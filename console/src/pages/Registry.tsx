import { useState, type FormEvent } from 'react';
import { DataTable } from '../components/table.tsx';
import {
  ConfirmButton,
  ErrorBanner,
  Field,
  focusFirstInvalid,
  Loading,
  Notice,
  WriteOnlyField,
} from '../components/ui.tsx';
import { useAction, usePoll, useTitle } from '../hooks.ts';
import { useClient } from '../session.tsx';
import type { RegistryAuthView } from '../types.ts';

/**
 * Container registry credentials. The password is write-only: it is sent once, stored encrypted by the server and
 * never shown again (the API lists only id and name); the form forgets it as soon as it is sent.
 */
export function RegistryPage() {
  useTitle('Registry credentials');
  const client = useClient();
  const poll = usePoll('registry', () => client.registryAuths.list(), 10_000);
  const [name, setName] = useState('');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<{ name?: string; username?: string; password?: string }>({});
  const [notice, setNotice] = useState('');
  const create = useAction(async (body: { name: string; username: string; password: string }) => {
    const a = await client.registryAuths.create(body);
    setNotice(`Credentials ${a.name} stored.`);
    setName('');
    setUsername('');
    poll.refresh();
  });
  const remove = useAction(async (a: RegistryAuthView) => {
    await client.registryAuths.delete(a.id);
    setNotice(`Credentials ${a.name} deleted.`);
    poll.refresh();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = {
      ...(name.trim() === '' ? { name: 'Enter a name.' } : {}),
      ...(username.trim() === '' ? { username: 'Enter the registry user name.' } : {}),
      ...(password === '' ? { password: 'Enter the password or token.' } : {}),
    };
    setErrors(found);
    if (Object.keys(found).length > 0) {
      focusFirstInvalid(e.currentTarget as HTMLFormElement);
      return;
    }
    const body = { name: name.trim(), username: username.trim(), password };
    // The password leaves the page's state at once, whatever the answer.
    setPassword('');
    void create.run(body);
  };
  return (
    <>
      <h1>Registry credentials</h1>
      <p className="muted">
        Credentials for private container registries, used by templates. Passwords are never shown again.
      </p>
      <ErrorBanner error={poll.error} title="Could not load credentials" onRetry={poll.refresh} />
      <ErrorBanner error={remove.error} title="Could not delete the credentials" />
      {notice ? <Notice>{notice}</Notice> : null}
      {poll.loading ? <Loading what="credentials" /> : null}
      <DataTable
        caption="Registry credentials"
        rows={poll.data}
        empty="No registry credentials yet."
        columns={[
          { header: 'Name', cell: (a) => a.name },
          { header: 'Id', className: 'mono small', cell: (a) => a.id },
          { header: 'Password', className: 'muted', cell: () => 'stored, hidden' },
        ]}
        actions={(a) => <ConfirmButton label="Delete" what={a.name} onConfirm={() => remove.run(a)} />}
      />
      <form className="form card" onSubmit={submit} noValidate aria-labelledby="new-auth-title" autoComplete="off">
        <h2 id="new-auth-title">Add credentials</h2>
        <div className="form-grid">
          <Field label="Name" error={errors.name}>
            {(p) => <input {...p} name="name" value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="User name" error={errors.username}>
            {(p) => (
              <input
                {...p}
                name="username"
                autoComplete="off"
                value={username}
                onChange={(e) => setUsername(e.target.value)}
              />
            )}
          </Field>
          <WriteOnlyField
            label="Password or token"
            name="password"
            value={password}
            error={errors.password}
            onChange={setPassword}
          />
        </div>
        <ErrorBanner error={create.error} title="The server refused the credentials" />
        <button type="submit" className="button-primary" disabled={create.pending}>
          Store credentials
        </button>
      </form>
    </>
  );
}
