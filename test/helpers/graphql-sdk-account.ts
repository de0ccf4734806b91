/**
 * runpod-python 1.12.0's account, GPU and pod documents, rebuilt with the SDK's whitespace and inline literals
 * (spec/worker-protocol.md §4, runpod/api/{queries,mutations}/{user,gpus,pods}.py). Re-exported by graphql.ts.
 */

export const QUERY_USER = `
query myself {
    myself {
        id
        pubKey
        networkVolumes {
            id
            name
            size
            dataCenterId
        }
    }
}
`;

export const updateUserSettings = (pubKey: string) => `
    mutation {
        updateUserSettings(
            input: {
                pubKey: "${pubKey.replaceAll('\n', '\\n')}"
            }
        ) {
            id
            pubKey
        }
    }
    `;

export const QUERY_GPU_TYPES = `
query GpuTypes {
  gpuTypes {
    id
    displayName
    memoryInGb
  }
}
`;

export const gpuQuery = (gpuId: string, gpuCount = 1) => `
    query GpuTypes {
      gpuTypes(input: {id: "${gpuId}"}) {
        maxGpuCount
        id
        displayName
        manufacturer
        memoryInGb
        cudaCores
        secureCloud
        communityCloud
        securePrice
        communityPrice
        oneMonthPrice
        threeMonthPrice
        oneWeekPrice
        communitySpotPrice
        secureSpotPrice
        lowestPrice(input: {gpuCount: ${gpuCount}}) {
          minimumBidPrice
          uninterruptablePrice
        }
      }
    }
    `;

const POD_FIELDS = `id
            containerDiskInGb
            costPerHr
            desiredStatus
            dockerArgs
            dockerId
            env
            gpuCount
            imageName
            lastStatusChange
            machineId
            memoryInGb
            name
            podType
            port
            ports
            uptimeSeconds
            vcpuCount
            volumeInGb
            volumeMountPath
            runtime {
                ports{
                    ip
                    isIpPublic
                    privatePort
                    publicPort
                    type
                }
            }
            machine {
                gpuDisplayName
            }`;

export const QUERY_POD = `
query myPods {
    myself {
        pods {
            ${POD_FIELDS}
        }
    }
}
`;

export const podQuery = (podId: string) => `
    query pod {
        pod(input: {podId: "${podId}"}) {
            ${POD_FIELDS}
        }
    }
    `;

/** create_pod(name, image, gpu_type_id) with the SDK's defaults. */
export const podDeployMutation = (gpuTypeId: string | null) => {
  const fields = ['name: "my-pod"', 'imageName: "runpod/base:0.6.2"', 'cloudType: ALL', 'startSsh: true'];
  if (gpuTypeId) {
    fields.push(`gpuTypeId: "${gpuTypeId}"`, 'supportPublicIp: true', 'gpuCount: 1', 'volumeInGb: 0');
    fields.push('minVcpuCount: 1', 'minMemoryInGb: 1', 'allowedCudaVersions: ["12.4", "12.5"]');
  } else {
    fields.push('instanceId: "cpu3c-2-4"');
  }
  fields.push('dataCenterId: null', 'dockerArgs: ""', 'containerDiskInGb: 10', 'ports: "8888/http,22/tcp"');
  fields.push('volumeMountPath: "/runpod-volume"', 'env: [{ key: "A", value: "1" }]');
  if (!gpuTypeId) fields.push('templateId: "runpod-ubuntu"');
  return `
    mutation {
      ${gpuTypeId ? 'podFindAndDeployOnDemand' : 'deployCpuPod'}(
        input: {
          ${fields.join(', ')}
        }
      ) {
        id
        imageName
        env
        machineId
        machine {
          podHostId
        }
      }
    }
    `;
};

export const podStop = (podId: string) => `
    mutation {
        podStop(input: { podId: "${podId}" }) {
            id
            desiredStatus
        }
    }
    `;

export const podResume = (podId: string, gpuCount: number) => `
    mutation {
        podResume(input: { podId: "${podId}", gpuCount: ${gpuCount} }) {
            id
            desiredStatus
            imageName
            env
            machineId
            machine {
                podHostId
            }
        }
    }
    `;

export const podTerminate = (podId: string) => `
    mutation {
        podTerminate(input: { podId: "${podId}" })
    }
    `;
