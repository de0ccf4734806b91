// The Kubernetes executor against a real cluster, when KUBECONFIG names one (skipped with the reason printed
// otherwise): a worker pod starts from a public image, its logs stream in, a stop deletes it with its secrets, and a
// second executor of the same node cleans up what a "crashed" one left. Needs a cluster that can pull
// WHARF_TEST_K8S_IMAGE (default busybox:1.36) and a namespace it may write (WHARF_TEST_K8S_NAMESPACE, default
// `default`).

import { afterAll, describe, expect, it } from 'vitest';

import { KubernetesExecutor } from '../../src/fleet/executors/kubernetes.ts';
import type { WorkerSpec } from '../../src/fleet/executors/types.ts';
import { waitUntil } from '../helpers/fleet.ts';

const kubeconfig = process.env.KUBECONFIG;
if (!kubeconfig)
  process.stdout.write('\n[kubernetes tests skipped] KUBECONFIG is not set: no cluster to run against\n');

describe.skipIf(!kubeconfig)('kubernetes executor (real cluster)', () => {
  const nodeId = `kt${Math.random().toString(36).slice(2, 8)}`;
  const make = () =>
    KubernetesExecutor.fromDefaultConfig({
      namespace: process.env.WHARF_TEST_K8S_NAMESPACE ?? 'default',
      nodeId,
      gpuTypeLabel: 'nvidia.com/gpu.product',
      dataCenterLabel: null,
      storageClass: null,
      memoryMb: 64,
      volumeSizeGb: async () => 1,
    });
  const spec = (workerId: string): WorkerSpec => ({
    workerId,
    endpointId: 'k8s-test-endpoint',
    imageName: process.env.WHARF_TEST_K8S_IMAGE ?? 'busybox:1.36',
    entrypoint: ['sh', '-c'],
    startCmd: [
      'trap "echo bye; exit 0" TERM; echo "hello from $RUNPOD_POD_ID"; echo oops >&2; while true; do sleep 1; done',
    ],
    env: { RUNPOD_POD_ID: workerId, RUNPOD_AI_API_KEY: 'not-a-real-key' },
    gpuIndices: [],
    containerDiskInGb: 1,
  });
  const executors: KubernetesExecutor[] = [];
  afterAll(async () => {
    for (const ex of executors) await ex.stopAll({ graceMs: 1000 });
  });

  it('runs a worker pod, streams its logs, stops it, and cleans up after a crash', { timeout: 240_000 }, async () => {
    const ex = make();
    executors.push(ex);
    await ex.cleanupOrphans();
    const lines: string[] = [];
    const exits: unknown[] = [];
    const w = await ex.start(spec('ktworker000001'), {
      onLog: (_s, l) => lines.push(l),
      onExit: (i) => exits.push(i),
    });
    await waitUntil(
      () => lines.includes('hello from ktworker000001'),
      180_000,
      () => lines.join(' | '),
    );
    expect(lines).toContain('oops');
    await w.stop({ graceMs: 5000 });
    expect(exits).toHaveLength(1);

    // A worker left running by an executor that "crashed", removed by the next one of the same node.
    const crashed = make();
    await crashed.start(spec('ktworker000002'), { onLog: () => {}, onExit: () => {} });
    const next = make();
    executors.push(next);
    expect(await next.cleanupOrphans()).toBe(1);
  });
});
