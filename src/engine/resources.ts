import {
  checkEndpointRules,
  cpuInstanceIds,
  DEFAULT_CPU_FLAVOR,
  ENDPOINT_DEFAULTS,
  endpointVersionChanged,
  templateVersionChanged,
  newEndpointId,
  newTemplateId,
  TEMPLATE_DEFAULTS,
  type Endpoint,
  type EndpointInput,
  type Template,
  type TemplateInput,
  type WorkerRecord,
} from '../domain/index.ts';
import { invalidField, WharfError } from '../errors/index.ts';
import type { EndpointWrite, Store, TemplateWrite } from '../store/index.ts';
import { nameKept, refuseInUse } from './resource-rules.ts';

/** Checks that a template's image can be run by the configured executor: null = fine, else the reason. */
/** null when the endpoint owner's workers can run the image here, else what to do instead (Executor.validateImage). */
export type ImageValidator = (imageName: string, owner: { isAdmin: boolean }) => string | null;

export type EndpointChange = { kind: 'created' | 'updated' | 'deleted'; endpoint: Endpoint };

/**
 * Templates and endpoints: defaults, rules that cross resources (an endpoint's template must exist and be runnable,
 * a template in use cannot be deleted), and the version bump that rolls workers.
 */
export class Resources {
  private readonly store: Store;
  private readonly validateImage: ImageValidator;
  readonly onEndpointChange = new Set<(change: EndpointChange) => void>();

  constructor(store: Store, validateImage: ImageValidator) {
    this.store = store;
    this.validateImage = validateImage;
  }

  private emit(change: EndpointChange): void {
    for (const l of this.onEndpointChange) {
      try {
        l(change);
      } catch {
        // Listeners (the fleet) never break a management call.
      }
    }
  }

  private async checkImage(userId: string, imageName: string): Promise<void> {
    const owner = await this.store.getUser(userId);
    const problem = this.validateImage(imageName, { isAdmin: owner?.isAdmin ?? false });
    if (problem)
      throw new WharfError(
        'IMAGE_NOT_SUPPORTED',
        { reason: problem },
        { details: [{ field: 'imageName', message: problem }] },
      );
  }

  async createTemplate(userId: string, input: TemplateInput): Promise<Template> {
    refuseNul(input, TEMPLATE_START_FIELDS);
    return this.store.exclusively(userId, async () => {
      const t = await this.templateToCreate(userId, input);
      await nameKept(() => this.store.createTemplate(t), 'template', t.name);
      return t;
    });
  }

  /** The template `input` makes, checked (its registry auth, its name); not written yet. */
  private async templateToCreate(userId: string, input: TemplateInput): Promise<Template> {
    const t: Template = {
      ...TEMPLATE_DEFAULTS,
      ...stripUndefined(input),
      name: input.name,
      imageName: input.imageName,
      id: newTemplateId(),
      userId,
      createdAt: Date.now(),
    };
    normaliseTemplate(t);
    await this.checkRegistryAuth(userId, t.containerRegistryAuthId);
    if ((await this.store.listTemplates(userId)).some((x) => x.name === t.name)) {
      throw new WharfError('NAME_TAKEN', { resource: 'template', name: t.name });
    }
    return t;
  }

  async getTemplate(userId: string, id: string): Promise<Template> {
    const t = await this.store.getTemplate(userId, id);
    if (!t) throw new WharfError('TEMPLATE_NOT_FOUND', { templateId: id });
    return t;
  }

  listTemplates(userId: string): Promise<Template[]> {
    return this.store.listTemplates(userId);
  }

  async updateTemplate(userId: string, id: string, patch: Partial<TemplateInput>): Promise<Template> {
    refuseNul(patch, TEMPLATE_START_FIELDS);
    return this.store.exclusively(userId, async () => {
      const before = await this.getTemplate(userId, id);
      const { after, users } = await this.templateAfter(userId, before, patch);
      const bumped = templateVersionChanged(before, after) ? await this.bumped(userId, users) : [];
      await this.save({ update: after }, bumped.map(updated));
      return after;
    });
  }

  /** The template `patch` makes of `before`, checked (its registry auth, its name, its image), and its users. */
  private async templateAfter(
    userId: string,
    before: Template,
    patch: Partial<TemplateInput>,
  ): Promise<{ after: Template; users: string[] }> {
    const after: Template = { ...before, ...stripUndefined(patch) };
    normaliseTemplate(after);
    if (patch.containerRegistryAuthId !== undefined) {
      await this.checkRegistryAuth(userId, after.containerRegistryAuthId);
    }
    if (after.name !== before.name && (await this.store.listTemplates(userId)).some((x) => x.name === after.name)) {
      throw new WharfError('NAME_TAKEN', { resource: 'template', name: after.name });
    }
    const users = await this.store.endpointsUsingTemplate(userId, before.id);
    if (after.imageName !== before.imageName && users.length > 0) await this.checkImage(userId, after.imageName);
    return { after, users };
  }

  /**
   * Workers are made from the template: a change to how rolls every endpoint that uses it (a version bump). These
   * endpoints with theirs, written with the template's change.
   */
  private async bumped(userId: string, endpointIds: readonly string[]): Promise<Endpoint[]> {
    const bumped: Endpoint[] = [];
    for (const endpointId of endpointIds) {
      const e = await this.store.getEndpoint(userId, endpointId);
      if (e) bumped.push({ ...e, version: e.version + 1 });
    }
    return bumped;
  }

  /**
   * Writes one change of a template and its endpoints in one transaction (saveTemplateAndEndpoints): a store failure
   * half way leaves none of it, where the template changed and its endpoints not rolled would stay so (a retry sees
   * no change). Then tells the listeners of each endpoint written. A template name that lost a race is NAME_TAKEN.
   */
  private async save(template: TemplateWrite | null, endpoints: EndpointWrite[]): Promise<void> {
    const named = template && ('create' in template ? template.create : 'update' in template ? template.update : null);
    const write = () => this.store.saveTemplateAndEndpoints(template, endpoints);
    await (named ? nameKept(write, 'template', named.name) : write());
    for (const w of endpoints) {
      if ('create' in w) this.emit({ kind: 'created', endpoint: w.create });
      else if ('update' in w) this.emit({ kind: 'updated', endpoint: w.update });
      else this.emit({ kind: 'deleted', endpoint: w.delete });
    }
  }

  async deleteTemplate(userId: string, id: string): Promise<void> {
    return this.store.exclusively(userId, async () => {
      await this.getTemplate(userId, id);
      refuseInUse('Template', id, await this.store.endpointsUsingTemplate(userId, id), 'endpoint');
      await this.store.deleteTemplate(userId, id);
    });
  }

  async createEndpoint(userId: string, input: EndpointInput, opts: { id?: string } = {}): Promise<Endpoint> {
    refuseNul(input, ['env']);
    return this.store.exclusively(userId, async () => {
      const template = await this.templateFor(userId, input.templateId);
      const e = await this.endpointToCreate(userId, opts.id ?? newEndpointId(), input, template);
      await this.store.createEndpoint(e);
      this.emit({ kind: 'created', endpoint: e });
      return e;
    });
  }

  /**
   * A new endpoint with its template given inline (GraphQL saveEndpoint's `template`): the template is made bound
   * to it, and both are written together or neither is (a template left behind would hold its name: flash, sending
   * it again, was refused with NAME_TAKEN).
   */
  async createEndpointWithTemplate(
    userId: string,
    input: Omit<EndpointInput, 'templateId'>,
    template: TemplateInput,
  ): Promise<Endpoint> {
    refuseNul(input, ['env']);
    refuseNul(template, TEMPLATE_START_FIELDS);
    return this.store.exclusively(userId, async () => {
      const id = newEndpointId();
      const t = await this.templateToCreate(userId, { ...template, boundEndpointId: id });
      const e = await this.endpointToCreate(userId, id, { ...input, templateId: t.id }, t);
      await this.save({ create: t }, [{ create: e }]);
      return e;
    });
  }

  /** The endpoint `input` makes on `template` (its own), checked (its image, its rules, its volumes); not written. */
  private async endpointToCreate(userId: string, id: string, input: EndpointInput, template: Template) {
    await this.checkImage(userId, template.imageName);
    const e: Endpoint = {
      ...ENDPOINT_DEFAULTS,
      dataCenterIds: [...ENDPOINT_DEFAULTS.dataCenterIds],
      ...stripUndefined(input),
      templateId: input.templateId,
      id,
      userId,
      version: 1,
      createdAt: Date.now(),
    };
    if (e.gpuIds === '' && e.gpuTypeIds.length > 0) e.gpuIds = e.gpuTypeIds.join(',');
    normalise(e);
    checkRules(e);
    await this.checkVolumes(userId, e);
    return e;
  }

  /** The endpoint of this user, or ENDPOINT_NOT_FOUND (another user's endpoint is not found either). */
  async getEndpoint(userId: string | null, id: string): Promise<Endpoint> {
    return found(await this.store.getEndpoint(userId, id), id);
  }

  /** The endpoint (or ENDPOINT_NOT_FOUND) and the stored record of a worker id, read together (worker routes). */
  async getEndpointAndWorker(
    userId: string | null,
    endpointId: string,
    workerId: string,
  ): Promise<{ endpoint: Endpoint; worker: WorkerRecord | null }> {
    const { endpoint, worker } = await this.store.getEndpointAndWorker(userId, endpointId, workerId);
    return { endpoint: found(endpoint, endpointId), worker };
  }

  listEndpoints(userId: string): Promise<Endpoint[]> {
    return this.store.listEndpoints(userId);
  }

  /** Sparse update: fields left out keep their value. */
  async updateEndpoint(userId: string, id: string, patch: Partial<EndpointInput>): Promise<Endpoint> {
    refuseNul(patch, ['env']);
    return this.store.exclusively(userId, async () => {
      const before = await this.getEndpoint(userId, id);
      return this.writeEndpoint(userId, before, await this.endpointAfter(userId, before, patch));
    });
  }

  /**
   * An update that carries the endpoint's template inline (GraphQL saveEndpoint's `template`, which has no id).
   * The template bound to the endpoint (made by an earlier inline save) is replaced in place, as saveTemplate with
   * its id replaces it: it keeps its id, and the endpoint's version is bumped once, only when the template's or the
   * endpoint's worker-shaping fields change. flash re-sends the inline template of its config on a redeploy whose
   * cached state has no templateId, under the same name; made anew each time, it was refused with NAME_TAKEN (its
   * own bound template held the name), or under a new name rolled every worker for nothing. An endpoint whose
   * template is not bound to it (a shared one, chosen by templateId) gets a new template bound to it, and the
   * shared one is left as it is; a bound template that other endpoints were also set to use changes for them too.
   * The template, the other endpoints' bumps and the endpoint are written in one transaction.
   */
  async updateEndpointWithTemplate(
    userId: string,
    id: string,
    patch: Omit<Partial<EndpointInput>, 'templateId'>,
    template: TemplateInput,
  ): Promise<Endpoint> {
    refuseNul(patch, ['env']);
    refuseNul(template, TEMPLATE_START_FIELDS);
    return this.store.exclusively(userId, async () => {
      const before = await this.getEndpoint(userId, id);
      const current = await this.store.getTemplate(userId, before.templateId);
      // Everything is checked before anything is written: a refused endpoint leaves no template made or changed.
      if (current?.boundEndpointId !== before.id) {
        const made = await this.templateToCreate(userId, { ...template, boundEndpointId: before.id });
        const after = await this.endpointAfter(userId, before, { ...patch, templateId: made.id }, made);
        // The template it leaves is not bound to it: nothing to release.
        return this.writeEndpoint(userId, before, after, { template: { create: made } });
      }
      const { after: replaced, users } = await this.templateAfter(userId, current, {
        ...template,
        boundEndpointId: before.id,
      });
      const after = await this.endpointAfter(userId, before, patch);
      const rolled = templateVersionChanged(current, replaced);
      const bumped = rolled
        ? await this.bumped(
            userId,
            users.filter((x) => x !== before.id),
          )
        : [];
      return this.writeEndpoint(userId, before, after, {
        template: { update: replaced },
        bumped,
        templateRolled: rolled,
      });
    });
  }

  /**
   * The endpoint `patch` makes of `before`, checked (its template, its rules, its volumes); version not yet set.
   * `made`: the new template it moves to, not written yet.
   */
  private async endpointAfter(
    userId: string,
    before: Endpoint,
    patch: Partial<EndpointInput>,
    made?: Template,
  ): Promise<Endpoint> {
    const after: Endpoint = { ...before, ...stripUndefined(patch) };
    if (patch.gpuTypeIds !== undefined && patch.gpuIds === undefined) after.gpuIds = after.gpuTypeIds.join(',');
    normalise(after);
    if (after.templateId !== before.templateId) {
      const template = made ?? (await this.templateFor(userId, after.templateId));
      await this.checkImage(userId, template.imageName);
    }
    checkRules(after);
    if (patch.networkVolumeId !== undefined || patch.networkVolumeIds !== undefined) {
      await this.checkVolumes(userId, after);
    }
    return after;
  }

  /**
   * Writes the change, with one version bump when it (or, `templateRolled`, its template's change) rolls workers, in
   * one transaction with the write of its template: `template` (and `bumped`, the template's other users rolled by
   * it) when the caller changes the template too, else, moved to another template, the release of the one bound to it.
   */
  private async writeEndpoint(
    userId: string,
    before: Endpoint,
    after: Endpoint,
    change: { template?: TemplateWrite; bumped?: Endpoint[]; templateRolled?: boolean } = {},
  ): Promise<Endpoint> {
    if (change.templateRolled || endpointVersionChanged(before, after)) after.version = before.version + 1;
    const moved = after.templateId !== before.templateId;
    const template = change.template ?? (moved ? await this.released(userId, before) : null);
    await this.save(template, [...(change.bumped ?? []).map(updated), { update: after }]);
    return after;
  }

  async deleteEndpoint(userId: string, id: string): Promise<void> {
    return this.store.exclusively(userId, async () => {
      const e = await this.getEndpoint(userId, id);
      await this.save(await this.released(userId, e), [{ delete: e }]);
    });
  }

  /**
   * The inline template made for an endpoint goes when the endpoint is deleted or moves to another template, or is
   * unbound if another endpoint uses it: the write that does so, made with the endpoint's (null: none is bound to it).
   * Left behind, it would keep its name, bound to an endpoint that no longer uses it and hidden from lists.
   */
  private async released(userId: string, e: Endpoint): Promise<TemplateWrite | null> {
    const t = await this.store.getTemplate(userId, e.templateId);
    if (t?.boundEndpointId !== e.id) return null;
    const others = (await this.store.endpointsUsingTemplate(userId, t.id)).filter((x) => x !== e.id);
    return others.length === 0 ? { delete: t } : { update: { ...t, boundEndpointId: null } };
  }

  /** A template may only name one of its owner's registry auths. */
  private async checkRegistryAuth(userId: string, id: string | null | undefined): Promise<void> {
    if (!id || (await this.store.getRegistryAuth(userId, id))) return;
    throw invalidField('containerRegistryAuthId', `${id} does not name one of your container registry auths`);
  }

  /** An endpoint may only mount its owner's network volumes. */
  private async checkVolumes(userId: string, e: Pick<Endpoint, 'networkVolumeId' | 'networkVolumeIds'>) {
    if (e.networkVolumeId && !(await this.store.getNetworkVolume(userId, e.networkVolumeId))) {
      throw invalidField('networkVolumeId', `${e.networkVolumeId} does not name one of your network volumes`);
    }
    for (const id of e.networkVolumeIds) {
      if (!(await this.store.getNetworkVolume(userId, id))) {
        throw invalidField('networkVolumeIds', `${id} does not name one of your network volumes`);
      }
    }
  }

  private async templateFor(userId: string, templateId: string): Promise<Template> {
    const t = await this.store.getTemplate(userId, templateId);
    if (!t) {
      throw new WharfError(
        'VALIDATION_FAILED',
        { reason: `templateId ${templateId} does not name one of your templates` },
        { details: [{ field: 'templateId', message: 'unknown template' }] },
      );
    }
    return t;
  }
}

const updated = (e: Endpoint): EndpointWrite => ({ update: e });

/** Fields that follow from others, set the same way on create and update. */
function normalise(e: Endpoint): void {
  // A CPU endpoint runs as some flavor: one that names none (a REST create with computeType CPU only) gets the
  // default, so that GraphQL reads its instance id; with none, saving back what was read made it a GPU endpoint.
  if (e.computeType === 'CPU' && e.cpuFlavorIds.length === 0) e.cpuFlavorIds = [DEFAULT_CPU_FLAVOR];
  e.instanceIds = cpuInstanceIds(e);
  // An empty id is no volume (as GraphQL's `networkVolumeId: ""`).
  if (e.networkVolumeId === '') e.networkVolumeId = null;
  // A volume is mounted once however often it is named (GraphQL's input drops repeats too).
  e.networkVolumeIds = [...new Set(e.networkVolumeIds)];
}

/** The template fields a worker's start carries into its environment, its command line or a path. */
const TEMPLATE_START_FIELDS = ['imageName', 'dockerEntrypoint', 'dockerStartCmd', 'env', 'volumeMountPath'] as const;

/**
 * No environment variable, argument or path can hold a NUL character: refused here (REST and GraphQL), where once
 * stored every start of a worker failed with it (a crash-loop). User secrets refuse it the same way.
 */
function refuseNul(input: object, fields: readonly string[]): void {
  const record = input as Record<string, unknown>;
  for (const field of fields) {
    const value = record[field];
    if (typeof value === 'string' || Array.isArray(value)) {
      const list: unknown[] = typeof value === 'string' ? [value] : value;
      if (list.some((s) => typeof s === 'string' && s.includes('\0'))) {
        throw invalidField(field, `${field} must not contain NUL characters`);
      }
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        if (key.includes('\0')) throw invalidField(field, `${field} names must not contain NUL characters`);
        if (typeof v === 'string' && v.includes('\0')) {
          throw invalidField(`${field}.${key}`, `${field}.${key} must not contain NUL characters`);
        }
      }
    }
  }
}

/** An empty registry auth id is none, stored as null as GraphQL stores it (a change from null to "" is no change). */
function normaliseTemplate(t: Template): void {
  if (t.containerRegistryAuthId === '') t.containerRegistryAuthId = null;
}

function checkRules(e: Endpoint): void {
  const problem = checkEndpointRules(e);
  if (problem)
    throw new WharfError(
      'VALIDATION_FAILED',
      { reason: problem.reason },
      { details: [{ field: problem.field, message: problem.reason }] },
    );
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The endpoint a lookup found, or ENDPOINT_NOT_FOUND. */
function found(endpoint: Endpoint | null, endpointId: string): Endpoint {
  if (!endpoint) throw new WharfError('ENDPOINT_NOT_FOUND', { endpointId });
  return endpoint;
}
