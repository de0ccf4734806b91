import type { Secret } from '../../sdk/client/index.ts';
import type { Command, Context } from '../context.ts';
import { deleted, idArg, secretOption } from './body.ts';

function printSecret(ctx: Context, s: Secret): void {
  if (ctx.out.json) return ctx.out.data(s);
  ctx.out.fields([
    ['id', s.id],
    ['name', s.name],
    ['description', s.description],
  ]);
}

const secrets = (ctx: Context) => ctx.client().secrets;

export const secretCommands: Command[] = [
  {
    name: 'secret create',
    summary: 'Store a secret for env values: {{ RUNPOD_SECRET_<name> }} (encrypted; never shown again)',
    usage: '--name <name> (--value <v> | --value-stdin) [--description <text>]',
    options: {
      name: { type: 'string', value: '<name>', doc: 'Name: letters, digits, _ and - (unique)' },
      value: { type: 'string', value: '<v>', doc: 'The secret value (visible in ps; prefer stdin)' },
      'value-stdin': { type: 'boolean', doc: 'Read the value from stdin' },
      description: { type: 'string', value: '<text>', doc: 'Description' },
    },
    examples: ['echo "$HF_TOKEN" | wharf secret create --name hf --value-stdin --description "read token"'],
    async run(ctx) {
      const a = ctx.args;
      const value = await secretOption(ctx, 'value');
      const description = a.string('description');
      const input = { name: a.required('name'), value, ...(description !== undefined ? { description } : {}) };
      printSecret(ctx, await secrets(ctx).create(input));
    },
  },
  {
    name: 'secret list',
    summary: 'List your secrets (names and descriptions, never the values)',
    async run(ctx) {
      const list = await secrets(ctx).list();
      if (ctx.out.json) return ctx.out.data(list);
      ctx.out.table(list, [
        { header: 'ID', value: (s) => s.id },
        { header: 'NAME', value: (s) => s.name },
        { header: 'DESCRIPTION', value: (s) => s.description },
      ]);
    },
  },
  {
    name: 'secret delete',
    summary: 'Delete a secret (running workers keep it; new starts that reference it fail)',
    args: ['<secret>'],
    async run(ctx) {
      const id = idArg(ctx);
      await secrets(ctx).delete(id);
      deleted(ctx, 'secret', id);
    },
  },
];
