/**
 * Whether a store write failed on a unique index: SQLite's SQLITE_CONSTRAINT_UNIQUE / PRIMARYKEY, PostgreSQL's
 * unique_violation (23505). The engine checks names before it writes; this catches the write that raced another
 * with the same name between that check and its own insert.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; errcode?: unknown };
  if (e.code === '23505') return true;
  // node:sqlite's extended result codes: 2067 UNIQUE, 1555 PRIMARYKEY.
  return e.code === 'ERR_SQLITE_ERROR' && (e.errcode === 2067 || e.errcode === 1555);
}
