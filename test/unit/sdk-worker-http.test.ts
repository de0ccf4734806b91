// The worker SDK's HTTP client (node:http with a keep-alive agent, in place of fetch): the headers it sends, the
// same settle-or-reject contract fetch had (every status resolves; timeouts, aborts and connection errors reject),
// redirects and compressed bodies as fetch handled them, and connection reuse.

import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { USER_AGENT } from '../../src/sdk/worker/env.ts';
import { describeHttpError, WorkerHttp } from '../../src/sdk/worker/http.ts';
import { createLogger } from '../../src/sdk/worker/log.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  port: number;
}

let server: Server;
let base: string;
let seen: Seen[];
let connections: number;
let routes: Record<string, (res: ServerResponse) => void>;
let http: WorkerHttp;

beforeEach(async () => {
  seen = [];
  connections = 0;
  routes = {};
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '';
      seen.push({
        method: req.method ?? '',
        url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        port: req.socket.remotePort ?? 0,
      });
      const route = routes[url.split('?')[0]!];
      if (route) route(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  http = new WorkerHttp('key-1');
});

afterEach(async () => {
  http.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('WorkerHttp.request', () => {
  it('sends the raw key, JSON content type, User-Agent and the headers fetch sent, and reads the body', async () => {
    const res = await http.request('GET', `${base}/take?gpu=T&job_in_progress=0`);
    expect(res).toEqual({ status: 200, contentType: 'application/json', text: '{"ok":true}' });
    const get = seen[0]!;
    expect(get.method).toBe('GET');
    expect(get.url).toBe('/take?gpu=T&job_in_progress=0');
    expect(get.headers).toMatchObject({
      authorization: 'key-1',
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      accept: '*/*',
      'accept-encoding': 'gzip, deflate',
      connection: 'keep-alive',
    });
    expect(get.headers['content-length']).toBeUndefined();
    expect(get.headers['transfer-encoding']).toBeUndefined();

    await http.request('POST', `${base}/done`, { body: '{"output":"é"}', headers: { 'X-Request-ID': 'j-1' } });
    const post = seen[1]!;
    expect(post.body).toBe('{"output":"é"}');
    expect(post.headers['content-length']).toBe(String(Buffer.byteLength('{"output":"é"}')));
    expect(post.headers['x-request-id']).toBe('j-1');
    // Kept alive: the second request reused the first one's connection.
    expect(connections).toBe(1);
  });

  it('resolves for every status and drains the body', async () => {
    routes['/busy'] = (res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('try later');
    routes['/empty'] = (res) => res.writeHead(204).end();
    expect(await http.request('GET', `${base}/busy`)).toEqual({
      status: 503,
      contentType: 'text/plain',
      text: 'try later',
    });
    expect(await http.request('GET', `${base}/empty`)).toEqual({ status: 204, contentType: '', text: '' });
    expect(connections).toBe(1);
  });

  it('rejects with a TimeoutError after timeoutMs, and with the reason when the signal aborts', async () => {
    routes['/hang'] = () => {};
    const t0 = Date.now();
    const timedOut = await http.request('GET', `${base}/hang`, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(DOMException);
    expect((timedOut as DOMException).name).toBe('TimeoutError');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const aborted = await http.request('GET', `${base}/hang`, { signal: ac.signal }).catch((e: unknown) => e);
    expect((aborted as DOMException).name).toBe('AbortError');
    // Already aborted: rejected without a request.
    const before = seen.length;
    await expect(http.request('GET', `${base}/x`, { signal: ac.signal })).rejects.toBe(ac.signal.reason);
    expect(seen.length).toBe(before);
  });

  it('many requests on one signal do not add a listener each', async () => {
    const ac = new AbortController();
    let warned = false;
    const onWarning = (w: Error): void => {
      if (w.name === 'MaxListenersExceededWarning') warned = true;
    };
    process.on('warning', onWarning);
    try {
      await Promise.all(Array.from({ length: 30 }, () => http.request('GET', `${base}/x`, { signal: ac.signal })));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warned).toBe(false);
  });

  it('rejects on connection errors with a message that names the cause', async () => {
    const err = await http.request('GET', 'http://127.0.0.1:1/x').catch((e: unknown) => e);
    expect(describeHttpError(err as Error)).toContain('ECONNREFUSED');
    const bad = await http.request('POST', 'JOB_DONE_URL&isStream=false', { body: '{}' }).catch((e: unknown) => e);
    expect(describeHttpError(bad as Error)).toContain('Invalid URL');
  });

  it('follows redirects like fetch: a POST becomes a GET on 302, keeps its body on 307', async () => {
    routes['/moved'] = (res) => res.writeHead(302, { location: '/there' }).end();
    routes['/temp'] = (res) => res.writeHead(307, { location: `${base}/there` }).end();
    routes['/there'] = (res) => res.writeHead(200).end('here');
    expect((await http.request('POST', `${base}/moved`, { body: '{"a":1}' })).text).toBe('here');
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/moved', '{"a":1}'],
      ['GET', '/there', ''],
    ]);
    seen = [];
    await http.request('POST', `${base}/temp`, { body: '{"b":2}' });
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/temp', '{"b":2}'],
      ['POST', '/there', '{"b":2}'],
    ]);
    expect(seen[1]!.headers.authorization).toBe('key-1');
  });

  it('decodes a gzip body', async () => {
    routes['/gz'] = (res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync('{"z":1}'));
    expect((await http.request('GET', `${base}/gz`)).text).toBe('{"z":1}');
  });

  it('destroy() closes idle connections; a later request opens a new one', async () => {
    const firstClosed = new Promise<void>((resolve) =>
      server.once('connection', (socket: Socket) => socket.on('close', () => resolve())),
    );
    await http.request('GET', `${base}/x`);
    http.destroy();
    await firstClosed;
    await http.request('GET', `${base}/x`);
    expect(connections).toBe(2);
  });
});

describe('post retries', () => {
  const quiet = createLogger({ level: 'ERROR', json: true, write: () => {} });

  it('a service that cannot be reached is retried on the unreachable schedule until it answers', async () => {
    // A port nothing listens on, until a server starts there after a few attempts (a node restarting).
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const waits = [20, 20, 20, 20, 20, 20];
    let restarted: Server | undefined;
    setTimeout(() => {
      restarted = createServer((_req, res) => res.writeHead(200).end('{}'));
      restarted.listen(port, '127.0.0.1');
    }, 70);
    try {
      const ok = await http.post(`http://127.0.0.1:${port}/done`, '{}', 'job-1', {
        waitsMs: [20],
        unreachableWaitsMs: waits,
        log: quiet,
        what: 'result',
      });
      expect(ok).toBe(true);
    } finally {
      restarted?.closeAllConnections();
      await new Promise((resolve) => restarted?.close(resolve));
    }
  });

  it('a 500 keeps the short schedule, a 502/503/504 (a gateway, the store away) the unreachable one', async () => {
    let posts = 0;
    let status = 500;
    routes['/busy'] = (res) => {
      posts++;
      res.writeHead(status).end();
    };
    const opts = { waitsMs: [5, 5], unreachableWaitsMs: [5, 5, 5, 5, 5, 5], log: quiet, what: 'result' };
    expect(await http.post(`${base}/busy`, '{}', 'job-2', opts)).toBe(false);
    expect(posts).toBe(3);
    posts = 0;
    status = 503;
    expect(await http.post(`${base}/busy`, '{}', 'job-2', opts)).toBe(false);
    expect(posts).toBe(7);
    // Without an unreachable schedule (stream chunks, progress) every 5xx is retried as Python does.
    posts = 0;
    expect(await http.post(`${base}/busy`, '{}', 'job-2', { ...opts, unreachableWaitsMs: undefined })).toBe(false);
    expect(posts).toBe(3);
    const started = Date.now();
    expect(await http.post('http://127.0.0.1:1/x', '{}', 'job-3', { waitsMs: [5], log: quiet, what: 'result' })).toBe(
      false,
    );
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
