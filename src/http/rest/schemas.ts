import { Type } from 'typebox';
import {
  CPU_FLAVOR_IDS,
  CUDA_VERSIONS,
  DATA_CENTER_IDS,
  GPU_TYPE_IDS,
  TEMPLATE_CATEGORIES,
} from '../../domain/index.ts';

/** REST v1 bodies, from spec/rest-v1.openapi.json: the same fields, defaults, bounds and enums. */
const StringMap = Type.Record(Type.String(), Type.String());
/**
 * One of a fixed set of strings, as a JSON-schema `enum`: a wrong value is one error that lists what is allowed
 * (errors.ts), where a union of literals gave one "must be equal to constant" per allowed value.
 */
export const enumOf = <V extends string>(values: readonly V[]) => Type.Unsafe<V>(Type.String({ enum: [...values] }));

const endpointFields = {
  name: Type.Optional(Type.String({ maxLength: 191 })),
  templateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  gpuTypeIds: Type.Optional(Type.Array(enumOf(GPU_TYPE_IDS), { maxItems: 64 })),
  gpuCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
  cpuFlavorIds: Type.Optional(Type.Array(enumOf(CPU_FLAVOR_IDS))),
  vcpuCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 512 })),
  dataCenterIds: Type.Optional(Type.Array(enumOf(DATA_CENTER_IDS))),
  allowedCudaVersions: Type.Optional(Type.Array(enumOf(CUDA_VERSIONS))),
  minCudaVersion: Type.Optional(enumOf(CUDA_VERSIONS)),
  executionTimeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600 * 1000 })),
  flashboot: Type.Optional(Type.Boolean()),
  idleTimeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
  networkVolumeId: Type.Optional(Type.String({ maxLength: 64 })),
  networkVolumeIds: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 32 })),
  scalerType: Type.Optional(enumOf(['QUEUE_DELAY', 'REQUEST_COUNT'])),
  scalerValue: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
  workersMax: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  workersMin: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  env: Type.Optional(StringMap),
};

export const EndpointCreateInput = Type.Object(
  {
    ...endpointFields,
    templateId: Type.String({ minLength: 1, maxLength: 64 }),
    computeType: Type.Optional(enumOf(['GPU', 'CPU'])),
  },
  { additionalProperties: false },
);
export const EndpointUpdateInput = Type.Object(
  {
    ...endpointFields,
    // null takes it off (the spec's schema has no way to; GraphQL's is "").
    minCudaVersion: Type.Optional(
      Type.Unsafe<string | null>({ type: ['string', 'null'], enum: [...CUDA_VERSIONS, null] }),
    ),
  },
  { additionalProperties: false },
);

const templateFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
  imageName: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  containerDiskInGb: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
  containerRegistryAuthId: Type.Optional(Type.String({ maxLength: 64 })),
  dockerEntrypoint: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256 })),
  dockerStartCmd: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256 })),
  env: Type.Optional(StringMap),
  isPublic: Type.Optional(Type.Boolean()),
  ports: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9]{1,5}/(http|tcp)$' }), { maxItems: 64 })),
  readme: Type.Optional(Type.String({ maxLength: 100_000 })),
  volumeInGb: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
  volumeMountPath: Type.Optional(Type.String({ maxLength: 1024 })),
};

export const TemplateCreateInput = Type.Object(
  {
    ...templateFields,
    name: Type.String({ minLength: 1, maxLength: 191 }),
    imageName: Type.String({ minLength: 1, maxLength: 1024 }),
    category: Type.Optional(enumOf(TEMPLATE_CATEGORIES)),
    isServerless: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const TemplateUpdateInput = Type.Object(templateFields, { additionalProperties: false });

export const IdParams = (name: string) => Type.Object({ [name]: Type.String({ minLength: 1, maxLength: 64 }) });

export const EndpointQuery = Type.Object({
  includeTemplate: Type.Optional(Type.Boolean()),
  includeWorkers: Type.Optional(Type.Boolean()),
});
export const TemplateQuery = Type.Object({
  includeEndpointBoundTemplates: Type.Optional(Type.Boolean()),
  includePublicTemplates: Type.Optional(Type.Boolean()),
  includeRunpodTemplates: Type.Optional(Type.Boolean()),
});
