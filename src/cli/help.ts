import { GLOBAL_OPTIONS, type OptionSpecs } from './args.ts';
import type { Command } from './context.ts';

export interface Section {
  title: string;
  commands: readonly Command[];
}

const signature = (c: Command): string => [c.name, ...(c.args ?? [])].join(' ');

function optionLines(options: OptionSpecs): string[] {
  const heads = Object.entries(options).map(([name, o]) => {
    const head = `${o.short ? `-${o.short}, ` : ''}--${name}${o.value ? ` ${o.value}` : ''}`;
    return [head, o.doc + (o.multiple ? ' (repeatable)' : '')] as const;
  });
  const width = Math.max(...heads.map(([h]) => h.length));
  return heads.map(([h, d]) => `  ${h.padEnd(width)}  ${d}`);
}

export const FOOTER = [
  'Connection: --url/--api-key > WHARF_URL/WHARF_API_KEY > the file "wharf login" writes',
  '  ($XDG_CONFIG_HOME/wharf/config.json, default ~/.config/wharf/config.json) > http://127.0.0.1:8000.',
  'Exit status: 0 success; 1 the server refused the request or the job did not complete; 2 usage error.',
];

export function commandHelp(c: Command): string {
  const lines = [`wharf ${c.name} — ${c.summary}`, '', 'Usage:', `  wharf ${signature(c)} ${c.usage ?? '[options]'}`];
  if (c.options && Object.keys(c.options).length > 0) lines.push('', 'Options:', ...optionLines(c.options));
  const globals = c.local
    ? Object.fromEntries(
        Object.entries(GLOBAL_OPTIONS).filter(([k]) => k === 'json' || k === 'no-color' || k === 'help'),
      )
    : GLOBAL_OPTIONS;
  lines.push('', 'Global options:', ...optionLines(globals));
  if (c.details?.length) lines.push('', ...c.details);
  if (c.examples?.length) lines.push('', 'Examples:', ...c.examples.map((e) => `  ${e}`));
  return `${lines.join('\n')}\n`;
}

/** `wharf endpoint --help`: the group's commands and their summaries. */
export function groupHelp(group: string, commands: readonly Command[]): string {
  const rows = commands.map((c) => [signature(c), c.summary] as const);
  const width = Math.max(...rows.map(([s]) => s.length));
  return [
    `wharf ${group} — ${commands.length} commands`,
    '',
    'Usage:',
    ...rows.map(([s, d]) => `  wharf ${s.padEnd(width)}  ${d}`),
    '',
    `Run "wharf ${group} <command> --help" for its options.`,
    '',
  ].join('\n');
}

export function mainHelp(sections: readonly Section[]): string {
  const all = sections.flatMap((s) => s.commands.map(signature));
  const width = Math.max(...all.map((s) => s.length));
  const lines = [
    'wharf — self-hosted serverless compute with a RunPod-compatible API',
    '',
    'Usage: wharf <command> [arguments] [options]',
  ];
  for (const section of sections) {
    lines.push('', `${section.title}:`);
    for (const c of section.commands) lines.push(`  ${signature(c).padEnd(width)}  ${c.summary}`);
  }
  lines.push('', 'Global options:', ...optionLines(GLOBAL_OPTIONS), '', ...FOOTER);
  lines.push('Run "wharf <command> --help" for a command\'s options, "wharf serve --help" for every server setting.');
  return `${lines.join('\n')}\n`;
}
