import { useRef, useState, type FormEvent } from 'react';
import { CPU_FLAVOR_IDS, CUDA_VERSIONS, GPU_TYPE_IDS } from '../../../../src/domain/enums.ts';
import { ENDPOINT_DEFAULTS } from '../../../../src/domain/resources.ts';
import { Checklist, ErrorBanner, Field } from '../../components/ui.tsx';
import { envOf, formatEnv } from '../../format.ts';
import type { EndpointView, TemplateView, VolumeView } from '../../types.ts';

/** The form's values, as typed (strings for numbers, so that a half-typed value is not lost). */
interface Values {
  name: string;
  templateId: string;
  computeType: 'CPU' | 'GPU';
  gpuTypeIds: string[];
  gpuCount: string;
  /** allowedCudaVersions as checked (none: any version). */
  cudaVersions: string[];
  /** "" is any (no minCudaVersion). */
  minCudaVersion: string;
  cpuFlavorId: string;
  vcpuCount: string;
  workersMin: string;
  workersMax: string;
  idleTimeout: string;
  scalerType: 'QUEUE_DELAY' | 'REQUEST_COUNT';
  scalerValue: string;
  executionTimeoutS: string;
  flashboot: boolean;
  /** Every attached volume, the one workers mount first (see attachedVolumes). */
  volumeIds: string[];
  env: string;
}

type Errors = Partial<Record<keyof Values, string>>;

function initial(e: EndpointView | undefined, templates: readonly TemplateView[]): Values {
  const d = ENDPOINT_DEFAULTS;
  return {
    name: e?.name ?? '',
    templateId: e?.templateId ?? templates[0]?.id ?? '',
    computeType: e?.computeType ?? 'CPU',
    gpuTypeIds: e?.gpuTypeIds ?? [],
    gpuCount: String(e?.gpuCount ?? d.gpuCount),
    cudaVersions: e?.allowedCudaVersions ?? [],
    minCudaVersion: e?.minCudaVersion ?? '',
    cpuFlavorId: CPU_FLAVOR_IDS[0],
    // The endpoint's own count (the REST view carries it since 534d919). Empty, as a server without it answers,
    // keeps the current value.
    vcpuCount: e ? (typeof e.vcpuCount === 'number' ? String(e.vcpuCount) : '') : String(d.vcpuCount),
    workersMin: String(e?.workersMin ?? d.workersMin),
    workersMax: String(e?.workersMax ?? d.workersMax),
    idleTimeout: String(e?.idleTimeout ?? d.idleTimeout),
    scalerType: e?.scalerType ?? d.scalerType,
    scalerValue: String(e?.scalerValue ?? d.scalerValue),
    executionTimeoutS: seconds(e?.executionTimeoutMs ?? d.executionTimeoutMs),
    flashboot: e?.flashboot ?? d.flashboot,
    volumeIds: attachedVolumes(e ?? {}),
    env: formatEnv(e?.env),
  };
}

/**
 * The volumes an endpoint has: networkVolumeId and networkVolumeIds are stored apart (the API and GraphQL attach
 * several through the list), and the supervisor mounts `networkVolumeId ?? networkVolumeIds[0]`, so that one comes
 * first. Showing only networkVolumeId read "None" for the list's volumes, and saving could not detach them.
 */
function attachedVolumes(e: { networkVolumeId?: unknown; networkVolumeIds?: unknown }): string[] {
  const ids = [e.networkVolumeId, ...(Array.isArray(e.networkVolumeIds) ? e.networkVolumeIds : [])];
  return [...new Set(ids.filter((id): id is string => typeof id === 'string' && id !== ''))];
}

/** Bounds of spec/rest-v1.openapi.json (src/http/rest/schemas.ts); the server checks them again. */
function int(text: string, min: number, max: number, what: string): { value?: number; error?: string } {
  if (!/^-?\d+$/.test(text.trim())) return { error: `${what} must be a whole number.` };
  const value = Number(text);
  if (value < min || value > max) return { error: `${what} must be between ${min} and ${max}.` };
  return { value };
}

/**
 * Milliseconds as the seconds field shows them, exactly (90500 → "90.5"). The API and the CLI take milliseconds: a
 * timeout that is not whole seconds must read back as the same number of milliseconds when the form is saved.
 */
function seconds(ms: number): string {
  return ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(3).replace(/0+$/, '');
}

/** Seconds with up to 3 decimals as milliseconds, from the digits (no floating-point rounding on the way). */
function millis(text: string, maxS: number, what: string): { value?: number; error?: string } {
  const m = /^(\d+)(?:\.(\d{1,3}))?$/.exec(text.trim());
  if (!m) return { error: `${what} must be a number of seconds, with at most 3 decimals.` };
  const value = Number(m[1]) * 1000 + Number((m[2] ?? '').padEnd(3, '0'));
  if (value > maxS * 1000) return { error: `${what} must be between 0 and ${maxS}.` };
  return { value };
}

function validate(
  v: Values,
  creating: boolean,
  loadedEnv: Record<string, string> | undefined,
): { errors: Errors; body: Record<string, unknown> } {
  const errors: Errors = {};
  const body: Record<string, unknown> = {};
  const num = (key: keyof Values, text: string, min: number, max: number, what: string, field = key as string) => {
    const r = int(text, min, max, what);
    if (r.error) errors[key] = r.error;
    else body[field] = r.value;
    return r.value;
  };
  if (v.name.length > 191) errors.name = 'Name must be at most 191 characters.';
  else body['name'] = v.name.trim();
  if (!v.templateId) errors.templateId = 'Choose a template (create one under Templates first).';
  else body['templateId'] = v.templateId;
  if (creating) body['computeType'] = v.computeType;
  if (v.computeType === 'GPU') {
    // None checked is any GPU type, as the server reads an empty gpuTypeIds (an endpoint made through the API or
    // GraphQL can have one): refusing it made such an endpoint impossible to save here.
    body['gpuTypeIds'] = v.gpuTypeIds;
    num('gpuCount', v.gpuCount, 1, 64, 'GPU count');
    body['allowedCudaVersions'] = v.cudaVersions;
    // "Any" is null on an update, which takes a minimum off (left out, a PATCH keeps it); a create has none to take.
    if (v.minCudaVersion !== '') body['minCudaVersion'] = v.minCudaVersion;
    else if (!creating) body['minCudaVersion'] = null;
  } else {
    if (creating || v.vcpuCount.trim() !== '') num('vcpuCount', v.vcpuCount, 1, 512, 'vCPU count');
    if (creating) body['cpuFlavorIds'] = [v.cpuFlavorId];
  }
  const min = num('workersMin', v.workersMin, 0, 1000, 'Minimum workers');
  const max = num('workersMax', v.workersMax, 0, 1000, 'Maximum workers');
  if (min !== undefined && max !== undefined && min > max) {
    errors.workersMin = 'Minimum workers cannot be more than maximum workers.';
  }
  num('idleTimeout', v.idleTimeout, 1, 3600, 'Idle timeout');
  body['scalerType'] = v.scalerType;
  num('scalerValue', v.scalerValue, 1, 100_000, 'Scaler value');
  const t = millis(v.executionTimeoutS, 7 * 24 * 3600, 'Execution timeout');
  if (t.error) errors.executionTimeoutS = t.error;
  else body['executionTimeoutMs'] = t.value;
  body['flashboot'] = v.flashboot;
  // Both fields, so that together they say exactly what is attached (a PATCH keeps what it is not given): one volume
  // in networkVolumeId, as the CLI sends it, several in networkVolumeIds; the server reads "" as no volume.
  body['networkVolumeId'] = v.volumeIds.length === 1 ? v.volumeIds[0] : '';
  body['networkVolumeIds'] = v.volumeIds.length > 1 ? v.volumeIds : [];
  const env = envOf(v.env, loadedEnv);
  if ('error' in env) errors.env = env.error;
  else body['env'] = env.env;
  return { errors, body };
}

/** Only what changed, for an update (PATCH): unchanged fields are left to the server. */
function changes(body: Record<string, unknown>, before: EndpointView): Record<string, unknown> {
  // "" is the form's "none" (no network volume): the same as a field the endpoint does not have.
  const plain = (x: unknown) => JSON.stringify(x === '' || x === undefined ? null : x);
  // The same volumes, held the other way (several given as networkVolumeIds, or one in both fields), are no change.
  const sameVolumes = plain(attachedVolumes(body)) === plain(attachedVolumes(before));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (sameVolumes && (k === 'networkVolumeId' || k === 'networkVolumeIds')) continue;
    const old = (before as unknown as Record<string, unknown>)[k];
    // Which CUDA versions are allowed matters, not the order they were given in.
    if (k === 'allowedCudaVersions' && plain(sorted(old)) === plain(sorted(v))) continue;
    if (plain(old) !== plain(v)) out[k] = v;
  }
  return out;
}

/** A sorted copy of a list (anything else as it is). */
function sorted(x: unknown): unknown {
  return Array.isArray(x) ? [...(x as string[])].sort() : x;
}

/** What the volume checklist means, as checked now: the supervisor mounts only the first attached volume. */
function volumeHint(ids: readonly string[], volumes: readonly VolumeView[]): string {
  if (ids.length === 0) {
    return volumes.length === 0 ? 'None: create one under Network volumes first.' : 'None attached.';
  }
  if (ids.length === 1) return 'Every worker mounts it.';
  const first = volumes.find((v) => v.id === ids[0])?.name ?? ids[0];
  return `Workers mount only the first attached: ${first}.`;
}

export function EndpointForm({
  endpoint,
  templates,
  volumes,
  submitLabel,
  onSubmit,
  error,
  pending,
}: {
  endpoint?: EndpointView;
  templates: readonly TemplateView[];
  volumes: readonly VolumeView[];
  submitLabel: string;
  onSubmit: (body: Record<string, unknown>) => void;
  error: unknown;
  pending: boolean;
}) {
  const creating = endpoint === undefined;
  const [values, setValues] = useState<Values>(() => initial(endpoint, templates));
  const [errors, setErrors] = useState<Errors>({});
  const [nothing, setNothing] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  // An attached id the volume list lacks (a list read before the volume was made) still shows, to be detached.
  const listed = new Set(volumes.map((v) => v.id));
  const volumeChoices = [
    ...volumes.map((v) => ({ id: v.id, label: `${v.name} (${v.size} GB, ${v.dataCenterId})` })),
    ...attachedVolumes(endpoint ?? {})
      .filter((id) => !listed.has(id))
      .map((id) => ({ id, label: id })),
  ];
  const set = <K extends keyof Values>(key: K, value: Values[K]) => {
    setValues((v) => ({ ...v, [key]: value }));
    setNothing(false);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const { errors: found, body } = validate(values, creating, endpoint?.env);
    setErrors(found);
    if (Object.keys(found).length > 0) {
      // Take the keyboard to the first field that needs fixing.
      requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
      return;
    }
    const payload = endpoint ? changes(body, endpoint) : body;
    if (endpoint && Object.keys(payload).length === 0) {
      setNothing(true);
      return;
    }
    onSubmit(payload);
  };

  const text = (
    key: keyof Values,
    label: string,
    opts: { hint?: string; type?: string; inputMode?: 'numeric' | 'decimal' } = {},
  ) => (
    <Field label={label} hint={opts.hint} error={errors[key]}>
      {(props) => (
        <input
          {...props}
          name={key}
          type={opts.type ?? 'text'}
          inputMode={opts.inputMode}
          value={values[key] as string}
          onChange={(e) => set(key, e.target.value as never)}
        />
      )}
    </Field>
  );

  return (
    <form ref={formRef} className="form" onSubmit={submit} noValidate aria-label={submitLabel}>
      <div className="form-grid">
        {text('name', 'Name', { hint: 'Shown in lists; optional.' })}
        <Field label="Template" error={errors.templateId} hint="The image and command the workers run.">
          {(props) => (
            <select
              {...props}
              name="templateId"
              value={values.templateId}
              onChange={(e) => set('templateId', e.target.value)}
            >
              {values.templateId === '' ? <option value="">Choose a template…</option> : null}
              {templates.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name} ({t.imageName})
                </option>
              ))}
            </select>
          )}
        </Field>
        {creating ? (
          <fieldset className="field">
            <legend>Compute</legend>
            <div className="radios">
              {(['CPU', 'GPU'] as const).map((c) => (
                <label key={c}>
                  <input
                    type="radio"
                    name="computeType"
                    value={c}
                    checked={values.computeType === c}
                    onChange={() => set('computeType', c)}
                  />{' '}
                  {c}
                </label>
              ))}
            </div>
          </fieldset>
        ) : null}
        {values.computeType === 'GPU' ? (
          text('gpuCount', 'GPUs per worker', { inputMode: 'numeric' })
        ) : (
          <>
            {text('vcpuCount', 'vCPUs per worker', {
              inputMode: 'numeric',
              ...(creating ? {} : { hint: 'Leave empty to keep the current count.' }),
            })}
            {creating ? (
              <Field label="CPU flavor">
                {(props) => (
                  <select
                    {...props}
                    name="cpuFlavorId"
                    value={values.cpuFlavorId}
                    onChange={(e) => set('cpuFlavorId', e.target.value)}
                  >
                    {CPU_FLAVOR_IDS.map((f) => (
                      <option key={f}>{f}</option>
                    ))}
                  </select>
                )}
              </Field>
            ) : null}
          </>
        )}
        {text('workersMin', 'Minimum workers', { inputMode: 'numeric', hint: 'Kept running even when idle.' })}
        {text('workersMax', 'Maximum workers', { inputMode: 'numeric', hint: '0 stops the endpoint.' })}
        {text('idleTimeout', 'Idle timeout (s)', { inputMode: 'numeric', hint: 'An idle worker stops after this.' })}
        <Field label="Scaler" hint="Queue delay: seconds a job may wait; request count: jobs per worker.">
          {(props) => (
            <select
              {...props}
              name="scalerType"
              value={values.scalerType}
              onChange={(e) => set('scalerType', e.target.value as Values['scalerType'])}
            >
              <option value="QUEUE_DELAY">Queue delay</option>
              <option value="REQUEST_COUNT">Request count</option>
            </select>
          )}
        </Field>
        {text('scalerValue', 'Scaler value', { inputMode: 'numeric' })}
        {text('executionTimeoutS', 'Execution timeout (s)', {
          inputMode: 'decimal',
          hint: 'Per job; 0 = no limit. Up to 3 decimals (milliseconds).',
        })}
        <div className="field field-check">
          <label>
            <input
              type="checkbox"
              name="flashboot"
              checked={values.flashboot}
              onChange={(e) => set('flashboot', e.target.checked)}
            />{' '}
            FlashBoot
          </label>
        </div>
      </div>
      {values.computeType === 'GPU' ? (
        <fieldset className="field gpu-types" aria-describedby="gpu-types-hint">
          <legend>GPU types (in order of preference)</legend>
          <small id="gpu-types-hint" className="hint">
            None checked: any type.
          </small>
          <Checklist
            choices={GPU_TYPE_IDS.map((g) => ({ value: g, label: g }))}
            selected={values.gpuTypeIds}
            onChange={(ids) => set('gpuTypeIds', ids)}
          />
        </fieldset>
      ) : null}
      {values.computeType === 'GPU' ? (
        <>
          <fieldset className="field cuda-versions" aria-describedby="cuda-versions-hint">
            <legend>Allowed CUDA versions</legend>
            <small id="cuda-versions-hint" className="hint">
              None checked: any version. Otherwise workers run only where the GPU driver's CUDA version is one checked.
            </small>
            <Checklist
              name="allowedCudaVersions"
              choices={CUDA_VERSIONS.map((c) => ({ value: c, label: c }))}
              selected={values.cudaVersions}
              onChange={(versions) => set('cudaVersions', versions)}
            />
          </fieldset>
          <div className="form-grid">
            <Field
              label="Minimum CUDA version"
              hint="Workers run only where the GPU driver's CUDA version is at least this."
            >
              {(props) => (
                <select
                  {...props}
                  name="minCudaVersion"
                  value={values.minCudaVersion}
                  onChange={(e) => set('minCudaVersion', e.target.value)}
                >
                  <option value="">Any</option>
                  {CUDA_VERSIONS.map((c) => (
                    <option key={c}>{c}</option>
                  ))}
                </select>
              )}
            </Field>
          </div>
        </>
      ) : null}
      <fieldset className="field network-volumes" aria-describedby="network-volumes-hint">
        <legend>Network volumes</legend>
        <small id="network-volumes-hint" className="hint">
          {volumeHint(values.volumeIds, volumes)}
        </small>
        {volumeChoices.length > 0 ? (
          <Checklist
            name="volumeIds"
            choices={volumeChoices.map((v) => ({ value: v.id, label: v.label }))}
            selected={values.volumeIds}
            onChange={(ids) => set('volumeIds', ids)}
          />
        ) : null}
      </fieldset>
      <Field label="Environment" hint="One NAME=value per line; added to the template's." error={errors.env}>
        {(props) => (
          <textarea
            {...props}
            name="env"
            rows={4}
            spellCheck={false}
            value={values.env}
            onChange={(e) => set('env', e.target.value)}
          />
        )}
      </Field>
      <ErrorBanner error={error} title="The server refused the change" />
      {nothing ? <p role="status">Nothing changed.</p> : null}
      <button type="submit" className="button-primary" disabled={pending}>
        {pending ? 'Saving…' : submitLabel}
      </button>
    </form>
  );
}
