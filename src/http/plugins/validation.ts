import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM interop.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

/**
 * Two validators: bodies are checked strictly (no type coercion: `"ttl": "100"` is a wrong type, not a number),
 * query strings and path parameters are coerced (they only ever arrive as text).
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = addFormats(
    new Ajv({ allErrors: false, coerceTypes: false, useDefaults: true, removeAdditional: false, strict: false }),
  );
  const lenient = addFormats(
    new Ajv({ allErrors: false, coerceTypes: 'array', useDefaults: true, removeAdditional: false, strict: false }),
  );
  const cache = new WeakMap<object, ValidateFunction>();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : lenient;
    const key = schema as object;
    const cached = httpPart === 'body' ? undefined : cache.get(key);
    const validate = cached ?? ajv.compile(schema as object);
    if (httpPart !== 'body') cache.set(key, validate);
    return validate as (data: unknown) => boolean;
  });
}

type ObjectSchema = { properties?: Record<string, ObjectSchema>; required?: string[] };

/** Deletes, in place, the members of `value` that are null where `schema` makes them optional, at every depth. */
function dropNullOptionals(schema: ObjectSchema, value: unknown): void {
  if (schema.properties === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) return;
  const body = value as Record<string, unknown>;
  const required = new Set(schema.required ?? []);
  for (const [key, member] of Object.entries(schema.properties)) {
    if (!Object.hasOwn(body, key)) continue;
    if (body[key] === null && !required.has(key)) delete body[key];
    else dropNullOptionals(member, body[key]);
  }
}

/**
 * A preValidation hook: an explicit null of a member `schema` makes optional is taken as absent, as clients
 * generated in other languages write every unset optional member as null. Only members the schema names are
 * touched (an object it leaves open, such as a submission's `input`, is kept as sent), and only null: any other
 * wrong type is still refused by the schema. Not for bodies where null means "take it off" (REST PATCH).
 */
export function nullMeansAbsent(schema: TSchema) {
  return async (request: FastifyRequest): Promise<void> => {
    dropNullOptionals(schema, request.body);
  };
}
