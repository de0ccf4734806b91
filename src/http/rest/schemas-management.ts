import { Type } from 'typebox';
import {
  BUCKET_SIZES,
  CPU_FLAVOR_IDS,
  DATA_CENTER_IDS,
  DISCOUNT_TYPES,
  GPU_TYPE_IDS,
  TEXT_MAX,
  VOLUME_MAX_GB,
} from '../../domain/index.ts';
import { enumOf } from './schemas.ts';

/** Bodies and queries of the management routes beyond templates and endpoints (spec/rest-v1.openapi.json). */
const Name = Type.String({ minLength: 1, maxLength: TEXT_MAX.name });

export const NetworkVolumeCreateInput = Type.Object(
  {
    name: Name,
    size: Type.Integer({ minimum: 0, maximum: VOLUME_MAX_GB }),
    dataCenterId: Type.String({ minLength: 1, maxLength: TEXT_MAX.dataCenterId }),
  },
  { additionalProperties: false },
);
export const NetworkVolumeUpdateInput = Type.Object(
  {
    name: Type.Optional(Name),
    size: Type.Optional(Type.Integer({ minimum: 0, maximum: VOLUME_MAX_GB, description: 'GB; may only grow' })),
  },
  { additionalProperties: false },
);

export const ContainerRegistryAuthCreateInput = Type.Object(
  {
    name: Name,
    username: Type.String({ minLength: 1, maxLength: TEXT_MAX.registryUsername }),
    password: Type.String({ minLength: 1, maxLength: TEXT_MAX.registryPassword }),
  },
  { additionalProperties: false },
);

const Include = Type.Optional(Type.Boolean());
const podIncludes = {
  includeMachine: Include,
  includeNetworkVolume: Include,
  includeSavingsPlans: Include,
  includeTemplate: Include,
  includeWorkers: Include,
};
export const PodQuery = Type.Object({ ...podIncludes });
export const PodListQuery = Type.Object({
  ...podIncludes,
  computeType: Type.Optional(enumOf(['GPU', 'CPU'])),
  cpuFlavorId: Type.Optional(Type.Array(Type.String({ maxLength: 64 }))),
  dataCenterId: Type.Optional(Type.Array(Type.String({ maxLength: 64 }))),
  desiredStatus: Type.Optional(enumOf(['RUNNING', 'EXITED', 'TERMINATED'])),
  endpointId: Type.Optional(Type.String({ maxLength: 191 })),
  gpuTypeId: Type.Optional(Type.Array(Type.String({ maxLength: 128 }))),
  id: Type.Optional(Type.String({ maxLength: 128 })),
  imageName: Type.Optional(Type.String({ maxLength: 1024 })),
  name: Type.Optional(Type.String({ maxLength: 191 })),
  networkVolumeId: Type.Optional(Type.String({ maxLength: 64 })),
  templateId: Type.Optional(Type.String({ maxLength: 64 })),
});

const window = {
  bucketSize: Type.Optional(enumOf(BUCKET_SIZES)),
  startTime: Type.Optional(Type.String({ format: 'date-time' })),
  endTime: Type.Optional(Type.String({ format: 'date-time' })),
};
export const EndpointBillingQuery = Type.Object({
  ...window,
  dataCenterId: Type.Optional(Type.Array(enumOf(DATA_CENTER_IDS))),
  endpointId: Type.Optional(Type.String({ maxLength: 64 })),
  gpuTypeId: Type.Optional(Type.Array(enumOf([...GPU_TYPE_IDS, ...CPU_FLAVOR_IDS]))),
  grouping: Type.Optional(enumOf(['endpointId', 'podId', 'gpuTypeId'])),
  imageName: Type.Optional(Type.String({ maxLength: 1024 })),
  templateId: Type.Optional(Type.String({ maxLength: 64 })),
});
export const PodBillingQuery = Type.Object({
  ...window,
  gpuTypeId: Type.Optional(enumOf([...GPU_TYPE_IDS, ...CPU_FLAVOR_IDS])),
  grouping: Type.Optional(enumOf(['podId', 'gpuTypeId'])),
  podId: Type.Optional(Type.String({ maxLength: 128 })),
});
export const VolumeBillingQuery = Type.Object(window);

export const KeyCreateInput = Type.Object(
  {
    name: Name,
    scope: Type.Optional(enumOf(['all', 'read', 'restricted'])),
    endpointIds: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 256 })),
  },
  { additionalProperties: false },
);
export const UserCreateInput = Type.Object({ name: Name }, { additionalProperties: false });
export const UserUpdateInput = Type.Object(
  {
    serverlessDiscount: Type.Optional(
      Type.Union([
        Type.Object(
          {
            discountFactor: Type.Number({ minimum: 0, maximum: 1 }),
            type: enumOf(DISCOUNT_TYPES),
            expirationDate: Type.String({ format: 'date-time' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false },
);
