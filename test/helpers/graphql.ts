/**
 * GraphQL test helpers: a client that sends what runpod-python 1.12.0 sends (`{"query": ...}` only, built with
 * json.dumps, `Authorization: Bearer`), and the SDK's documents rebuilt with the SDK's own whitespace and inline
 * literals (spec/worker-protocol.md §4, runpod/api/{queries,mutations}/*.py).
 */
import { request, type ApiResponse } from './server.ts';

/** POST /graphql exactly as the Python SDK does. */
export function pythonGql(url: string, key: string, query: string): Promise<ApiResponse> {
  return request(`${url}/graphql`, 'POST', undefined, {
    raw: `{"query": ${JSON.stringify(query)}}`,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'RunPod-Python-SDK/1.12.0 (Linux 6.1; x86_64) Language/Python 3.11.2',
      authorization: `Bearer ${key}`,
    },
  });
}

/** POST /graphql with `{query, variables?}` (runpodctl's shape). */
export function gql(
  url: string,
  key: string | null,
  query: string,
  variables?: Record<string, unknown> | null,
): Promise<ApiResponse> {
  const body = variables === undefined ? { query } : { query, variables };
  return request(`${url}/graphql`, 'POST', body, key ? { key } : {});
}

export * from './graphql-sdk-account.ts';

/** create_template(name, image, docker_start_cmd, ..., env, is_serverless, registry_auth_id). */
export const saveTemplate = (o: {
  name: string;
  imageName: string;
  dockerStartCmd?: string;
  env?: Record<string, string>;
  isServerless?: boolean;
  registryAuthId?: string;
}) => {
  const fields = [`name: "${o.name}"`, `imageName: "${o.imageName}"`];
  fields.push(`dockerArgs: "${(o.dockerStartCmd ?? '').replaceAll('"', '\\"')}"`, 'containerDiskInGb: 10');
  fields.push('volumeInGb: 0', 'ports: ""');
  const env = Object.entries(o.env ?? {}).map(([k, v]) => `{ key: "${k}", value: "${v}" }`);
  fields.push(`env: [${env.join(', ')}]`, `isServerless: ${o.isServerless ? 'true' : 'false'}`);
  fields.push(
    `containerRegistryAuthId : "${o.registryAuthId ?? ''}"`,
    'startSsh: true',
    'isPublic: false',
    'readme: ""',
  );
  return `
    mutation {
        saveTemplate(
            input: {
                ${fields.join(', ')}
            }
        ) {
            id
            name
            imageName
            dockerArgs
            containerDiskInGb
            volumeInGb
            volumeMountPath
            ports
            env {
                key
                value
            }
            isServerless
        }
    }
    `;
};

export const QUERY_ENDPOINT = `
query Query {
  myself {
    endpoints {
      aiKey
      gpuIds
      id
      idleTimeout
      name
      networkVolumeId
      locations
      scalerType
      scalerValue
      templateId
      type
      userId
      version
      workersMax
      workersMin
      workersStandby
      gpuCount
      env {
        key
        value
      }
      createdAt
      networkVolume {
        id
        dataCenterId
      }
    }
  }
}
`;

/** create_endpoint(name, template_id, ...) with the SDK's defaults. */
export const saveEndpoint = (o: {
  name: string;
  templateId: string;
  gpuIds?: string;
  networkVolumeId?: string;
  locations?: string;
  flashboot?: boolean;
  allowedCudaVersions?: string;
  workersMax?: number;
}) => {
  const fields = o.flashboot ? ['flashBootType: FLASHBOOT'] : [];
  fields.push(`name: "${o.name}"`, `templateId: "${o.templateId}"`, `gpuIds: "${o.gpuIds ?? 'AMPERE_16'}"`);
  fields.push(`networkVolumeId: "${o.networkVolumeId ?? ''}"`, `locations: "${o.locations ?? ''}"`);
  fields.push('idleTimeout: 5', 'scalerType: "QUEUE_DELAY"', 'scalerValue: 4', 'workersMin: 0');
  fields.push(`workersMax: ${o.workersMax ?? 3}`);
  if (o.allowedCudaVersions) fields.push(`allowedCudaVersions: "${o.allowedCudaVersions}"`);
  fields.push('gpuCount: 1');
  return `
    mutation {
        saveEndpoint(
            input: {
                ${fields.join(', ')}
            }
        ) {
            id
            name
            templateId
            gpuIds
            networkVolumeId
            locations
            idleTimeout
            scalerType
            scalerValue
            workersMin
            workersMax
            allowedCudaVersions
            gpuCount
            flashBootType
        }
    }
    `;
};

export const updateEndpointTemplate = (endpointId: string, templateId: string) => `
    mutation {
        updateEndpointTemplate(input: {templateId: "${templateId}", endpointId: "${endpointId}"}) {
            id
            templateId
        }
    }
    `;

export const saveRegistryAuth = (name: string, username: string, password: string) => `
    mutation SaveRegistryAuth {
        saveRegistryAuth(input: {name: "${name}", username: "${username}", password: "${password}"}) {
            id
            name
        }
    }
    `;

export const updateRegistryAuth = (id: string, username: string, password: string) => `
    mutation UpdateRegistryAuth {
        updateRegistryAuth(input: {id: "${id}", username: "${username}", password: "${password}"}) {
            id
            name
        }
    }
    `;

export const deleteRegistryAuth = (id: string) => `
    mutation DeleteRegistryAuth {
        deleteRegistryAuth(registryAuthId: "${id}")
    }
    `;
