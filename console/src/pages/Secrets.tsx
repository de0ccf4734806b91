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
import type { SecretView } from '../types.ts';

/**
 * Named secrets that template and endpoint env values reference as `{{ RUNPOD_SECRET_<name> }}`, replaced when a
 * worker starts. The value is write-only, like a registry password: sent once, stored encrypted, never shown again;
 * the form forgets it as soon as it is sent.
 */
export function SecretsPage() {
  useTitle('Secrets');
  const client = useClient();
  const poll = usePoll('secrets', () => client.secrets.list(), 10_000);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<{ name?: string; value?: string }>({});
  const [notice, setNotice] = useState('');
  const create = useAction(async (body: { name: string; value: string; description: string }) => {
    const s = await client.secrets.create(body);
    setNotice(`Secret ${s.name} stored: use {{ RUNPOD_SECRET_${s.name} }} in an env value.`);
    setName('');
    setDescription('');
    poll.refresh();
  });
  const remove = useAction(async (s: SecretView) => {
    await client.secrets.delete(s.id);
    setNotice(`Secret ${s.name} deleted. Running workers keep it; the next start of one that uses it fails.`);
    poll.refresh();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = {
      ...(name.trim() === '' ? { name: 'Enter a name.' } : {}),
      ...(value === '' ? { value: 'Enter the value.' } : {}),
    };
    setErrors(found);
    if (Object.keys(found).length > 0) {
      focusFirstInvalid(e.currentTarget as HTMLFormElement);
      return;
    }
    const body = { name: name.trim(), value, description: description.trim() };
    // The value leaves the page's state at once, whatever the answer.
    setValue('');
    void create.run(body);
  };
  return (
    <>
      <h1>Secrets</h1>
      <p className="muted">
        Tokens and keys for your workers. Reference one in a template or endpoint env value as{' '}
        <code>{'{{ RUNPOD_SECRET_name }}'}</code>; values are never shown again.
      </p>
      <ErrorBanner error={poll.error} title="Could not load secrets" onRetry={poll.refresh} />
      <ErrorBanner error={remove.error} title="Could not delete the secret" />
      {notice ? <Notice>{notice}</Notice> : null}
      {poll.loading ? <Loading what="secrets" /> : null}
      <DataTable
        caption="Secrets"
        rows={poll.data}
        empty="No secrets yet."
        columns={[
          { header: 'Name', cell: (s) => s.name },
          { header: 'Description', cell: (s) => s.description },
          { header: 'Value', className: 'muted', cell: () => 'stored, hidden' },
        ]}
        actions={(s) => <ConfirmButton label="Delete" what={s.name} onConfirm={() => remove.run(s)} />}
      />
      <form className="form card" onSubmit={submit} noValidate aria-labelledby="new-secret-title" autoComplete="off">
        <h2 id="new-secret-title">Add a secret</h2>
        <div className="form-grid">
          <Field label="Name" error={errors.name} hint="Letters, digits, _ and -.">
            {(p) => <input {...p} name="name" value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <WriteOnlyField label="Value" name="value" value={value} error={errors.value} onChange={setValue} />
          <Field label="Description">
            {(p) => (
              <input {...p} name="description" value={description} onChange={(e) => setDescription(e.target.value)} />
            )}
          </Field>
        </div>
        <ErrorBanner error={create.error} title="The server refused the secret" />
        <button type="submit" className="button-primary" disabled={create.pending}>
          Store secret
        </button>
      </form>
    </>
  );
}
