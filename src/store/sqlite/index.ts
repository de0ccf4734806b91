import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type {
  ApiKey,
  Endpoint,
  NetworkVolume,
  RegistryAuthRecord,
  SecretRecord,
  Template,
  UsageStart,
  User,
  WorkerRecord,
  WorkerResult,
  WorkerState,
} from '../../domain/index.ts';
import { mayHandJobTo } from '../../domain/index.ts';
import type {
  EndpointWrite,
  HandTo,
  JobListCursor,
  LeaseSweep,
  NewJob,
  Store,
  StoreCapabilities,
  TemplateWrite,
  UsageFilter,
  WebhookAttempt,
  WebhookDeliveryState,
} from '../types.ts';
import { KeyedMutex } from '../keyed-mutex.ts';
import { SqliteJobs } from './jobs.ts';
import { migrate, schemaVersion } from './migrations.ts';
import { SqliteResources } from './resources.ts';
import { SqliteRequests } from './requests.ts';
import { SqliteManagement } from './volumes.ts';
import { SqliteWebhooks } from './webhooks.ts';
import { SqliteWorkers } from './workers.ts';
import { WriteQueue, type SyncMode } from './write-queue.ts';

export interface SqliteStoreOptions {
  /** Database file, or ':memory:' for throwaway tests. */
  path: string;
  /**
   * FULL makes every acknowledged write durable against power loss, not only against a process crash; group commit
   * and group fsync keep its cost per batch, not per job. NORMAL skips the fsync (crash-safe only).
   */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * Where FULL's fsync happens: `off-loop` (default) fdatasyncs the WAL on libuv's thread pool after COMMIT, so the
   * event loop never waits for the disk; `in-commit` lets SQLite sync inside COMMIT (PRAGMA synchronous=FULL), which
   * blocks the event loop for the whole fsync. Kept for comparison (npm run bench).
   */
  fsync?: 'off-loop' | 'in-commit';
  /** Tests only: replaces fs.fdatasync for the off-loop sync, to hold it and see what waits for the disk. */
  fdatasync?: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
}

/** The embedded default store: node:sqlite in WAL mode with group commit. */
class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities = { name: 'sqlite', multiNode: false };
  private readonly db: DatabaseSync;
  private readonly writes: WriteQueue;
  private readonly jobs: SqliteJobs;
  private readonly workers: SqliteWorkers;
  private readonly res: SqliteResources;
  private readonly mgmt: SqliteManagement;
  private readonly hooks: SqliteWebhooks;
  private readonly reqs: SqliteRequests;
  /** One process owns the database file: an in-process lock is every node's. */
  private readonly management = new KeyedMutex();

  constructor(db: DatabaseSync, sync: SyncMode) {
    this.db = db;
    this.writes = new WriteQueue(db, { sync });
    this.jobs = new SqliteJobs(db);
    this.workers = new SqliteWorkers(db);
    this.res = new SqliteResources(db);
    this.mgmt = new SqliteManagement(db);
    this.hooks = new SqliteWebhooks(db);
    this.reqs = new SqliteRequests(db);
  }

  private write<T>(fn: () => T): Promise<T> {
    return this.writes.run(fn);
  }

  /**
   * A write whose loss in a power cut only repeats work: it resolves at COMMIT, before its fsync. Takes (the job is
   * queued again and the attempt fence refuses the old worker), lease renewals, stop-order and stream cursors.
   */
  private softWrite<T>(fn: () => T): Promise<T> {
    return this.writes.run(fn, { durable: false });
  }

  whenDurable(): Promise<void> {
    return this.writes.whenDurable();
  }

  async migrate(): Promise<void> {
    migrate(this.db);
  }
  async ping(): Promise<void> {
    schemaVersion(this.db);
  }
  async close(): Promise<void> {
    this.writes.close();
    this.db.close();
  }

  // Jobs
  submitJob(job: NewJob, handTo?: HandTo) {
    const insert = () => this.jobs.submit(job, handTo === undefined ? null : this.handOffTarget(job, handTo));
    // A /runsync job's id is not returned until the call answers, which waits for whenDurable() first: its submit
    // need not wait for a sync of its own, so the worker can start while the disk catches up.
    if (job.mode === 'sync') return this.softWrite(insert);
    return this.write(insert);
  }
  /**
   * The worker a new job is handed to, read in the submit's transaction (so a retirement or a requeue committed
   * before it counts): none when a job is already queued for the endpoint (it goes first) or the worker may not
   * take work. A hand-off with `touchLease` renews the worker's lease as a take's look would.
   */
  private handOffTarget(job: NewJob, to: HandTo): string | null {
    if (this.jobs.anyTakeable(job.endpointId, job.createdAt)) return null;
    const worker = this.workers.get(to.workerId);
    if (!worker || !mayHandJobTo(worker, job.endpointId)) return null;
    if (to.touchLease) this.workers.touch(worker.id, job.createdAt);
    return worker.id;
  }
  async takeJobs(endpointId: string, workerId: string, max: number, now: number) {
    // Read first: a poll that finds the queue empty (most of them) must not cost a write transaction.
    if (!this.jobs.anyTakeable(endpointId, now)) return [];
    return this.softWrite(() => this.jobs.take(endpointId, workerId, max, now));
  }
  async getJob(endpointId: string, jobId: string) {
    return this.jobs.get(endpointId, jobId);
  }
  async getTombstone(endpointId: string, jobId: string) {
    return this.jobs.tombstone(endpointId, jobId);
  }
  recordProgress(endpointId: string, jobId: string, workerId: string, outputJson: string, now: number) {
    return this.softWrite(() => this.jobs.progress(endpointId, jobId, workerId, outputJson, now));
  }
  // Final transitions enqueue their webhook delivery in the same transaction (contract in types-webhooks.ts).
  finishJob(endpointId: string, jobId: string, workerId: string, result: WorkerResult, now: number) {
    return this.write(() => {
      const res = this.jobs.finish(endpointId, jobId, workerId, result, now);
      if (res.ok) this.hooks.enqueue(res.job);
      return res;
    });
  }
  appendChunks(endpointId: string, jobId: string, workerId: string, chunksJson: string[], now: number) {
    return this.write(() => this.jobs.appendChunks(endpointId, jobId, workerId, chunksJson, now));
  }
  returnUndelivered(workerId: string, jobIds: string[]) {
    return this.softWrite(() => this.jobs.returnUndelivered(workerId, jobIds));
  }
  readChunks(endpointId: string, jobId: string, consumer: string, maxChars: number) {
    return this.softWrite(() => this.jobs.readChunks(endpointId, jobId, consumer, maxChars));
  }
  cancelJob(endpointId: string, jobId: string, now: number) {
    return this.write(() => {
      const res = this.jobs.cancel(endpointId, jobId, now);
      if (res.outcome === 'cancelled') this.hooks.enqueue(res.job);
      return res;
    });
  }
  retryJob(endpointId: string, jobId: string, now: number) {
    return this.write(() => this.jobs.retry(endpointId, jobId, now));
  }
  purgeQueue(endpointId: string, now: number) {
    return this.write(() => this.jobs.purge(endpointId, now));
  }
  setJobTtl(endpointId: string, jobId: string, ttlMs: number, now: number) {
    return this.write(() => this.jobs.setTtl(endpointId, jobId, ttlMs, now));
  }
  async jobCounts(endpointId: string) {
    return this.jobs.counts(endpointId);
  }
  async queueSnapshot(endpointId: string) {
    return this.jobs.snapshot(endpointId);
  }
  async activeEndpointIds() {
    return this.jobs.activeEndpoints();
  }
  expireJobs(now: number, limit: number) {
    return this.write(() => this.jobs.expire(now, limit));
  }
  expireResults(now: number, limit: number) {
    return this.write(() => this.jobs.expireResults(now, limit));
  }
  timeoutJobs(now: number, limit: number) {
    return this.write(() => {
      const swept = this.jobs.timeout(now, limit);
      this.hooks.enqueueAll(swept.map((s) => s.job));
      return swept;
    });
  }
  pruneTombstones(before: number) {
    return this.write(() => this.jobs.pruneTombstones(before));
  }

  // Workers
  upsertWorker(worker: WorkerRecord) {
    return this.write(() => this.workers.upsert(worker));
  }
  takeOverWorker(worker: WorkerRecord, from: { endpointId: string; lastSeenAt: number }) {
    return this.write(() => this.workers.takeOver(worker, from));
  }
  async getWorker(workerId: string) {
    return this.workers.get(workerId);
  }
  async findWorkerByKeyHash(keyHash: string) {
    return this.workers.byKeyHash(keyHash);
  }
  async listWorkers(endpointId?: string) {
    return this.workers.list(endpointId);
  }
  touchWorker(
    workerId: string,
    now: number,
    patch?: { state?: WorkerState; reason?: string | null; retired?: boolean },
  ) {
    return this.softWrite(() => this.workers.touch(workerId, now, patch));
  }
  markWorker(workerId: string, now: number, patch: { state?: WorkerState; reason?: string | null; retired?: boolean }) {
    return this.write(() => this.workers.touch(workerId, now, patch, false));
  }
  async runningByWorker(endpointId: string) {
    return this.jobs.runningByWorker(endpointId);
  }
  async lastFinishByWorker(endpointId: string, since: number) {
    return this.jobs.lastFinishByWorker(endpointId, since);
  }
  async workerJobIds(workerId: string) {
    return this.jobs.workerJobIds(workerId);
  }
  releaseWorkerJobs(workerId: string, now: number, maxAttempts: number | null, reason: string, onlyJobIds?: string[]) {
    return this.write(() => {
      const sweep = this.jobs.release(workerId, now, maxAttempts, reason, onlyJobIds);
      this.hooks.enqueueAll(sweep.failed);
      return sweep;
    });
  }
  expireWorkerLeases(silentSince: number, now: number, maxAttempts: number) {
    return this.write((): LeaseSweep => {
      const total: LeaseSweep = { workerIds: [], requeued: [], failed: [] };
      for (const id of this.workers.silentSince(silentSince)) {
        const sweep = this.jobs.release(id, now, maxAttempts, 'lease expired');
        for (const job of [...sweep.requeued, ...sweep.failed]) this.jobs.addStop(id, job.id, now);
        this.workers.markLeaseExpired(id);
        total.workerIds.push(id);
        total.requeued.push(...sweep.requeued);
        total.failed.push(...sweep.failed);
      }
      this.hooks.enqueueAll(total.failed);
      return total;
    });
  }
  deleteWorker(workerId: string) {
    return this.write(() => this.workers.remove(workerId));
  }
  takeStops(workerId: string, now: number) {
    // Read first, as for takes: job-stop polls are constant and almost always find nothing.
    if (!this.jobs.anyStops(workerId)) return Promise.resolve([]);
    return this.softWrite(() => this.jobs.takeStops(workerId, now));
  }
  rearmStops(workerId: string, jobIds: string[], now: number) {
    if (jobIds.length === 0) return Promise.resolve([]);
    return this.softWrite(() => this.jobs.rearmStops(workerId, jobIds, now));
  }

  // Accounts
  createUser(user: User) {
    return this.write(() => this.res.createUser(user));
  }
  async getUser(userId: string) {
    return this.res.getUser(userId);
  }
  async listUsers() {
    return this.res.listUsers();
  }
  createApiKey(key: ApiKey) {
    return this.write(() => this.res.createApiKey(key));
  }
  async findApiKeyByHash(hash: string) {
    return this.res.findApiKeyByHash(hash);
  }
  async listApiKeys(userId: string) {
    return this.res.listApiKeys(userId);
  }
  revokeApiKey(userId: string, keyId: string, now: number) {
    return this.write(() => this.res.revokeApiKey(userId, keyId, now));
  }

  // Resources
  exclusively<T>(userId: string, fn: () => Promise<T>): Promise<T> {
    return this.management.run(userId, fn);
  }

  createTemplate(t: Template) {
    return this.write(() => this.res.createTemplate(t));
  }
  async getTemplate(userId: string, id: string) {
    return this.res.getTemplate(userId, id);
  }
  async listTemplates(userId: string) {
    return this.res.listTemplates(userId);
  }
  updateTemplate(t: Template) {
    return this.write(() => this.res.updateTemplate(t));
  }
  deleteTemplate(userId: string, id: string) {
    return this.write(() => this.res.deleteTemplate(userId, id));
  }
  createEndpoint(e: Endpoint) {
    return this.write(() => this.res.createEndpoint(e));
  }
  async getEndpoint(userId: string | null, id: string) {
    return this.res.getEndpoint(userId, id);
  }
  async getEndpointAndWorker(userId: string | null, endpointId: string, workerId: string) {
    // Both come from this process's caches: nothing to combine.
    const endpoint = this.res.getEndpoint(userId, endpointId);
    return { endpoint, worker: endpoint ? this.workers.get(workerId) : null };
  }
  async listEndpoints(userId: string | null) {
    return this.res.listEndpoints(userId);
  }
  updateEndpoint(e: Endpoint) {
    return this.write(() => this.res.updateEndpoint(e));
  }
  deleteEndpoint(userId: string, id: string) {
    return this.write(() => this.deleteEndpointNow(userId, id));
  }
  private deleteEndpointNow(userId: string, id: string): boolean {
    // It deletes the endpoint's workers too (resources.ts).
    this.workers.forgetAll();
    return this.res.deleteEndpoint(userId, id);
  }
  async endpointsUsingTemplate(userId: string, templateId: string) {
    return this.res.endpointsUsingTemplate(userId, templateId);
  }
  saveTemplateAndEndpoints(template: TemplateWrite | null, endpoints: readonly EndpointWrite[]) {
    // One write: one savepoint, so a statement that fails rolls every row of the change back.
    return this.write(() => {
      if (template && 'create' in template) this.res.createTemplate(template.create);
      else if (template && 'update' in template) this.res.updateTemplate(template.update);
      else if (template) this.res.deleteTemplate(template.delete.userId, template.delete.id);
      for (const w of endpoints) {
        if ('create' in w) this.res.createEndpoint(w.create);
        else if ('update' in w) this.res.updateEndpoint(w.update);
        else this.deleteEndpointNow(w.delete.userId, w.delete.id);
      }
    });
  }

  // Management: user settings, network volumes, registry auths, secrets, usage (types-volumes.ts)
  updateUser(user: User) {
    return this.write(() => this.mgmt.updateUser(user));
  }
  createNetworkVolume(v: NetworkVolume) {
    return this.write(() => this.mgmt.createVolume(v));
  }
  async getNetworkVolume(userId: string | null, id: string) {
    return this.mgmt.getVolume(userId, id);
  }
  async listNetworkVolumes(userId: string) {
    return this.mgmt.listVolumes(userId);
  }
  updateNetworkVolume(v: NetworkVolume, at: number) {
    return this.write(() => this.mgmt.updateVolume(v, at));
  }
  deleteNetworkVolume(userId: string, id: string, at: number) {
    return this.write(() => this.mgmt.deleteVolume(userId, id, at));
  }
  async endpointsUsingVolume(userId: string, volumeId: string) {
    return this.mgmt.endpointsUsingVolume(userId, volumeId);
  }
  createRegistryAuth(r: RegistryAuthRecord) {
    return this.write(() => this.mgmt.createRegistryAuth(r));
  }
  async getRegistryAuth(userId: string, id: string) {
    return this.mgmt.getRegistryAuth(userId, id);
  }
  async listRegistryAuths(userId: string) {
    return this.mgmt.listRegistryAuths(userId);
  }
  updateRegistryAuth(r: RegistryAuthRecord) {
    return this.write(() => this.mgmt.updateRegistryAuth(r));
  }
  deleteRegistryAuth(userId: string, id: string) {
    return this.write(() => this.mgmt.deleteRegistryAuth(userId, id));
  }
  async templatesUsingRegistryAuth(userId: string, id: string) {
    return this.mgmt.templatesUsingRegistryAuth(userId, id);
  }
  claimSetting(key: string, value: string) {
    return this.write(() => this.mgmt.claimSetting(key, value));
  }
  putSetting(key: string, value: string) {
    return this.write(() => this.mgmt.putSetting(key, value));
  }
  createSecret(r: SecretRecord) {
    return this.write(() => this.mgmt.createSecret(r));
  }
  async listSecrets(userId: string) {
    return this.mgmt.listSecrets(userId);
  }
  deleteSecret(userId: string, id: string) {
    return this.write(() => this.mgmt.deleteSecret(userId, id));
  }
  recordUsageStart(u: UsageStart) {
    return this.write(() => this.mgmt.usageStart(u));
  }
  recordUsageEnd(workerId: string, at: number) {
    return this.write(() => this.mgmt.usageEnd(workerId, at));
  }
  recordUsageResume(workerId: string, at: number) {
    return this.write(() => this.mgmt.usageResume(workerId, at));
  }
  async listUsage(f: UsageFilter) {
    return this.mgmt.usage(f);
  }
  async listVolumeUsage(userId: string, from: number, to: number) {
    return this.mgmt.volumeUsage(userId, from, to);
  }

  // Webhooks (types-webhooks.ts)
  async claimWebhookDeliveries(now: number, limit: number, leaseMs: number, skipUsers?: readonly string[]) {
    // Read first: an idle poll must not take the write lock.
    if (!this.hooks.anyDue(now, skipUsers)) return [];
    return this.write(() => this.hooks.claim(now, limit, leaseMs, skipUsers));
  }
  recordWebhookAttempt(
    deliveryId: string,
    a: WebhookAttempt,
    next: { state: WebhookDeliveryState; nextAttemptAt: number | null },
  ) {
    return this.write(() => this.hooks.record(deliveryId, a, next));
  }
  releaseWebhookDelivery(deliveryId: string, dueAt: number) {
    return this.write(() => this.hooks.release(deliveryId, dueAt));
  }
  async listWebhookDeliveries(endpointId: string, jobId: string) {
    return this.hooks.list(endpointId, jobId);
  }
  pruneWebhookDeliveries(before: number, limit: number) {
    return this.write(() => this.hooks.prune(before, limit));
  }
  setWebhookSecret(userId: string, secret: string, replacing?: string | null) {
    return this.write(() => this.hooks.setSecret(userId, secret, replacing));
  }

  // Observability (types-requests.ts)
  async listJobs(endpointId: string, page: { limit: number; before?: JobListCursor | null }) {
    return this.reqs.list(endpointId, page.limit, page.before ?? null);
  }
  async schemaVersion() {
    return this.reqs.version();
  }
}

export function openSqliteStore(opts: SqliteStoreOptions): Store {
  if (opts.path !== ':memory:') {
    mkdirSync(dirname(opts.path), { recursive: true, mode: 0o700 });
    ownerOnly(opts.path);
  }
  const db = new DatabaseSync(opts.path);
  db.exec('PRAGMA journal_mode = WAL');
  const durable = (opts.synchronous ?? 'FULL') === 'FULL' && opts.path !== ':memory:';
  const offLoop = durable && (opts.fsync ?? 'off-loop') === 'off-loop';
  // Off the loop: COMMIT only appends to the WAL (NORMAL) and the write queue fdatasyncs it (write-queue.ts).
  db.exec(`PRAGMA synchronous = ${durable && !offLoop ? 'FULL' : 'NORMAL'}`);
  db.exec('PRAGMA busy_timeout = 5000');
  // Statement journals (every savepointed write, and every statement whose triggers write: job_counts) in memory
  // rather than in temporary files: about half the CPU of a small write.
  db.exec('PRAGMA temp_store = MEMORY');
  return new SqliteStore(
    db,
    offLoop ? { kind: 'wal-fsync', walPath: `${opts.path}-wal`, fdatasync: opts.fdatasync } : { kind: 'none' },
  );
}

/**
 * The database holds template env values and job inputs (and sealed secrets, plain in rows of earlier versions):
 * readable by the server's user only, whatever the umask or the mode of a data directory that already existed.
 * SQLite creates the -wal and -shm files with the database file's mode, so they follow.
 */
function ownerOnly(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    try {
      chmodSync(file, 0o600);
    } catch (error) {
      // Not ours to change (a file another user made, a volume mounted so): it still opens; say what to fix.
      process.emitWarning(`could not make ${file} readable by its owner only: ${(error as Error).message}`);
    }
  }
}
