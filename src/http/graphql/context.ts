import type { FastifyBaseLogger } from 'fastify';
import type { User } from '../../domain/index.ts';
import { WharfError } from '../../errors/index.ts';
import type { AppDeps } from '../context.ts';

/** What every resolver gets: the app's services and the authenticated user (tenancy is always `user.id`). */
export interface GqlContext {
  deps: AppDeps;
  user: User;
  log: FastifyBaseLogger;
}

/**
 * Resolvers by type and field. `never` parameters let each resolver declare the source and arguments it expects;
 * the schema (schema.graphql) guarantees them.
 */
export type ResolverMap = Record<string, Record<string, (source: never, args: never, ctx: GqlContext) => unknown>>;

/** A VALIDATION_FAILED error naming the input field. */
export function invalid(field: string, reason: string): WharfError {
  return new WharfError(
    'VALIDATION_FAILED',
    { reason: `${field} ${reason}` },
    { details: [{ field, message: reason }] },
  );
}

/** The `input` argument, which the schema leaves nullable so that clients may declare their variable either way. */
export function required<T>(value: T | null | undefined, field = 'input'): T {
  if (value === null || value === undefined) throw invalid(field, 'is required');
  return value;
}
