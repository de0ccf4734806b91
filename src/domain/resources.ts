/**
 * Account resources: users, API keys, templates and endpoints, with the REST v1 defaults
 * (spec/rest-v1.openapi.json). Pure data and rules; the store persists them as documents.
 */
import { CUDA_VERSIONS } from './enums.ts';
import type { ServerlessDiscount } from './storage.ts';

export type KeyScope = 'all' | 'read' | 'restricted';

export interface User {
  id: string;
  name: string;
  isAdmin: boolean;
  createdAt: number;
  /** Set by an admin (`PATCH /v1/users/{id}`); null or absent = no discount. */
  serverlessDiscount?: ServerlessDiscount | null;
  /**
   * HMAC key for signing this user's webhook deliveries, as stored: sealed with the server's secret key (plain
   * `whsec_…` in rows of earlier versions). Made, and read, through webhooks/secrets.ts on first use.
   */
  webhookSecret?: string;
  /** SSH public keys, newline-separated (GraphQL `updateUserSettings`); kept for clients, unused by workers. */
  pubKey?: string;
}

export interface ApiKey {
  id: string;
  userId: string;
  /** SHA-256 of the key, hex. The key itself is shown once and never stored. */
  hash: string;
  /** First characters of the key, for listings (keyPrefix). */
  prefix: string;
  name: string;
  scope: KeyScope;
  /** For `restricted` keys: the endpoints whose queue operations the key may call. */
  endpointIds: string[];
  createdAt: number;
  revokedAt: number | null;
}

/** What every API key Wharf generates starts with (engine/accounts.ts generateKey). */
const GENERATED_KEY_START = 'wharf_';

/**
 * The characters of a key that listings show to tell keys apart: `wharf_` and 4 more for a key Wharf generated (4
 * of its 40 random characters), the first 4 of a key an operator chose (WHARF_ADMIN_KEY, which may be 20 characters
 * long). A listing, which a read-only key may see, never gives away a useful part of a key. A prefix stored whole
 * (the first 10 characters, as before) gives the same answer, so older keys are shown the same way.
 */
export function keyPrefix(key: string): string {
  return key.slice(0, key.startsWith(GENERATED_KEY_START) ? GENERATED_KEY_START.length + 4 : 4);
}

export type ScalerType = 'QUEUE_DELAY' | 'REQUEST_COUNT';
export type ComputeType = 'GPU' | 'CPU';
export type EndpointType = 'QB' | 'LB';

export const DATA_CENTER_IDS = [
  'EU-RO-1',
  'CA-MTL-1',
  'EU-SE-1',
  'US-IL-1',
  'EUR-IS-1',
  'EU-CZ-1',
  'US-TX-3',
  'EUR-IS-2',
  'US-KS-2',
  'US-GA-2',
  'US-WA-1',
  'US-TX-1',
  'CA-MTL-3',
  'EU-NL-1',
  'US-TX-4',
  'US-CA-2',
  'US-NC-1',
  'OC-AU-1',
  'US-DE-1',
  'EUR-IS-3',
  'CA-MTL-2',
  'AP-JP-1',
  'EUR-NO-1',
  'EU-FR-1',
  'US-KS-3',
  'US-GA-1',
] as const;

export interface Endpoint {
  id: string;
  userId: string;
  name: string;
  templateId: string;
  type: EndpointType;
  computeType: ComputeType;
  /** GPU types in priority order (REST form). */
  gpuTypeIds: string[];
  /** GPU pools / types as the GraphQL `gpuIds` string (`AMPERE_16,-NVIDIA RTX A4500`). */
  gpuIds: string;
  gpuCount: number;
  cpuFlavorIds: string[];
  vcpuCount: number;
  instanceIds: string[];
  dataCenterIds: string[];
  allowedCudaVersions: string[];
  minCudaVersion: string | null;
  /** Default execution timeout of the endpoint's jobs; a job's policy.executionTimeout overrides it. */
  executionTimeoutMs: number;
  flashboot: boolean;
  idleTimeout: number;
  networkVolumeId: string | null;
  networkVolumeIds: string[];
  scalerType: ScalerType;
  scalerValue: number;
  workersMin: number;
  workersMax: number;
  env: Record<string, string>;
  /**
   * GraphQL's comma strings as saveEndpoint last received them (absent on endpoints never saved over GraphQL). They
   * read back as written while they still name the same list: a declarative client (flash, Pulumi) compares what it
   * reads with what it sent, and `EU-RO-1` read back as `RO`, or `""` as null, was drift it saved again every run.
   */
  gqlLocations?: string | null;
  gqlAllowedCudaVersions?: string | null;
  /** Bumped when the template or env change: workers of an older version are rolled. */
  version: number;
  createdAt: number;
}

export type EndpointInput = Partial<Omit<Endpoint, 'id' | 'userId' | 'version' | 'createdAt'>> & { templateId: string };

export const ENDPOINT_DEFAULTS = {
  name: '',
  type: 'QB',
  computeType: 'GPU',
  gpuTypeIds: [],
  gpuIds: '',
  gpuCount: 1,
  cpuFlavorIds: [],
  vcpuCount: 2,
  instanceIds: [],
  dataCenterIds: [...DATA_CENTER_IDS],
  allowedCudaVersions: [],
  minCudaVersion: null,
  executionTimeoutMs: 600_000,
  flashboot: false,
  idleTimeout: 5,
  networkVolumeId: null,
  networkVolumeIds: [],
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  env: {},
} as const satisfies Omit<Endpoint, 'id' | 'userId' | 'templateId' | 'version' | 'createdAt'>;

export interface Template {
  id: string;
  userId: string;
  name: string;
  imageName: string;
  category: 'NVIDIA' | 'AMD' | 'CPU';
  containerDiskInGb: number;
  containerRegistryAuthId: string | null;
  dockerEntrypoint: string[];
  dockerStartCmd: string[];
  env: Record<string, string>;
  isPublic: boolean;
  isServerless: boolean;
  ports: string[];
  readme: string;
  volumeInGb: number;
  volumeMountPath: string;
  /**
   * The endpoint an inline template was made for (saveEndpoint's `template`): REST lists it only with
   * includeEndpointBoundTemplates, and it goes with its endpoint unless another one uses it.
   */
  boundEndpointId?: string | null;
  /**
   * The pod-only options of GraphQL's SaveTemplateInput, as last saved (absent: never saved over GraphQL). They do
   * nothing to serverless workers, but read back as saved: runpodctl saves port labels (portsConfig) and reads them
   * back, its project deploy and the Python SDK send startSsh: true, flash sends config: {}.
   */
  podOptions?: TemplatePodOptions;
  /**
   * GraphQL's `dockerArgs` as last saved: it reads back as written while it still gives the template's command
   * (quoting and spacing are the sender's; rebuilt from the argv, `bash -c 'x y'` read back `bash -c "x y"`).
   */
  dockerArgs?: string;
  createdAt: number;
}

export interface TemplatePodOptions {
  startSsh: boolean;
  startJupyter: boolean;
  startScript: string | null;
  advancedStart: boolean;
  /** Any JSON (GraphQL's JSON scalar): a string, or the object flash sends. */
  config: unknown;
  portsConfig: { port: string; name: string }[];
}

export type TemplateInput = Partial<Omit<Template, 'id' | 'userId' | 'createdAt'>> & {
  name: string;
  imageName: string;
};

export const TEMPLATE_DEFAULTS = {
  category: 'NVIDIA',
  containerDiskInGb: 50,
  containerRegistryAuthId: null,
  dockerEntrypoint: [],
  dockerStartCmd: [],
  env: {},
  isPublic: false,
  isServerless: false,
  ports: [],
  readme: '',
  volumeInGb: 20,
  volumeMountPath: '/workspace',
} as const satisfies Omit<Template, 'id' | 'userId' | 'name' | 'imageName' | 'createdAt'>;

/**
 * Whether an endpoint's dataCenterIds allow any data center: none named (GraphQL's empty `locations`), or every one
 * (REST's default). A node whose --data-center-id is a name of its own runs them too.
 */
export function allowsAnyDataCenter(dataCenterIds: readonly string[]): boolean {
  return dataCenterIds.length === 0 || DATA_CENTER_IDS.every((dc) => dataCenterIds.includes(dc));
}

/** The same for allowedCudaVersions: every known version named ("select all") allows a driver newer than them too. */
export function allowsAnyCudaVersion(versions: readonly string[]): boolean {
  return versions.length === 0 || CUDA_VERSIONS.every((v) => versions.includes(v));
}

/**
 * The flavor of a CPU endpoint that names none (REST's cpuFlavorIds is optional): the smallest, which its workers are
 * billed and listed as.
 */
export const DEFAULT_CPU_FLAVOR = 'cpu3c';

/** GB of memory per vCPU of a CPU flavor's family: `c` compute-optimised, `g` general purpose. */
export const CPU_GB_PER_VCPU: Readonly<Record<string, number>> = { c: 2, g: 4 };

/**
 * The instance ids (`cpu3g-4-16`: flavor, vCPUs, GB) of a CPU endpoint, which GraphQL reads and writes: those it has
 * when they still name its flavors and (the first) its vCPU count, else one per flavor (a CPU endpoint created or changed over REST,
 * which sets cpuFlavorIds and vcpuCount). A GPU endpoint has none.
 */
export function cpuInstanceIds(
  e: Pick<Endpoint, 'computeType' | 'cpuFlavorIds' | 'vcpuCount' | 'instanceIds'>,
): string[] {
  if (e.computeType !== 'CPU') return [];
  const parts = e.instanceIds.map((id) => /^(cpu\d[a-z])-(\d+)-\d+$/.exec(id));
  // Sizes may differ between the instances (flash's CpuInstanceType: cpu3c-2-4 and cpu3c-4-8); the endpoint's
  // vcpuCount is its first one's, as GraphQL's saveEndpoint sets it. Regenerating them from the flavors and one vCPU
  // count dropped or resized the others, and the client that sent them saw drift on every save. The first instance
  // is also of the first flavor, which the workers are billed and shown as (REST's cpuFlavorId) and sized from
  // (cpuWorkerSize): a REST PATCH that reorders cpuFlavorIds regenerates them in its order.
  const current =
    e.instanceIds.length > 0 &&
    parts.every((m) => m !== null && e.cpuFlavorIds.includes(m[1]!)) &&
    parts[0]![1] === e.cpuFlavorIds[0] &&
    Number(parts[0]![2]) === e.vcpuCount &&
    e.cpuFlavorIds.every((f) => parts.some((m) => m![1] === f));
  if (current) return e.instanceIds;
  // No flavor at all (a row written before REST added the default): the default flavor's, as billing reads it.
  const flavors = e.cpuFlavorIds.length > 0 ? e.cpuFlavorIds : [DEFAULT_CPU_FLAVOR];
  return flavors.map((f) => `${f}-${e.vcpuCount}-${e.vcpuCount * (CPU_GB_PER_VCPU[f.slice(-1)] ?? 4)}`);
}

/**
 * The size of a CPU endpoint's worker: its first instance's vCPUs and memory (`cpu3c-2-4`: 2 vCPUs, 4 GB, taken as
 * GiB). The endpoint's vcpuCount is that instance's too; RunPod places a worker on any of the instances listed, and
 * every worker here gets the first. Null for a GPU endpoint. Executors that can confine a worker (Docker,
 * Kubernetes) give it exactly this.
 */
export function cpuWorkerSize(
  e: Pick<Endpoint, 'computeType' | 'cpuFlavorIds' | 'vcpuCount' | 'instanceIds'>,
): { vcpus: number; memoryMb: number } | null {
  const first = cpuInstanceIds(e)[0];
  const m = first === undefined ? null : /^cpu\d[a-z]-(\d+)-(\d+)$/.exec(first);
  if (!m) return null;
  const vcpus = Number(m[1]);
  const gb = Number(m[2]);
  return vcpus > 0 && gb > 0 ? { vcpus, memoryMb: gb * 1024 } : null;
}

/**
 * The memory limit of a worker in MiB, 0 for none: the node's per-worker cap (`--worker-memory-mb`, 0: none) and the
 * worker's own (a CPU worker's instance memory; 0: none), the smaller where both are set (the operator's cap also
 * bounds what an endpoint asks).
 */
export function memoryLimitMb(nodeCapMb: number, ownMb: number): number {
  if (nodeCapMb > 0 && ownMb > 0) return Math.min(nodeCapMb, ownMb);
  return nodeCapMb > 0 ? nodeCapMb : ownMb;
}

/**
 * The fields a running worker was made from: its image and command (the template), its environment, its GPUs or CPU
 * instance, its volume. A change to any of them makes the running workers outdated, and they are rolled. Scaling
 * settings and job policies act on running workers as they are. Placement limits (dataCenterIds,
 * allowedCudaVersions, minCudaVersion) are not here: a change to them leaves the workers it still allows running
 * (one more allowed CUDA version restarts nothing); the supervisor retires, at its next pass, those whose node it no
 * longer allows (GpuInventory.placementRefusal, the rule a start obeys too), and starts no replacement there.
 */
const WORKER_SHAPING = [
  'templateId',
  'env',
  'computeType',
  'gpuTypeIds',
  'gpuIds',
  'gpuCount',
  'cpuFlavorIds',
  'vcpuCount',
  'networkVolumeId',
  'networkVolumeIds',
] as const satisfies ReadonlyArray<keyof Endpoint>;

/** The template fields a worker is made from: a change to one rolls the endpoints that use the template. */
const TEMPLATE_WORKER_SHAPING = [
  'imageName',
  'dockerEntrypoint',
  'dockerStartCmd',
  'env',
  'containerDiskInGb',
  'containerRegistryAuthId',
] as const satisfies ReadonlyArray<keyof Template>;

/** Whether any of `fields` differs between the two records (values compared as JSON: lists and env maps too). */
function anyChanged<T>(before: T, after: T, fields: ReadonlyArray<keyof T>): boolean {
  return fields.some((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]));
}

/** Whether a template change outdates the workers made from it (a rename or a readme edit does not). */
export function templateVersionChanged(before: Template, after: Template): boolean {
  return anyChanged(before, after, TEMPLATE_WORKER_SHAPING);
}

/** Whether the change outdates the running workers (see WORKER_SHAPING). */
export function endpointVersionChanged(before: Endpoint, after: Endpoint): boolean {
  // The worker's size is its first instance's: a list reordered or resized there changes it without touching
  // cpuFlavorIds or vcpuCount.
  const size = (e: Endpoint) => JSON.stringify(cpuWorkerSize(e));
  return anyChanged(before, after, WORKER_SHAPING) || size(before) !== size(after);
}

/** Validation rules the schema cannot express. Returns the offending field and why, or null. */
export function checkEndpointRules(
  e: Pick<Endpoint, 'workersMin' | 'workersMax'>,
): { field: string; reason: string } | null {
  if (e.workersMin > e.workersMax) {
    return { field: 'workersMin', reason: `workersMin (${e.workersMin}) must not exceed workersMax (${e.workersMax})` };
  }
  return null;
}
