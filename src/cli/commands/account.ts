import { cliConfigPath, removeCliFile, writeCliFile } from '../../config/index.ts';
import { isWharfApiError, WharfClient } from '../../sdk/client/index.ts';
import { UsageError } from '../args.ts';
import type { Command, Context } from '../context.ts';
import { listOf } from './body.ts';

/** Enough of a key to recognise it, never enough to use it. */
export const maskKey = (key: string): string => (key.length <= 12 ? '****' : `${key.slice(0, 10)}…`);

/** Read a secret from the terminal without echoing it. */
async function promptHidden(ctx: Context, prompt: string): Promise<string> {
  const stdin = ctx.io.stdin as NodeJS.ReadStream;
  ctx.io.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  try {
    return await new Promise<string>((resolve, reject) => {
      let text = '';
      const onData = (chunk: string): void => {
        for (const ch of chunk) {
          if (ch === '\r' || ch === '\n') {
            stdin.off('data', onData);
            resolve(text);
            return;
          }
          if (ch === '\u0003') {
            stdin.off('data', onData);
            reject(new UsageError('login cancelled'));
            return;
          }
          text = ch === '\u007f' ? text.slice(0, -1) : text + ch;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    ctx.io.stderr.write('\n');
  }
}

export const loginCommand: Command = {
  name: 'login',
  summary: 'Check a server URL and API key, and save them for later commands',
  usage: '[--url <url>] [--api-key <key>] [--no-verify]',
  options: { 'no-verify': { type: 'boolean', doc: 'Save without checking the key against the server' } },
  details: [
    'The key comes from --api-key, else WHARF_API_KEY, else stdin (a prompt on a terminal, or a pipe).',
    'It is saved with the URL in $XDG_CONFIG_HOME/wharf/config.json (default ~/.config/wharf/config.json),',
    'mode 0600. Flags and WHARF_URL / WHARF_API_KEY still win over the file.',
  ],
  examples: [
    'wharf login --url http://127.0.0.1:8000 --api-key "$(cat .wharf/admin-key)"',
    'cat .wharf/admin-key | wharf login --url https://wharf.example.com',
  ],
  async run(ctx) {
    const conn = ctx.connection();
    let key = conn.sources.apiKey === 'flag' || conn.sources.apiKey === 'env' ? conn.apiKey : null;
    if (!key) key = ctx.io.stdin.isTTY ? await promptHidden(ctx, 'API key: ') : await ctx.readStdin();
    key = key.trim();
    if (key === '') throw new UsageError('no API key given', 'login');
    if (!ctx.args.flag('no-verify')) {
      try {
        await new WharfClient({ baseUrl: conn.url, apiKey: key, retries: 0 }).endpoints.list();
      } catch (error) {
        // A restricted key may not list endpoints, but the server knew it: that is a valid key.
        if (!isWharfApiError(error, 'FORBIDDEN')) throw error;
      }
    }
    writeCliFile(conn.configPath, { url: conn.url, apiKey: key });
    if (ctx.out.json) ctx.out.data({ url: conn.url, apiKey: maskKey(key), configPath: conn.configPath });
    else ctx.out.line(`logged in to ${conn.url} with key ${maskKey(key)}; saved to ${conn.configPath}`);
  },
};

export const logoutCommand: Command = {
  name: 'logout',
  summary: 'Forget the saved URL and API key (delete the login file)',
  local: true,
  async run(ctx) {
    // Not connection(): logout must work even when the file is unreadable.
    const path = cliConfigPath(ctx.io.env);
    const removed = removeCliFile(path);
    if (ctx.out.json) ctx.out.data({ configPath: path, removed });
    else ctx.out.line(removed ? `removed ${path}` : `not logged in (no ${path})`);
  },
};

export const configCommand: Command = {
  name: 'config',
  summary: 'Show which server and key commands use, and where each came from',
  details: ['Sources: flag, env (WHARF_URL / WHARF_API_KEY), file (wharf login) or default.'],
  async run(ctx) {
    const c = ctx.connection();
    const view = {
      url: c.url,
      urlSource: c.sources.url,
      apiKey: c.apiKey ? maskKey(c.apiKey) : null,
      apiKeySource: c.apiKey ? c.sources.apiKey : null,
      configPath: c.configPath,
    };
    if (ctx.out.json) return ctx.out.data(view);
    ctx.out.fields([
      ['url', `${view.url} (${view.urlSource})`],
      ['api key', view.apiKey ? `${view.apiKey} (${view.apiKeySource})` : 'none: run "wharf login"'],
      ['config file', view.configPath],
    ]);
  },
};

export const keyCommands: Command[] = [
  {
    name: 'keys create',
    summary: 'Create an API key (shown this once)',
    usage: '--name <name> [--scope all|read|restricted] [--endpoint <id>...]',
    options: {
      name: { type: 'string', value: '<name>', doc: 'What the key is for' },
      scope: { type: 'string', value: '<scope>', doc: 'all (default), read (read-only) or restricted' },
      endpoint: {
        type: 'string',
        multiple: true,
        value: '<id>',
        doc: 'Endpoint a restricted key may use (or a comma-separated list)',
      },
    },
    examples: ['wharf keys create --name ci --scope restricted --endpoint abc123def456gh'],
    async run(ctx) {
      const scope = ctx.args.oneOf('scope', ['all', 'read', 'restricted'] as const);
      // Repeated, or a comma-separated list, as --gpu and --volume take them.
      const endpointIds = listOf(ctx, 'endpoint') ?? [];
      const name = ctx.args.required('name');
      const k = await ctx.client().keys.create({
        name,
        ...(scope ? { scope } : {}),
        ...(endpointIds.length ? { endpointIds } : {}),
      });
      if (ctx.out.json) return ctx.out.data(k);
      ctx.out.fields([
        ['id', k.id],
        ['name', k.name],
        ['scope', k.scope],
        ['endpoints', k.endpointIds],
        ['key', ctx.out.c.bold(k.key)],
      ]);
      ctx.out.note(ctx.out.ce.yellow('The key is shown this once: store it now.'));
    },
  },
  {
    name: 'keys list',
    summary: 'List your API keys (their prefixes, never the keys)',
    async run(ctx) {
      const list = await ctx.client().keys.list();
      const { out } = ctx;
      if (out.json) return out.data(list);
      out.table(list, [
        { header: 'ID', value: (k) => k.id },
        { header: 'NAME', value: (k) => k.name },
        { header: 'PREFIX', value: (k) => k.prefix },
        { header: 'SCOPE', value: (k) => k.scope },
        { header: 'ENDPOINTS', value: (k) => k.endpointIds },
        { header: 'CREATED', value: (k) => k.createdAt },
        { header: 'REVOKED', value: (k) => k.revokedAt, paint: (s) => (s === '-' ? s : out.c.red(s)) },
      ]);
    },
  },
  {
    name: 'keys revoke',
    summary: 'Revoke an API key at once',
    args: ['<key-id>'],
    async run(ctx) {
      const [id] = ctx.positionals() as [string];
      await ctx.client().keys.revoke(id);
      if (ctx.out.json) ctx.out.data({ id, revoked: true });
      else ctx.out.line(`revoked key ${id}`);
    },
  },
];
