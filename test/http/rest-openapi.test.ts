import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/index.ts';
import { request, startTestServer, type TestServer } from '../helpers/server.ts';

/** `/v1/openapi.json` and `/v1/docs`: generated from the registered routes, served without a key. */

let t: TestServer;
let doc: any;
beforeAll(async () => {
  t = await startTestServer();
  const res = await request(`${t.url}/v1/openapi.json`, 'GET');
  expect(res.status).toBe(200);
  doc = res.json;
});
afterAll(async () => {
  await t.close();
});

/**
 * Every operation of spec/rest-v1.openapi.json (the hosted API) under /endpoints, /templates, /networkvolumes,
 * /containerregistryauth, /pods, /billing, /openapi.json and /docs, relative to the v1 base.
 */
// prettier-ignore
const HOSTED = [
  'GET /openapi.json', 'GET /docs',
  'POST /pods', 'GET /pods', 'GET /pods/{podId}', 'PATCH /pods/{podId}', 'DELETE /pods/{podId}',
  'POST /pods/{podId}/update', 'POST /pods/{podId}/start', 'POST /pods/{podId}/stop', 'POST /pods/{podId}/reset',
  'POST /pods/{podId}/restart',
  'POST /endpoints', 'GET /endpoints', 'GET /endpoints/{endpointId}', 'PATCH /endpoints/{endpointId}',
  'DELETE /endpoints/{endpointId}', 'POST /endpoints/{endpointId}/update',
  'POST /templates', 'GET /templates', 'GET /templates/{templateId}', 'PATCH /templates/{templateId}',
  'DELETE /templates/{templateId}', 'POST /templates/{templateId}/update',
  'POST /networkvolumes', 'GET /networkvolumes', 'GET /networkvolumes/{networkVolumeId}',
  'PATCH /networkvolumes/{networkVolumeId}', 'DELETE /networkvolumes/{networkVolumeId}',
  'POST /networkvolumes/{networkVolumeId}/update',
  'POST /containerregistryauth', 'GET /containerregistryauth', 'GET /containerregistryauth/{containerRegistryAuthId}',
  'DELETE /containerregistryauth/{containerRegistryAuthId}',
  'GET /billing/pods', 'GET /billing/endpoints', 'GET /billing/networkvolumes',
];

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with version 0.1.0 and a bearer security scheme', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.1.0');
    expect(doc.components.securitySchemes.ApiKey).toEqual({ type: 'http', scheme: 'bearer', bearerFormat: 'Bearer' });
    expect(doc.security).toEqual([{ ApiKey: [] }]);
    expect(doc.paths['/v1/openapi.json'].get.security).toEqual([]);
  });

  it('lists every route the server answers, and only those', async () => {
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, byMethod]) =>
      Object.keys(byMethod).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(new Set(ops).size).toBe(ops.length);
    const ids = ops.map((o) => o.split(' ')[1]);
    expect(ids).toEqual(expect.arrayContaining(['/v2/{endpointId}/run', '/v1/keys', '/v1/users/{userId}', '/healthz']));
    // Each documented operation exists: it never answers ROUTE_NOT_FOUND (unknown ids keep the probes short).
    const probes = await Promise.all(
      ops.map(async (op) => {
        const [method, path] = op.split(' ') as [string, string];
        const url = path.replace(/\{[^}]+\}/g, 'xyz');
        return [op, (await request(`${t.url}${url}`, method, undefined, { key: t.key })).json?.code] as const;
      }),
    );
    expect(probes.filter(([, code]) => code === 'ROUTE_NOT_FOUND')).toEqual([]);
    const operationIds = ops.map((op) => {
      const [m, p] = op.split(' ') as [string, string];
      return doc.paths[p][m.toLowerCase()].operationId;
    });
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('a freshly built app documents exactly the routes its router holds', async () => {
    const s = t.server;
    const app = buildApp(
      {
        store: s.store,
        engine: s.engine,
        workers: s.workers,
        accounts: s.accounts,
        resources: s.resources,
        volumes: s.volumes,
        registryAuths: s.registryAuths,
        secrets: s.secrets,
        billing: s.billing,
      },
      { logLevel: 'silent' },
    );
    await app.ready();
    // The web console's static files (/console) and catch-alls that answer 404 (…/openai/*) are not API operations
    // and are left out of the document on purpose.
    const routed = routesOf(app.printRoutes({ commonPrefix: false })).filter(
      (r) => !/^GET \/console/.test(r) && !r.endsWith('*'),
    );
    const fresh = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    await app.close();
    const documented = Object.entries(fresh.paths as Record<string, object>).flatMap(([path, byMethod]) =>
      Object.keys(byMethod).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(routed.length).toBeGreaterThan(50);
    expect(documented.sort()).toEqual(routed.sort());
    expect(fresh).toEqual(doc);
  });

  it('serves every hosted path of endpoints, templates, volumes, registry auths, pods and billing', () => {
    expect(HOSTED).toHaveLength(37);
    const missing = HOSTED.filter((op) => {
      const [method, path] = op.split(' ') as [string, string];
      return !doc.paths[`/v1${path}`]?.[method.toLowerCase()];
    });
    expect(missing).toEqual([]);
  });

  it('carries parameters, bodies and responses from the route schemas', () => {
    const create = doc.paths['/v1/networkvolumes'].post;
    expect(create.operationId).toBe('CreateNetworkVolume');
    expect(create.requestBody.content['application/json'].schema.required).toEqual(['name', 'size', 'dataCenterId']);
    expect(create.requestBody.content['application/json'].schema.properties.size).toMatchObject({ maximum: 4000 });
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['200', '400', '401']));
    const del = doc.paths['/v1/endpoints/{endpointId}'].delete;
    expect(del.operationId).toBe('DeleteEndpoint');
    expect(Object.keys(del.responses)).toEqual(expect.arrayContaining(['204', '404']));
    expect(del.parameters).toContainEqual(expect.objectContaining({ name: 'endpointId', in: 'path', required: true }));
    expect(doc.paths['/v1/pods'].post.responses['201']).toBeDefined();
    const billing = doc.paths['/v1/billing/endpoints'].get.parameters.map((p: any) => p.name);
    expect(billing).toEqual(expect.arrayContaining(['bucketSize', 'startTime', 'endTime', 'grouping', 'gpuTypeId']));
  });
});

describe('the docs page', () => {
  it('is HTML rendered from the same document, without a key or external assets', async () => {
    const res = await request(`${t.url}/v1/docs`, 'GET');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toContain('<h1>Wharf API');
    expect(res.text).toContain('/v1/networkvolumes/{networkVolumeId}');
    expect(res.text).toContain('CreateNetworkVolume');
    expect(res.text).not.toMatch(/<script|https?:\/\/(?!127)/);
  });
});

/** `METHOD /path/{param}` of every route in Fastify's printRoutes tree (HEAD and OPTIONS left out). */
function routesOf(tree: string): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.indexOf('── ');
    if (at < 0) continue;
    const depth = Math.round(at / 4);
    const [, segment = '', methods] = /^(.*?)(?: \(([^)]*)\))?$/.exec(line.slice(at + 3)) ?? [];
    stack.length = depth;
    stack.push(segment);
    for (const m of methods?.split(', ') ?? []) {
      if (m !== 'HEAD' && m !== 'OPTIONS') out.push(`${m} ${stack.join('').replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
    }
  }
  return out;
}
