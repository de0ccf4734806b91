import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';

/** OpenAPI metadata a route may carry in its `config` (see rest/common.ts `meta`). */
export interface OpenApiMeta {
  operationId?: string;
  summary?: string;
  /** The success status (default 204 for DELETE, else 200). */
  success?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    openapi?: OpenApiMeta;
  }
}

export interface CollectedRoute {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
  meta: OpenApiMeta | undefined;
}

type JsonSchema = { properties?: Record<string, unknown>; required?: string[] };

/** Routes that need no key. */
const PUBLIC = new Set(['/healthz', '/readyz', '/v1/openapi.json', '/v1/docs']);

/** operationIds of the hosted API for routes registered without metadata (spec/rest-v1.openapi.json). */
const KNOWN_IDS: Record<string, string> = {
  'POST /v1/templates': 'CreateTemplate',
  'GET /v1/templates': 'ListTemplates',
  'GET /v1/templates/{templateId}': 'GetTemplate',
  'PATCH /v1/templates/{templateId}': 'UpdateTemplate',
  'POST /v1/templates/{templateId}/update': 'UpdateTemplate',
  'DELETE /v1/templates/{templateId}': 'DeleteTemplate',
  'POST /v1/endpoints': 'CreateEndpoint',
  'GET /v1/endpoints': 'ListEndpoints',
  'GET /v1/endpoints/{endpointId}': 'GetEndpoint',
  'PATCH /v1/endpoints/{endpointId}': 'UpdateEndpoint',
  'POST /v1/endpoints/{endpointId}/update': 'UpdateEndpoint',
  'DELETE /v1/endpoints/{endpointId}': 'DeleteEndpoint',
};

/** Record every route registered from now on (an `onRoute` hook: call before registering routes). */
export function collectRoutes(app: FastifyInstance): CollectedRoute[] {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    // A catch-all (`…/openai/*`) only answers 404 for paths that are no operation: nothing to document.
    if (r.url.endsWith('*')) return;
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      routes.push({ method, url: r.url, schema: r.schema, meta: r.config?.openapi });
    }
  });
  return routes;
}

const oaPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function tagOf(path: string): string {
  if (/\/(job-take|job-take-batch|job-done|job-stream|job-stop|ping)\b/.test(path)) return 'worker protocol';
  if (path.startsWith('/v2/')) return 'queue';
  if (path.startsWith('/v1/')) return path.split('/')[2] ?? 'v1';
  return path.split('/')[1] ?? 'service';
}

function derivedId(method: string, path: string): string {
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) =>
      p.startsWith('{')
        ? `By${cap(p.slice(1, -1))}`
        : p
            .split(/[^A-Za-z0-9]/)
            .map(cap)
            .join(''),
    );
  return `${method.toLowerCase()}${parts.join('')}`;
}

function parameters(schema: unknown, where: 'path' | 'query'): unknown[] {
  const s = schema as JsonSchema | undefined;
  if (!s?.properties) return [];
  return Object.entries(s.properties).map(([name, propSchema]) => ({
    name,
    in: where,
    required: where === 'path' || (s.required ?? []).includes(name),
    schema: propSchema,
  }));
}

/** The OpenAPI 3.1 document of every collected route. */
export function buildOpenApi(routes: readonly CollectedRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const seen = new Set<string>();
  const sorted = [...routes].sort((a, b) =>
    a.url === b.url ? a.method.localeCompare(b.method) : a.url < b.url ? -1 : 1,
  );
  for (const r of sorted) {
    const path = oaPath(r.url);
    const method = r.method.toLowerCase();
    const isPublic = PUBLIC.has(r.url);
    let operationId = r.meta?.operationId ?? KNOWN_IDS[`${r.method} ${path}`] ?? derivedId(r.method, path);
    // The hosted API gives PATCH and POST …/update one operationId; OpenAPI wants them unique.
    if (seen.has(operationId)) operationId = `${operationId}Via${r.method.charAt(0)}${r.method.slice(1).toLowerCase()}`;
    seen.add(operationId);
    const schema = (r.schema ?? {}) as { params?: unknown; querystring?: unknown; body?: unknown };
    const success = r.meta?.success ?? (r.method === 'DELETE' ? 204 : 200);
    const responses: Record<string, unknown> = {
      [String(success)]: { description: success === 204 ? 'No content' : 'OK' },
    };
    if (schema.params || schema.querystring || schema.body) responses['400'] = { description: 'Invalid input' };
    if (!isPublic) responses['401'] = { description: 'Missing, invalid or insufficient API key' };
    if (schema.params) responses['404'] = { description: 'Not found' };
    const op: Record<string, unknown> = {
      operationId,
      tags: [tagOf(path)],
      ...(r.meta?.summary ? { summary: r.meta.summary } : {}),
      parameters: [...parameters(schema.params, 'path'), ...parameters(schema.querystring, 'query')],
      ...(schema.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: schema.body } } } }
        : {}),
      responses,
      ...(isPublic ? { security: [] } : {}),
    };
    (paths[path] ??= {})[method] = op;
  }
  // TypeBox schemas are plain JSON Schema; the round trip drops anything that is not.
  return JSON.parse(
    JSON.stringify({
      openapi: '3.1.0',
      info: {
        title: 'Wharf API',
        version: '0.1.0',
        description: 'REST v1 management API (RunPod-compatible), queue API v2 and worker protocol of Wharf.',
      },
      servers: [{ url: '/' }],
      security: [{ ApiKey: [] }],
      components: { securitySchemes: { ApiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'Bearer' } } },
      paths,
    }),
  ) as Record<string, unknown>;
}

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

type Op = {
  operationId: string;
  summary?: string;
  tags: string[];
  parameters: Array<{ name: string; in: string; required: boolean; schema: unknown }>;
  requestBody?: { content: { 'application/json': { schema: unknown } } };
  responses: Record<string, { description: string }>;
  security?: unknown[];
};

/** A self-contained HTML page of the document: no scripts, no external assets. */
export function renderDocsHtml(doc: Record<string, unknown>): string {
  const info = doc['info'] as { title: string; version: string; description: string };
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc['paths'] as Record<string, Record<string, Op>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const params = op.parameters.length
        ? `<table><tr><th>name</th><th>in</th><th>required</th><th>schema</th></tr>${op.parameters
            .map(
              (p) =>
                `<tr><td><code>${esc(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : ''}</td><td><code>${esc(JSON.stringify(p.schema))}</code></td></tr>`,
            )
            .join('')}</table>`
        : '';
      const body = op.requestBody
        ? `<h4>Request body (application/json)</h4><pre>${esc(JSON.stringify(op.requestBody.content['application/json'].schema, null, 2))}</pre>`
        : '';
      const responses = Object.entries(op.responses)
        .map(([code, r]) => `<li><code>${code}</code> ${esc(r.description)}</li>`)
        .join('');
      const html = `<details id="${esc(op.operationId)}"><summary><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code> ${esc(op.summary ?? '')}${op.security ? ' <em>(no key)</em>' : ''}</summary>${params}${body}<h4>Responses</h4><ul>${responses}</ul></details>`;
      const tag = op.tags[0] ?? 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  const sections = [...byTag.entries()].map(([tag, ops]) => `<section><h2>${esc(tag)}</h2>${ops.join('\n')}</section>`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(info.title)} ${esc(info.version)}</title>
<style>body{font:14px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}
details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}summary{cursor:pointer}
.m{display:inline-block;min-width:4.5em;font-weight:bold}.get{color:#06c}.post{color:#080}.patch{color:#a60}.delete{color:#c00}
pre{background:#f6f6f6;padding:.6em;overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}</style>
</head><body><h1>${esc(info.title)} <small>${esc(info.version)}</small></h1><p>${esc(info.description)}</p>
<p>Send <code>Authorization: Bearer &lt;key&gt;</code>. The machine-readable document is at <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
${sections.join('\n')}
</body></html>
`;
}

/** `GET /v1/openapi.json` and `GET /v1/docs`, built once from the routes registered before the first request. */
export function registerOpenApiRoutes(app: FastifyInstance, routes: readonly CollectedRoute[]): void {
  let doc: Record<string, unknown> | undefined;
  let html: string | undefined;
  const document = () => (doc ??= buildOpenApi(routes));
  app.get(
    '/v1/openapi.json',
    { config: { openapi: { operationId: 'GetOpenAPI', summary: 'This document' } } },
    async () => document(),
  );
  app.get(
    '/v1/docs',
    { config: { openapi: { operationId: 'GetDocs', summary: 'Browsable API reference' } } },
    async (_req, reply) => reply.type('text/html; charset=utf-8').send((html ??= renderDocsHtml(document()))),
  );
}
