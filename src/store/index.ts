export type * from './types.ts';
export { openSqliteStore, type SqliteStoreOptions } from './sqlite/index.ts';
