import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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

/** Where a schema allows null-as-absent: its optional members, and the members whose own schemas name members. */
interface NullPlan {
  optional: string[];
  nested: Array<[string, NullPlan]>;
}

function planOf(schema: ObjectSchema): NullPlan | null {
  if (schema.properties === undefined) return null;
  const required = new Set(schema.required ?? []);
  const plan: NullPlan = { optional: [], nested: [] };
  for (const [key, member] of Object.entries(schema.properties)) {
    if (!required.has(key)) plan.optional.push(key);
    const inner = planOf(member);
    if (inner !== null) plan.nested.push([key, inner]);
  }
  return plan;
}

/** Deletes, in place, the members of `value` that are null where the plan makes them optional, at every depth. */
function dropNullOptionals(plan: NullPlan, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
  const body = value as Record<string, unknown>;
  for (const key of plan.optional) if (body[key] === null && Object.hasOwn(body, key)) delete body[key];
  for (const [key, inner] of plan.nested) if (Object.hasOwn(body, key)) dropNullOptionals(inner, body[key]);
}

/**
 * A preValidation hook: an explicit null of a member `schema` makes optional is taken as absent, as clients
 * generated in other languages write every unset optional member as null. Only members the schema names are
 * touched (an object it leaves open, such as a submission's `input`, is kept as sent), and only null: any other
 * wrong type is still refused by the schema. Not for bodies where null means "take it off" (REST PATCH). The plan is
 * made once from the schema and the hook is synchronous: it runs on every submission.
 */
export function nullMeansAbsent(schema: TSchema) {
  const plan = planOf(schema) ?? { optional: [], nested: [] };
  return (request: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    dropNullOptionals(plan, request.body);
    done();
  };
}
