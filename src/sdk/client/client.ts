// WharfClient: the management API (/v1), the queue API through endpoint(id), and GraphQL.

import { EndpointClient } from './endpoint.ts';
import { WharfApiError } from './errors.ts';
import { seg, Transport, type ClientOptions, type Query } from './http.ts';
import type {
  ApiKey,
  BillingRecord,
  CreatedApiKey,
  CreatedUser,
  Endpoint,
  EndpointBillingQuery,
  EndpointCreateInput,
  EndpointQuery,
  EndpointUpdateInput,
  KeyCreateInput,
  LogsPage,
  LogsQuery,
  NetworkVolume,
  NetworkVolumeCreateInput,
  NetworkVolumeUpdateInput,
  Pod,
  PodBillingQuery,
  PodListQuery,
  PodQuery,
  RegistryAuth,
  RegistryAuthCreateInput,
  Secret,
  SecretCreateInput,
  ServerlessDiscount,
  Template,
  TemplateCreateInput,
  TemplateUpdateInput,
  User,
  VolumeBillingRecord,
  WebhookSecret,
  BillingWindow,
} from './types.ts';

export interface CallOptions {
  signal?: AbortSignal;
}

/** How long the server holds a `follow` logs request open when no line comes. */
const LOG_FOLLOW_MS = 20_000;

export interface GraphqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; [key: string]: unknown };
}

export class WharfClient {
  readonly endpoints: {
    list(q?: EndpointQuery, opts?: CallOptions): Promise<Endpoint[]>;
    get(id: string, q?: EndpointQuery, opts?: CallOptions): Promise<Endpoint>;
    create(input: EndpointCreateInput, opts?: CallOptions): Promise<Endpoint>;
    update(id: string, patch: EndpointUpdateInput, opts?: CallOptions): Promise<Endpoint>;
    delete(id: string, opts?: CallOptions): Promise<void>;
  };
  readonly templates: {
    list(opts?: CallOptions): Promise<Template[]>;
    get(id: string, opts?: CallOptions): Promise<Template>;
    create(input: TemplateCreateInput, opts?: CallOptions): Promise<Template>;
    update(id: string, patch: TemplateUpdateInput, opts?: CallOptions): Promise<Template>;
    delete(id: string, opts?: CallOptions): Promise<void>;
  };
  readonly volumes: {
    list(opts?: CallOptions): Promise<NetworkVolume[]>;
    get(id: string, opts?: CallOptions): Promise<NetworkVolume>;
    create(input: NetworkVolumeCreateInput, opts?: CallOptions): Promise<NetworkVolume>;
    update(id: string, patch: NetworkVolumeUpdateInput, opts?: CallOptions): Promise<NetworkVolume>;
    delete(id: string, opts?: CallOptions): Promise<void>;
  };
  readonly registryAuths: {
    list(opts?: CallOptions): Promise<RegistryAuth[]>;
    get(id: string, opts?: CallOptions): Promise<RegistryAuth>;
    create(input: RegistryAuthCreateInput, opts?: CallOptions): Promise<RegistryAuth>;
    delete(id: string, opts?: CallOptions): Promise<void>;
  };
  /** Named secrets, through GraphQL (RunPod has no REST route for them). */
  readonly secrets: {
    list(opts?: CallOptions): Promise<Secret[]>;
    create(input: SecretCreateInput, opts?: CallOptions): Promise<Secret>;
    delete(id: string, opts?: CallOptions): Promise<void>;
  };
  readonly pods: {
    /** Worker pods of your endpoints (`includeWorkers` defaults to true here; the bare REST listing is empty). */
    list(q?: PodListQuery, opts?: CallOptions): Promise<Pod[]>;
    get(id: string, q?: PodQuery, opts?: CallOptions): Promise<Pod>;
  };
  readonly billing: {
    endpoints(q?: EndpointBillingQuery, opts?: CallOptions): Promise<BillingRecord[]>;
    pods(q?: PodBillingQuery, opts?: CallOptions): Promise<BillingRecord[]>;
    networkVolumes(q?: BillingWindow, opts?: CallOptions): Promise<VolumeBillingRecord[]>;
  };
  readonly keys: {
    list(opts?: CallOptions): Promise<ApiKey[]>;
    /** The new key is in `key`, shown this once. */
    create(input: KeyCreateInput, opts?: CallOptions): Promise<CreatedApiKey>;
    revoke(id: string, opts?: CallOptions): Promise<void>;
  };
  /** Admin keys only. */
  readonly users: {
    list(opts?: CallOptions): Promise<User[]>;
    get(id: string, opts?: CallOptions): Promise<User>;
    /** Creates the user and its first key (in `key`, shown once). */
    create(input: { name: string }, opts?: CallOptions): Promise<CreatedUser>;
    update(id: string, patch: { serverlessDiscount?: ServerlessDiscount | null }, opts?: CallOptions): Promise<User>;
  };

  private readonly http: Transport;

  constructor(opts: ClientOptions) {
    const http = new Transport(opts);
    this.http = http;
    const get = <T>(path: string, query?: Query, o: CallOptions = {}) =>
      http.request<T>({ method: 'GET', path, query, retry: 'idempotent', signal: o.signal });
    const post = <T>(path: string, body: unknown, o: CallOptions = {}) =>
      http.request<T>({ method: 'POST', path, body, retry: 'once', signal: o.signal });
    const patch = <T>(path: string, body: unknown, o: CallOptions = {}) =>
      http.request<T>({ method: 'PATCH', path, body, retry: 'idempotent', signal: o.signal });
    const del = async (path: string, o: CallOptions = {}): Promise<void> => {
      await http.request<void>({ method: 'DELETE', path, retry: 'once', signal: o.signal });
    };
    const q = (v: object | undefined): Query | undefined => v as Query | undefined;

    this.endpoints = {
      list: (query, o) => get('/v1/endpoints', q(query), o),
      get: (id, query, o) => get(`/v1/endpoints/${seg(id)}`, q(query), o),
      create: (input, o) => post('/v1/endpoints', input, o),
      update: (id, p, o) => patch(`/v1/endpoints/${seg(id)}`, p, o),
      delete: (id, o) => del(`/v1/endpoints/${seg(id)}`, o),
    };
    this.templates = {
      list: (o) => get('/v1/templates', undefined, o),
      get: (id, o) => get(`/v1/templates/${seg(id)}`, undefined, o),
      create: (input, o) => post('/v1/templates', input, o),
      update: (id, p, o) => patch(`/v1/templates/${seg(id)}`, p, o),
      delete: (id, o) => del(`/v1/templates/${seg(id)}`, o),
    };
    this.volumes = {
      list: (o) => get('/v1/networkvolumes', undefined, o),
      get: (id, o) => get(`/v1/networkvolumes/${seg(id)}`, undefined, o),
      create: (input, o) => post('/v1/networkvolumes', input, o),
      update: (id, p, o) => patch(`/v1/networkvolumes/${seg(id)}`, p, o),
      delete: (id, o) => del(`/v1/networkvolumes/${seg(id)}`, o),
    };
    this.registryAuths = {
      list: (o) => get('/v1/containerregistryauth', undefined, o),
      get: (id, o) => get(`/v1/containerregistryauth/${seg(id)}`, undefined, o),
      create: (input, o) => post('/v1/containerregistryauth', input, o),
      delete: (id, o) => del(`/v1/containerregistryauth/${seg(id)}`, o),
    };
    const SECRET = 'id name description createdAt';
    this.secrets = {
      list: async (o) =>
        (await this.graphql<{ myself: { secrets: Secret[] } }>(`{ myself { secrets { ${SECRET} } } }`, undefined, o))
          .myself.secrets,
      create: async (input, o) =>
        (
          await this.graphql<{ secretCreate: Secret }>(
            `mutation ($input: SecretCreateInput!) { secretCreate(input: $input) { ${SECRET} } }`,
            { input },
            o,
          )
        ).secretCreate,
      delete: async (id, o) => {
        await this.graphql('mutation ($id: String!) { secretDelete(id: $id) }', { id }, o);
      },
    };
    this.pods = {
      list: (query, o) => get('/v1/pods', q({ includeWorkers: true, ...query }), o),
      get: (id, query, o) => get(`/v1/pods/${seg(id)}`, q(query), o),
    };
    this.billing = {
      endpoints: (query, o) => get('/v1/billing/endpoints', q(query), o),
      pods: (query, o) => get('/v1/billing/pods', q(query), o),
      networkVolumes: (query, o) => get('/v1/billing/networkvolumes', q(query), o),
    };
    this.keys = {
      list: (o) => get('/v1/keys', undefined, o),
      create: (input, o) => post('/v1/keys', input, o),
      revoke: (id, o) => del(`/v1/keys/${seg(id)}`, o),
    };
    this.users = {
      list: (o) => get('/v1/users', undefined, o),
      get: (id, o) => get(`/v1/users/${seg(id)}`, undefined, o),
      create: (input, o) => post('/v1/users', input, o),
      update: (id, p, o) => patch(`/v1/users/${seg(id)}`, p, o),
    };
  }

  /** The server this client talks to, without a trailing slash. */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** The queue API of one endpoint. */
  endpoint(endpointId: string): EndpointClient {
    return new EndpointClient(this.http, endpointId);
  }

  /**
   * GET /v1/endpoints/{id}/logs: worker output lines. With `follow`, the server waits up to 20 s for lines after
   * `after`; call again with `after: page.next` to tail.
   */
  logs(endpointId: string, query: LogsQuery = {}, opts: CallOptions = {}): Promise<LogsPage> {
    return this.http.request<LogsPage>({
      method: 'GET',
      path: `/v1/endpoints/${seg(endpointId)}/logs`,
      query: query as Query,
      retry: 'idempotent',
      signal: opts.signal,
      waitMs: query.follow ? LOG_FOLLOW_MS : 0,
    });
  }

  /** GET /v1/webhook-secret: the key webhook deliveries are signed with (HMAC-SHA256). Needs a key of scope `all`. */
  webhookSecret(opts: CallOptions = {}): Promise<WebhookSecret> {
    return this.http.request<WebhookSecret>({
      method: 'GET',
      path: '/v1/webhook-secret',
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** POST /v1/webhook-secret: replace the signing secret; deliveries from now on use the new one. */
  rotateWebhookSecret(opts: CallOptions = {}): Promise<WebhookSecret> {
    return this.http.request<WebhookSecret>({
      method: 'POST',
      path: '/v1/webhook-secret',
      retry: 'once',
      signal: opts.signal,
    });
  }

  /**
   * POST /graphql. Resolves with `data`; a response with `errors` rejects with a WharfApiError whose code is the
   * first error's `extensions.code` (GRAPHQL_ERROR when it has none) and whose details are all the errors.
   */
  async graphql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    opts: CallOptions = {},
  ): Promise<T> {
    const res = await this.http.request<{ data?: T | null; errors?: GraphqlError[] }>({
      method: 'POST',
      path: '/graphql',
      body: variables === undefined ? { query } : { query, variables },
      // A query can be repeated freely, a mutation maybe not.
      retry: /^\s*(query\b|\{)/.test(query) ? 'idempotent' : 'once',
      signal: opts.signal,
    });
    const first = res.errors?.[0];
    if (first) {
      throw new WharfApiError({
        status: 200,
        code: first.extensions?.code ?? 'GRAPHQL_ERROR',
        message: first.message,
        details: res.errors,
      });
    }
    return res.data as T;
  }
}
