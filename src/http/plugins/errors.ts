import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WharfError } from '../../errors/index.ts';

interface AjvIssue {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** The field an ajv issue is about, as a dotted path (`policy.ttl`, `input`). */
function fieldOf(issue: AjvIssue, part: string | undefined): string {
  const path = (issue.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  const missing = issue.params?.['missingProperty'];
  const extra = issue.params?.['additionalProperty'];
  const leaf = typeof missing === 'string' ? missing : typeof extra === 'string' ? extra : '';
  const joined = [path, leaf].filter(Boolean).join('.');
  return joined || (part === 'body' ? 'body' : (part ?? 'request'));
}

/** At most this many allowed values are named in a message; longer lists end with how many there are. */
const NAMED_VALUES = 12;

function describe(issue: AjvIssue, field: string): string {
  if (issue.params?.['additionalProperty']) return `${field} is not a known field`;
  if (issue.params?.['missingProperty']) return `${field} is required`;
  const allowed = issue.params?.['allowedValues'];
  if (Array.isArray(allowed)) {
    const named = allowed.slice(0, NAMED_VALUES).map(String).join(', ');
    const more = allowed.length > NAMED_VALUES ? `, … (${allowed.length} in all; GET /v1/openapi.json lists them)` : '';
    return `${field} must be one of ${named}${more}`;
  }
  return `${field} ${issue.message ?? 'is invalid'}`;
}

/** Map anything thrown by a route, a parser or Fastify itself onto the one error shape (DESIGN.md §3 "Errors"). */
export function toWharfError(error: unknown, requestId: string): WharfError {
  if (error instanceof WharfError) return error;
  const e = error as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const issues = e.validation.map((issue) => {
      const field = fieldOf(issue, e.validationContext);
      return { field, message: describe(issue, field) };
    });
    return new WharfError('VALIDATION_FAILED', { reason: issues[0]!.message }, { details: issues });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new WharfError('PAYLOAD_TOO_LARGE', { limit: 'size' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new WharfError('UNSUPPORTED_MEDIA_TYPE', { contentType: 'given' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new WharfError('VALIDATION_FAILED', { reason: 'the body is empty' }, { details: [{ field: 'body' }] });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new WharfError('VALIDATION_FAILED', { reason: 'Content-Length does not match the body' });
    default:
      break;
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new WharfError('VALIDATION_FAILED', { reason: e.message });
  }
  return new WharfError('INTERNAL', { requestId }, { cause: error });
}

export function sendError(reply: FastifyReply, error: WharfError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.status).type('application/json; charset=utf-8').send(JSON.stringify(error.toBody()));
}

/**
 * A request Node's HTTP parser refused before Fastify saw it: answered on the raw socket, in the one error shape,
 * and the connection closed (what follows on it cannot be trusted to be a request).
 */
export function sendClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const wharfError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new WharfError('HEADERS_TOO_LARGE')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new WharfError('REQUEST_TIMEOUT')
        : new WharfError('VALIDATION_FAILED', { reason: 'the request is not valid HTTP' });
  const body = JSON.stringify(wharfError.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${wharfError.status} ${STATUS_CODES[wharfError.status] ?? 'Error'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** Fastify's routing-phase errors (FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH), which skip the error handler. */
export function sendFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const reason =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is too long' : 'the URL is not validly encoded';
  reply.header('x-content-type-options', 'nosniff');
  sendError(reply, new WharfError('VALIDATION_FAILED', { reason }));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const wharfError = toWharfError(error, request.id);
    if (wharfError.status >= 500 && wharfError.code === 'INTERNAL') {
      request.log.error({ err: error, reqId: request.id }, 'unhandled error');
    } else if (wharfError.status >= 500) {
      request.log.warn({ code: wharfError.code, err: error }, wharfError.message);
    }
    // A payload-size message should name the route's limit.
    if (wharfError.code === 'PAYLOAD_TOO_LARGE' && wharfError.message.includes('the size allowed')) {
      const limit = request.routeOptions.bodyLimit;
      const mb = limit ? `${Math.round(limit / (1024 * 1024))} MB` : 'size';
      return sendError(reply, new WharfError('PAYLOAD_TOO_LARGE', { limit: mb }));
    }
    if (wharfError.code === 'UNSUPPORTED_MEDIA_TYPE') {
      return sendError(
        reply,
        new WharfError('UNSUPPORTED_MEDIA_TYPE', { contentType: request.headers['content-type'] ?? 'none' }),
      );
    }
    return sendError(reply, wharfError);
  });
  app.setNotFoundHandler((request, reply) => {
    sendError(reply, new WharfError('ROUTE_NOT_FOUND', { method: request.method, url: request.url.split('?')[0] }));
  });
}
