// Every manifest the Kubernetes executor produces, from the pure builders: the worker pod (command, env from its
// secret, GPU limits, node selection by GPU type and data center, pull secret, volume claim, owner), the secrets,
// the claim, the anchor, and how pod statuses read as exits.

import { describe, expect, it } from 'vitest';

import {
  anchorConfigMap,
  claimName,
  dnsLabel,
  envSecret,
  gpuProductValue,
  labelValue,
  nodeSelector,
  ownerReference,
  podEnv,
  podExit,
  podName,
  podWaiting,
  pullSecret,
  volumeClaim,
  workerPod,
  type ManifestOptions,
} from '../../src/fleet/executors/kubernetes-manifests.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';

const o: ManifestOptions = {
  namespace: 'wharf',
  nodeId: 'e1',
  gpuTypeLabel: 'nvidia.com/gpu.product',
  dataCenterLabel: 'wharf.io/data-center',
  memoryMb: 4096,
};
const owner = ownerReference({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wharf-node-e1', uid: 'u-1' } });
const spec = (extra: Partial<WorkerSpec> = {}): WorkerSpec => ({
  workerId: 'abcdefghij0123',
  endpointId: 'ep00000000000a',
  imageName: 'ghcr.io/acme/worker:2',
  entrypoint: ['python', '-u'],
  startCmd: ['handler.py'],
  env: { RUNPOD_POD_ID: 'abcdefghij0123', RUNPOD_AI_API_KEY: 'wharfw_key', RUNPOD_VOLUME_PATH: '/host/path' },
  gpuIndices: ['0', '1'],
  gpuTypeId: 'NVIDIA GeForce RTX 4090',
  dataCenterIds: ['EU-RO-1', 'US-TX-3'],
  containerDiskInGb: 20,
  volumeId: 'vol0000001',
  ...extra,
});

describe('worker pod', () => {
  it('runs the template command with env from its secret, GPUs, limits, placement, volume and owner', () => {
    const pod = workerPod(o, spec({ registryAuth: { username: 'u', password: 'p' } }), owner, {
      pullSecret: true,
      graceSeconds: 30,
    });
    expect(pod.metadata).toEqual({
      name: 'wharf-e1-abcdefghij0123',
      namespace: 'wharf',
      labels: {
        'wharf.managed': 'true',
        'wharf.node-id': 'e1',
        'wharf.endpoint-id': 'ep00000000000a',
        'wharf.worker-id': 'abcdefghij0123',
      },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'wharf-node-e1', uid: 'u-1', blockOwnerDeletion: false },
      ],
    });
    expect(pod.spec).toEqual({
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 30,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'worker',
          image: 'ghcr.io/acme/worker:2',
          command: ['python', '-u'],
          args: ['handler.py'],
          envFrom: [{ secretRef: { name: 'wharf-e1-abcdefghij0123-env' } }],
          resources: {
            limits: { 'nvidia.com/gpu': '2', memory: '4096Mi', 'ephemeral-storage': '20Gi' },
            requests: { memory: '4096Mi', 'ephemeral-storage': '1Gi' },
          },
          volumeMounts: [{ name: 'network-volume', mountPath: '/runpod-volume' }],
        },
      ],
      imagePullSecrets: [{ name: 'wharf-e1-abcdefghij0123-pull' }],
      nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-GeForce-RTX-4090' },
      tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'wharf.io/data-center', operator: 'In', values: ['EU-RO-1', 'US-TX-3'] }] },
            ],
          },
        },
      },
      volumes: [{ name: 'network-volume', persistentVolumeClaim: { claimName: 'wharf-volume-vol0000001' } }],
    });
  });

  it('a CPU worker: no GPU limit, selector or toleration; the image’s own command; no volume, pull secret or memory', () => {
    const pod = workerPod(
      { ...o, memoryMb: 0, dataCenterLabel: null },
      spec({ gpuIndices: [], gpuTypeId: '', entrypoint: [], startCmd: [], volumeId: undefined, containerDiskInGb: 0 }),
      owner,
      { pullSecret: false, graceSeconds: 10 },
    );
    const c = pod.spec!.containers[0]!;
    expect(c.command).toBeUndefined();
    expect(c.args).toBeUndefined();
    expect(c.resources).toEqual({});
    expect(c.volumeMounts).toBeUndefined();
    expect(pod.spec!.nodeSelector).toBeUndefined();
    expect(pod.spec!.tolerations).toBeUndefined();
    expect(pod.spec!.affinity).toBeUndefined();
    expect(pod.spec!.imagePullSecrets).toBeUndefined();
    expect(pod.spec!.volumes).toBeUndefined();
  });
});

describe('a CPU endpoint’s worker pod', () => {
  const resourcesOf = (memoryMb: number, cpu: WorkerSpec['cpu']) =>
    workerPod(
      { ...o, memoryMb },
      spec({ gpuIndices: [], gpuTypeId: '', containerDiskInGb: 0, ...(cpu ? { cpu } : {}) }),
      owner,
      { pullSecret: false, graceSeconds: 10 },
    ).spec!.containers[0]!.resources;

  it('requests and is limited to its instance’s vCPUs and memory (Guaranteed)', () => {
    expect(resourcesOf(0, { vcpus: 2, memoryMb: 4096 })).toEqual({
      limits: { cpu: '2', memory: '4096Mi' },
      requests: { cpu: '2', memory: '4096Mi' },
    });
  });

  it('the node’s per-worker memory cap bounds the instance’s memory, never raises it', () => {
    expect(resourcesOf(1024, { vcpus: 4, memoryMb: 16384 })).toEqual({
      limits: { cpu: '4', memory: '1024Mi' },
      requests: { cpu: '4', memory: '1024Mi' },
    });
    expect(resourcesOf(65536, { vcpus: 1, memoryMb: 2048 })).toEqual({
      limits: { cpu: '1', memory: '2048Mi' },
      requests: { cpu: '1', memory: '2048Mi' },
    });
  });
});

describe('CUDA placement (GPU feature discovery labels)', () => {
  const NEW = { major: 'nvidia.com/cuda.runtime-version.major', minor: 'nvidia.com/cuda.runtime-version.minor' };
  const OLD = { major: 'nvidia.com/cuda.runtime.major', minor: 'nvidia.com/cuda.runtime.minor' };
  const DC = { key: 'wharf.io/data-center', operator: 'In', values: ['EU-RO-1', 'US-TX-3'] };
  const termsOf = (extra: Partial<WorkerSpec>, opts: Partial<ManifestOptions> = {}) =>
    workerPod({ ...o, ...opts }, spec(extra), owner, { pullSecret: false, graceSeconds: 10 }).spec!.affinity
      ?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

  it('allowedCudaVersions: a node whose driver supports one of them, under either generation of label names', () => {
    const terms = termsOf({ allowedCudaVersions: ['12.4', '12.1', '11.8'] }, { dataCenterLabel: null });
    const exact = (l: typeof NEW, major: string, minors: string[]) => ({
      matchExpressions: [
        { key: l.major, operator: 'In', values: [major] },
        { key: l.minor, operator: 'In', values: minors },
      ],
    });
    expect(terms).toEqual([
      exact(NEW, '12', ['4', '1']),
      exact(NEW, '11', ['8']),
      exact(OLD, '12', ['4', '1']),
      exact(OLD, '11', ['8']),
    ]);
  });

  it('minCudaVersion: a newer major, or the same major and at least its minor; the data centers apply to each term', () => {
    const terms = termsOf({ minCudaVersion: '12.4' });
    const atLeast = (l: typeof NEW) => [
      { matchExpressions: [{ key: l.major, operator: 'Gt', values: ['12'] }, DC] },
      {
        matchExpressions: [
          { key: l.major, operator: 'In', values: ['12'] },
          { key: l.minor, operator: 'Gt', values: ['3'] },
          DC,
        ],
      },
    ];
    expect(terms).toEqual([...atLeast(NEW), ...atLeast(OLD)]);
  });

  it('minCudaVersion x.0 needs no minor; both limits keep the allowed versions at or above the minimum', () => {
    expect(termsOf({ minCudaVersion: '12.0' }, { dataCenterLabel: null })).toEqual([
      { matchExpressions: [{ key: NEW.major, operator: 'Gt', values: ['12'] }] },
      { matchExpressions: [{ key: NEW.major, operator: 'In', values: ['12'] }] },
      { matchExpressions: [{ key: OLD.major, operator: 'Gt', values: ['12'] }] },
      { matchExpressions: [{ key: OLD.major, operator: 'In', values: ['12'] }] },
    ]);
    const both = termsOf(
      { allowedCudaVersions: ['12.8', '12.2', '11.8'], minCudaVersion: '12.1' },
      { dataCenterLabel: null },
    );
    expect(both?.map((t) => t.matchExpressions![1]!.values)).toEqual([
      ['8', '2'],
      ['8', '2'],
    ]);
  });

  it('no CUDA limit, or every known version allowed: no CUDA term (only the data centers)', () => {
    const all = ['13.0', '12.9', '12.8', '12.7', '12.6', '12.5', '12.4', '12.3', '12.2', '12.1', '12.0', '11.8'];
    for (const extra of [{}, { allowedCudaVersions: [] }, { allowedCudaVersions: all, minCudaVersion: null }]) {
      expect(termsOf(extra)).toEqual([{ matchExpressions: [DC] }]);
      expect(termsOf(extra, { dataCenterLabel: null })).toBeUndefined();
    }
  });

  it('a CPU worker ignores CUDA limits', () => {
    const terms = termsOf({ gpuIndices: [], gpuTypeId: '', minCudaVersion: '12.4' }, { dataCenterLabel: null });
    expect(terms).toBeUndefined();
  });

  it('limits no version satisfies: the pod is refused with the reason instead of pending forever', () => {
    expect(() => termsOf({ allowedCudaVersions: ['11.8', '12.0'], minCudaVersion: '12.4' })).toThrow(
      /no CUDA version.*allowedCudaVersions 11\.8, 12\.0.*minCudaVersion 12\.4/,
    );
  });
});

describe('secrets, claim, anchor', () => {
  it('env secret: the worker env with the in-pod volume path and GPU numbering, owned as given', () => {
    const s = envSecret(o, spec(), owner);
    expect(s.type).toBe('Opaque');
    expect(s.metadata?.name).toBe('wharf-e1-abcdefghij0123-env');
    expect(s.metadata?.ownerReferences).toEqual([owner]);
    expect(s.metadata?.labels?.['wharf.worker-id']).toBe('abcdefghij0123');
    expect(s.stringData).toEqual({
      RUNPOD_POD_ID: 'abcdefghij0123',
      RUNPOD_AI_API_KEY: 'wharfw_key',
      RUNPOD_VOLUME_PATH: '/runpod-volume',
      CUDA_VISIBLE_DEVICES: '0,1',
    });
    expect(podEnv(spec({ volumeId: undefined })).RUNPOD_VOLUME_PATH).toBeUndefined();
  });

  it('pull secret: a dockerconfigjson for the image’s registry (Docker Hub by default)', () => {
    const s = pullSecret(o, spec(), { username: 'bot', password: 'pw' }, owner);
    expect(s.type).toBe('kubernetes.io/dockerconfigjson');
    expect(s.metadata?.name).toBe('wharf-e1-abcdefghij0123-pull');
    expect(JSON.parse(s.stringData!['.dockerconfigjson']!)).toEqual({
      auths: { 'ghcr.io': { username: 'bot', password: 'pw', auth: Buffer.from('bot:pw').toString('base64') } },
    });
    const hub = pullSecret(o, spec({ imageName: 'acme/worker' }), { username: 'bot', password: 'pw' }, owner);
    expect(Object.keys(JSON.parse(hub.stringData!['.dockerconfigjson']!).auths)).toEqual([
      'https://index.docker.io/v1/',
    ]);
  });

  it('volume claim: ReadWriteMany of the volume’s size, labelled, owned by nobody', () => {
    expect(volumeClaim(o, 'vol0000001', 50, 'nfs')).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'wharf-volume-vol0000001',
        namespace: 'wharf',
        labels: { 'wharf.managed': 'true', 'wharf.volume-id': 'vol0000001' },
      },
      spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '50Gi' } }, storageClassName: 'nfs' },
    });
    expect(volumeClaim(o, 'v', 0, null).spec).toEqual({
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: '1Gi' } },
    });
  });

  it('anchor config map and the node selector', () => {
    expect(anchorConfigMap(o).metadata).toMatchObject({
      name: 'wharf-node-e1',
      namespace: 'wharf',
      labels: { 'wharf.managed': 'true', 'wharf.node-id': 'e1' },
    });
    expect(nodeSelector('e1')).toBe('wharf.managed=true,wharf.node-id=e1');
    expect(() => ownerReference({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toThrow(/uid/);
  });

  it('names and label values are valid Kubernetes names', () => {
    expect(podName('Node_A.1', 'ABCdef')).toBe('wharf-node-a-1-abcdef');
    expect(claimName('Vol_1')).toBe('wharf-volume-vol-1');
    expect(dnsLabel('--x--', 63)).toBe('x');
    expect(dnsLabel('a'.repeat(80)).length).toBe(63);
    expect(labelValue('-a b/c-')).toBe('a_b_c');
    expect(gpuProductValue('NVIDIA A100-SXM4-80GB')).toBe('NVIDIA-A100-SXM4-80GB');
    expect(gpuProductValue('NVIDIA H100 80GB HBM3')).toBe('NVIDIA-H100-80GB-HBM3');
  });
});

describe('pod status', () => {
  const withState = (state: object, phase = 'Running') => ({
    status: {
      phase,
      containerStatuses: [{ name: 'worker', state, image: '', imageID: '', ready: false, restartCount: 0 }],
    },
  });

  it('reads exits, signals and reasons', () => {
    expect(podExit(withState({ running: {} }))).toBeNull();
    expect(podExit(withState({ terminated: { exitCode: 0, reason: 'Completed' } }, 'Succeeded'))).toEqual({
      code: 0,
      signal: null,
      reason: null,
    });
    expect(podExit(withState({ terminated: { exitCode: 137, reason: 'OOMKilled' } }, 'Failed'))).toEqual({
      code: null,
      signal: 'SIGKILL',
      reason: 'OOMKilled',
    });
    expect(podExit(withState({ terminated: { exitCode: 1, reason: 'Error' } }, 'Failed'))).toEqual({
      code: 1,
      signal: null,
      reason: null,
    });
    expect(podExit({ status: { phase: 'Failed', reason: 'Evicted' } })).toEqual({
      code: 1,
      signal: null,
      reason: 'Evicted',
    });
  });

  it('says why a pod waits', () => {
    expect(podWaiting(withState({ waiting: { reason: 'ContainerCreating' } }, 'Pending'))).toBeNull();
    expect(
      podWaiting(withState({ waiting: { reason: 'ImagePullBackOff', message: 'pull access denied' } }, 'Pending')),
    ).toBe('ImagePullBackOff: pull access denied');
    expect(
      podWaiting({
        status: {
          phase: 'Pending',
          conditions: [
            { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes have GPUs' },
          ],
        },
      }),
    ).toBe('Unschedulable: 0/3 nodes have GPUs');
  });
});
