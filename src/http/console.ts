import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WharfError } from '../errors/index.ts';

/** Where `npm run build:console` (vite, console/vite.config.ts) writes the console. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../console/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt']);

/** The console talks to this origin only; no inline script, no framing. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Wharf console</title></head>
<body><h1>The Wharf console is not built</h1>
<p>Run <code>npm run build:console</code> (it also runs on <code>npm ci</code> / <code>npm install</code>), then reload.</p>
</body></html>`;

interface Cached {
  mtimeMs: number;
  body: Buffer;
  gzip: Buffer | null;
}

/**
 * The web console (console/, a Vite + React app) at /console: static files from console/dist with their content
 * types, and index.html for every other path below /console so that client-side routes survive a reload. No key is
 * needed to load these files; the console's API calls carry the key the user signed in with.
 */
export function registerConsoleRoutes(app: FastifyInstance, opts: { dir?: string } = {}): void {
  const root = resolve(opts.dir ?? CONSOLE_DIST);
  const cache = new Map<string, Cached>();

  async function load(path: string): Promise<Cached | null> {
    let info;
    try {
      info = await stat(path);
    } catch {
      return null;
    }
    if (!info.isFile()) return null;
    const hit = cache.get(path);
    if (hit && hit.mtimeMs === info.mtimeMs) return hit;
    const body = await readFile(path);
    const entry = {
      mtimeMs: info.mtimeMs,
      body,
      gzip: COMPRESSIBLE.has(extname(path)) && body.length > 1024 ? gzipSync(body) : null,
    };
    cache.set(path, entry);
    return entry;
  }

  function send(request: FastifyRequest, reply: FastifyReply, path: string, file: Cached): FastifyReply {
    const ext = extname(path);
    reply.type(TYPES[ext] ?? 'application/octet-stream');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('vary', 'accept-encoding');
    // Vite puts a content hash in every file name under assets/: those never change.
    const hashed = path.startsWith(join(root, 'assets') + sep);
    reply.header('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (ext === '.html') {
      reply.header('content-security-policy', CSP);
      reply.header('referrer-policy', 'no-referrer');
    }
    const accepts = String(request.headers['accept-encoding'] ?? '');
    if (file.gzip && /\bgzip\b/.test(accepts)) {
      reply.header('content-encoding', 'gzip');
      return reply.send(file.gzip);
    }
    return reply.send(file.body);
  }

  const handler = async (request: FastifyRequest<{ Params: { '*'?: string } }>, reply: FastifyReply) => {
    const rest = request.params['*'] ?? '';
    let relative: string;
    try {
      relative = decodeURIComponent(rest);
    } catch {
      relative = '\0';
    }
    const segments = relative.split('/').filter((s) => s !== '');
    const unsafe = relative.includes('\0') || segments.some((s) => s === '..' || s.includes('\\'));
    if (!unsafe && segments.length > 0) {
      const path = resolve(root, ...segments);
      if (path.startsWith(root + sep)) {
        const file = await load(path);
        if (file) return send(request, reply, path, file);
      }
    }
    // A path that names a file (has an extension) and is not there is a 404; anything else is a console route.
    const last = segments[segments.length - 1] ?? '';
    if (unsafe || /\.[A-Za-z0-9]+$/.test(last)) {
      throw new WharfError('ROUTE_NOT_FOUND', { method: request.method, url: request.url.split('?')[0] });
    }
    const indexPath = join(root, 'index.html');
    const index = await load(indexPath);
    if (!index)
      return reply.code(503).type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(NOT_BUILT);
    return send(request, reply, indexPath, index);
  };

  app.get('/console', handler);
  app.get('/console/*', handler);
}
