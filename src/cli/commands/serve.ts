import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, SETTINGS } from '../../config/index.ts';
import { GPU_TYPE_IDS } from '../../domain/index.ts';
import type { Command } from '../context.ts';

/** Listed in `wharf --help`; the dispatcher hands `serve` its raw arguments (the server's flags are SETTINGS). */
export const serveCommand: Command = {
  name: 'serve',
  summary: 'Run the server in the foreground (what npm start runs)',
  usage: '[--port 8000] [--host 127.0.0.1] [--data-dir ./.wharf] [--examples] ...',
  local: true,
  // `wharf help serve` shows what `wharf serve --help` does: the client commands' options are no flags of serve.
  help: () => serveHelp(),
  run: async () => 2,
};

/** Every setting with its flag and variable, where they come from, and the GPU type ids --gpus takes. */
export function serveHelp(): string {
  const row = (flag: string, env: string, doc: string) => `  ${flag.padEnd(28)} ${env.padEnd(30)} ${doc}`;
  const lines = SETTINGS.map((s) => row(s.flag, s.env, `${s.doc} (default ${JSON.stringify(s.default)})`));
  return [
    'wharf serve — run the server in the foreground',
    '',
    'Usage:',
    `  wharf serve ${serveCommand.usage}`,
    '',
    'Each setting comes from its flag, else its WHARF_* variable, else the config file, else its default.',
    '',
    'Flags and environment variables:',
    row(
      '--config <file>',
      'WHARF_CONFIG',
      'JSON config file of settings: keys are the flags in camelCase ({"port": 8000, "leaseMs": 5000}).',
    ),
    ...lines,
    '',
    gpuTypesHelp(),
  ].join('\n');
}

/** `wharf serve`: resolve the server config (flag > env > file > default), start, stop on SIGTERM/SIGINT. */
export async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(serveHelp());
    return;
  }
  // A setting that loadConfig or, before anything is written, startServer refuses: one message, exit 2.
  const refuse: (error: unknown) => never = (error) => {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`wharf: ${error.message}\n`);
    process.exit(2);
  };
  let config;
  try {
    config = loadConfig({ argv });
  } catch (error) {
    refuse(error);
  }
  // Loaded here, not at the top: the client commands start in a fraction of the time without the server's modules.
  const { ensureExamples, EXAMPLES } = await import('../examples.ts');
  const { ListenError, startServer } = await import('../server.ts');
  const server = await startServer(config).catch((error: unknown) => {
    // A busy port is no mistake in the settings (the same ones work once it is free): exit 1.
    if (!(error instanceof ListenError)) return refuse(error);
    process.stderr.write(`wharf: ${error.message}\n`);
    process.exit(1);
  });
  if (server.generatedAdminKey) {
    process.stdout.write(
      `\nAdmin API key (shown once, also saved to ${config.dataDir}/admin-key with mode 0600):\n  ${server.generatedAdminKey}\n\n`,
    );
  }
  if (config.examples) {
    const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
    await ensureExamples(server, repoRoot);
    const list = EXAMPLES.map((e) => `  ${e.name.padEnd(12)} ${server.url}/v2/${e.endpointId}`).join('\n');
    process.stdout.write(`Example endpoints:\n${list}\n`);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`wharf: ${signal} received, shutting down\n`);
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`wharf: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Printed once the handlers are in: whoever waits for this line may signal at once and get a clean shutdown.
  process.stdout.write(`wharf listening on ${server.url}  (queue API ${server.url}/v2, REST ${server.url}/v1)\n`);
}

/** The names --gpus takes (the double-spaced twins of some ids left out), wrapped for a terminal. */
function gpuTypesHelp(): string {
  const names = GPU_TYPE_IDS.filter((id) => !id.includes('  ')).sort();
  const lines = [
    "GPU type ids for --gpus ('<type>:<count>,…'; case, punctuation and NVIDIA/GeForce/Tesla may differ):",
  ];
  let line = '';
  for (const name of names) {
    if (line !== '' && line.length + name.length + 2 > 110) {
      lines.push(`  ${line},`);
      line = '';
    }
    line = line === '' ? name : `${line}, ${name}`;
  }
  lines.push(`  ${line}`);
  return `${lines.join('\n')}\n`;
}
