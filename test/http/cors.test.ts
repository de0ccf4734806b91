// Browsers calling the API from another origin (CORS, plugins/cors.ts): only origins the operator allows, preflights
// answered before any key check, refusals readable by the page, never credentials.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseCorsOrigins } from '../../src/http/index.ts';
import { ADMIN_KEY, createEndpoint, request, startTestServer, type TestServer } from '../helpers/server.ts';

const APP = 'https://app.example.com';

function preflight(t: TestServer, path: string, origin: string) {
  return request(`${t.url}${path}`, 'OPTIONS', undefined, {
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

describe('with --cors-origins naming the app', () => {
  let t: TestServer;
  let ep: string;
  beforeAll(async () => {
    t = await startTestServer({
      corsOrigins: `${APP}, http://localhost:5173/`,
      rateLimits: 'on',
      rateLimitOverrides: 'purge-queue=1/0',
    });
    ep = await createEndpoint(t);
  });
  afterAll(async () => t?.close());

  it('answers a preflight without a key, for the queue, REST and GraphQL', async () => {
    for (const path of [`/v2/${ep}/run`, `/v1/endpoints/${ep}`, '/graphql']) {
      const res = await preflight(t, path, APP);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
      expect(res.headers.get('access-control-allow-methods')).toMatch(/PATCH/);
      expect(res.headers.get('access-control-allow-headers')).toBe('authorization,content-type');
      expect(res.headers.get('access-control-max-age')).toBe('600');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
    // A trailing slash in the setting is the same origin.
    expect(
      (await preflight(t, `/v2/${ep}/run`, 'http://localhost:5173')).headers.get('access-control-allow-origin'),
    ).toBe('http://localhost:5173');
  });

  it('marks answers, refusals included, as readable by the allowed origin only', async () => {
    const ok = await request(
      `${t.url}/v2/${ep}/run`,
      'POST',
      { input: {} },
      { key: ADMIN_KEY, headers: { origin: APP } },
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/x-request-id/);
    expect(ok.headers.get('vary')).toMatch(/origin/i);
    // No key: the page can read the 401 and its error body.
    const refused = await request(`${t.url}/v2/${ep}/health`, 'GET', undefined, { headers: { origin: APP } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    expect(refused.json).toMatchObject({ code: 'UNAUTHORIZED' });
    // A rate limit's 429 too (its hook runs after the CORS one), with the hint a page needs to back off.
    const purge = () =>
      request(`${t.url}/v2/${ep}/purge-queue`, 'POST', {}, { key: ADMIN_KEY, headers: { origin: APP } });
    expect((await purge()).status).toBe(200);
    const limited = await purge();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('access-control-allow-origin')).toBe(APP);
    expect(limited.headers.get('access-control-expose-headers')).toMatch(/retry-after/);
    // Another origin: nothing that lets its page read the answer.
    const other = await request(`${t.url}/v2/${ep}/health`, 'GET', undefined, {
      key: ADMIN_KEY,
      headers: { origin: 'https://evil.example' },
    });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(
      (await preflight(t, `/v2/${ep}/run`, 'https://evil.example')).headers.get('access-control-allow-origin'),
    ).toBeNull();
  });
});

describe('with --cors-origins *', () => {
  it('any page may call, still only with a key of its own', async () => {
    const t = await startTestServer({ corsOrigins: '*' });
    try {
      const ep = await createEndpoint(t);
      expect(
        (await preflight(t, `/v2/${ep}/run`, 'https://any.example')).headers.get('access-control-allow-origin'),
      ).toBe('*');
      const refused = await request(
        `${t.url}/v2/${ep}/run`,
        'POST',
        { input: {} },
        { headers: { origin: 'https://any.example' } },
      );
      expect(refused.status).toBe(401);
      expect(refused.headers.get('access-control-allow-origin')).toBe('*');
      expect(refused.headers.get('access-control-allow-credentials')).toBeNull();
    } finally {
      await t.close();
    }
  });
});

describe('by default', () => {
  it('no origin is allowed: a preflight is no route, answers carry no CORS headers', async () => {
    const t = await startTestServer();
    try {
      const ep = await createEndpoint(t);
      const res = await preflight(t, `/v2/${ep}/run`, APP);
      expect(res.status).toBe(404);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const get = await request(`${t.url}/v2/${ep}/health`, 'GET', undefined, {
        key: ADMIN_KEY,
        headers: { origin: APP },
      });
      expect(get.status).toBe(200);
      expect(get.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await t.close();
    }
  });
});

describe('parseCorsOrigins', () => {
  it('takes * or a list of origins, and names what is no origin', () => {
    expect(parseCorsOrigins(' * ')).toBe('*');
    expect(parseCorsOrigins('https://a.example, http://localhost:8080/')).toEqual([
      'https://a.example',
      'http://localhost:8080',
    ]);
    expect(() => parseCorsOrigins('https://a.example/app')).toThrow(/'https:\/\/a.example\/app' is no origin/);
    expect(() => parseCorsOrigins('a.example,ftp://b')).toThrow(/'a.example', 'ftp:\/\/b' are no origins/);
    expect(() => parseCorsOrigins(' , ')).toThrow(/expected '\*' or a comma-separated list/);
  });
});
