// Helpers for the tests that need a real Docker Engine: find the daemon, build the registry-free test image
// (scripts/docker-test-image.sh), and decide between running, skipping and failing.
//
// Without a reachable daemon the tests skip and print why. In CI, .ci/run starts dockerd itself and exports
// WHARF_DOCKER_EXPECTED=1 only when that worked: then a missing daemon is a failure, not a skip.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { DockerClient } from '../../src/fleet/executors/docker-api.ts';
import { ROOT } from './processes.ts';

export const DOCKER_SOCKET = process.env.WHARF_TEST_DOCKER_SOCKET ?? '/var/run/docker.sock';

export interface DockerForTests {
  client: DockerClient;
  /** The test worker image (the echo example on the pinned Node). */
  image: string;
}

/** The daemon and the test image, or the reason why there are none (test files skip with it). */
export async function dockerForTests(): Promise<DockerForTests | { skip: string }> {
  const client = new DockerClient({ socketPath: DOCKER_SOCKET });
  let reason: string | null = null;
  try {
    await client.ping();
    await client.apiVersion();
  } catch (e) {
    reason = `no Docker Engine at ${DOCKER_SOCKET}: ${(e as Error).message}`;
  }
  if (reason === null) {
    try {
      const image = execFileSync('bash', [join(ROOT, 'scripts/docker-test-image.sh')], {
        encoding: 'utf8',
        env: { ...process.env, DOCKER_HOST: `unix://${DOCKER_SOCKET}` },
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 120_000,
      }).trim();
      return { client, image };
    } catch (e) {
      reason = `could not build the Docker test image: ${(e as Error).message}`;
    }
  }
  if (process.env.WHARF_DOCKER_EXPECTED === '1') {
    throw new Error(`dockerd was started for this CI run, yet: ${reason}`);
  }
  process.stdout.write(`\n[docker tests skipped] ${reason}\n`);
  return { skip: reason };
}

/** Containers Wharf labelled for this node id (running or not). */
export async function wharfContainers(client: DockerClient, nodeId: string) {
  return client.listContainers(['wharf.managed=true', `wharf.node-id=${nodeId}`]);
}

/** Remove every container of this node id (test cleanup after a failure). */
export async function removeWharfContainers(client: DockerClient, nodeId: string): Promise<void> {
  for (const c of await wharfContainers(client, nodeId)) await client.removeContainer(c.Id);
}
