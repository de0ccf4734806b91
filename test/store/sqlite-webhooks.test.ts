import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { webhookStoreContract } from './contract-webhooks.ts';

const dir = mkdtempSync(join(tmpdir(), 'wharf-store-hooks-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

webhookStoreContract('sqlite', async () => openSqliteStore({ path: join(dir, `hooks-${n++}.db`) }));
