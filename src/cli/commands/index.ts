import type { Command } from '../context.ts';
import type { Section } from '../help.ts';
import { configCommand, keyCommands, loginCommand, logoutCommand } from './account.ts';
import { endpointCommands } from './endpoints.ts';
import { cancelCommand, retryCommand, statusCommand, streamCommand } from './jobs.ts';
import { billingCommand, logsCommand } from './logs.ts';
import { healthCommand, jobsCommand, purgeCommand } from './queue.ts';
import { runCommand } from './run.ts';
import { secretCommands } from './secrets.ts';
import { serveCommand } from './serve.ts';
import { registryCommands, volumeCommands } from './storage.ts';
import { templateCommands } from './templates.ts';

/** Every command, in the order `wharf --help` lists them. */
export const SECTIONS: readonly Section[] = [
  { title: 'Server', commands: [serveCommand] },
  {
    title: 'Jobs',
    commands: [
      runCommand,
      statusCommand,
      streamCommand,
      cancelCommand,
      retryCommand,
      jobsCommand,
      purgeCommand,
      healthCommand,
      logsCommand,
    ],
  },
  { title: 'Endpoints', commands: endpointCommands },
  { title: 'Templates', commands: templateCommands },
  { title: 'Network volumes', commands: volumeCommands },
  { title: 'Container registry credentials', commands: registryCommands },
  { title: 'Secrets', commands: secretCommands },
  { title: 'Account', commands: [loginCommand, logoutCommand, configCommand, ...keyCommands, billingCommand] },
];

export const COMMANDS: ReadonlyMap<string, Command> = new Map(
  SECTIONS.flatMap((s) => s.commands).map((c) => [c.name, c]),
);

/** Groups ("endpoint") and the words people also type for them. */
const GROUP_ALIASES: Record<string, string> = {
  endpoints: 'endpoint',
  ep: 'endpoint',
  templates: 'template',
  tpl: 'template',
  volumes: 'volume',
  networkvolume: 'volume',
  registries: 'registry',
  secrets: 'secret',
  key: 'keys',
  requests: 'jobs',
};
const SUB_ALIASES: Record<string, string> = { ls: 'list', rm: 'delete', remove: 'delete', show: 'get' };

export const GROUPS: ReadonlySet<string> = new Set(
  [...COMMANDS.keys()].filter((n) => n.includes(' ')).map((n) => n.split(' ')[0]!),
);

export const groupCommands = (group: string): Command[] =>
  [...COMMANDS.values()].filter((c) => c.name.startsWith(`${group} `));

/**
 * Find the command named by the first words of argv. Returns the command and the remaining arguments; for a group
 * without (or with an unknown) subcommand, the group's name so that its help can be shown.
 */
export function lookup(argv: readonly string[]): { command?: Command; group?: string; word?: string; rest: string[] } {
  const [first = '', second = '', ...more] = argv;
  const word = GROUP_ALIASES[first] ?? first;
  if (GROUPS.has(word)) {
    const sub = SUB_ALIASES[second] ?? second;
    const command = COMMANDS.get(`${word} ${sub}`);
    return command ? { command, rest: more } : { group: word, word: second, rest: [second, ...more] };
  }
  const command = COMMANDS.get(word);
  return command ? { command, rest: argv.slice(1) } : { word: first, rest: argv.slice(1) };
}
