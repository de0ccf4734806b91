// Secrets at rest, on both stores: a job's s3Config (S3 access keys) and a user's webhook signing secret are sealed
// with the server's secret key (engine/secrets.ts) before they reach the database. The worker still takes the
// s3Config it was given, deliveries are signed with the secret its user reads, rows written in plain text by earlier
// versions keep working, and a value sealed with another key fails its own record with a clear error.

import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { dropSchemas, newSchema, pgUnavailable, schemaUrl } from '../helpers/postgres.ts';
import { postgresRaw, sqliteRaw, type RawDb } from '../helpers/raw-db.ts';
import { createEndpoint, protocolWorker, startTestServer, type TestServer } from '../helpers/server.ts';
import { newJob } from '../store/records.ts';

const unavailable = await pgUnavailable('secrets at rest on PostgreSQL');
const stores = unavailable === null ? ['sqlite', 'postgres'] : ['sqlite'];

/** A webhook receiver on loopback that answers 200 and keeps what it got. */
class Receiver {
  readonly received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  }

  forJob(jobId: string) {
    return this.received.filter((r) => r.headers['x-wharf-job-id'] === jobId);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** The documented check (docs/webhooks.md): HMAC-SHA256 over "<timestamp>.<raw body>" with the secret. */
function signatureOk(secret: string, r: { headers: IncomingHttpHeaders; body: string }): boolean {
  const mac = createHmac('sha256', secret).update(`${r.headers['x-wharf-timestamp']}.${r.body}`).digest('hex');
  return r.headers['x-wharf-signature'] === `sha256=${mac}`;
}

const s3Config = (secret: string) => ({
  accessId: `AKIA${randomBytes(6).toString('hex')}`,
  accessSecret: secret,
  bucketName: 'bucket',
  endpointUrl: 'https://s3.example.com',
  objectPath: 'out/',
});

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(async () => {
  await receiver.close();
  await dropSchemas();
});

describe.each(stores)('%s store', (store) => {
  let t: TestServer;
  let raw: RawDb;
  /** How to start a server on this test's database: the same data directory, or the same PostgreSQL schema. */
  let restart: (secretKey: string) => Promise<TestServer>;
  let worker = 0;
  let dataDir: string | undefined;

  beforeAll(async () => {
    const fast = { webhookRetryDelayMs: 200, takeWaitMs: 1000 };
    if (store === 'sqlite') {
      // A data directory of our own: a test server removes the one it made when it closes.
      dataDir = mkdtempSync(join(tmpdir(), 'wharf-secrets-'));
      t = await startTestServer({ ...fast, dataDir });
      raw = sqliteRaw(dataDir);
      restart = (secretKey) => startTestServer({ ...fast, dataDir, secretKey, acceptNewSecretKey: true });
    } else {
      const schema = newSchema();
      const url = schemaUrl(schema, 4);
      t = await startTestServer({ ...fast, store: url, secretKey: randomBytes(32).toString('base64') });
      raw = postgresRaw(schema);
      restart = (secretKey) => startTestServer({ ...fast, store: url, secretKey, acceptNewSecretKey: true });
    }
  });
  afterAll(async () => {
    await t?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const newWorker = (ep: string) => protocolWorker(t, ep, `w-secret-${++worker}`);

  it("a job's s3Config is never written in plain text; the worker takes the object it was given", async () => {
    const ep = await createEndpoint(t);
    const queued = s3Config(`queued-${randomBytes(12).toString('hex')}`);
    const handed = s3Config(`handed-${randomBytes(12).toString('hex')}`);
    // Queued, then taken from the queue (a batch take).
    const a = await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 }, s3Config: queued });
    expect(a.status, a.text).toBe(200);
    const batch = await newWorker(ep).takeBatch(5);
    expect(batch.json).toEqual([{ id: a.json.id, input: { n: 1 }, s3Config: queued }]);
    // Handed by the submission straight to a take waiting for work (the path that skips the queue).
    const take = newWorker(ep).take();
    await new Promise((r) => setTimeout(r, 200));
    const b = await t.api('POST', `/v2/${ep}/run`, { input: { n: 2 }, s3Config: handed });
    expect((await take).json).toEqual({ id: b.json.id, input: { n: 2 }, s3Config: handed });

    for (const cfg of [queued, handed]) {
      expect(await raw.holds(cfg.accessSecret), `${store} holds ${cfg.accessSecret}`).toBe(false);
      expect(await raw.holds(cfg.accessId)).toBe(false);
    }
    const stored = await raw.column('jobs', 's3_config', a.json.id);
    expect(stored).not.toBeNull();
    expect(stored).not.toContain('bucket');
  });

  it('a job without s3Config stores none', async () => {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 } });
    expect(await raw.column('jobs', 's3_config', run.json.id)).toBeNull();
    expect((await newWorker(ep).take()).json).toEqual({ id: run.json.id, input: { n: 1 } });
  });

  it('a job stored with a plain s3Config (an earlier version) is taken with it', async () => {
    const ep = await createEndpoint(t);
    const legacy = s3Config('legacy-plain');
    const job = await t.server.store.submitJob(
      newJob(ep, { s3ConfigSealed: JSON.stringify(legacy), createdAt: Date.now() }),
    );
    expect((await newWorker(ep).take()).json).toMatchObject({ id: job.id, s3Config: legacy });
  });

  it('the webhook secret is never written in plain text; deliveries are signed with the one its user reads', async () => {
    const secret = (await t.api('GET', '/v1/webhook-secret')).json.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(await t.api('GET', '/v1/webhook-secret')).toMatchObject({ json: { secret } });
    const rotated = (await t.api('POST', '/v1/webhook-secret')).json.secret as string;
    expect(rotated).not.toBe(secret);
    expect((await t.api('GET', '/v1/webhook-secret')).json.secret).toBe(rotated);
    for (const s of [secret, rotated]) expect(await raw.holds(s), `${store} holds the secret`).toBe(false);
    expect(await raw.column('users', 'doc', t.server.adminUserId)).not.toContain('whsec_');

    const id = await deliveredJob();
    expect(signatureOk(rotated, receiver.forJob(id)[0]!)).toBe(true);
  });

  it('a user created through the API gets a sealed secret too', async () => {
    const user = await t.api('POST', '/v1/users', { name: `sealed-${worker}` });
    expect(user.status, user.text).toBe(200);
    const secret = (await t.api('GET', '/v1/webhook-secret', undefined, { key: user.json.key })).json.secret;
    expect(secret).toMatch(/^whsec_/);
    expect(await raw.holds(secret)).toBe(false);
    expect(await raw.column('users', 'doc', user.json.id)).not.toContain('whsec_');
  });

  it('a plain webhook secret (an earlier version) still signs, is read back, and is sealed on first use', async () => {
    const legacy = `whsec_legacy${randomBytes(8).toString('hex')}`;
    await t.server.store.setWebhookSecret(t.server.adminUserId, legacy);
    expect(await raw.column('users', 'doc', t.server.adminUserId)).toContain(legacy);
    expect((await t.api('GET', '/v1/webhook-secret')).json.secret).toBe(legacy);
    expect(await raw.column('users', 'doc', t.server.adminUserId)).not.toContain(legacy);
    const id = await deliveredJob();
    expect(signatureOk(legacy, receiver.forJob(id)[0]!)).toBe(true);
    expect((await t.api('GET', '/v1/webhook-secret')).json.secret).toBe(legacy);
  });

  it('values sealed with another secret key fail their own record, clearly; the server goes on', async () => {
    const ep = await createEndpoint(t);
    const sealed = await t.api('POST', `/v2/${ep}/run`, {
      input: { n: 1 },
      webhook: receiver.url,
      s3Config: s3Config('other-key'),
    });
    const plain = await t.api('POST', `/v2/${ep}/run`, { input: { n: 2 } });
    await t.close();
    // The key is lost for good: the server is told to start with a new one (it refuses otherwise).
    t = await restart(randomBytes(32).toString('base64'));

    // The job whose s3Config cannot be opened fails with a reason; the next job is taken as usual.
    const w = newWorker(ep);
    expect((await w.take()).json).toEqual({ id: plain.json.id, input: { n: 2 } });
    const status = await t.api('GET', `/v2/${ep}/status/${sealed.json.id}`);
    expect(status.json).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/s3Config.*secret key/) });
    // Its webhook cannot be signed: the attempt says why (and nothing unsigned is sent).
    await vi.waitFor(async () => {
      const log = await t.api('GET', `/v2/${ep}/webhooks/${sealed.json.id}`);
      expect(log.json.deliveries[0]?.attempts[0]?.error).toMatch(/webhook secret.*secret key/);
    });
    expect(receiver.forJob(sealed.json.id)).toEqual([]);
    // Reading the secret is a clear error, and rotating it is the way out.
    const read = await t.api('GET', '/v1/webhook-secret');
    expect(read.status).toBe(500);
    expect(read.json).toMatchObject({ code: 'SECRET_UNREADABLE', message: expect.stringMatching(/secret key/) });
    const rotated = await t.api('POST', '/v1/webhook-secret');
    expect(rotated.status).toBe(200);
    expect((await t.api('GET', '/v1/webhook-secret')).json.secret).toBe(rotated.json.secret);
  });

  /** A job with a webhook, taken and finished by a protocol worker; resolves once its delivery arrived. */
  async function deliveredJob(): Promise<string> {
    const ep = await createEndpoint(t);
    const run = await t.api('POST', `/v2/${ep}/run`, { input: { n: 1 }, webhook: receiver.url });
    const w = newWorker(ep);
    expect((await w.take()).json.id).toBe(run.json.id);
    expect((await w.done(run.json.id, { output: 1 })).status).toBe(200);
    await vi.waitFor(() => expect(receiver.forJob(run.json.id)).toHaveLength(1), { timeout: 5000 });
    return run.json.id as string;
  }
});
