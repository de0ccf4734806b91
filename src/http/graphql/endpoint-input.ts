/**
 * GraphQL `EndpointInput` → the domain endpoint's fields. saveEndpoint is not a sparse update
 * (spec/rest-graphql-facts.md §2.3): on modify, the scaling settings left out are RESET to GraphQL's defaults,
 * while what the endpoint runs, where it may run and its jobs' execution timeout are KEPT unless given (explicit
 * null resets them too).
 * The split is documented in docs/graphql.md.
 */
import { CPU_FLAVOR_IDS, ENDPOINT_DEFAULTS, type EndpointInput } from '../../domain/index.ts';
import { parseGpuIds, validateGpuIds } from '../../fleet/index.ts';
import { invalid } from './context.ts';
import {
  cudaVersion,
  cudaVersions,
  envFromList,
  intIn,
  locationsToDataCenters,
  oneOf,
  type EnvPair,
} from './convert.ts';

export interface GqlEndpointTemplateInput {
  name: string;
  imageName?: string | null;
  containerDiskInGb: number;
  dockerArgs: string;
  env: ReadonlyArray<EnvPair | null>;
  containerRegistryAuthId?: string | null;
  ports?: string | null;
  readme?: string | null;
  startSsh?: boolean | null;
  startJupyter?: boolean | null;
  startScript?: string | null;
  advancedStart?: boolean | null;
  config?: unknown;
}

export interface GqlEndpointInput {
  id?: string | null;
  name: string;
  templateId?: string | null;
  template?: GqlEndpointTemplateInput | null;
  gpuIds?: string | null;
  gpuCount?: number | null;
  instanceIds?: ReadonlyArray<string | null> | null;
  locations?: string | null;
  networkVolumeId?: string | null;
  networkVolumeIds?: ReadonlyArray<{ networkVolumeId: string } | null> | null;
  idleTimeout?: number | null;
  scalerType?: string | null;
  scalerValue?: number | null;
  workersMin?: number | null;
  workersMax?: number | null;
  workersStandby?: number | null;
  env?: ReadonlyArray<EnvPair | null> | null;
  allowedCudaVersions?: string | null;
  minCudaVersion?: string | null;
  executionTimeoutMs?: number | null;
  flashBootType?: 'FLASHBOOT' | 'OFF' | null;
  type?: string | null;
  modelReferences?: ReadonlyArray<string | null> | null;
  // Accepted and ignored (docs/graphql.md): sent by flash, runpod-mcp and runpodctl --hub-id.
  workersPFBTarget?: number | null;
  compliance?: ReadonlyArray<string | null> | null;
  requestTTL?: number | null;
  flashEnvironmentId?: string | null;
  hubReleaseId?: string | null;
}

/** Applied whenever these fields are left out, on create and on modify (measured on the hosted service). */
export const GRAPHQL_ENDPOINT_DEFAULTS = {
  idleTimeout: 10,
  scalerType: 'QUEUE_DELAY',
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  flashboot: false,
} as const;

const DAY_MS = 24 * 3600 * 1000;

/**
 * The domain fields for a create or a modify. Undefined = keep (modify) or the domain default (create).
 * templateId is resolved by the caller (it may come from an inline template). `storedName`: the modified endpoint's
 * name; an endpoint created over REST may have none (its name is optional there), and saving back what was read
 * (runpodctl's read-modify-write) sends that empty name again.
 */
export function endpointFields(
  input: GqlEndpointInput,
  storedName?: string,
): Omit<Partial<EndpointInput>, 'templateId'> {
  const given = (key: keyof GqlEndpointInput): boolean => key in input;
  const name = input.name.trim();
  const keepsNoName = name === '' && storedName === '';
  if ((name === '' && !keepsNoName) || name.length > 191) throw invalid('name', 'must have 1 to 191 characters');
  if (input.modelReferences?.some((m) => m)) throw invalid('modelReferences', 'are not supported by Wharf');
  if (input.workersStandby !== undefined && input.workersStandby !== null) {
    intIn('workersStandby', input.workersStandby, 0, 1000);
  }
  if (input.workersPFBTarget !== undefined && input.workersPFBTarget !== null) {
    intIn('workersPFBTarget', input.workersPFBTarget, 0, 1000);
  }
  const d = GRAPHQL_ENDPOINT_DEFAULTS;
  const out: Omit<Partial<EndpointInput>, 'templateId'> = {
    name,
    // Reset group: always set.
    idleTimeout: intIn('idleTimeout', input.idleTimeout ?? d.idleTimeout, 1, 3600),
    scalerType: oneOf('scalerType', input.scalerType ?? d.scalerType, ['QUEUE_DELAY', 'REQUEST_COUNT'] as const),
    scalerValue: intIn('scalerValue', input.scalerValue ?? d.scalerValue, 1, 100_000),
    workersMin: intIn('workersMin', input.workersMin ?? d.workersMin, 0, 1000),
    workersMax: intIn('workersMax', input.workersMax ?? d.workersMax, 0, 1000),
    flashboot: (input.flashBootType ?? 'OFF') === 'FLASHBOOT',
  };
  // Keep group: set only when given. (The hosted resolver writes executionTimeoutMs only when given too: runpod-mcp's
  // endpoint-gpu-ids.ts, read against it, echoes it for symmetry, noting that leaving it out resets nothing.)
  if (given('executionTimeoutMs')) {
    const ms = input.executionTimeoutMs ?? ENDPOINT_DEFAULTS.executionTimeoutMs;
    out.executionTimeoutMs = intIn('executionTimeoutMs', ms, 0, 7 * DAY_MS);
  }
  if (given('gpuIds')) {
    const spec = (input.gpuIds ?? '').trim();
    const problem = validateGpuIds(spec);
    if (problem) throw invalid('gpuIds', problem);
    out.gpuIds = spec;
    out.gpuTypeIds = parseGpuIds(spec);
  }
  if (given('gpuCount')) out.gpuCount = intIn('gpuCount', input.gpuCount ?? ENDPOINT_DEFAULTS.gpuCount, 1, 64);
  if (given('instanceIds')) Object.assign(out, cpuFields(input.instanceIds));
  if (given('type')) out.type = oneOf('type', input.type ?? 'QB', ['QB', 'LB'] as const);
  if (given('locations')) {
    out.dataCenterIds = locationsToDataCenters('locations', input.locations);
    out.gqlLocations = input.locations ?? null;
  }
  if (given('allowedCudaVersions')) {
    out.allowedCudaVersions = cudaVersions('allowedCudaVersions', input.allowedCudaVersions);
    out.gqlAllowedCudaVersions = input.allowedCudaVersions ?? null;
  }
  if (given('minCudaVersion')) {
    const v = (input.minCudaVersion ?? '').trim();
    out.minCudaVersion = v === '' ? null : cudaVersion('minCudaVersion', v);
  }
  if (given('networkVolumeId')) out.networkVolumeId = (input.networkVolumeId ?? '').trim() || null;
  if (given('networkVolumeIds')) {
    const ids = (input.networkVolumeIds ?? []).flatMap((v) => (v ? [v.networkVolumeId.trim()] : []));
    out.networkVolumeIds = [...new Set(ids.filter((id) => id !== ''))];
  }
  if (given('env')) out.env = envFromList('env', input.env);
  return out;
}

/** `instanceIds: ["cpu3g-4-16"]` (flavor, vCPUs, GB) makes a CPU endpoint; none makes it a GPU endpoint again. */
function cpuFields(list: ReadonlyArray<string | null> | null | undefined): Partial<EndpointInput> {
  const ids = (list ?? []).flatMap((s) => (s ? [s.trim()] : [])).filter((s) => s !== '');
  if (ids.length === 0) {
    return { computeType: 'GPU', instanceIds: [], cpuFlavorIds: [], vcpuCount: ENDPOINT_DEFAULTS.vcpuCount };
  }
  const flavors: string[] = [];
  let vcpuCount = 0;
  for (const id of ids) {
    const m = /^(cpu\d[a-z])-(\d{1,3})-(\d{1,4})$/.exec(id);
    if (!m || !(CPU_FLAVOR_IDS as readonly string[]).includes(m[1]!)) {
      throw invalid(
        'instanceIds',
        `'${id}' is not an instance id like cpu3g-4-16 (flavors ${CPU_FLAVOR_IDS.join(', ')})`,
      );
    }
    // No memory is no instance (RunPod's have vCPUs x the flavor's GB per vCPU): its worker would be sized from
    // nothing, confined to neither vCPUs nor memory (domain cpuWorkerSize).
    if (Number(m[3]) < 1) throw invalid('instanceIds', `'${id}' has no memory (GB)`);
    if (!flavors.includes(m[1]!)) flavors.push(m[1]!);
    vcpuCount ||= intIn('instanceIds', Number(m[2]), 1, 512);
  }
  return { computeType: 'CPU', instanceIds: ids, cpuFlavorIds: flavors, vcpuCount };
}

/** The volume ids an input attaches, to check that they are the caller's. */
export function volumeIdsOf(fields: Partial<EndpointInput>): string[] {
  return [
    ...new Set([...(fields.networkVolumeId ? [fields.networkVolumeId] : []), ...(fields.networkVolumeIds ?? [])]),
  ];
}
