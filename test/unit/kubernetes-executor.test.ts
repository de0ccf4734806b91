// The Kubernetes executor's flow against a fake API: the order of creations and owner hand-over, watch-driven exits
// (exactly once), log streaming, stop, orphan cleanup and the clean-up of a failed start. test/e2e/kubernetes.test.ts
// runs the same against a real cluster when KUBECONFIG is set.

import { beforeEach, describe, expect, it } from 'vitest';

import type { V1ConfigMap, V1PersistentVolumeClaim, V1Pod, V1Secret } from '@kubernetes/client-node';

import { KubernetesExecutor, type KubeApi } from '../../src/fleet/executors/kubernetes.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';

class FakeKube implements KubeApi {
  calls: string[] = [];
  configMaps = new Map<string, V1ConfigMap>();
  secrets = new Map<string, V1Secret>();
  pods = new Map<string, V1Pod>();
  claims = new Map<string, V1PersistentVolumeClaim>();
  failPod = false;
  onEvent: ((type: string, pod: V1Pod) => void) | null = null;
  logs = new Map<string, { text: (t: string) => void; done: (e: unknown) => void }>();
  private uid = 0;

  async readConfigMap(_ns: string, name: string) {
    return this.configMaps.get(name) ?? null;
  }
  async createConfigMap(_ns: string, body: V1ConfigMap) {
    this.calls.push(`create configmap ${body.metadata!.name}`);
    const made = { ...body, metadata: { ...body.metadata, uid: `uid-${++this.uid}` } };
    this.configMaps.set(body.metadata!.name!, made);
    return made;
  }
  async createSecret(_ns: string, body: V1Secret) {
    this.calls.push(`create secret ${body.metadata!.name} owner=${body.metadata!.ownerReferences![0]!.kind}`);
    this.secrets.set(body.metadata!.name!, body);
    return body;
  }
  async replaceSecret(_ns: string, name: string, body: V1Secret) {
    this.calls.push(`replace secret ${name} owner=${body.metadata!.ownerReferences![0]!.kind}`);
    this.secrets.set(name, body);
    return body;
  }
  async deleteSecret(_ns: string, name: string) {
    this.calls.push(`delete secret ${name}`);
    this.secrets.delete(name);
  }
  async listSecrets() {
    return [...this.secrets.values()];
  }
  async createPod(_ns: string, body: V1Pod) {
    this.calls.push(`create pod ${body.metadata!.name}`);
    if (this.failPod) throw Object.assign(new Error('forbidden'), { code: 403 });
    const made = { ...body, metadata: { ...body.metadata, uid: `uid-${++this.uid}` }, status: { phase: 'Pending' } };
    this.pods.set(body.metadata!.name!, made);
    return made;
  }
  async deletePod(_ns: string, name: string, grace: number) {
    this.calls.push(`delete pod ${name} grace=${grace}`);
    const pod = this.pods.get(name);
    if (!pod) return;
    this.pods.delete(name);
    this.logs.get(name)?.done(null);
    // The kubelet ends the container; the watch reports the deletion.
    setTimeout(() => this.onEvent?.('DELETED', this.terminated(pod, 143)), 5);
  }
  async listPods() {
    return { items: [...this.pods.values()], resourceVersion: '1' };
  }
  async readClaim(_ns: string, name: string) {
    return this.claims.get(name) ?? null;
  }
  async createClaim(_ns: string, body: V1PersistentVolumeClaim) {
    this.calls.push(`create claim ${body.metadata!.name}`);
    this.claims.set(body.metadata!.name!, body);
    return body;
  }
  async watchPods(_ns: string, _sel: string, _rv: string, onEvent: (type: string, pod: V1Pod) => void) {
    this.onEvent = onEvent;
    return { abort: () => (this.onEvent = null) };
  }
  async followLogs(_ns: string, pod: string, _c: string, text: (t: string) => void, done: (e: unknown) => void) {
    this.logs.set(pod, { text, done });
    return { abort: () => done(null) };
  }
  running(name: string) {
    const pod = this.pods.get(name)!;
    const next = {
      ...pod,
      status: { phase: 'Running', containerStatuses: [{ name: 'worker', state: { running: {} } }] },
    } as V1Pod;
    this.pods.set(name, next);
    this.onEvent?.('MODIFIED', next);
  }
  terminated(pod: V1Pod, exitCode: number): V1Pod {
    return {
      ...pod,
      status: { phase: 'Failed', containerStatuses: [{ name: 'worker', state: { terminated: { exitCode } } }] },
    } as V1Pod;
  }
}

let kube: FakeKube;
const spec = (extra: Partial<WorkerSpec> = {}): WorkerSpec => ({
  workerId: 'wk000000000001',
  endpointId: 'ep000000000001',
  imageName: 'ghcr.io/acme/worker:1',
  entrypoint: [],
  startCmd: [],
  env: { RUNPOD_POD_ID: 'wk000000000001' },
  gpuIndices: [],
  ...extra,
});
const executor = () =>
  new KubernetesExecutor(kube, {
    namespace: 'wharf',
    nodeId: 'e1',
    gpuTypeLabel: 'nvidia.com/gpu.product',
    dataCenterLabel: null,
    storageClass: null,
    memoryMb: 0,
    volumeSizeGb: async () => 25,
  });
const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

beforeEach(() => {
  kube = new FakeKube();
});

describe('kubernetes executor', () => {
  it('creates anchor, claim, secrets (anchor-owned), the pod, then hands the secrets to the pod', async () => {
    const ex = executor();
    await ex.start(spec({ registryAuth: { username: 'u', password: 'p' }, volumeId: 'vol0000001' }), {
      onLog: () => {},
      onExit: () => {},
    });
    expect(kube.calls).toEqual([
      'create configmap wharf-node-e1',
      'create claim wharf-volume-vol0000001',
      'create secret wharf-e1-wk000000000001-env owner=ConfigMap',
      'create secret wharf-e1-wk000000000001-pull owner=ConfigMap',
      'create pod wharf-e1-wk000000000001',
      'replace secret wharf-e1-wk000000000001-env owner=Pod',
      'replace secret wharf-e1-wk000000000001-pull owner=Pod',
    ]);
    expect(kube.claims.get('wharf-volume-vol0000001')!.spec!.resources!.requests).toEqual({ storage: '25Gi' });
  });

  it('follows logs once running and reports the exit once, then deletes the pod', async () => {
    const ex = executor();
    const lines: string[] = [];
    const exits: unknown[] = [];
    await ex.start(spec(), { onLog: (_s, l) => lines.push(l), onExit: (i) => exits.push(i) });
    kube.running('wharf-e1-wk000000000001');
    await tick();
    const log = kube.logs.get('wharf-e1-wk000000000001')!;
    log.text('hello\nwor');
    log.text('ld\n');
    const pod = kube.pods.get('wharf-e1-wk000000000001')!;
    kube.onEvent!('MODIFIED', kube.terminated(pod, 137));
    kube.onEvent!('MODIFIED', kube.terminated(pod, 137));
    log.done(null);
    await tick(50);
    expect(lines).toEqual(['hello', 'world']);
    expect(exits).toEqual([{ code: null, signal: 'SIGKILL' }]);
    expect(kube.calls).toContain('delete pod wharf-e1-wk000000000001 grace=0');
  });

  it('stop deletes the pod with the grace period and resolves on the watch’s DELETED event', async () => {
    const ex = executor();
    const exits: unknown[] = [];
    const w = await ex.start(spec(), { onLog: () => {}, onExit: (i) => exits.push(i) });
    kube.running('wharf-e1-wk000000000001');
    await w.stop({ graceMs: 7000 });
    expect(kube.calls).toContain('delete pod wharf-e1-wk000000000001 grace=7');
    expect(exits).toEqual([{ code: null, signal: 'SIGTERM' }]);
  });

  it('a failed start removes what it created and says why', async () => {
    kube.failPod = true;
    const ex = executor();
    await expect(ex.start(spec(), { onLog: () => {}, onExit: () => {} })).rejects.toThrow(
      /could not start worker.*forbidden/,
    );
    expect(kube.secrets.size).toBe(0);
    await expect(ex.start(spec(), { onLog: () => {}, onExit: () => {} })).rejects.toThrow(/forbidden/);
  });

  it('CUDA limits no version meets: refused with the reason before any secret or pod is made', async () => {
    const ex = executor();
    const unplaceable = spec({ gpuIndices: ['0'], allowedCudaVersions: ['11.8'], minCudaVersion: '12.4' });
    await expect(ex.start(unplaceable, { onLog: () => {}, onExit: () => {} })).rejects.toThrow(
      /could not start worker.*no CUDA version meets/,
    );
    expect(kube.calls.filter((c) => !c.startsWith('create configmap'))).toEqual([
      'delete pod wharf-e1-wk000000000001 grace=0',
    ]);
    expect(kube.secrets.size).toBe(0);
  });

  it('cleanupOrphans deletes pods and secrets of this node left by a previous run', async () => {
    const before = executor();
    await before.start(spec(), { onLog: () => {}, onExit: () => {} });
    const next = executor();
    expect(await next.cleanupOrphans()).toBe(1);
    expect(kube.pods.size).toBe(0);
    expect(kube.secrets.size).toBe(0);
  });

  it('refuses file:// images', () => {
    expect(executor().validateImage('file://examples/echo-ts')).toContain('process executor');
    expect(executor().validateImage('nginx')).toBeNull();
  });
});
