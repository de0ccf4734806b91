/**
 * POST /graphql (and GET, for queries): the RunPod-compatible GraphQL transport (spec/rest-graphql-facts.md §2.1,
 * DESIGN.md §3 "Errors").
 * - body `{query, variables?, operationName?}`; other keys (a misspelt `variable`) are ignored;
 * - key: `Authorization: Bearer <key>`, a bare key, or `?api_key=`; missing or bad → 401 with `errors`;
 *   read keys may query but not mutate, restricted and worker keys are refused (401, FORBIDDEN);
 * - a document that does not parse or validate, or variables that do not coerce → 400 with `errors`;
 * - resolver errors → 200 with `errors[{message, path, extensions.code}]` and the field null in `data`.
 * Introspection is allowed: the schema is public (src/http/graphql/schema.graphql).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  execute,
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  parse,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import { jsonTooDeep, TOO_DEEP } from '../../domain/json.ts';
import { WharfError } from '../../errors/index.ts';
import { sendJson, type AppDeps } from '../context.ts';
import { authenticate, keyFirst, requireUser } from '../plugins/auth.ts';
import { toWharfError } from '../plugins/errors.ts';
import { buildWharfSchema } from './schema.ts';

interface GqlParams {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

type Prepared = { document: DocumentNode } | { errors: readonly GraphQLError[] };

const bad = (reason: string): WharfError => new WharfError('VALIDATION_FAILED', { reason });

/** Parsed and validated documents by text: clients send the same few documents over and over. */
class DocumentCache {
  private readonly schema: GraphQLSchema;
  private readonly entries = new Map<string, Prepared>();

  constructor(schema: GraphQLSchema) {
    this.schema = schema;
  }

  get(query: string): Prepared {
    const hit = this.entries.get(query);
    if (hit) return hit;
    let prepared: Prepared;
    try {
      const document = parse(query, { maxTokens: 20_000 });
      const errors = validate(this.schema, document, undefined, { maxErrors: 20 });
      prepared = errors.length > 0 ? { errors } : { document };
    } catch (error) {
      // A document nested a few thousand levels deep overflows the recursive parser and validators.
      if (error instanceof RangeError && /call stack/i.test(error.message)) {
        prepared = { errors: [new GraphQLError('The document is nested too deeply')] };
      } else if (error instanceof GraphQLError) {
        prepared = { errors: [error] };
      } else {
        throw error;
      }
    }
    if (query.length <= 64 * 1024) {
      if (this.entries.size >= 500) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(query, prepared);
    }
    return prepared;
  }
}

function objectOrUndefined(value: unknown, what: string): Record<string, unknown> | undefined {
  let v = value;
  if (typeof v === 'string') {
    if (v.trim() === '') return undefined;
    if (jsonTooDeep(v)) throw bad(`${what}: ${TOO_DEEP}`);
    try {
      v = JSON.parse(v);
    } catch {
      throw bad(`${what} is not valid JSON`);
    }
  }
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw bad(`${what} must be a JSON object`);
  return v as Record<string, unknown>;
}

function paramsOf(request: FastifyRequest): GqlParams {
  let raw: unknown = request.method === 'GET' ? request.query : request.body;
  if (typeof raw === 'string' && /application\/graphql(?!-)/.test(request.headers['content-type'] ?? '')) {
    raw = { query: raw };
  }
  const body = objectOrUndefined(raw, 'the body') ?? {};
  const { query, variables, operationName } = body;
  if (typeof query !== 'string' || query.trim() === '') throw bad('Must provide query string.');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    throw bad('operationName must be a string');
  }
  return { query, variables: objectOrUndefined(variables, 'variables'), operationName: operationName || undefined };
}

/** graphql-js's `Variable "$x" got invalid value <the value>[ at "<path>"]; <why>`. */
const INVALID_VARIABLE = /^(Variable "\$[^"]+" got invalid value) /s;

/**
 * A value's own reasons, without the value: the scalars' (`String cannot represent a non string value: 1`), the
 * enums' (`Value "x" does not exist in "E" enum.`) and the literal check's (`Expected value of type "T", found {…}`).
 */
function withoutValueInReason(reason: string): string {
  return reason
    .replace(/(cannot represent[^:]*): .*$/s, '$1.')
    .replace(/^Value ".*" does not exist in /s, 'The value does not exist in ')
    .replace(/^(Expected value of type "[^"]*"), found .*$/s, '$1.');
}

/**
 * The token a syntax error names, without its text (`Unexpected Name "x".`, `Expected Name, found String "x".`,
 * `Invalid character escape sequence: "\q".`): a client that pastes a password into its document unescaped (the
 * Python SDK writes its mutations that way) would read a piece of it there. The location still says where.
 */
function withoutToken(message: string): string {
  return message
    .replace(/((?:found|Unexpected) (?:Name|Int|Float|String|BlockString|Comment)) ".*"\.$/s, '$1.')
    .replace(
      /^(Syntax Error: (?:Unexpected character|Invalid number, expected digit but got|Invalid character within String|Invalid character escape sequence|Invalid Unicode escape sequence)): .*$/s,
      '$1.',
    );
}

/**
 * A request error without the values it quotes: graphql-js prints a variable's whole value (a registry password, an
 * env secret), a literal that does not coerce, or the token a document does not parse at, into the message, which
 * clients such as runpodctl and the Python SDK print as they get it. What is left says which variable or field and
 * why (`Field "x" is not defined by type "Y".`); the error's location says where in the document.
 */
function withoutValues(message: string): string {
  if (message.startsWith('Syntax Error: ')) return withoutToken(message);
  const m = INVALID_VARIABLE.exec(message);
  if (!m) return withoutValueInReason(message);
  const cut = message.lastIndexOf('; ');
  // Where in the variable, when graphql-js says (` at "input.password"`): a path, never the value.
  const where = / at "[^"]*"$/.exec(message.slice(0, cut))?.[0] ?? '';
  return `${m[1]}${where}; ${withoutValueInReason(message.slice(cut + 2))}`;
}

function requestErrors(errors: readonly GraphQLError[]) {
  return errors.map((e) => ({
    message: withoutValues(e.message),
    ...(e.locations ? { locations: e.locations } : {}),
    extensions: { code: 'VALIDATION_FAILED' },
  }));
}

function executionErrors(errors: readonly GraphQLError[], request: FastifyRequest) {
  return errors.map((e) => {
    const original = e.originalError;
    let error: WharfError;
    if (original instanceof WharfError) error = original;
    else {
      // A resolver bug, or a value the schema cannot represent: log it, show no internals.
      request.log.error({ err: original ?? e, path: e.path }, 'GraphQL field failed');
      error = new WharfError('INTERNAL', { requestId: request.id }, { cause: original ?? e });
    }
    return {
      message: error.message,
      ...(e.locations ? { locations: e.locations } : {}),
      ...(e.path ? { path: e.path } : {}),
      extensions: { code: error.code, ...(error.details === undefined ? {} : { details: error.details }) },
    };
  });
}

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return sendJson(reply, JSON.stringify(body), status);
}

export function registerGraphqlRoutes(app: FastifyInstance, deps: AppDeps): void {
  const schema = buildWharfSchema();
  const documents = new DocumentCache(schema);

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = await authenticate(deps.accounts, request, true);
    const params = paramsOf(request);
    const prepared = documents.get(params.query);
    if ('errors' in prepared) return send(reply, 400, { errors: requestErrors(prepared.errors) });
    const operation = getOperationAST(prepared.document, params.operationName);
    if (!operation) {
      throw bad(
        params.operationName
          ? `Unknown operation named "${params.operationName}".`
          : 'Must provide operation name if query contains multiple operations.',
      );
    }
    if (request.method === 'GET' && operation.operation !== OperationTypeNode.QUERY) {
      throw bad(`a ${operation.operation} must be sent with POST`);
    }
    const { user } = requireUser(principal, operation.operation === OperationTypeNode.QUERY ? 'read' : 'write');
    const result: ExecutionResult = await execute({
      schema,
      document: prepared.document,
      contextValue: { deps, user, log: request.log },
      variableValues: params.variables,
      operationName: params.operationName,
    });
    // No `data` at all: the variables did not coerce (a request error, like a validation failure).
    if (result.data === undefined) return send(reply, 400, { errors: requestErrors(result.errors ?? []) });
    const errors = result.errors?.length ? { errors: executionErrors(result.errors, request) } : {};
    return send(reply, 200, { ...errors, data: result.data });
  };

  // Errors before execution (a bad key, unparsable JSON) keep the GraphQL shape: `{errors: [...]}`.
  const errorHandler = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const w = toWharfError(error, request.id);
    if (w.code === 'INTERNAL') request.log.error({ err: error }, 'GraphQL request failed');
    if (w.headers) reply.headers(w.headers);
    const details = w.details === undefined ? {} : { details: w.details };
    void send(reply, w.status, { errors: [{ message: w.message, extensions: { code: w.code, ...details } }] });
  };

  // The key before the body, as on every /v1 and /v2 route: 401 whatever a caller without a valid key sent.
  const onRequest = keyFirst(deps.accounts, true);
  app.route({ method: ['GET', 'POST'], url: '/graphql', onRequest, handler, errorHandler });
}
