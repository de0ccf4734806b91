import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

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
