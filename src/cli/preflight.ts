import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { ConfigError, type Config } from '../config/index.ts';
import { DEFAULT_PRICES, parsePrices, type PriceTable } from '../domain/index.ts';
import { decodeSecretKey } from '../engine/index.ts';
import { isCudaVersion, parseDeclaredGpus, type Gpu } from '../fleet/index.ts';
import { parseCorsOrigins, parseRateLimitOverrides, type CorsOrigins } from '../http/index.ts';

/** What checkServerConfig read from the settings it checked, so that startServer does not read them again. */
export interface CheckedConfig {
  /** 'auto': ask nvidia-smi at start; otherwise the declared GPUs ([] for none). */
  gpus: Gpu[] | 'auto';
  /** The defaults, overlaid with the file named by --prices. */
  prices: PriceTable;
  /** Origins allowed to call from a browser; null = none. */
  corsOrigins: CorsOrigins | null;
}

/**
 * The settings that only the modules using them can judge, checked before startServer creates or writes anything
 * (the data directory, the database, secret.key, the admin key): a mistake is a ConfigError, reported like those of
 * loadConfig (one message, exit 2), all of them at once. Found later, such a mistake left a generated admin key on
 * disk that was never printed.
 */
export function checkServerConfig(config: Config): CheckedConfig {
  const problems: string[] = [];
  const check = <T>(setting: string, read: () => T, fallback: T): T => {
    try {
      return read();
    } catch (error) {
      problems.push(`${setting ? `${setting}: ` : ''}${(error as Error).message}`);
      return fallback;
    }
  };
  const gpus = config.gpus === 'auto' ? 'auto' : check('--gpus / WHARF_GPUS', () => parseDeclaredGpus(config.gpus), []);
  if (config.cudaVersion !== null && !isCudaVersion(config.cudaVersion)) {
    problems.push(`--cuda-version / WHARF_CUDA_VERSION must be a version like 12.4, got '${config.cudaVersion}'`);
  }
  const prices = config.prices
    ? check(`--prices / WHARF_PRICES file ${config.prices}`, () => readPrices(config.prices!), DEFAULT_PRICES)
    : DEFAULT_PRICES;
  if (config.secretKey) check('', () => decodeSecretKey(config.secretKey!), null);
  if (config.store !== 'sqlite') {
    if (!/^postgres(ql)?:\/\/./.test(config.store)) {
      problems.push(
        `--store / WHARF_STORE must be sqlite or a postgres:// URL, got '${withoutPassword(config.store)}'`,
      );
    } else if (!config.secretKey) {
      // Every node must open the secrets another node sealed (registry credentials, s3Config, webhook secrets): a
      // per-node generated key cannot.
      problems.push('--store postgres://… needs --secret-key / WHARF_SECRET_KEY, the same on every node');
    }
  }
  check(
    '--rate-limit-overrides / WHARF_RATE_LIMIT_OVERRIDES',
    () => parseRateLimitOverrides(config.rateLimitOverrides),
    {},
  );
  const corsOrigins =
    config.corsOrigins === null
      ? null
      : check('--cors-origins / WHARF_CORS_ORIGINS', () => parseCorsOrigins(config.corsOrigins!), null);
  if (problems.length > 0) throw new ConfigError(problems);
  return { gpus, prices, corsOrigins };
}

/**
 * A URL as a refusal may quote it: the password of its user info masked (everything up to the last `@`, so a
 * password holding an unescaped `@` or `/` is masked whole). The refusal goes to stderr, and from there to a log.
 */
function withoutPassword(url: string): string {
  return url.replace(/(\/\/[^/:@\s]*):\S*@/, '$1:***@');
}

function readPrices(path: string): PriceTable {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new Error(e.code === 'ENOENT' ? 'no such file' : `cannot read it: ${e.message}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  return parsePrices(json);
}

/** The server could not listen on its address (a busy port…): one line for people, exit status 1. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

/** A listen error in words: what is wrong with --host / --port, or null for one without a known cause. */
export function listenProblem(error: unknown, host: string, port: number): string | null {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (code === 'EADDRINUSE') {
    return `port ${port} is in use on ${host}: stop what listens there or choose another port (--port / WHARF_PORT)`;
  }
  if (code === 'EACCES') {
    return `port ${port} on ${host} needs privileges this user does not have (ports below 1024): choose another port`;
  }
  if (['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) {
    return `--host / WHARF_HOST ${host} is not an address of this machine`;
  }
  return null;
}

/**
 * Listen on the server's address for a moment, before anything is written: a busy port is then reported with the
 * data directory untouched (and no admin key generated that nobody is shown). Port 0 (any free port) always fits.
 * Another process may still take the port before the server listens; startServer reports that the same way.
 */
export async function checkAddress(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    const problem = listenProblem(error, host, port);
    if (problem) throw new ListenError(problem, { cause: error });
    throw error;
  } finally {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}
