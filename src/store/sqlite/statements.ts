import type { DatabaseSync, StatementSync } from 'node:sqlite';

/**
 * Prepared statements by their SQL text: each is prepared once per connection and reused (preparing is most of the
 * cost of a small statement). Every SQLite store module asks for its statements through one of these. With
 * `returnArrays` rows come back as arrays in the order of the statement's columns (see JOB_COLUMNS).
 */
export function statementCache(
  db: DatabaseSync,
  opts: { returnArrays?: boolean } = {},
): (sql: string) => StatementSync {
  const stmts = new Map<string, StatementSync>();
  return (sql) => {
    let s = stmts.get(sql);
    if (!s) {
      s = db.prepare(sql);
      if (opts.returnArrays) s.setReturnArrays(true);
      stmts.set(sql, s);
    }
    return s;
  };
}
