import { useRef, useState, type FormEvent } from 'react';
import { DataTable } from '../components/table.tsx';
import { ConfirmButton, ErrorBanner, Field, Loading, Notice } from '../components/ui.tsx';
import { envOf, formatEnv } from '../format.ts';
import { useAction, usePoll, useTitle } from '../hooks.ts';
import { useClient } from '../session.tsx';
import type { RegistryAuthView, TemplateView } from '../types.ts';

interface Values {
  name: string;
  imageName: string;
  startCmd: string;
  env: string;
  registryAuthId: string;
  containerDiskInGb: string;
}

const blank: Values = { name: '', imageName: '', startCmd: '', env: '', registryAuthId: '', containerDiskInGb: '10' };

function valuesOf(t: TemplateView): Values {
  return {
    name: t.name,
    imageName: t.imageName,
    startCmd: t.dockerStartCmd.join('\n'),
    env: formatEnv(t.env),
    registryAuthId: t.containerRegistryAuthId ?? '',
    containerDiskInGb: String(t.containerDiskInGb),
  };
}

function TemplateForm({
  template,
  auths,
  onDone,
}: {
  template: TemplateView | null;
  auths: readonly RegistryAuthView[];
  onDone: (message: string) => void;
}) {
  const client = useClient();
  const [v, setV] = useState<Values>(template ? valuesOf(template) : blank);
  const [errors, setErrors] = useState<Partial<Record<keyof Values, string>>>({});
  const formRef = useRef<HTMLFormElement>(null);
  const save = useAction(async (body: Record<string, unknown>) => {
    if (template) {
      await client.templates.update(template.id, body);
      onDone(`Template ${v.name} saved.`);
    } else {
      const created = await client.templates.create(body as { name: string; imageName: string });
      setV(blank);
      onDone(`Template ${created.name} created.`);
    }
  });
  const set = (key: keyof Values, value: string) => setV((old) => ({ ...old, [key]: value }));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const found: Partial<Record<keyof Values, string>> = {};
    if (v.name.trim() === '') found.name = 'Enter a name.';
    if (v.imageName.trim() === '') found.imageName = 'Enter an image (or file://<dir> for the process executor).';
    const env = envOf(v.env, template?.env);
    if ('error' in env) found.env = env.error;
    if (!/^\d+$/.test(v.containerDiskInGb.trim()) || Number(v.containerDiskInGb) > 10_000) {
      found.containerDiskInGb = 'Container disk must be a whole number of GB, 0–10000.';
    }
    setErrors(found);
    if (Object.keys(found).length > 0 || 'error' in env) {
      requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
      return;
    }
    const body: Record<string, unknown> = {
      name: v.name.trim(),
      imageName: v.imageName.trim(),
      // Untouched, the command goes back as it was loaded: the lines are trimmed and blank ones dropped, which
      // changed an argument with spaces at its ends or an empty one (and rolled the workers) on any other save.
      dockerStartCmd:
        template && v.startCmd === template.dockerStartCmd.join('\n')
          ? template.dockerStartCmd
          : v.startCmd
              .split('\n')
              .map((s) => s.trim())
              .filter(Boolean),
      env: env.env,
      containerDiskInGb: Number(v.containerDiskInGb),
    };
    // An update keeps what it is not given, so "None" for a template that has credentials must send "" (the
    // server's "none"). Not sent when it had none: null would become "" and roll its endpoints' workers.
    if (v.registryAuthId || template?.containerRegistryAuthId) body['containerRegistryAuthId'] = v.registryAuthId;
    void save.run(body);
  };

  return (
    <form ref={formRef} className="form card" onSubmit={submit} noValidate aria-labelledby="template-form-title">
      <h2 id="template-form-title">{template ? `Edit ${template.name}` : 'New template'}</h2>
      <div className="form-grid">
        <Field label="Name" error={errors.name}>
          {(p) => <input {...p} name="name" value={v.name} onChange={(e) => set('name', e.target.value)} />}
        </Field>
        <Field
          label="Image"
          error={errors.imageName}
          hint="A container image, or file://<dir> for the process executor."
        >
          {(p) => (
            <input {...p} name="imageName" value={v.imageName} onChange={(e) => set('imageName', e.target.value)} />
          )}
        </Field>
        <Field label="Registry credentials" hint="For a private image.">
          {(p) => (
            <select
              {...p}
              name="registryAuthId"
              value={v.registryAuthId}
              onChange={(e) => set('registryAuthId', e.target.value)}
            >
              <option value="">None</option>
              {auths.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Container disk (GB)" error={errors.containerDiskInGb}>
          {(p) => (
            <input
              {...p}
              name="containerDiskInGb"
              inputMode="numeric"
              value={v.containerDiskInGb}
              onChange={(e) => set('containerDiskInGb', e.target.value)}
            />
          )}
        </Field>
      </div>
      <Field label="Start command" hint="One argument per line, e.g. node, then worker.ts.">
        {(p) => (
          <textarea
            {...p}
            name="startCmd"
            className="code"
            rows={3}
            spellCheck={false}
            value={v.startCmd}
            onChange={(e) => set('startCmd', e.target.value)}
          />
        )}
      </Field>
      <Field label="Environment" hint="One NAME=value per line." error={errors.env}>
        {(p) => (
          <textarea
            {...p}
            name="env"
            className="code"
            rows={3}
            spellCheck={false}
            value={v.env}
            onChange={(e) => set('env', e.target.value)}
          />
        )}
      </Field>
      <ErrorBanner error={save.error} title="The server refused the template" />
      <div className="button-row">
        <button type="submit" className="button-primary" disabled={save.pending}>
          {template ? 'Save template' : 'Create template'}
        </button>
        {template ? (
          <button type="button" onClick={() => onDone('')}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

export function TemplatesPage() {
  useTitle('Templates');
  const client = useClient();
  const poll = usePoll(
    'templates',
    async () => {
      const [templates, auths] = await Promise.all([client.templates.list(), client.registryAuths.list()]);
      return { templates, auths };
    },
    10_000,
  );
  const [editing, setEditing] = useState<TemplateView | null>(null);
  const [notice, setNotice] = useState('');
  const remove = useAction(async (t: TemplateView) => {
    await client.templates.delete(t.id);
    setNotice(`Template ${t.name} deleted.`);
    poll.refresh();
  });
  const done = (message: string) => {
    setEditing(null);
    setNotice(message);
    poll.refresh();
  };
  return (
    <>
      <h1>Templates</h1>
      <p className="muted">What an endpoint's workers run: an image (or a local directory) and its command.</p>
      <ErrorBanner error={poll.error} title="Could not load templates" onRetry={poll.refresh} />
      <ErrorBanner error={remove.error} title="Could not delete the template" />
      {notice ? <Notice>{notice}</Notice> : null}
      {poll.loading ? <Loading what="templates" /> : null}
      <DataTable
        caption="Templates"
        rows={poll.data?.templates}
        empty="No templates yet."
        columns={[
          {
            header: 'Name',
            cell: (t) => (
              <>
                {t.name}
                <div className="muted mono small">{t.id}</div>
              </>
            ),
          },
          { header: 'Image', className: 'mono small break', cell: (t) => t.imageName },
          { header: 'Start command', className: 'mono small', cell: (t) => t.dockerStartCmd.join(' ') || '—' },
          { header: 'Env', cell: (t) => Object.keys(t.env).length },
        ]}
        actions={(t) => (
          <>
            <button type="button" className="button-small" onClick={() => setEditing(t)}>
              Edit<span className="visually-hidden"> {t.name}</span>
            </button>
            <ConfirmButton label="Delete" what={t.name} onConfirm={() => remove.run(t)} />
          </>
        )}
      />
      {poll.data ? (
        <TemplateForm key={editing?.id ?? 'new'} template={editing} auths={poll.data.auths} onDone={done} />
      ) : null}
    </>
  );
}
