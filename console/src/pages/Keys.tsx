import { useRef, useState, type FormEvent } from 'react';
import { DataTable } from '../components/table.tsx';
import {
  Badge,
  Checklist,
  ConfirmButton,
  ErrorBanner,
  Field,
  focusFirstInvalid,
  Loading,
  Notice,
} from '../components/ui.tsx';
import { dateTime } from '../format.ts';
import { useAction, usePoll, useTitle } from '../hooks.ts';
import { useClient, useSession } from '../session.tsx';
import type { CreatedApiKey, KeyView } from '../types.ts';

type Scope = 'all' | 'read' | 'restricted';

/** A new key, shown this once, with a copy button. */
function NewKey({ created, onDismiss }: { created: CreatedApiKey; onDismiss: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    field.current?.select();
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied(true);
    } catch {
      // No clipboard access (plain http): the key is selected for Ctrl+C.
    }
  };
  return (
    <div className="banner banner-success" role="status">
      <p>
        <strong>Key {created.name} created.</strong> Copy it now: it is not shown again.
      </p>
      <div className="copy-row">
        <label htmlFor="new-key" className="visually-hidden">
          New API key
        </label>
        <input
          id="new-key"
          ref={field}
          className="mono"
          readOnly
          value={created.key}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button type="button" className="button-small" onClick={() => void copy()}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className="button-small" onClick={onDismiss}>
          Done
        </button>
      </div>
    </div>
  );
}

export function KeysPage() {
  useTitle('API keys');
  const client = useClient();
  const { keyPrefix, signOut } = useSession();
  const poll = usePoll(
    'keys',
    async () => {
      const [keys, endpoints] = await Promise.all([client.keys.list(), client.endpoints.list()]);
      return { keys, endpoints };
    },
    10_000,
  );
  const [name, setName] = useState('');
  const [scope, setScope] = useState<Scope>('all');
  const [endpointIds, setEndpointIds] = useState<string[]>([]);
  const [errors, setErrors] = useState<{ name?: string; endpointIds?: string }>({});
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [notice, setNotice] = useState('');
  const create = useAction(async () => {
    const k = await client.keys.create({
      name: name.trim(),
      scope,
      ...(scope === 'restricted' ? { endpointIds } : {}),
    });
    setCreated(k);
    setName('');
    setEndpointIds([]);
    poll.refresh();
  });
  const revoke = useAction(async (k: KeyView) => {
    await client.keys.revoke(k.id);
    // Revoking the key this console uses ends the session.
    if (k.prefix === keyPrefix) {
      signOut();
      return;
    }
    setNotice(`Key ${k.name} revoked.`);
    poll.refresh();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = {
      ...(name.trim() === '' ? { name: 'Enter a name.' } : {}),
      ...(scope === 'restricted' && endpointIds.length === 0
        ? { endpointIds: 'A restricted key needs at least one endpoint.' }
        : {}),
    };
    setErrors(found);
    if (Object.keys(found).length === 0) void create.run();
    else focusFirstInvalid(e.currentTarget as HTMLFormElement);
  };
  const names = new Map((poll.data?.endpoints ?? []).map((e) => [e.id, e.name || e.id]));
  return (
    <>
      <h1>API keys</h1>
      <p className="muted">
        Keys for the API and this console. This console uses the key that starts with <code>{keyPrefix}</code>.
      </p>
      <ErrorBanner error={poll.error} title="Could not load keys" onRetry={poll.refresh} />
      <ErrorBanner error={revoke.error} title="Could not revoke the key" />
      {created ? <NewKey created={created} onDismiss={() => setCreated(null)} /> : null}
      {notice ? <Notice>{notice}</Notice> : null}
      {poll.loading ? <Loading what="keys" /> : null}
      <DataTable
        caption="API keys"
        rows={poll.data?.keys}
        empty="No keys."
        columns={[
          { header: 'Name', cell: (k) => k.name },
          { header: 'Prefix', className: 'mono small', cell: (k) => `${k.prefix}…` },
          {
            header: 'Scope',
            cell: (k) => (
              <>
                <Badge value={k.scope} />
                {k.scope === 'restricted' ? (
                  <div className="small muted">{k.endpointIds.map((id) => names.get(id) ?? id).join(', ')}</div>
                ) : null}
              </>
            ),
          },
          { header: 'Created', cell: (k) => dateTime(k.createdAt) },
          { header: 'State', cell: (k) => (k.revokedAt ? <Badge value="revoked" /> : <Badge value="active" />) },
        ]}
        actions={(k) =>
          k.revokedAt ? null : <ConfirmButton label="Revoke" what={k.name} onConfirm={() => revoke.run(k)} />
        }
      />
      <form className="form card" onSubmit={submit} noValidate aria-labelledby="new-key-title">
        <h2 id="new-key-title">New key</h2>
        <div className="form-grid">
          <Field label="Name" error={errors.name}>
            {(p) => <input {...p} name="name" value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="Scope" hint="all: everything; read: look only; restricted: the queue API of chosen endpoints.">
            {(p) => (
              <select {...p} name="scope" value={scope} onChange={(e) => setScope(e.target.value as Scope)}>
                <option value="all">all</option>
                <option value="read">read</option>
                <option value="restricted">restricted</option>
              </select>
            )}
          </Field>
        </div>
        {scope === 'restricted' ? (
          <fieldset className={`field${errors.endpointIds ? ' field-invalid' : ''}`}>
            <legend>Endpoints this key may use</legend>
            <Checklist
              choices={(poll.data?.endpoints ?? []).map((e) => ({ value: e.id, label: e.name || e.id }))}
              selected={endpointIds}
              onChange={setEndpointIds}
            />
            {errors.endpointIds ? <small className="field-error">{errors.endpointIds}</small> : null}
          </fieldset>
        ) : null}
        <ErrorBanner error={create.error} title="The server refused the key" />
        <button type="submit" className="button-primary" disabled={create.pending}>
          Create key
        </button>
      </form>
    </>
  );
}
