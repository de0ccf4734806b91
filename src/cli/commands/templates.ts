import type { Template, TemplateCreateInput, TemplateUpdateInput } from '../../sdk/client/index.ts';
import type { OptionSpecs } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { argvOf, body, DATA_OPTION, deleted, idArg, listOf, toggle } from './body.ts';

const FIELDS: OptionSpecs = {
  name: { type: 'string', value: '<name>', doc: 'Unique name' },
  image: {
    type: 'string',
    value: '<image>',
    doc: 'Container image, or file:///path for a directory the process executor runs',
  },
  'start-cmd': { type: 'string', value: '<cmd>', doc: 'Command to start (split on spaces, or a JSON array)' },
  entrypoint: { type: 'string', value: '<cmd>', doc: 'Entrypoint (split on spaces, or a JSON array)' },
  env: { type: 'string', multiple: true, value: '<KEY=VALUE>', doc: 'Environment variable' },
  category: { type: 'string', value: '<c>', doc: 'NVIDIA, AMD or CPU' },
  'registry-auth': { type: 'string', value: '<id>', doc: 'Registry credentials to pull the image with' },
  'container-disk': { type: 'string', value: '<GB>', doc: 'Container disk size' },
  'volume-size': { type: 'string', value: '<GB>', doc: 'Volume size' },
  'volume-mount': { type: 'string', value: '<path>', doc: 'Where the volume is mounted' },
  port: { type: 'string', multiple: true, value: '<port/proto>', doc: 'Exposed port, e.g. 8000/http' },
  readme: { type: 'string', value: '<text>', doc: 'Readme (markdown)' },
  public: { type: 'boolean', doc: 'Make the template public' },
  'no-public': { type: 'boolean', doc: 'Make the template private' },
  ...DATA_OPTION,
};

/** Update takes every field but the category, which the REST API sets on create only. */
const UPDATE_FIELDS: OptionSpecs = Object.fromEntries(Object.entries(FIELDS).filter(([k]) => k !== 'category'));

function fields(ctx: Context, create: boolean): Record<string, unknown> {
  const a = ctx.args;
  return body(
    ctx,
    {
      name: create ? a.required('name') : a.string('name'),
      imageName: create ? a.required('image') : a.string('image'),
      dockerStartCmd: argvOf(ctx, 'start-cmd'),
      dockerEntrypoint: argvOf(ctx, 'entrypoint'),
      env: a.pairs('env'),
      category: create ? a.oneOf('category', ['NVIDIA', 'AMD', 'CPU']) : undefined,
      containerRegistryAuthId: a.string('registry-auth'),
      containerDiskInGb: a.int('container-disk', { min: 0 }),
      volumeInGb: a.int('volume-size', { min: 0 }),
      volumeMountPath: a.string('volume-mount'),
      ports: listOf(ctx, 'port'),
      readme: a.string('readme'),
      isPublic: toggle(ctx, 'public'),
    },
    // A default, not a flag: `--data '{"isServerless": false}'` makes a pod template, as the help says.
    create ? { isServerless: true } : {},
  );
}

function printTemplate(ctx: Context, t: Template): void {
  if (ctx.out.json) return ctx.out.data(t);
  ctx.out.fields([
    ['id', t.id],
    ['name', t.name],
    ['image', t.imageName],
    ['category', t.category],
    ['entrypoint', t.dockerEntrypoint.join(' ')],
    ['start cmd', t.dockerStartCmd.join(' ')],
    ['env', Object.keys(t.env).length ? Object.entries(t.env).map(([k, v]) => `${k}=${v}`) : null],
    ['registry auth', t.containerRegistryAuthId],
    ['disk', `${t.containerDiskInGb} GB`],
    ['volume', t.volumeInGb ? `${t.volumeInGb} GB at ${t.volumeMountPath}` : null],
    ['ports', t.ports],
    ['serverless', t.isServerless],
    ['public', t.isPublic],
  ]);
}

const group = (ctx: Context) => ctx.client().templates;

export const templateCommands: Command[] = [
  {
    name: 'template create',
    summary: 'Create a template: the image and command workers run',
    usage: '--name <name> --image <image> [options]',
    options: FIELDS,
    details: ['Templates made here are serverless templates (isServerless true) unless --data says otherwise.'],
    examples: [
      'wharf template create --name echo --image file://$PWD/examples/echo-ts --start-cmd "node worker.ts"',
      'wharf template create --name sd --image ghcr.io/me/sd:1.2 --registry-auth cm3x… --env MODEL=xl',
    ],
    async run(ctx) {
      const input = fields(ctx, true) as unknown as TemplateCreateInput;
      printTemplate(ctx, await group(ctx).create(input));
    },
  },
  {
    name: 'template list',
    summary: 'List your templates',
    async run(ctx) {
      const list = await group(ctx).list();
      if (ctx.out.json) return ctx.out.data(list);
      ctx.out.table(list, [
        { header: 'ID', value: (t) => t.id },
        { header: 'NAME', value: (t) => t.name },
        { header: 'IMAGE', value: (t) => t.imageName },
        { header: 'START CMD', value: (t) => t.dockerStartCmd.join(' ') },
        { header: 'CATEGORY', value: (t) => t.category },
      ]);
    },
  },
  {
    name: 'template get',
    summary: "Show a template's settings",
    args: ['<template>'],
    async run(ctx) {
      printTemplate(ctx, await group(ctx).get(idArg(ctx)));
    },
  },
  {
    name: 'template update',
    summary: "Change a template's settings (only the fields given)",
    args: ['<template>'],
    options: UPDATE_FIELDS,
    async run(ctx) {
      const patch = fields(ctx, false) as TemplateUpdateInput;
      printTemplate(ctx, await group(ctx).update(idArg(ctx), patch));
    },
  },
  {
    name: 'template delete',
    summary: 'Delete a template no endpoint uses',
    args: ['<template>'],
    async run(ctx) {
      const id = idArg(ctx);
      await group(ctx).delete(id);
      deleted(ctx, 'template', id);
    },
  },
];
