// The depth check that keeps deeply nested bodies from overflowing the stack when they are serialised again.

import { describe, expect, it } from 'vitest';

import { jsonTooDeep, MAX_JSON_DEPTH } from '../../src/domain/json.ts';

const nest = (n: number, open = '[', close = ']'): string => `${open.repeat(n)}${close.repeat(n)}`;

describe('jsonTooDeep', () => {
  it('allows MAX_JSON_DEPTH levels and refuses one more, for arrays and objects', () => {
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH + 1))).toBe(true);
    const objects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    expect(jsonTooDeep(objects(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(objects(MAX_JSON_DEPTH + 1))).toBe(true);
  });

  it('counts depth, not brackets: long flat arrays pass', () => {
    expect(jsonTooDeep(`[${Array.from({ length: 5000 }, () => '[1]').join(',')}]`)).toBe(false);
  });

  it('skips brackets inside strings, escaped quotes and backslashes included', () => {
    expect(jsonTooDeep(JSON.stringify({ s: '['.repeat(5000) }))).toBe(false);
    expect(jsonTooDeep(JSON.stringify(['\\"[[[', '['.repeat(5000)]))).toBe(false);
    expect(jsonTooDeep(JSON.stringify(['\\', '['.repeat(5000)]))).toBe(false);
    expect(jsonTooDeep(`${JSON.stringify(['\\"'])}${nest(MAX_JSON_DEPTH + 1)}`)).toBe(true);
  });

  it('leaves malformed text to JSON.parse', () => {
    expect(jsonTooDeep(`"${'['.repeat(5000)}`)).toBe(false);
    expect(jsonTooDeep('['.repeat(MAX_JSON_DEPTH + 1))).toBe(true);
  });

  it('matches what JSON.stringify can serialise again', () => {
    const parsed: unknown = JSON.parse(nest(MAX_JSON_DEPTH));
    expect(() => JSON.stringify(parsed)).not.toThrow();
  });
});
