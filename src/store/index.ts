export type * from './types.ts';
export type * from './types-cluster.ts';
export { openSqliteStore, type SqliteStoreOptions } from './sqlite/index.ts';
export { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from './postgres/index.ts';
export { COUNT_OF_STATE } from './job-counts.ts';
export { isUniqueViolation } from './errors.ts';
