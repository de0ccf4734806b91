// Payloads pass through Wharf as their senders wrote them (src/domain/json.ts): a member's text is cut out of the
// body exactly, whatever its numbers, strings and nesting; NaN and Infinity from Python become null.

import { describe, expect, it } from 'vitest';

import { memberText, nonFiniteAsNull } from '../../src/domain/json.ts';

/** A small deterministic generator (mulberry32), so a failure names a reproducible seed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random JSON text of a value, with the spellings JSON.stringify would change and Python's white space. */
function randomJson(rand: () => number, depth = 0): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const kind = depth > 3 ? pick(['num', 'str', 'lit']) : pick(['num', 'str', 'lit', 'arr', 'obj']);
  switch (kind) {
    case 'num':
      return pick(['18446744073709551615', '1.0', '-0', '1e5', '1E+30', '0.1000', '42', '-3.25', '0.0000001']);
    case 'str':
      return pick(['"a"', '"q\\"uote\\\\"', '"}]{[,:"', '"\\u00e9 é"', '""', '"NaN"']);
    case 'lit':
      return pick(['true', 'false', 'null']);
    case 'arr':
      return `[${Array.from({ length: Math.floor(rand() * 4) }, () => randomJson(rand, depth + 1)).join(pick([',', ', ']))}]`;
    default:
      return `{${Array.from(
        { length: Math.floor(rand() * 4) },
        (_, i) => `"k${i}"${pick([':', ': ', ' : '])}${randomJson(rand, depth + 1)}`,
      ).join(pick([',', ', ', ' ,\n ']))}}`;
  }
}

describe('memberText', () => {
  it('cuts out a member as written: numbers, escapes, nesting and white space inside it kept', () => {
    const output = '{"seed": 18446744073709551615, "loss": 1.0, "s": "a\\"}b", "l": [1E+30, -0, {"x": []}]}';
    const body = ` { "status" : "COMPLETED" ,\n "output": ${output}, "stopPod": true }`;
    expect(memberText(body, 'output')).toBe(output);
    expect(memberText(body, 'stopPod')).toBe('true');
    expect(memberText(body, 'status')).toBe('"COMPLETED"');
    expect(memberText(body, 'error')).toBeUndefined();
    expect(memberText('{}', 'output')).toBeUndefined();
  });

  it('takes the last of repeated keys, as JSON.parse does, and reads escaped keys', () => {
    expect(memberText('{"output": 1, "output": 2.50}', 'output')).toBe('2.50');
    expect(memberText('{"\\u006futput": 7}', 'output')).toBe('7');
  });

  it('agrees with JSON.parse on 20,000 random bodies, and keeps the text', () => {
    const rand = mulberry32(20261124);
    for (let i = 0; i < 20_000; i++) {
      const value = randomJson(rand);
      const body = `{"a": ${randomJson(rand)}, "output": ${value}, "z":${randomJson(rand)}}`;
      const cut = memberText(body, 'output');
      expect(cut, body).toBe(value);
      expect(JSON.parse(cut!), body).toEqual((JSON.parse(body) as { output: unknown }).output);
    }
  });
});

describe('nonFiniteAsNull', () => {
  it('writes NaN and ±Infinity outside strings as null', () => {
    expect(nonFiniteAsNull('{"a":NaN,"b":[Infinity,-Infinity],"c":"NaN \\"Infinity\\""}')).toBe(
      '{"a":null,"b":[null,null],"c":"NaN \\"Infinity\\""}',
    );
  });

  it('is null when there is nothing to replace', () => {
    expect(nonFiniteAsNull('{"a":"NaN","b":1}')).toBeNull();
    expect(nonFiniteAsNull('{"a": nan}')).toBeNull();
  });

  it('handles a string of many megabytes (a base64 image) beside a NaN', () => {
    const big = 'A'.repeat(12_000_000);
    expect(nonFiniteAsNull(`{"image": "${big}", "loss": NaN}`)).toBe(`{"image": "${big}", "loss": null}`);
  });
});
