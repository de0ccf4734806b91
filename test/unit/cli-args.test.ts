// Argument parsing of the `wharf` CLI: typed getters, durations, JSON values and the one-line usage errors.

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { Args, parseDuration, UsageError, type OptionSpecs } from '../../src/cli/args.ts';

const OPTIONS: OptionSpecs = {
  name: { type: 'string', doc: '' },
  count: { type: 'string', doc: '' },
  ttl: { type: 'string', doc: '' },
  input: { type: 'string', doc: '' },
  env: { type: 'string', multiple: true, doc: '' },
  sync: { type: 'boolean', doc: '' },
  follow: { type: 'boolean', short: 'f', doc: '' },
};

const args = (argv: string[]) => new Args('run', argv, OPTIONS);
const usage = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).command).toBe('run');
    return (error as Error).message;
  }
  throw new Error('expected a UsageError');
};

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['45', 45_000],
    [' 10s ', 10_000],
  ])('%s is %i ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', 'soon', '5 m', '-1s', '1w', 's'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeNull();
  });
});

describe('Args', () => {
  it('reads flags, strings, repeated options and positionals', () => {
    const a = args(['ep1', '--name', 'x', '--sync', '-f', '--env', 'A=1', '--env', 'B=two=2', 'job1']);
    expect(a.positionals).toEqual(['ep1', 'job1']);
    expect(a.string('name')).toBe('x');
    expect(a.flag('sync')).toBe(true);
    expect(a.flag('follow')).toBe(true);
    expect(a.has('ttl')).toBe(false);
    expect(a.list('env')).toEqual(['A=1', 'B=two=2']);
    expect(a.pairs('env')).toEqual({ A: '1', B: 'two=2' });
    expect(a.expect(['<endpoint>', '[job]'])).toEqual(['ep1', 'job1']);
  });

  it('checks numbers, durations, choices and KEY=VALUE pairs', () => {
    expect(args(['--count', '7']).int('count', { min: 0, max: 10 })).toBe(7);
    expect(usage(() => args(['--count', '7.5']).int('count'))).toBe("--count expects a whole number, got '7.5'");
    expect(usage(() => args(['--count', '11']).int('count', { min: 0, max: 10 }))).toBe(
      '--count must be between 0 and 10',
    );
    expect(args(['--ttl', '2m']).duration('ttl')).toBe(120_000);
    expect(usage(() => args(['--ttl', 'later']).duration('ttl'))).toMatch(/^--ttl expects a duration such as 30s/);
    expect(args(['--name', 'b']).oneOf('name', ['a', 'b'])).toBe('b');
    expect(usage(() => args(['--name', 'c']).oneOf('name', ['a', 'b']))).toBe("--name must be one of a, b, got 'c'");
    expect(usage(() => args(['--env', 'NOVALUE']).pairs('env'))).toBe("--env expects KEY=VALUE, got 'NOVALUE'");
    expect(usage(() => args([]).required('name'))).toBe('--name is required');
  });

  it('reads JSON inline or from @file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-args-'));
    const file = join(dir, 'in.json');
    writeFileSync(file, '{"a": [1, 2]}');
    const read = (p: string) => readFileSync(p, 'utf8');
    expect(args(['--input', '{"x": 1}']).json('input', read)).toEqual({ x: 1 });
    expect(args(['--input', `@${file}`]).json('input', read)).toEqual({ a: [1, 2] });
    expect(usage(() => args(['--input', '{x']).json('input', read))).toMatch(/^--input is not valid JSON: /);
    expect(usage(() => args(['--input', '@/nonexistent/x.json']).json('input', read))).toMatch(
      /^--input: cannot read \/nonexistent\/x.json: /,
    );
  });

  it('turns parseArgs failures into short messages', () => {
    expect(usage(() => args(['--bogus']))).toBe('unknown option --bogus');
    expect(usage(() => args(['-x']))).toBe('unknown option -x');
    expect(usage(() => args(['--name']))).toBe('--name needs a value');
    expect(usage(() => args(['--name', '--sync']))).toBe('--name needs a value');
    expect(usage(() => args(['--sync=yes']))).toBe('--sync does not take a value');
  });

  it('checks the number of positional arguments', () => {
    expect(usage(() => args(['a']).expect(['<endpoint>', '<job>']))).toBe('missing <job>');
    expect(usage(() => args([]).expect(['<endpoint>', '<job>']))).toBe('missing <endpoint> <job>');
    expect(usage(() => args(['a', 'b', 'c']).expect(['<endpoint>', '<job>']))).toBe("unexpected argument 'c'");
    expect(args([]).expect(['[kind]'])).toEqual([]);
  });
});
