import type { NetworkVolume, RegistryAuth } from '../../sdk/client/index.ts';
import { UsageError } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { deleted, idArg, secretOption } from './body.ts';

function printVolume(ctx: Context, v: NetworkVolume): void {
  if (ctx.out.json) return ctx.out.data(v);
  ctx.out.fields([
    ['id', v.id],
    ['name', v.name],
    ['size', `${v.size} GB`],
    ['data center', v.dataCenterId],
  ]);
}

const volumes = (ctx: Context) => ctx.client().volumes;

export const volumeCommands: Command[] = [
  {
    name: 'volume create',
    summary: 'Create a network volume (a directory shared by the workers that mount it)',
    usage: '--name <name> --size <GB> --data-center <id>',
    options: {
      name: { type: 'string', value: '<name>', doc: 'Name' },
      size: { type: 'string', value: '<GB>', doc: 'Size in GB' },
      'data-center': { type: 'string', value: '<id>', doc: 'Data center, e.g. EU-RO-1 (the server default)' },
    },
    async run(ctx) {
      const a = ctx.args;
      const name = a.required('name');
      const size = a.int('size', { min: 0 });
      if (size === undefined) throw new UsageError('--size is required', ctx.command.name);
      const v = await volumes(ctx).create({ name, size, dataCenterId: a.required('data-center') });
      printVolume(ctx, v);
    },
  },
  {
    name: 'volume list',
    summary: 'List your network volumes',
    async run(ctx) {
      const list = await volumes(ctx).list();
      if (ctx.out.json) return ctx.out.data(list);
      ctx.out.table(list, [
        { header: 'ID', value: (v) => v.id },
        { header: 'NAME', value: (v) => v.name },
        { header: 'SIZE', value: (v) => `${v.size} GB` },
        { header: 'DATA CENTER', value: (v) => v.dataCenterId },
      ]);
    },
  },
  {
    name: 'volume get',
    summary: 'Show a network volume',
    args: ['<volume>'],
    async run(ctx) {
      printVolume(ctx, await volumes(ctx).get(idArg(ctx)));
    },
  },
  {
    name: 'volume update',
    summary: 'Rename a network volume or make it larger',
    args: ['<volume>'],
    options: {
      name: { type: 'string', value: '<name>', doc: 'New name' },
      size: { type: 'string', value: '<GB>', doc: 'New size in GB (it may only grow)' },
    },
    async run(ctx) {
      const id = idArg(ctx);
      const name = ctx.args.string('name');
      const size = ctx.args.int('size', { min: 0 });
      if (name === undefined && size === undefined) throw new UsageError('give --name or --size', ctx.command.name);
      if (name?.trim() === '') throw new UsageError('--name must not be empty', ctx.command.name);
      printVolume(
        ctx,
        await volumes(ctx).update(id, {
          ...(name !== undefined ? { name } : {}),
          ...(size !== undefined ? { size } : {}),
        }),
      );
    },
  },
  {
    name: 'volume delete',
    summary: 'Delete a network volume no endpoint uses, and its files',
    args: ['<volume>'],
    async run(ctx) {
      const id = idArg(ctx);
      await volumes(ctx).delete(id);
      deleted(ctx, 'volume', id);
    },
  },
];

function printAuth(ctx: Context, r: RegistryAuth): void {
  if (ctx.out.json) return ctx.out.data(r);
  ctx.out.fields([
    ['id', r.id],
    ['name', r.name],
  ]);
}

const auths = (ctx: Context) => ctx.client().registryAuths;

export const registryCommands: Command[] = [
  {
    name: 'registry create',
    summary: 'Store credentials for a private container registry (encrypted; never shown again)',
    usage: '--name <name> --username <user> (--password <pw> | --password-stdin)',
    options: {
      name: { type: 'string', value: '<name>', doc: 'Name' },
      username: { type: 'string', value: '<user>', doc: 'Registry user name' },
      password: { type: 'string', value: '<pw>', doc: 'Registry password or token (visible in ps; prefer stdin)' },
      'password-stdin': { type: 'boolean', doc: 'Read the password from stdin' },
    },
    examples: ['echo "$GHCR_TOKEN" | wharf registry create --name ghcr --username me --password-stdin'],
    async run(ctx) {
      const a = ctx.args;
      const password = await secretOption(ctx, 'password');
      const input = { name: a.required('name'), username: a.required('username'), password };
      printAuth(ctx, await auths(ctx).create(input));
    },
  },
  {
    name: 'registry list',
    summary: 'List your registry credentials (names only)',
    async run(ctx) {
      const list = await auths(ctx).list();
      if (ctx.out.json) return ctx.out.data(list);
      ctx.out.table(list, [
        { header: 'ID', value: (r) => r.id },
        { header: 'NAME', value: (r) => r.name },
      ]);
    },
  },
  {
    name: 'registry get',
    summary: 'Show a registry credential (id and name)',
    args: ['<auth>'],
    async run(ctx) {
      printAuth(ctx, await auths(ctx).get(idArg(ctx)));
    },
  },
  {
    name: 'registry delete',
    summary: 'Delete a registry credential no template uses',
    args: ['<auth>'],
    async run(ctx) {
      const id = idArg(ctx);
      await auths(ctx).delete(id);
      deleted(ctx, 'registry auth', id);
    },
  },
];
