/**
 * A small Docker Engine API client: JSON over HTTP on the daemon's Unix socket, with node:http and nothing else.
 *
 * Why not dockerode: the executor needs a dozen calls (image inspect and pull, container create, start, stop, kill,
 * wait, attach, inspect, list, rename, remove). dockerode 5 brings @grpc/grpc-js, protobufjs, ssh2 (with an optional
 * native build) and tar-fs for BuildKit sessions, SSH transport and image builds that Wharf never uses, and its types
 * live in a separate DefinitelyTyped package a major version behind. The Engine API is stable and documented
 * (https://docs.docker.com/engine/api/), so the calls are written here once, typed for the fields the executor
 * reads, with timeouts that the executor chooses.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** Oldest Engine API the executor speaks: DeviceRequests need 1.40, Docker 20.10 is 1.41. */
export const MIN_API_VERSION = '1.41';
/** Newest Engine API the executor asks for; a newer daemon answers in this version. */
export const MAX_API_VERSION = '1.47';
const DEFAULT_TIMEOUT_MS = 60_000;
const PULL_TIMEOUT_MS = 30 * 60_000;

export class DockerApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'DockerApiError';
    this.status = status;
  }
}

/** The fields of GET /images/{name}/json the executor reads. */
export interface ImageInfo {
  Id: string;
  Config?: { Entrypoint?: string[] | null; Cmd?: string[] | null; WorkingDir?: string } | null;
}

/** The fields of GET /containers/json the executor reads. */
export interface ContainerSummary {
  Id: string;
  Names: string[];
  State: string;
  Labels: Record<string, string>;
}

/** The fields of GET /containers/{id}/json the executor reads. */
export interface ContainerInfo {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; ExitCode: number; OOMKilled: boolean; Error?: string };
  Config: { Labels: Record<string, string> | null };
}

export interface RegistryAuth {
  username: string;
  password: string;
}

interface CallOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Statuses that are not errors; 404 is returned as null by callers that ask for it. */
  ok?: number[];
}

/** `docker.io/library/node` style normalisation: the registry host (null for Docker Hub) and a reference with a tag. */
export function parseImageRef(ref: string): { registry: string | null; reference: string } {
  const slash = ref.indexOf('/');
  const first = slash === -1 ? '' : ref.slice(0, slash);
  const registry = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost') ? first : null;
  const lastPart = ref.slice(ref.lastIndexOf('/') + 1);
  const tagged = ref.includes('@') || lastPart.includes(':');
  return { registry, reference: tagged ? ref : `${ref}:latest` };
}

/** The X-Registry-Auth header value: base64url JSON, as the Engine API wants it. */
export function registryAuthHeader(ref: string, auth: RegistryAuth): string {
  const { registry } = parseImageRef(ref);
  const serveraddress = registry ?? 'https://index.docker.io/v1/';
  return Buffer.from(JSON.stringify({ username: auth.username, password: auth.password, serveraddress })).toString(
    'base64url',
  );
}

export class DockerClient {
  readonly socketPath: string;
  private version: Promise<string> | null = null;

  constructor(opts: { socketPath: string }) {
    this.socketPath = opts.socketPath;
  }

  /** The API version to use with this daemon, negotiated once (GET /version is unversioned). */
  apiVersion(): Promise<string> {
    this.version ??= (async () => {
      const { body } = await this.raw<{ ApiVersion: string; Version: string }>('GET', '/version', {});
      if (compareVersions(body.ApiVersion, MIN_API_VERSION) < 0) {
        throw new Error(
          `Docker Engine ${body.Version} speaks API ${body.ApiVersion}; the docker executor needs ${MIN_API_VERSION} ` +
            `(Docker 20.10) or newer`,
        );
      }
      return compareVersions(body.ApiVersion, MAX_API_VERSION) > 0 ? MAX_API_VERSION : body.ApiVersion;
    })();
    this.version.catch(() => (this.version = null));
    return this.version;
  }

  async ping(): Promise<void> {
    await this.raw('GET', '/_ping', { timeoutMs: 5_000 });
  }

  async inspectImage(name: string): Promise<ImageInfo | null> {
    const r = await this.call<ImageInfo>('GET', `/images/${encodeURIComponent(name)}/json`, { ok: [404] });
    return r.status === 404 ? null : r.body;
  }

  /** Pull an image (a reference with a tag); resolves when the pull finished, rejects with the daemon's error. */
  async pull(ref: string, auth?: RegistryAuth): Promise<void> {
    const { reference } = parseImageRef(ref);
    const headers: Record<string, string> = {};
    if (auth) headers['X-Registry-Auth'] = registryAuthHeader(reference, auth);
    const res = await this.open('POST', '/images/create', { query: { fromImage: reference }, headers });
    if ((res.statusCode ?? 500) >= 400) throw await errorOf(res);
    // 200 with a stream of JSON progress lines; a failure is a line with "error".
    let error: string | null = null;
    let rest = '';
    res.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => res.destroy(new Error(`pull of ${reference} took too long`)), PULL_TIMEOUT_MS);
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) error ??= progressError(line);
      });
      res.on('end', () => {
        clearTimeout(timer);
        error ??= progressError(rest);
        resolve();
      });
      res.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    if (error !== null) throw new DockerApiError(500, `pull of ${reference} failed: ${error}`);
  }

  async createContainer(name: string, body: unknown): Promise<string> {
    const r = await this.call<{ Id: string }>('POST', '/containers/create', { query: { name }, body });
    return r.body.Id;
  }

  async startContainer(id: string): Promise<void> {
    await this.call('POST', `/containers/${id}/start`, { ok: [304] });
  }

  /** SIGTERM (or the image's stop signal), SIGKILL after `seconds`; resolves once the container stopped. */
  async stopContainer(id: string, seconds: number): Promise<void> {
    await this.call('POST', `/containers/${id}/stop`, {
      query: { t: seconds },
      ok: [304, 404],
      timeoutMs: seconds * 1000 + DEFAULT_TIMEOUT_MS,
    });
  }

  async killContainer(id: string, signal = 'SIGKILL'): Promise<void> {
    // 409: not running any more, which is what a kill wants.
    await this.call('POST', `/containers/${id}/kill`, { query: { signal }, ok: [404, 409] });
  }

  /** Remove a container (and its anonymous volumes); one that is already gone is fine. */
  async removeContainer(id: string): Promise<void> {
    await this.call('DELETE', `/containers/${id}`, { query: { force: true, v: true }, ok: [404] });
  }

  async renameContainer(id: string, name: string): Promise<void> {
    await this.call('POST', `/containers/${id}/rename`, { query: { name } });
  }

  async inspectContainer(id: string): Promise<ContainerInfo | null> {
    const r = await this.call<ContainerInfo>('GET', `/containers/${id}/json`, { ok: [404] });
    return r.status === 404 ? null : r.body;
  }

  /** Containers (running or not) carrying every one of these `key=value` labels. */
  async listContainers(labels: string[]): Promise<ContainerSummary[]> {
    const r = await this.call<ContainerSummary[]>('GET', '/containers/json', {
      query: { all: true, filters: JSON.stringify({ label: labels }) },
    });
    return r.body;
  }

  /** Whether a path exists in a container's filesystem (it need not be running). */
  async pathExists(id: string, path: string): Promise<boolean> {
    const r = await this.call('HEAD', `/containers/${id}/archive`, { query: { path }, ok: [404] });
    return r.status === 200;
  }

  /**
   * Wait for the container's next exit. `registered` resolves once the daemon answered the request (it sends the
   * headers before it waits), so a start after it cannot exit unseen; `exited` resolves with the exit status.
   */
  async waitNextExit(id: string): Promise<{ exited: Promise<{ code: number; error: string | null }> }> {
    const res = await this.open('POST', `/containers/${id}/wait`, { query: { condition: 'next-exit' } });
    if ((res.statusCode ?? 500) >= 400) throw await errorOf(res);
    const exited = readAll(res).then((text) => {
      const body = JSON.parse(text) as { StatusCode: number; Error?: { Message?: string } | null };
      return { code: body.StatusCode, error: body.Error?.Message || null };
    });
    return { exited };
  }

  /**
   * Attach to a container's stdout and stderr before it starts (no history): a hijacked connection that carries
   * the multiplexed stream (see Demuxer) until the container stops.
   */
  async attach(id: string): Promise<Socket> {
    const version = await this.apiVersion();
    return new Promise<Socket>((resolve, reject) => {
      const req = httpRequest({
        socketPath: this.socketPath,
        method: 'POST',
        path: `/v${version}/containers/${id}/attach?stream=1&stdout=1&stderr=1&logs=0`,
        headers: { Connection: 'Upgrade', Upgrade: 'tcp' },
      });
      req.setTimeout(DEFAULT_TIMEOUT_MS, () => req.destroy(new Error(`attach to ${id} timed out`)));
      req.on('upgrade', (_res, socket, head) => {
        req.setTimeout(0);
        socket.setTimeout(0);
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      });
      req.on('response', (res) => {
        errorOf(res).then(reject, reject);
      });
      req.on('error', reject);
      req.end();
    });
  }

  private async call<T = unknown>(
    method: string,
    path: string,
    opts: CallOptions,
  ): Promise<{ status: number; body: T }> {
    return this.raw<T>(method, `/v${await this.apiVersion()}${path}`, opts);
  }

  private async raw<T>(method: string, path: string, opts: CallOptions): Promise<{ status: number; body: T }> {
    const res = await this.open(method, path, opts);
    const status = res.statusCode ?? 500;
    if (status >= 400 && !(opts.ok ?? []).includes(status)) throw await errorOf(res);
    const text = await readAll(res);
    let body: unknown = undefined;
    if (text !== '' && (res.headers['content-type'] ?? '').includes('json')) body = JSON.parse(text);
    return { status, body: (body ?? text) as T };
  }

  private open(method: string, path: string, opts: CallOptions): Promise<IncomingMessage> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const full = qs.size > 0 ? `${path}?${qs.toString()}` : path;
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = { ...opts.headers };
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest({ socketPath: this.socketPath, method, path: full, headers });
      const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      // Only the wait for the response headers is bounded here: bodies that stream (pull, wait) end on their own.
      const timer = setTimeout(() => req.destroy(new Error(`docker ${method} ${path} timed out`)), timeoutMs);
      req.on('response', (res) => {
        clearTimeout(timer);
        resolve(res);
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (e.code === 'ENOENT' || e.code === 'ECONNREFUSED' || e.code === 'EACCES') {
          reject(new Error(`cannot reach the Docker daemon at ${this.socketPath}: ${e.code}`, { cause: e }));
        } else reject(e);
      });
      req.end(payload);
    });
  }
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => resolve(text));
    res.on('error', reject);
  });
}

async function errorOf(res: IncomingMessage): Promise<DockerApiError> {
  const text = await readAll(res).catch(() => '');
  let message = text.trim();
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? message;
  } catch {
    // not JSON: keep the text
  }
  return new DockerApiError(res.statusCode ?? 500, message || `HTTP ${res.statusCode}`);
}

function progressError(line: string): string | null {
  if (line.trim() === '') return null;
  try {
    const p = JSON.parse(line) as { error?: string };
    return typeof p.error === 'string' ? p.error : null;
  } catch {
    return null;
  }
}

function compareVersions(a: string, b: string): number {
  const [a1 = 0, a2 = 0] = a.split('.').map(Number);
  const [b1 = 0, b2 = 0] = b.split('.').map(Number);
  return a1 - b1 || a2 - b2;
}

/**
 * Splits Docker's multiplexed stream (non-TTY attach and logs): frames of an 8-byte header — stream type (1 stdout,
 * 2 stderr), three zero bytes, a big-endian 32-bit length — followed by that many bytes of payload.
 */
export class Demuxer {
  private buf: Buffer = Buffer.alloc(0);
  private readonly emit: (stream: 'stdout' | 'stderr', data: Buffer) => void;

  constructor(emit: (stream: 'stdout' | 'stderr', data: Buffer) => void) {
    this.emit = emit;
  }

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < 8 + size) return;
      const type = this.buf[0];
      const payload = this.buf.subarray(8, 8 + size);
      this.buf = this.buf.subarray(8 + size);
      // Type 0 (stdin) never comes back from an attach without stdin; 3 is the daemon's own error message.
      this.emit(type === 2 || type === 3 ? 'stderr' : 'stdout', payload);
    }
  }
}
