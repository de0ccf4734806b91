import { useState, type FormEvent } from 'react';
import { DATA_CENTER_IDS } from '../../../src/domain/resources.ts';
import { DataTable } from '../components/table.tsx';
import { ConfirmButton, ErrorBanner, Field, focusFirstInvalid, Loading, Notice } from '../components/ui.tsx';
import { useAction, usePoll, useTitle } from '../hooks.ts';
import { useClient } from '../session.tsx';
import type { VolumeView } from '../types.ts';

const MAX_GB = 4000;

function sizeError(text: string, min: number): string | null {
  if (!/^\d+$/.test(text.trim())) return 'Size must be a whole number of GB.';
  const n = Number(text);
  if (n < min || n > MAX_GB) return `Size must be between ${min} and ${MAX_GB} GB.`;
  return null;
}

/** Rename or grow one volume (volumes never shrink). */
function EditVolume({ volume, onDone }: { volume: VolumeView; onDone: (message: string) => void }) {
  const client = useClient();
  const [name, setName] = useState(volume.name);
  const [size, setSize] = useState(String(volume.size));
  // Each error on its own field (an empty name was shown, and marked invalid, on the size field).
  const [errors, setErrors] = useState<{ name?: string; size?: string }>({});
  const save = useAction(async () => {
    const patch: { name?: string; size?: number } = {};
    if (name.trim() !== volume.name) patch.name = name.trim();
    if (Number(size) !== volume.size) patch.size = Number(size);
    await client.volumes.update(volume.id, patch);
    onDone(`Volume ${name.trim()} saved.`);
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const sizeProblem = sizeError(size, volume.size);
    const found = {
      ...(name.trim() === '' ? { name: 'Enter a name.' } : {}),
      ...(sizeProblem ? { size: sizeProblem } : {}),
    };
    setErrors(found);
    if (Object.keys(found).length === 0) void save.run();
    else focusFirstInvalid(e.currentTarget as HTMLFormElement);
  };
  return (
    <form className="form card" onSubmit={submit} noValidate aria-label={`Edit volume ${volume.name}`}>
      <h2>Edit {volume.name}</h2>
      <div className="form-grid">
        <Field label="Name" error={errors.name}>
          {(p) => <input {...p} name="name" value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Size (GB)" hint={`Can only grow (now ${volume.size} GB).`} error={errors.size}>
          {(p) => (
            <input {...p} name="size" inputMode="numeric" value={size} onChange={(e) => setSize(e.target.value)} />
          )}
        </Field>
      </div>
      <ErrorBanner error={save.error} title="The server refused the change" />
      <div className="button-row">
        <button type="submit" className="button-primary" disabled={save.pending}>
          Save volume
        </button>
        <button type="button" onClick={() => onDone('')}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function VolumesPage() {
  useTitle('Network volumes');
  const client = useClient();
  const poll = usePoll('volumes', () => client.volumes.list(), 10_000);
  const [name, setName] = useState('');
  const [size, setSize] = useState('10');
  const [dc, setDc] = useState<string>(DATA_CENTER_IDS[0]);
  const [errors, setErrors] = useState<{ name?: string; size?: string }>({});
  const [notice, setNotice] = useState('');
  const [editing, setEditing] = useState<VolumeView | null>(null);
  const create = useAction(async () => {
    const v = await client.volumes.create({ name: name.trim(), size: Number(size), dataCenterId: dc });
    setNotice(`Volume ${v.name} created.`);
    setName('');
    poll.refresh();
  });
  const remove = useAction(async (v: VolumeView) => {
    await client.volumes.delete(v.id);
    setNotice(`Volume ${v.name} deleted.`);
    poll.refresh();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = {
      ...(name.trim() === '' ? { name: 'Enter a name.' } : {}),
      ...(sizeError(size, 0) ? { size: sizeError(size, 0)! } : {}),
    };
    setErrors(found);
    if (Object.keys(found).length === 0) void create.run();
    else focusFirstInvalid(e.currentTarget as HTMLFormElement);
  };
  return (
    <>
      <h1>Network volumes</h1>
      <p className="muted">Storage that outlives workers, mounted into the workers of the endpoints that name it.</p>
      <ErrorBanner error={poll.error} title="Could not load volumes" onRetry={poll.refresh} />
      <ErrorBanner error={remove.error} title="Could not delete the volume" />
      {notice ? <Notice>{notice}</Notice> : null}
      {poll.loading ? <Loading what="volumes" /> : null}
      <DataTable
        caption="Network volumes"
        rows={poll.data}
        empty="No network volumes yet."
        columns={[
          {
            header: 'Name',
            cell: (v) => (
              <>
                {v.name}
                <div className="muted mono small">{v.id}</div>
              </>
            ),
          },
          { header: 'Size', num: true, cell: (v) => `${v.size} GB` },
          { header: 'Data center', cell: (v) => v.dataCenterId },
        ]}
        actions={(v) => (
          <>
            <button type="button" className="button-small" onClick={() => setEditing(v)}>
              Edit<span className="visually-hidden"> {v.name}</span>
            </button>
            <ConfirmButton label="Delete" what={v.name} onConfirm={() => remove.run(v)} />
          </>
        )}
      />
      {editing ? (
        <EditVolume
          key={editing.id}
          volume={editing}
          onDone={(m) => {
            setEditing(null);
            setNotice(m);
            poll.refresh();
          }}
        />
      ) : (
        <form className="form card" onSubmit={submit} noValidate aria-labelledby="new-volume-title">
          <h2 id="new-volume-title">New volume</h2>
          <div className="form-grid">
            <Field label="Name" error={errors.name}>
              {(p) => <input {...p} name="name" value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <Field label="Size (GB)" error={errors.size}>
              {(p) => (
                <input {...p} name="size" inputMode="numeric" value={size} onChange={(e) => setSize(e.target.value)} />
              )}
            </Field>
            <Field label="Data center">
              {(p) => (
                <select {...p} name="dataCenterId" value={dc} onChange={(e) => setDc(e.target.value)}>
                  {DATA_CENTER_IDS.map((d) => (
                    <option key={d}>{d}</option>
                  ))}
                </select>
              )}
            </Field>
          </div>
          <ErrorBanner error={create.error} title="The server refused the volume" />
          <button type="submit" className="button-primary" disabled={create.pending}>
            Create volume
          </button>
        </form>
      )}
    </>
  );
}
