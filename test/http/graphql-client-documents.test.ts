import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

/**
 * The GraphQL documents the official and common clients send about what Wharf has (endpoints, templates, network
 * volumes, registry auths, GPU types, data centers, CPU flavors, the user), copied verbatim from each client's source
 * (spec/rest-graphql-facts.md, Sources) and sent the way that client sends them: its body shape (`{query}` alone,
 * `variables: null` or `{}`, dstack's misspelt `variable`) and its key (Bearer header, or `?api_key=`). Each case checks
 * that the answer has no errors and holds the fields the client reads, or, for the pod documents (Wharf has no pods of its
 * own), that they validate and answer PODS_NOT_SUPPORTED at the field's path as the other pod mutations do.
 *
 * runpod-python's documents are covered in graphql-python-sdk.test.ts, runpodctl's endpoint round trips in
 * graphql-runpodctl.test.ts; this file holds the documents those do not send verbatim.
 */

let t: TestServer;

/** POST /graphql with a body as given and the key as a Bearer header (runpodctl, flash, runpod-python). */
const bearer = (body: unknown): Promise<ApiResponse> => request(`${t.url}/graphql`, 'POST', body, { key: t.key });
/** POST /graphql?api_key= (dstack, the docs' examples, runpod-python before 2025-01). */
const apiKeyParam = (body: unknown): Promise<ApiResponse> =>
  request(`${t.url}/graphql?api_key=${encodeURIComponent(t.key)}`, 'POST', body);

/** What every client does: a 200 without `errors`, then `data`. */
function data(res: ApiResponse): any {
  expect(res.status, res.text).toBe(200);
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data;
}

/** What Wharf answers a pod-creating or pod-changing mutation: 200, the field null, PODS_NOT_SUPPORTED at its path. */
function podsRefused(res: ApiResponse, field: string): void {
  expect(res.status, res.text).toBe(200);
  expect(res.json.data, res.text).toEqual({ [field]: null });
  expect(res.json.errors, res.text).toEqual([
    {
      message: expect.stringMatching(new RegExp(`^Wharf runs serverless workers only; ${field} is not available`)),
      locations: expect.any(Array),
      path: [field],
      extensions: { code: 'PODS_NOT_SUPPORTED' },
    },
  ]);
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('runpod/flash (src/runpod_flash/core/api/runpod.py): {query, variables: variables or {}}, Bearer', () => {
  const GET_TEMPLATE = `
        query getTemplate($id: String!) {
            podTemplate(id: $id) {
                id
                containerDiskInGb
                dockerArgs
                env {
                    key
                    value
                }
                imageName
                name
                readme
            }
        }
        `;
  const SAVE_TEMPLATE = `
        mutation saveTemplate($input: SaveTemplateInput) {
            saveTemplate(input: $input) {
                id
                containerDiskInGb
                dockerArgs
                env {
                    key
                    value
                }
                imageName
                name
                readme
            }
        }
        `;
  const SAVE_ENDPOINT = `
        mutation saveEndpoint($input: EndpointInput!) {
            saveEndpoint(input: $input) {
                aiKey
                gpuIds
                id
                idleTimeout
                locations
                name
                networkVolumeId
                networkVolumeIds {
                    networkVolumeId
                    dataCenterId
                }
                flashEnvironmentId
                scalerType
                scalerValue
                templateId
                type
                userId
                version
                workersMax
                workersMin
                workersStandby
                workersPFBTarget
                gpuCount
                allowedCudaVersions
                minCudaVersion
                executionTimeoutMs
                instanceIds
                activeBuildid
                idePodId
                flashBootType
            }
        }
        `;
  const GPU_STOCK = `
        query ServerlessGpuTypes($lowestPriceInput: GpuLowestPriceInput, $gpuTypesInput: GpuTypeFilter) {
          gpuTypes(input: $gpuTypesInput) {
            lowestPrice(input: $lowestPriceInput) {
              stockStatus
            }
          }
        }
        `;
  const CPU_STOCK = `
        query SecureCpuTypes($cpuFlavorInput: CpuFlavorInput, $specificsInput: SpecificsInput) {
          cpuFlavors(input: $cpuFlavorInput) {
            specifics(input: $specificsInput) {
              stockStatus
            }
          }
        }
        `;
  const DELETE_ENDPOINT = `
        mutation deleteEndpoint($id: String!) {
            deleteEndpoint(id: $id)
        }
        `;
  const ENDPOINT_EXISTS = `
        query getEndpoint($id: String!) {
            myself {
                endpoint(id: $id) {
                    id
                }
            }
        }
        `;

  it('get_template / update_template, save_endpoint, endpoint_exists and delete_endpoint', async () => {
    const created = data(
      await bearer({
        query: SAVE_TEMPLATE,
        variables: {
          input: {
            name: 'flash-tpl',
            imageName: 'runpod/flash:1',
            dockerArgs: '',
            containerDiskInGb: 64,
            volumeInGb: 0,
            env: [{ key: 'LOG_LEVEL', value: 'INFO' }],
            isServerless: true,
            readme: '',
            config: {},
          },
        },
      }),
    ).saveTemplate;
    expect(created).toMatchObject({ name: 'flash-tpl', imageName: 'runpod/flash:1', containerDiskInGb: 64 });
    const tpl = data(await bearer({ query: GET_TEMPLATE, variables: { id: created.id } })).podTemplate;
    expect(tpl).toEqual({
      id: created.id,
      containerDiskInGb: 64,
      dockerArgs: '',
      env: [{ key: 'LOG_LEVEL', value: 'INFO' }],
      imageName: 'runpod/flash:1',
      name: 'flash-tpl',
      readme: '',
    });

    const input = {
      name: 'flash-ep',
      templateId: created.id,
      gpuIds: 'AMPERE_48',
      gpuCount: 1,
      workersMin: 0,
      workersMax: 2,
      workersPFBTarget: 0,
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      executionTimeoutMs: 600000,
      flashBootType: 'FLASHBOOT',
      type: 'QB',
      locations: 'EU-RO-1',
      allowedCudaVersions: '',
    };
    const ep = data(await bearer({ query: SAVE_ENDPOINT, variables: { input } })).saveEndpoint;
    expect(ep).toMatchObject({ name: 'flash-ep', gpuIds: 'AMPERE_48', templateId: created.id, workersMax: 2 });
    expect(ep.id).toMatch(/^[a-z0-9]{14}$/);

    expect(data(await bearer({ query: ENDPOINT_EXISTS, variables: { id: ep.id } })).myself.endpoint).toEqual({
      id: ep.id,
    });
    await bearer({ query: SAVE_ENDPOINT, variables: { input: { ...input, id: ep.id, workersMax: 0 } } });
    expect(data(await bearer({ query: DELETE_ENDPOINT, variables: { id: ep.id } }))).toEqual({ deleteEndpoint: null });
    expect(data(await bearer({ query: ENDPOINT_EXISTS, variables: { id: ep.id } })).myself.endpoint).toBeNull();
  });

  it('get_gpu_lowest_price_stock_status', async () => {
    const variables = {
      gpuTypesInput: { ids: ['NVIDIA A40'] },
      lowestPriceInput: {
        dataCenterId: null,
        gpuCount: 1,
        secureCloud: true,
        includeAiApi: true,
        allowedCudaVersions: [],
        compliance: [],
      },
    };
    const gpuTypes = data(await bearer({ query: GPU_STOCK, variables })).gpuTypes;
    // This server runs no executor: the type is known, with no stock of its own.
    expect(gpuTypes).toEqual([{ lowestPrice: { stockStatus: null } }]);
  });

  it('get_cpu_specific_stock_status: each CPU flavor of the spec, in a data center', async () => {
    for (const flavor of ['cpu3c', 'cpu3g', 'cpu5c', 'cpu5g']) {
      const variables = {
        cpuFlavorInput: { id: flavor },
        specificsInput: { dataCenterId: 'EU-RO-1', instanceId: `${flavor}-2-4` },
      };
      const cpuFlavors = data(await bearer({ query: CPU_STOCK, variables })).cpuFlavors;
      expect(cpuFlavors).toHaveLength(1);
      // flash reads `specifics.stockStatus`, a string or nothing (no executor runs in this test server).
      expect(cpuFlavors[0]).toEqual({ specifics: { stockStatus: null } });
    }
    const ALL = `query { cpuFlavors { id groupId groupName displayName minVcpu maxVcpu ramMultiplier
      specifics { stockStatus securePrice slsPrice } } }`;
    const all = data(await bearer({ query: ALL, variables: {} })).cpuFlavors;
    expect(all.map((f: any) => f.id)).toEqual(['cpu3c', 'cpu3g', 'cpu5c', 'cpu5g']);
    expect(all[1]).toMatchObject({ id: 'cpu3g', groupId: 'cpu3', minVcpu: 1, maxVcpu: 512, ramMultiplier: 4 });
    expect(all[2]).toMatchObject({ id: 'cpu5c', groupId: 'cpu5', ramMultiplier: 2 });
    expect(all[1].specifics.securePrice).toBeGreaterThanOrEqual(0);
    const unknown = { cpuFlavorInput: { id: 'cpu9x' }, specificsInput: { dataCenterId: 'EU-RO-1', instanceId: 'x' } };
    expect(data(await bearer({ query: CPU_STOCK, variables: unknown })).cpuFlavors).toEqual([]);
  });
});

describe('runpodctl (internal/api/*.go): {query, variables} with variables {} or null, Bearer', () => {
  it('ssh keys: GetPublicSSHKeys and AddPublicSSHKey (graphql.go)', async () => {
    const GET = `
		query myself {
			myself {
				id
				pubKey
			}
		}
		`;
    const ADD = `
		mutation Mutation($input: UpdateUserSettingsInput) {
			updateUserSettings(input: $input) {
			  id
			}
		  }
		`;
    expect(data(await bearer({ query: GET, variables: {} })).myself).toEqual({ id: t.server.adminUserId, pubKey: '' });
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB me@host';
    const added = data(await bearer({ query: ADD, variables: { input: { pubKey: key } } }));
    expect(added).toEqual({ updateUserSettings: { id: t.server.adminUserId } });
    expect(data(await bearer({ query: GET, variables: {} })).myself.pubKey).toBe(key);
  });

  it('GetNetworkVolumes and GetPods (graphql.go)', async () => {
    const vol = await t.server.volumes.create(t.server.adminUserId, {
      name: 'ctl-vol',
      size: 7,
      dataCenterId: 'US-TX-3',
    });
    const VOLUMES = `
		query getNetworkVolumes {
			myself {
			  networkVolumes {
				dataCenterId
				id
				name
				size
			  }
			}
		}
		`;
    const volumes = data(await bearer({ query: VOLUMES, variables: {} })).myself.networkVolumes;
    expect(volumes).toContainEqual({ dataCenterId: 'US-TX-3', id: vol.id, name: 'ctl-vol', size: 7 });
    const PODS = `
		query myPods {
			myself {
			  pods {
				id
				containerDiskInGb
				costPerHr
				desiredStatus
				lastStatusChange
				uptimeSeconds
				dockerArgs
				env
				gpuCount
				imageName
				memoryInGb
				name
				podType
				ports
				vcpuCount
				volumeInGb
				volumeMountPath
				machine {
				  gpuDisplayName
				  location
				}
				runtime {
				  ports {
					ip
					isIpPublic
					privatePort
					publicPort
					type
				  }
				}
			  }
			}
		}
		`;
    expect(data(await bearer({ query: PODS, variables: {} })).myself.pods).toEqual([]);
  });

  it('gpu list, serverless GPU pools, datacenter list and user (gpu.go, variables null)', async () => {
    const GPUS = `
		query {
			gpuTypes {
				id
				displayName
				memoryInGb
				secureCloud
				communityCloud
				securePrice
				communityPrice
			}
		}
	`;
    const gpus = data(await bearer({ query: GPUS, variables: null })).gpuTypes;
    expect(gpus).toHaveLength(49);
    expect(gpus).toContainEqual(
      expect.objectContaining({ id: 'NVIDIA L40S', displayName: 'L40S', memoryInGb: 48, secureCloud: true }),
    );
    for (const g of gpus) expect(typeof g.securePrice).toBe('number');
    const POOLS = `
		query {
			serverlessGpuPools {
				id
				gpuTypeIds
			}
		}
	`;
    const pools = data(await bearer({ query: POOLS, variables: null })).serverlessGpuPools;
    expect(pools).toContainEqual({ id: 'AMPERE_48', gpuTypeIds: ['NVIDIA RTX A6000', 'NVIDIA A40'] });
    const DCS = `
		query {
			dataCenters {
				id
				name
				location
				gpuAvailability {
					gpuTypeId
					displayName
					stockStatus
				}
			}
		}
	`;
    expect(data(await bearer({ query: DCS, variables: null })).dataCenters).toHaveLength(26);
    const USER = `
		query {
			myself {
				id
				email
				clientBalance
				currentSpendPerHr
				spendLimit
				notifyPodsStale
				notifyPodsGeneral
				notifyLowBalance
			}
		}
	`;
    const user = data(await bearer({ query: USER, variables: null })).myself;
    expect(user).toMatchObject({ id: t.server.adminUserId, clientBalance: 0, currentSpendPerHr: 0 });
  });

  it('get cloud (api/cloud.go: the legacy client, GpuLowestPriceInput! with its filters)', async () => {
    const CLOUD = `
		query LowestPrice($input: GpuLowestPriceInput!) {
			gpuTypes {
			  lowestPrice(input: $input) {
				gpuName
				gpuTypeId
				minimumBidPrice
				uninterruptablePrice
				minMemory
				minVcpu
			  }
			  memoryInGb
			}
		}
		`;
    // `runpodctl get cloud 2 --mem 16 --vcpu 4 --disk 50 --secure`; without flags the omitempty filters are left out.
    for (const input of [
      { gpuCount: 2, minMemoryInGb: 16, minVcpuCount: 4, secureCloud: true, totalDisk: 50 },
      { gpuCount: 1, secureCloud: null },
    ]) {
      const gpus = data(await bearer({ query: CLOUD, variables: { input } })).gpuTypes;
      expect(gpus).toHaveLength(49);
      // runpodctl lists a type only when minMemory is set: this server runs no executor, so it has none to list.
      for (const g of gpus) expect(g.lowestPrice).toMatchObject({ gpuTypeId: expect.any(String), minMemory: null });
    }
  });

  it('create pod and start pod (api/pod.go: the legacy client) answer PODS_NOT_SUPPORTED', async () => {
    const CREATE = `
		mutation createPod($input: PodFindAndDeployOnDemandInput!) {
			podFindAndDeployOnDemand(input: $input) {
			  id
			  costPerHr
			  desiredStatus
			  lastStatusChange
			}
		}
		`;
    const BID_RESUME = `
		mutation Mutation($podId: String!, $bidPerGpu: Float!) {
			podBidResume(input: {podId: $podId, bidPerGpu: $bidPerGpu}) {
			  id
			  costPerHr
			  desiredStatus
			  lastStatusChange
			}
		}
		`;
    // CreatePodInput as Go marshals it (`runpodctl create pod --secureCloud --gpuType ... --imageName ...`):
    // every field but deployCost (omitempty), which `--cost` sets.
    const input = {
      cloudType: 'SECURE',
      containerDiskInGb: 20,
      deployCost: 0.5,
      dockerArgs: '',
      env: [{ key: 'A', value: 'b' }],
      gpuCount: 1,
      gpuTypeId: 'NVIDIA GeForce RTX 4090',
      imageName: 'runpod/pytorch:2.1.0',
      minMemoryInGb: 20,
      minVcpuCount: 1,
      name: 'runpod/pytorch',
      ports: '8888/http,22/tcp',
      templateId: '',
      volumeInGb: 1,
      volumeMountPath: '/workspace',
    };
    podsRefused(await bearer({ query: CREATE, variables: { input } }), 'podFindAndDeployOnDemand');
    podsRefused(
      await bearer({ query: CREATE, variables: { input: { ...input, deployCost: undefined, env: null } } }),
      'podFindAndDeployOnDemand',
    );
    // `runpodctl start pod <id> --bid 0.3`
    podsRefused(await bearer({ query: BID_RESUME, variables: { podId: 'abc', bidPerGpu: 0.3 } }), 'podBidResume');
  });

  it('template list, get, and port labels (templates.go, template_port_labels.go)', async () => {
    const rest = await t.api('POST', '/v1/templates', {
      name: 'ctl-labels',
      imageName: 'runpod/worker:2',
      isServerless: true,
      ports: ['8000/http'],
      dockerStartCmd: ['python', 'handler.py'],
    });
    expect(rest.status, rest.text).toBe(200);
    const id = rest.json.id as string;
    const LIST = `
		query PodTemplates($input: PodTemplateInput) {
			podTemplates(input: $input) {
				id
				name
				imageName
				isServerless
				isPublic
				isRunpod
				category
				containerDiskInGb
				volumeInGb
				volumeMountPath
			}
		}
	`;
    expect(data(await bearer({ query: LIST, variables: { input: { isRunpod: true } } })).podTemplates).toEqual([]);
    const mine = data(await bearer({ query: LIST, variables: { input: { isRunpod: false } } })).podTemplates;
    expect(mine).toContainEqual(expect.objectContaining({ id, name: 'ctl-labels', isServerless: true }));
    const GET = `
		query GetTemplate($id: String!) {
			podTemplate(id: $id) {
				id
				name
				imageName
				isServerless
				isPublic
				isRunpod
				category
				ports
				env {
					key
					value
				}
				containerDiskInGb
				containerRegistryAuthId
				volumeInGb
				volumeMountPath
				readme
			}
		}
	`;
    expect(data(await bearer({ query: GET, variables: { id } })).podTemplate).toMatchObject({
      id,
      ports: '8000/http',
      env: [],
    });

    const STATE = `
		query GetTemplateForPortLabels {
			myself {
				podTemplates {
					id
					name
					imageName
					dockerArgs
					env {
						key
						value
					}
					ports
					volumeMountPath
					volumeInGb
					containerDiskInGb
					containerRegistryAuthId
					startJupyter
					startSsh
					startScript
					isServerless
					isPublic
					readme
					advancedStart
					category
				}
			}
		}
		`;
    const state = data(await bearer({ query: STATE, variables: {} })).myself.podTemplates.find((x: any) => x.id === id);
    expect(state).toMatchObject({ name: 'ctl-labels', ports: '8000/http' });
    // runpodctl builds the saveTemplate input from what it read (Go zero values for nulls), as UpdateTemplatePortLabels.
    const input: Record<string, unknown> = {
      id: state.id,
      name: state.name,
      imageName: state.imageName,
      containerDiskInGb: state.containerDiskInGb ?? 0,
      containerRegistryAuthId: state.containerRegistryAuthId ?? '',
      dockerArgs: state.dockerArgs ?? '',
      env: state.env ?? [],
      ports: state.ports,
      portsConfig: [{ port: '8000', name: 'api' }],
      volumeInGb: state.volumeInGb ?? 0,
      isPublic: state.isPublic ?? false,
      isServerless: state.isServerless ?? false,
      startJupyter: state.startJupyter ?? false,
      startSsh: state.startSsh ?? false,
      advancedStart: state.advancedStart ?? false,
      readme: state.readme ?? '',
    };
    if (state.volumeMountPath) input.volumeMountPath = state.volumeMountPath;
    if (state.startScript) input.startScript = state.startScript;
    if (state.category) input.category = state.category;
    const SAVE = `
		mutation UpdateTemplatePortLabels($input: SaveTemplateInput) {
			saveTemplate(input: $input) {
				id
			}
		}
		`;
    expect(data(await bearer({ query: SAVE, variables: { input } })).saveTemplate).toEqual({ id });
    const back = await t.api('GET', `/v1/templates/${id}`);
    expect(back.json).toMatchObject({ imageName: 'runpod/worker:2', dockerStartCmd: ['python', 'handler.py'] });
  });
});

describe('dstack (backends/runpod/api_client.py): ?api_key=, {query, variable: {}} or {query}', () => {
  it('validate_api_key (get_user_details)', async () => {
    const USER = `
query myself {
    myself {
        id
        authId
        email
    }
}
`;
    // dstack returns the whole answer; what matters is a 200 without errors (a 400 would fail its credentials check).
    const me = data(await apiKeyParam({ query: USER, variable: {} })).myself;
    expect(me).toEqual({ id: t.server.adminUserId, authId: null, email: null });
  });

  it('registry auths and network volumes', async () => {
    const add = `
                mutation {
                    saveRegistryAuth(
                        input: {
                            name: "dstack-reg",
                            username: "bot",
                            password: "p4ss"
                        }
                    ) {
                        id
                    }
                }
                `;
    const authId = data(await apiKeyParam({ query: add })).saveRegistryAuth.id as string;
    const list = `
                query myself {
                    myself {
                        containerRegistryCreds {
                            id,
                            name
                        }
                    }
                }
                `;
    expect(data(await apiKeyParam({ query: list })).myself.containerRegistryCreds).toContainEqual({
      id: authId,
      name: 'dstack-reg',
    });
    const del = `
                mutation {
                    deleteRegistryAuth(
                        registryAuthId: "${authId}"
                    )
                }
                `;
    expect(data(await apiKeyParam({ query: del }))).toEqual({ deleteRegistryAuth: null });

    const create = `
                mutation {
                    createNetworkVolume(
                        input: {
                            name: "dstack-vol",
                            size: 12,
                            dataCenterId: "EU-SE-1"
                        }
                    ) {
                       id
                    }
                }
                `;
    const volumeId = data(await apiKeyParam({ query: create })).createNetworkVolume.id as string;
    const get = `
                query getMyVolumes {
                    myself {
                        networkVolumes {
                            id,
                            name,
                            size,
                            dataCenter {
                              id
                              name
                            }
                        }
                    }
                }
                `;
    const vols = data(await apiKeyParam({ query: get })).myself.networkVolumes;
    expect(vols).toContainEqual({
      id: volumeId,
      name: 'dstack-vol',
      size: 12,
      dataCenter: { id: 'EU-SE-1', name: 'EU-SE-1' },
    });
    const remove = `
                mutation {
                    deleteNetworkVolume(
                        input: {
                            id: "${volumeId}"
                        }
                    )
                }
                `;
    expect(data(await apiKeyParam({ query: remove }))).toEqual({ deleteNetworkVolume: null });
  });
  it('create_pod (on demand and interruptable) and edit_pod answer PODS_NOT_SUPPORTED', async () => {
    // generate_pod_deployment_mutation's document for dstack's arguments (every optional field set but
    // template_id and network_volume_id); with bid_per_gpu it rents an interruptable pod.
    const deployment = (podDeploy: string, bid: string): string => {
      const inputString = [
        'name: "dstack-run-0-0"',
        'imageName: "dstackai/base:py3.12-0.7-cuda-12.1"',
        'gpuTypeId: "NVIDIA A40"',
        'cloudType: SECURE',
        'startSsh: true',
        'supportPublicIp: true',
        ...(bid ? [`bidPerGpu: ${bid}`] : []),
        'dataCenterId: "EU-SE-1"',
        'gpuCount: 1',
        'volumeInGb: 0',
        'containerDiskInGb: 100',
        'minVcpuCount: 8',
        'minMemoryInGb: 48',
        'dockerArgs: "sleep infinity"',
        'ports: "10022/tcp"',
        'env: [{ key: "DSTACK_RUNNER_LOG_LEVEL", value: "6" }]',
        'allowedCudaVersions: ["12.1", "12.2"]',
      ].join(', ');
      return `
        mutation {
          ${podDeploy}(
            input: {
              ${inputString}
            }
          ) {
            id
            lastStatusChange
            imageName
            machine {
              podHostId
            }
          }
        }
        `;
    };
    podsRefused(await apiKeyParam({ query: deployment('podFindAndDeployOnDemand', '') }), 'podFindAndDeployOnDemand');
    podsRefused(await apiKeyParam({ query: deployment('podRentInterruptable', '0.25') }), 'podRentInterruptable');
    const edit = `
                mutation {
                    podEditJob(input: {
                        podId: "abc123"
                        imageName: "dstackai/base:py3.12-0.7-cuda-12.1"
                        containerDiskInGb: 100
                        containerRegistryAuthId: "cm1"
                        volumeInGb: 0
                    }) {
                        id
                    }
                }
                `;
    podsRefused(await apiKeyParam({ query: edit }), 'podEditJob');
  });
});

describe('runpod-mcp (src/tools/*.ts, src/_shared/endpoint-gpu-ids.ts)', () => {
  it('set-endpoint-gpus: EndpointSnapshot read, then saveEndpoint echoing it (Bearer, graphqlAuthed)', async () => {
    const tpl = await t.api('POST', '/v1/templates', { name: 'mcp-tpl', imageName: 'img:4', isServerless: true });
    const ep = await t.api('POST', '/v1/endpoints', {
      templateId: tpl.json.id,
      name: 'mcp-ep',
      gpuTypeIds: ['NVIDIA A40'],
      workersMax: 7,
      idleTimeout: 42,
      scalerValue: 9,
    });
    const SNAPSHOT = `
  query EndpointSnapshot($id: String!) {
    myself {
      endpoint(id: $id) {
        id
        name
        gpuIds
        gpuCount
        workersMin
        workersMax
        idleTimeout
        scalerType
        scalerValue
        executionTimeoutMs
        requestTTL
        flashBootType
        locations
        allowedCudaVersions
        minCudaVersion
        instanceIds
      }
    }
  }
`;
    const snap = data(await bearer({ query: SNAPSHOT, variables: { id: ep.json.id } })).myself.endpoint;
    expect(snap).toMatchObject({ id: ep.json.id, workersMax: 7, idleTimeout: 42, scalerValue: 9, instanceIds: [] });
    const SAVE = `
  mutation saveEndpoint($input: EndpointInput!) {
    saveEndpoint(input: $input) {
      id
      name
      gpuIds
      gpuCount
      workersMin
      workersMax
    }
  }
`;
    const input = {
      id: snap.id,
      name: snap.name,
      gpuIds: 'AMPERE_48,-NVIDIA RTX A6000',
      gpuCount: snap.gpuCount,
      workersMin: snap.workersMin,
      workersMax: snap.workersMax,
      idleTimeout: snap.idleTimeout,
      scalerType: snap.scalerType,
      scalerValue: snap.scalerValue,
      executionTimeoutMs: snap.executionTimeoutMs,
      requestTTL: snap.requestTTL,
      flashBootType: snap.flashBootType,
      locations: snap.locations,
      allowedCudaVersions: snap.allowedCudaVersions,
      minCudaVersion: snap.minCudaVersion,
    };
    const saved = data(await bearer({ query: SAVE, variables: { input } })).saveEndpoint;
    expect(saved).toEqual({
      id: snap.id,
      name: 'mcp-ep',
      gpuIds: 'AMPERE_48,-NVIDIA RTX A6000',
      gpuCount: 1,
      workersMin: 0,
      workersMax: 7,
    });
  });

  it('list-gpu-types and list-data-centers documents (with a key: see docs/graphql.md on keyless reads)', async () => {
    const GPUS = `
        query {
          gpuTypes {
            id
            displayName
            memoryInGb
            secureCloud
            communityCloud
            lowestPrice(input: { gpuCount: 1 }) {
              stockStatus
            }
          }
        }
      `;
    const gpus = data(await bearer({ query: GPUS })).gpuTypes;
    expect(gpus).toHaveLength(49);
    for (const g of gpus) expect(typeof g.displayName).toBe('string');
    const DCS = `
        query {
          dataCenters {
            id
            name
            location
          }
        }
      `;
    const dcs = data(await bearer({ query: DCS })).dataCenters;
    for (const dc of dcs) expect(typeof dc.location).toBe('string');
  });
});
