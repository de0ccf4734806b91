// What the `wharf` CLI prints: tables, key/value blocks, durations, colours, the spinner, job errors.

import { describe, expect, it } from 'vitest';

import { describeJob, jobError } from '../../src/cli/commands/jobs.ts';
import { cell, colors, formatMs, Output, renderFields, renderTable, visibleLength } from '../../src/cli/output.ts';
import { Spinner } from '../../src/cli/spinner.ts';

const sink = (isTTY = false) => {
  const s = { text: '', isTTY, write: (t: string) => (s.text += t) };
  return s;
};

describe('tables and fields', () => {
  const rows = [
    { id: 'a1', status: 'COMPLETED', tags: ['x', 'y'], note: null },
    { id: 'bbbbbb', status: 'FAILED', tags: [], note: { k: 1 } },
  ];
  const columns = [
    { header: 'ID', value: (r: (typeof rows)[number]) => r.id },
    { header: 'STATUS', value: (r: (typeof rows)[number]) => r.status },
    { header: 'TAGS', value: (r: (typeof rows)[number]) => r.tags },
    { header: 'NOTE', value: (r: (typeof rows)[number]) => r.note },
  ];

  it('aligns columns, two spaces apart, with - for nothing', () => {
    expect(renderTable(rows, columns)).toBe(
      ['ID      STATUS     TAGS  NOTE', 'a1      COMPLETED  x,y   -', 'bbbbbb  FAILED     -     {"k":1}'].join('\n'),
    );
  });

  it('pads by visible width when cells are coloured', () => {
    const c = colors(true);
    const painted = renderTable(rows, [{ ...columns[1]!, paint: (s: string) => c.green(s) }, columns[0]!], c);
    // eslint-disable-next-line no-control-regex
    const lines = painted.split('\n').map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''));
    expect(lines).toEqual(['STATUS     ID', 'COMPLETED  a1', 'FAILED     bbbbbb']);
    expect(painted).toContain('\x1b[32mCOMPLETED\x1b[39m');
    expect(visibleLength(c.bold('héllo'))).toBe(5);
  });

  it('renders key/value blocks', () => {
    expect(
      renderFields([
        ['id', 'x'],
        ['status', 'OK'],
        ['tags', []],
      ]),
    ).toBe('id      x\nstatus  OK\ntags    -');
    expect(cell(0)).toBe('0');
    expect(cell(false)).toBe('false');
  });

  it('formats durations for people', () => {
    expect(formatMs(12)).toBe('12 ms');
    expect(formatMs(1234)).toBe('1.23 s');
    expect(formatMs(12_345)).toBe('12.3 s');
    expect(formatMs(125_000)).toBe('2m 05s');
    expect(formatMs(7_500_000)).toBe('2h 05m');
    expect(formatMs(undefined)).toBe('-');
  });
});

describe('Output', () => {
  it('keeps results on stdout and notes and errors on stderr; --json silences notes', () => {
    const stdout = sink();
    const stderr = sink();
    const out = new Output({ stdout, stderr }, { json: false, color: false, colorErr: false });
    out.line('result');
    out.note('a remark');
    out.error('Job x not found', 'JOB_NOT_FOUND');
    out.table([], [], '(none)');
    expect(stdout.text).toBe('result\n');
    expect(stderr.text).toBe('a remark\nwharf: JOB_NOT_FOUND: Job x not found\n(none)\n');

    const json = new Output({ stdout: sink(), stderr: sink() }, { json: true, color: false, colorErr: false });
    json.note('hidden');
    expect((json.stderr as ReturnType<typeof sink>).text).toBe('');
  });

  it('colours errors only when stderr wants colour', () => {
    const stderr = sink();
    new Output({ stdout: sink(), stderr }, { json: false, color: false, colorErr: true }).error('boom', 'INTERNAL');
    expect(stderr.text).toBe('\x1b[31mwharf:\x1b[39m \x1b[1mINTERNAL\x1b[22m: boom\n');
  });
});

describe('Spinner', () => {
  it('draws on a terminal: frame, text and seconds waited, then clears its line', async () => {
    let now = 1000;
    const s = sink(true);
    const spinner = new Spinner(s, colors(false), { now: () => now });
    spinner.start('job-1 IN_QUEUE · scaling-up: starting a worker');
    now += 3200;
    spinner.update('job-1 IN_PROGRESS');
    expect(spinner.line()).toMatch(/^. job-1 IN_PROGRESS 3s$/u);
    await new Promise((r) => setTimeout(r, 100));
    spinner.stop('done');
    expect(s.text).toContain('\r\x1b[2K⠙ job-1 IN_QUEUE · scaling-up: starting a worker 0s');
    expect(s.text).toContain('job-1 IN_PROGRESS 3s');
    expect(s.text.endsWith('\r\x1b[2Kdone\n')).toBe(true);
  });

  it('writes nothing at all when stderr is not a terminal', async () => {
    const s = sink(false);
    const spinner = new Spinner(s, colors(false));
    spinner.start('waiting');
    await new Promise((r) => setTimeout(r, 100));
    spinner.update('still waiting');
    spinner.stop('done');
    expect(spinner.enabled).toBe(false);
    expect(s.text).toBe('');
  });
});

describe('jobs for people', () => {
  it("shows a worker's error as type: message, with the traceback apart", () => {
    const raw = JSON.stringify({ error_type: 'ValueError', error_message: 'bad input', error_traceback: 'Traceback…' });
    expect(jobError(raw)).toEqual({ summary: 'ValueError: bad input', traceback: 'Traceback…' });
    expect(jobError({ error_message: 'x' })).toEqual({ summary: 'x' });
    expect(jobError('plain\ntext')).toEqual({ summary: 'plain text' });
    expect(jobError({ code: 1 })).toEqual({ summary: '{"code":1}' });
  });

  it('describes why a job waits', () => {
    expect(
      describeJob({ status: 'IN_QUEUE', queueReason: { reason: 'scaling-up', message: 'starting 1 worker' } }),
    ).toBe('IN_QUEUE · scaling-up: starting 1 worker');
    expect(describeJob({ status: 'IN_PROGRESS' })).toBe('IN_PROGRESS');
  });
});

describe('worker log lines on a terminal', () => {
  it('show control characters instead of obeying them (no escape sequences from a worker)', async () => {
    const { visible } = await import('../../src/cli/commands/logs.ts');
    expect(visible('plain\ttext ✓')).toBe('plain\ttext ✓');
    expect(visible('\u001b]0;pwned\u0007\u001b[2Jgone')).toBe('\\x1b]0;pwned\\x07\\x1b[2Jgone');
    expect(visible('a\rb\u009bc')).toBe('a\\x0db\\x9bc');
  });
});
