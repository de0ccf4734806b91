// The web console's browser harness, shared by test/e2e/console*.test.ts: Debian's Chromium driven by playwright-core,
// one persistent profile per file, and console/dist built when older than its sources.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { NODE, ROOT } from './processes.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);

/** Newest modification time of the files under `path`. */
function newest(path: string): number {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Build console/dist unless it is newer than every source it is built from (npm ci/install builds it too). */
export function ensureConsoleBuilt(): void {
  const index = join(ROOT, 'console/dist/index.html');
  const sources = ['console/src', 'console/index.html', 'console/vite.config.ts', 'console/public', 'src/sdk/client'];
  const built = existsSync(index) ? statSync(index).mtimeMs : 0;
  if (built > Math.max(...sources.map((s) => newest(join(ROOT, s))))) return;
  execFileSync(NODE, [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'console/vite.config.ts'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}

export interface ConsoleBrowser {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors, as they happen. */
  errors: string[];
  close(): Promise<void>;
}

/**
 * Headless Chromium with a fresh profile. The flags keep it off the network (this machine's is closed: without them
 * Chromium's background connections are refused, many at a time) and out of first-run and sync prompts.
 */
export async function launchConsoleBrowser(): Promise<ConsoleBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'wharf-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: { width: 1280, height: 860 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return {
    context,
    page,
    errors,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
