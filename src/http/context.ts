import type { FastifyReply, FastifyRequest } from 'fastify';
import type {
  Accounts,
  Billing,
  JobEngine,
  RegistryAuths,
  Resources,
  UserSecrets,
  Volumes,
  WorkerGateway,
} from '../engine/index.ts';
import type { FleetStatus, GpuStock, LogBook } from '../fleet/index.ts';
import type { WharfMetrics } from '../metrics/index.ts';
import type { Store } from '../store/index.ts';
import type { PrivateTargets } from '../webhooks/index.ts';

export interface NodeGpuStock {
  dataCenterId: string;
  types: GpuStock[];
}

/** What the routes need; built once by the server (src/cli/serve.ts) or by tests. */
export interface AppDeps {
  store: Store;
  engine: JobEngine;
  workers: WorkerGateway;
  accounts: Accounts;
  resources: Resources;
  volumes: Volumes;
  registryAuths: RegistryAuths;
  /** Users' named secrets (GraphQL secretCreate / myself.secrets / secretDelete). */
  secrets: UserSecrets;
  billing: Billing;
  /** This node's data center, shown on worker pods. */
  dataCenterId?: string;
  /** The node's memory cap per worker in MiB (`--worker-memory-mb`; 0 or absent: none), shown on worker pods. */
  workerMemoryMb?: number;
  /** Why an endpoint's jobs wait (absent when no supervisor runs here). */
  fleetStatus?: (endpointId: string) => FleetStatus;
  /** This node's GPUs and its data center (GraphQL's GPU availability); absent or null when it runs no executor. */
  gpuStock?: () => NodeGpuStock | null;
  logs?: LogBook;
  /** Whose webhooks may go to private addresses (src/webhooks/targets.ts); absent = admins. */
  webhookPrivateTargets?: PrivateTargets;
  /** Prometheus metrics (GET /metrics and the HTTP hooks); absent = the app makes its own (no cold starts then). */
  metrics?: WharfMetrics;
}

/**
 * An AbortSignal that fires when the client goes away before we answered, so long polls stop waiting for
 * someone who left (and a job-take does not hand a job to a closed connection). Routes call it after their first
 * awaits (key check, endpoint read, submit): a client that hung up meanwhile has had its 'close' already, which no
 * listener added now would hear, so the signal starts aborted then (else such a wait ran its full length, up to
 * 300 s, and a take handed a job to the closed connection).
 */
export function clientGone(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  if (reply.raw.destroyed && !reply.raw.writableEnded) {
    controller.abort();
    return controller.signal;
  }
  const onClose = (): void => {
    if (!reply.raw.writableEnded) controller.abort();
  };
  reply.raw.once('close', onClose);
  request.raw.once('aborted', onClose);
  return controller.signal;
}

/** Send pre-serialised JSON text. */
export function sendJson(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** The body text as received (the body parsers in app.ts keep it), or the parsed body written back as JSON. */
export function rawBodyOf(request: FastifyRequest): string {
  const raw = (request as FastifyRequest & { rawBody?: string }).rawBody;
  if (typeof raw === 'string') return raw;
  if (typeof request.body === 'string') return request.body;
  if (request.body === undefined || request.body === null) return '';
  return JSON.stringify(request.body);
}
