import { resolve } from 'node:path';
import type { WharfServer } from './server.ts';

/** Example endpoints with fixed ids, so the README's commands can be pasted as they are. */
export const EXAMPLES = [
  {
    endpointId: 'exampleechots1',
    name: 'echo-ts',
    template: { name: 'example-echo-ts', dir: 'examples/echo-ts', startCmd: ['node', 'worker.ts'] },
  },
  {
    endpointId: 'exampleechopy1',
    name: 'echo-python',
    template: { name: 'example-echo-python', dir: 'examples/python-echo', startCmd: ['python3', '-u', 'handler.py'] },
  },
] as const;

/**
 * Create the example templates and endpoints for the admin user when they are missing (idempotent across restarts).
 * CPU endpoints: they run on any machine; scale to zero after 30 s idle.
 */
export async function ensureExamples(server: WharfServer, repoRoot: string): Promise<string[]> {
  const created: string[] = [];
  const userId = server.adminUserId;
  for (const ex of EXAMPLES) {
    if (await server.store.getEndpoint(userId, ex.endpointId)) continue;
    const existing = (await server.resources.listTemplates(userId)).find((t) => t.name === ex.template.name);
    const template =
      existing ??
      (await server.resources.createTemplate(userId, {
        name: ex.template.name,
        imageName: `file://${resolve(repoRoot, ex.template.dir)}`,
        dockerStartCmd: [...ex.template.startCmd],
        isServerless: true,
        category: 'CPU',
      }));
    await server.resources.createEndpoint(
      userId,
      { name: ex.name, templateId: template.id, computeType: 'CPU', workersMin: 0, workersMax: 2, idleTimeout: 30 },
      { id: ex.endpointId },
    );
    created.push(ex.endpointId);
  }
  return created;
}
