import { afterAll, describe } from 'vitest';
import { openPostgresStore } from '../../src/store/index.ts';
import { dropSchemas, newSchema, PG_URL, pgUnavailable } from '../helpers/postgres.ts';
import { storeContract } from './contract.ts';
import { webhookStoreContract } from './contract-webhooks.ts';

// The same contract suites as SQLite, unchanged; each store gets its own schema (created by migrate()).
const unavailable = await pgUnavailable('Store contract on PostgreSQL');
afterAll(dropSchemas);

describe.skipIf(unavailable !== null)('postgres', () => {
  storeContract('postgres', async () => openPostgresStore({ url: PG_URL, schema: newSchema(), poolSize: 5 }));
  webhookStoreContract('postgres', async () => openPostgresStore({ url: PG_URL, schema: newSchema(), poolSize: 5 }));
});
