import type { DatabaseSync, StatementSync } from 'node:sqlite';

/**
 * Prepared statements by their SQL text: each is prepared once per connection and reused (preparing is most of the
 * cost of a small statement). Every SQLite store module asks for its statements through one of these.
 */
export function statementCache(db: DatabaseSync): (sql: string) => StatementSync {
  const stmts = new Map<string, StatementSync>();
  return (sql) => {
    let s = stmts.get(sql);
    if (!s) {
      s = db.prepare(sql);
      stmts.set(sql, s);
    }
    return s;
  };
}
