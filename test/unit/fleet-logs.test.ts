// The worker log ring (src/fleet/logs.ts): a tail without a cursor, and paging on from a cursor that never skips a
// line, across a burst and across a server restart.
import { describe, expect, it } from 'vitest';
import { LogBook } from '../../src/fleet/logs.ts';

const T0 = Date.parse('2026-01-02T03:04:05.000Z');

describe('LogBook', () => {
  it('a follower paging on from its cursor gets every line of a burst, in order; no cursor is a tail', () => {
    const book = new LogBook(10_000);
    book.append('ep', 'w1', 'stdout', 'before', T0);
    const [first] = book.query('ep', { limit: 10 });
    for (let n = 0; n < 3000; n++) book.append('ep', 'w1', 'stdout', `line ${n}`, T0 + 1);
    const seen: string[] = [];
    let cursor = first!.seq;
    for (;;) {
      const page = book.query('ep', { after: cursor, limit: 500 });
      if (page.length === 0) break;
      seen.push(...page.map((l) => l.message));
      cursor = page[page.length - 1]!.seq;
    }
    expect(seen).toEqual(Array.from({ length: 3000 }, (_, n) => `line ${n}`));
    // Without a cursor: the newest lines, oldest first.
    expect(book.query('ep', { limit: 2 }).map((l) => l.message)).toEqual(['line 2998', 'line 2999']);
    // Filters apply within the page.
    book.append('ep', 'w2', 'stderr', 'other worker', T0 + 2);
    expect(book.query('ep', { after: first!.seq, workerId: 'w2' }).map((l) => l.message)).toEqual(['other worker']);
  });

  it('a cursor kept across a server restart is below every line of the new run', () => {
    const before = new LogBook();
    before.append('ep', 'w1', 'stdout', 'old run', T0);
    for (let n = 0; n < 50; n++) before.append('ep', 'w1', 'stdout', `old ${n}`, T0);
    const cursor = before.query('ep', { limit: 1 })[0]!.seq;
    const after = new LogBook(); // the restarted server's, seconds later
    after.append('ep', 'w9', 'stdout', 'new run 1', T0 + 5000);
    after.append('ep', 'w9', 'stdout', 'new run 2', T0 + 5001);
    expect(after.query('ep', { after: cursor }).map((l) => l.message)).toEqual(['new run 1', 'new run 2']);
  });
});
