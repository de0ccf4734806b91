// Secrets in workers' environment, with real worker processes (process executor): `{{ RUNPOD_SECRET_<name> }}` in a
// template or endpoint env value reaches the worker as the owner's secret value, as a normal environment variable;
// a reference to a secret the owner does not have fails the start, naming it, under the usual backoff, and never
// starts a worker with the literal text; deleting a secret leaves running workers as they are. On both stores.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';

import { gql } from '../helpers/graphql.ts';
import { closeFleet, startFleet, waitUntil, type Fleet } from '../helpers/fleet.ts';
import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { ROOT } from '../helpers/processes.ts';

const unavailable = await pgUnavailable('fleet secrets on PostgreSQL');
const stores = unavailable === null ? ['sqlite', 'postgres'] : ['sqlite'];
afterAll(dropSchemas);

const ENV_WORKER = {
  imageName: `file://${join(ROOT, 'test/fixtures/env-worker')}`,
  dockerStartCmd: ['node', 'worker.ts'],
};

let t: Fleet;

async function createSecret(name: string, value: string, key = t.key): Promise<string> {
  const res = await gql(t.url, key, 'mutation ($input: SecretCreateInput) { secretCreate(input: $input) { id } }', {
    input: { name, value },
  });
  expect(res.json.errors, res.text).toBeUndefined();
  return res.json.data.secretCreate.id as string;
}

describe.each(stores)('%s store', (store) => {
  beforeEach(async () => {
    const pg = () => ({ store: schemaUrl(newSchema(), 4), secretKey: randomBytes(32).toString('base64') });
    t = await startFleet(store === 'postgres' ? pg() : {});
  });
  afterEach(async () => {
    await closeFleet(t);
  });

  it('substitutes secrets into template and endpoint env; the worker process gets them as plain variables', async () => {
    const hf = `hf_${randomBytes(12).toString('hex')}`;
    const api = `sk-${randomBytes(12).toString('hex')}`;
    await createSecret('hf', hf);
    await createSecret('api-key_2', api);
    const ep = await t.endpoint(
      { idleTimeout: 60 },
      {
        ...ENV_WORKER,
        env: {
          HF_TOKEN: '{{ RUNPOD_SECRET_hf }}',
          AUTH: 'Bearer {{RUNPOD_SECRET_api-key_2}}; again {{  RUNPOD_SECRET_hf\t}}',
          LITERAL: 'RUNPOD_SECRET_hf {{ not a reference }} {RUNPOD_SECRET_hf}',
          PLAIN: 'template',
        },
      },
    );
    // Endpoint env (GraphQL saveEndpoint's `env`) is substituted too, and wins over the template's as before.
    await t.server.resources.updateEndpoint(t.server.adminUserId, ep, {
      env: { FROM_ENDPOINT: '{{ RUNPOD_SECRET_api-key_2 }}', PLAIN: 'endpoint' },
    });

    const names = ['HF_TOKEN', 'AUTH', 'LITERAL', 'PLAIN', 'FROM_ENDPOINT'];
    const first = await t.waitJob(ep, await t.run(ep, { names }));
    expect(first.status, JSON.stringify(first)).toBe('COMPLETED');
    expect(first.output.env).toEqual({
      HF_TOKEN: hf,
      AUTH: `Bearer ${api}; again ${hf}`,
      LITERAL: 'RUNPOD_SECRET_hf {{ not a reference }} {RUNPOD_SECRET_hf}',
      PLAIN: 'endpoint',
      FROM_ENDPOINT: api,
    });
    // A normal environment variable of the process.
    const [pid] = t.pids();
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')).toContain(`HF_TOKEN=${hf}`);
    // The template still shows the reference, not the value.
    const templateId = (await t.api('GET', `/v1/endpoints/${ep}`)).json.templateId as string;
    const template = await t.api('GET', `/v1/templates/${templateId}`);
    expect(template.json.env.HF_TOKEN).toBe('{{ RUNPOD_SECRET_hf }}');
    expect(template.text).not.toContain(hf);

    // Deleting a secret leaves the running worker's environment as it was started (as on RunPod).
    const list = await gql(t.url, t.key, '{ myself { secrets { id name } } }');
    const hfId = list.json.data.myself.secrets.find((s: any) => s.name === 'hf').id as string;
    expect((await gql(t.url, t.key, `mutation { secretDelete(id: "${hfId}") }`)).json).toEqual({
      data: { secretDelete: null },
    });
    const second = await t.waitJob(ep, await t.run(ep, { names: ['HF_TOKEN'] }));
    expect(second).toMatchObject({ status: 'COMPLETED', workerId: first.workerId, output: { env: { HF_TOKEN: hf } } });
  });

  it('a reference to a missing secret fails the start naming it, backs off, and starts once the secret exists', async () => {
    // Another user's secret of that name is not the owner's: still missing.
    const bob = await t.server.accounts.createUser('bob');
    const bobKey = (await t.server.accounts.createKey(bob.id, 'bob', 'all')).key;
    await createSecret('hf_missing', 'bobs-value', bobKey);

    const ep = await t.endpoint(
      { idleTimeout: 1 },
      { ...ENV_WORKER, env: { HF_TOKEN: '{{ RUNPOD_SECRET_hf_missing }}' } },
    );
    const started = Date.now();
    const id = await t.run(ep, { names: ['HF_TOKEN'] });

    // The failed start's worker record says why, naming the secret (read before the lease sweep rewrites it).
    let failed: any[] = [];
    await waitUntil(
      async () => {
        failed = (await t.workers(ep)).filter((p) => /failed to start/.test(p.workerStateReason ?? ''));
        return failed.length > 0;
      },
      5_000,
      () => JSON.stringify(failed),
    );
    expect(failed[0].workerState).toBe('unhealthy');
    expect(failed[0].workerStateReason).toBe(
      'failed to start: env references secret "hf_missing" ({{ RUNPOD_SECRET_hf_missing }}), which the ' +
        "endpoint's owner does not have: create it with secretCreate or change the env",
    );
    expect(JSON.stringify(await t.workers(ep))).not.toContain('bobs-value');

    // The endpoint's health says it too; repeated failures are a crash loop under the usual backoff (1 s, 2 s, 4 s).
    const h = await t.untilScaling(ep, 'crash-loop');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
    expect(h.scaling.message).toContain('secret "hf_missing"');
    expect(h.jobs).toMatchObject({ inQueue: 1, inProgress: 0, completed: 0 });
    // And the queued job's status.
    expect((await t.status(ep, id)).queueReason).toEqual({ reason: 'crash-loop', message: h.scaling.message });
    // No worker process ever ran with the literal text.
    expect(t.pids()).toEqual([]);
    const logs = await t.api('GET', `/v1/endpoints/${ep}/logs?limit=5000`);
    expect(logs.json.lines).toEqual([]);

    // The owner creates it: the failures it caused are forgiven and a worker starts at once, without waiting out
    // the backoff (4 s after the third failure here, up to 60 s after more).
    const created = Date.now();
    await createSecret('hf_missing', 'owners-value');
    const done = await t.waitJob(ep, id, 20_000);
    expect(done).toMatchObject({ status: 'COMPLETED', output: { env: { HF_TOKEN: 'owners-value' } } });
    expect(Date.now() - created).toBeLessThan(3_000);
  });

  it("a created secret cuts short only the backoff of starts that failed for a missing secret, the owner's", async () => {
    // Two of the owner's endpoints fail to start: one crashes (nothing to do with secrets), one lacks a secret.
    const crashing = await t.endpoint(
      { idleTimeout: 1 },
      { ...ENV_WORKER, dockerStartCmd: ['node', '-e', 'process.exit(3)'] },
    );
    const lacking = await t.endpoint(
      { idleTimeout: 1 },
      { ...ENV_WORKER, env: { HF_TOKEN: '{{ RUNPOD_SECRET_hf_late }}' } },
    );
    const lackingJob = await t.run(lacking, { names: ['HF_TOKEN'] });
    await t.run(crashing, {});
    // Start attempts, as the worker records they leave (collected: old ones are pruned).
    const attempts = new Map<string, Set<string>>([
      [crashing, new Set()],
      [lacking, new Set()],
    ]);
    const count = async (ep: string): Promise<number> => {
      for (const w of await t.workers(ep)) attempts.get(ep)!.add(w.id as string);
      return attempts.get(ep)!.size;
    };
    // Four failures each: the next attempt is 8 s away (1, 2, 4, 8 s).
    await waitUntil(
      async () => (await count(crashing)) >= 4 && (await count(lacking)) >= 4,
      20_000,
      () => JSON.stringify([...attempts].map(([ep, ids]) => [ep, ids.size])),
    );
    const crashed = await count(crashing);

    // Another user's secret of that name changes nothing for the owner.
    const bob = await t.server.accounts.createUser('bob');
    await createSecret('hf_late', 'bobs-value', (await t.server.accounts.createKey(bob.id, 'bob', 'all')).key);
    const lacked = await count(lacking);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await count(lacking)).toBe(lacked);

    // The owner's: the endpoint that lacked it starts at once; the crashing one keeps its backoff.
    const created = Date.now();
    await createSecret('hf_late', 'owners-value');
    const done = await t.waitJob(lacking, lackingJob, 20_000);
    expect(done).toMatchObject({ status: 'COMPLETED', output: { env: { HF_TOKEN: 'owners-value' } } });
    expect(Date.now() - created).toBeLessThan(3_000);
    expect(await count(crashing)).toBe(crashed);
  });
});
