import { UsageError, type OptionSpecs } from '../args.ts';
import type { Context } from '../context.ts';

/** `--data`: any field the flags do not cover, as the REST body takes it. Flags given as well win. */
export const DATA_OPTION: OptionSpecs = {
  data: {
    type: 'string',
    value: '<json>',
    doc: 'More fields as a JSON object (or @file.json), as the REST API takes them; flags win',
  },
};

/**
 * Build a request body: `defaults` (the command's own choices, which --data may change), then `--data`, then the
 * fields from flags (undefined ones left out), each overriding the one before.
 */
export function body(
  ctx: Context,
  fields: Record<string, unknown>,
  defaults: Record<string, unknown> = {},
): Record<string, unknown> {
  const data = ctx.args.json('data', (p) => ctx.readFile(p)) ?? {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new UsageError('--data must be a JSON object', ctx.command.name);
  }
  const out: Record<string, unknown> = { ...defaults, ...(data as Record<string, unknown>) };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

/** A command line as an argv array: a JSON array as given, else split on whitespace ("node worker.ts"). */
export function argvOf(ctx: Context, name: string): string[] | undefined {
  const text = ctx.args.string(name);
  if (text === undefined) return undefined;
  if (text.trim().startsWith('[')) {
    const parsed = ctx.args.json(name, (p) => ctx.readFile(p));
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) {
      throw new UsageError(`--${name} must be a command or a JSON array of strings`, ctx.command.name);
    }
    return parsed;
  }
  return text.split(/\s+/).filter((s) => s !== '');
}

/** `--x` true, `--no-x` false, neither undefined. */
export function toggle(ctx: Context, name: string): boolean | undefined {
  if (ctx.args.flag(name) && ctx.args.flag(`no-${name}`)) {
    throw new UsageError(`--${name} and --no-${name} cannot be used together`, ctx.command.name);
  }
  return ctx.args.flag(name) ? true : ctx.args.flag(`no-${name}`) ? false : undefined;
}

/** A repeatable option as a list, or undefined when not given (so updates leave the field alone). */
export const listOf = (ctx: Context, name: string): string[] | undefined => {
  const v = ctx.args.list(name).flatMap((s) => s.split(',').filter((x) => x !== ''));
  return v.length > 0 ? v : undefined;
};

/** The one positional id of get/update/delete commands. */
export const idArg = (ctx: Context): string => ctx.positionals()[0]!;

/** Print a deleted resource's id (or `{"id","deleted":true}` with --json). */
export function deleted(ctx: Context, kind: string, id: string): void {
  if (ctx.out.json) ctx.out.data({ id, deleted: true });
  else ctx.out.line(`deleted ${kind} ${id}`);
}

/**
 * A secret the user gives as `--<name>` or, kept out of `ps`, on stdin with `--<name>-stdin`: exactly one of the two;
 * stdin loses one trailing newline (what `echo` adds); never empty.
 */
export async function secretOption(ctx: Context, name: string): Promise<string> {
  const a = ctx.args;
  if (a.has(name) === a.flag(`${name}-stdin`)) {
    throw new UsageError(`give exactly one of --${name} and --${name}-stdin`, ctx.command.name);
  }
  const value = a.flag(`${name}-stdin`) ? (await ctx.readStdin()).replace(/\r?\n$/, '') : a.required(name);
  if (value === '') throw new UsageError(`the ${name} is empty`, ctx.command.name);
  return value;
}
