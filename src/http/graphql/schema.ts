import { readFileSync } from 'node:fs';
import { buildSchema, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { GqlContext, ResolverMap } from './context.ts';
import { accountResolvers } from './resolvers/account.ts';
import { catalogResolvers } from './resolvers/catalog.ts';
import { endpointResolvers } from './resolvers/endpoints.ts';
import { podResolvers } from './resolvers/pods.ts';
import { templateResolvers } from './resolvers/templates.ts';

/** The SDL, kept in its own file so that it reads as the published schema. */
export const SDL = readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');

const RESOLVERS: readonly ResolverMap[] = [
  accountResolvers,
  catalogResolvers,
  endpointResolvers,
  podResolvers,
  templateResolvers,
];

/**
 * The executable schema: the SDL with each resolver attached to its field. A resolver naming a type or field the
 * SDL lacks is a programming error and fails at start-up, not at request time. Fields without a resolver read the
 * property of the same name (graphql-js's default resolver).
 */
export function buildWharfSchema(): GraphQLSchema {
  const schema = buildSchema(SDL);
  for (const map of RESOLVERS) {
    for (const [typeName, fields] of Object.entries(map)) {
      const type = schema.getType(typeName);
      if (!isObjectType(type)) throw new Error(`GraphQL resolvers name unknown type ${typeName}`);
      const defs = type.getFields();
      for (const [fieldName, resolve] of Object.entries(fields)) {
        const def = defs[fieldName];
        if (!def) throw new Error(`GraphQL resolvers name unknown field ${typeName}.${fieldName}`);
        if (def.resolve) throw new Error(`GraphQL field ${typeName}.${fieldName} has two resolvers`);
        def.resolve = resolve as unknown as GraphQLFieldResolver<unknown, GqlContext>;
      }
    }
  }
  return schema;
}
