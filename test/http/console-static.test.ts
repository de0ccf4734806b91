// The console's static route module (src/http/console.ts) on its own, over a made-up dist folder: content types,
// the index.html fallback for client-side routes, 404s, path traversal, gzip, cache headers and "not built".
// (test/e2e/console.test.ts checks the real build in a browser.)

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { registerConsoleRoutes } from '../../src/http/console.ts';
import { registerErrorHandling } from '../../src/http/plugins/errors.ts';

const INDEX = '<!doctype html><title>console</title><script type="module" src="/console/assets/app-1234.js"></script>';
const BIG_JS = `console.log(${JSON.stringify('x'.repeat(5000))});`;

function appFor(dir: string): FastifyInstance {
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
  registerErrorHandling(app);
  registerConsoleRoutes(app, { dir });
  return app;
}

describe('console static files', () => {
  let dir: string;
  let app: FastifyInstance;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'wharf-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets/app-1234.js'), BIG_JS);
    writeFileSync(join(dir, 'assets/app-1234.css'), 'body{}');
    writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(dir, '..', 'secret.txt'), 'outside');
    app = appFor(dir);
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(dir, '..', 'secret.txt'), { force: true });
  });

  it('answers index.html for /console and every client-side route, with a CSP and no caching', async () => {
    for (const url of ['/console', '/console/', '/console/endpoints', '/console/endpoints/abc/logs?x=1']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.body).toBe(INDEX);
    }
  });

  it('serves files with their content types; hashed assets are immutable', async () => {
    const js = await app.inject({ url: '/console/assets/app-1234.js' });
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    expect(js.body).toBe(BIG_JS);
    expect((await app.inject({ url: '/console/assets/app-1234.css' })).headers['content-type']).toBe(
      'text/css; charset=utf-8',
    );
    const svg = await app.inject({ url: '/console/favicon.svg' });
    expect(svg.headers['content-type']).toBe('image/svg+xml');
    expect(svg.headers['cache-control']).toBe('no-cache');
    expect((await app.inject({ url: '/console/assets/app-1234.js', method: 'HEAD' })).statusCode).toBe(200);
  });

  it('gzips text files for clients that accept it', async () => {
    const res = await app.inject({ url: '/console/assets/app-1234.js', headers: { 'accept-encoding': 'gzip, br' } });
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(res.rawPayload).toString()).toBe(BIG_JS);
  });

  it('404s a missing file and never serves outside the folder', async () => {
    for (const url of [
      '/console/assets/missing.js',
      '/console/..%2fsecret.txt',
      '/console/assets/..%2f..%2fsecret.txt',
      '/console/%2e%2e/secret.txt',
      '/console/a%00.js',
    ]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().code).toBe('ROUTE_NOT_FOUND');
      expect(res.body).not.toContain('outside');
    }
  });

  it('says how to build the console when it is not built', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'wharf-console-empty-'));
    const bare = appFor(empty);
    try {
      const res = await bare.inject({ url: '/console/endpoints' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).toContain('npm run build:console');
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
