import type { DatabaseSync } from 'node:sqlite';

/**
 * Numbered, append-only migrations (STYLE.md habit 6). Never edit one that shipped: add the next number.
 * The ledger row is inserted in the same transaction as the change, so a crash mid-migration leaves no trace.
 */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'jobs, workers and accounts',
    sql: `
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  webhook TEXT,
  policy TEXT NOT NULL,
  policy_given INTEGER NOT NULL,
  low_priority INTEGER NOT NULL,
  execution_timeout_ms INTEGER NOT NULL,
  ttl_ms INTEGER NOT NULL,
  s3_config TEXT,
  mode TEXT NOT NULL,
  retention_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  queued_at INTEGER NOT NULL,
  started_at INTEGER,
  completed_at INTEGER,
  expires_at INTEGER NOT NULL,
  results_expire_at INTEGER,
  deadline_at INTEGER,
  attempt INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT,
  output TEXT,
  error TEXT
);
CREATE INDEX jobs_queue ON jobs (endpoint_id, queued_at) WHERE status = 'IN_QUEUE';
CREATE INDEX jobs_endpoint_status ON jobs (endpoint_id, status);
CREATE INDEX jobs_expires ON jobs (expires_at);
CREATE INDEX jobs_results ON jobs (results_expire_at) WHERE results_expire_at IS NOT NULL;
CREATE INDEX jobs_deadline ON jobs (deadline_at) WHERE status = 'IN_PROGRESS';
CREATE INDEX jobs_worker ON jobs (worker_id) WHERE status = 'IN_PROGRESS';

CREATE TABLE stream_chunks (
  job_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TABLE stream_cursors (
  job_id TEXT NOT NULL,
  consumer TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (job_id, consumer)
) WITHOUT ROWID;

CREATE TABLE job_stops (
  worker_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (worker_id, job_id)
) WITHOUT ROWID;

CREATE TABLE tombstones (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  deleted_at INTEGER NOT NULL
);
CREATE INDEX tombstones_deleted ON tombstones (deleted_at);

CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  key_hash TEXT,
  version INTEGER NOT NULL,
  managed INTEGER NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  gpu_type_id TEXT,
  gpu_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  retired INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX workers_endpoint ON workers (endpoint_id);
CREATE UNIQUE INDEX workers_key ON workers (key_hash) WHERE key_hash IS NOT NULL;
CREATE INDEX workers_seen ON workers (last_seen_at);

CREATE TABLE users (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  doc TEXT NOT NULL
);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE TABLE templates (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE UNIQUE INDEX templates_name ON templates (user_id, name);
CREATE TABLE endpoints (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  template_id TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX endpoints_user ON endpoints (user_id);
`,
  },
  {
    version: 2,
    name: 'jobs: the policy as submitted',
    sql: `ALTER TABLE jobs ADD COLUMN policy_json TEXT;`,
  },
  {
    version: 3,
    name: 'network volumes, registry auths, usage',
    sql: `
CREATE TABLE network_volumes (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, doc TEXT NOT NULL);
CREATE INDEX network_volumes_user ON network_volumes (user_id);
CREATE TABLE volume_usage (
  volume_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  size_gb INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER
);
CREATE INDEX volume_usage_user ON volume_usage (user_id, started_at);
CREATE INDEX volume_usage_open ON volume_usage (volume_id) WHERE ended_at IS NULL;
CREATE TABLE registry_auths (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL);
CREATE UNIQUE INDEX registry_auths_name ON registry_auths (user_id, name);
CREATE TABLE usage (
  worker_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  template_id TEXT NOT NULL,
  image_name TEXT NOT NULL,
  gpu_type_id TEXT,
  gpu_count INTEGER NOT NULL,
  cpu_flavor_id TEXT,
  data_center_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER
);
CREATE INDEX usage_user ON usage (user_id, started_at);
CREATE UNIQUE INDEX usage_open ON usage (worker_id) WHERE ended_at IS NULL;
`,
  },
  {
    version: 4,
    name: 'webhook deliveries and their attempts',
    sql: `
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  user_id TEXT,
  url TEXT NOT NULL,
  job TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  created_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  status_code INTEGER,
  error TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
`,
  },
  {
    version: 5,
    name: 'jobs: newest-first listing per endpoint (/requests)',
    sql: `CREATE INDEX jobs_endpoint_created ON jobs (endpoint_id, created_at DESC, id DESC);`,
  },
  {
    version: 6,
    name: 'jobs: counts per endpoint kept by triggers, oldest normal-priority queued job by index',
    // /health, the autoscaler and metrics read these every tick: counting the jobs table grew with the queue
    // (hundreds of ms at a million queued, on the event loop). The triggers keep one row per (endpoint, status,
    // priority, retried) key exact in the same transaction as every insert, delete and status change, whatever
    // statement makes it. Rows that drop to zero stay (at most 24 per endpoint) until the endpoint is deleted.
    sql: `
CREATE TABLE job_counts (
  endpoint_id TEXT NOT NULL,
  status TEXT NOT NULL,
  low_priority INTEGER NOT NULL,
  retried INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (endpoint_id, status, low_priority, retried)
) WITHOUT ROWID;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO job_counts (endpoint_id, status, low_priority, retried, n)
  VALUES (NEW.endpoint_id, NEW.status, NEW.low_priority, NEW.retries > 0, 1)
  ON CONFLICT (endpoint_id, status, low_priority, retried) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
  UPDATE job_counts SET n = n - 1
  WHERE endpoint_id = OLD.endpoint_id AND status = OLD.status AND low_priority = OLD.low_priority
    AND retried = (OLD.retries > 0);
END;

CREATE TRIGGER job_counts_update AFTER UPDATE OF endpoint_id, status, low_priority, retries ON jobs
WHEN OLD.endpoint_id IS NOT NEW.endpoint_id OR OLD.status IS NOT NEW.status
  OR OLD.low_priority IS NOT NEW.low_priority OR (OLD.retries > 0) IS NOT (NEW.retries > 0)
BEGIN
  UPDATE job_counts SET n = n - 1
  WHERE endpoint_id = OLD.endpoint_id AND status = OLD.status AND low_priority = OLD.low_priority
    AND retried = (OLD.retries > 0);
  INSERT INTO job_counts (endpoint_id, status, low_priority, retried, n)
  VALUES (NEW.endpoint_id, NEW.status, NEW.low_priority, NEW.retries > 0, 1)
  ON CONFLICT (endpoint_id, status, low_priority, retried) DO UPDATE SET n = n + 1;
END;

INSERT INTO job_counts (endpoint_id, status, low_priority, retried, n)
SELECT endpoint_id, status, low_priority, retries > 0, COUNT(*) FROM jobs GROUP BY 1, 2, 3, 4;

CREATE INDEX jobs_queue_normal ON jobs (endpoint_id, queued_at) WHERE status = 'IN_QUEUE' AND low_priority = 0;
`,
  },
  {
    version: 7,
    name: 'jobs: drop the (endpoint, status) index',
    // Its readers moved to job_counts (counts) and to the partial indexes (purge: jobs_queue; running jobs per
    // worker: jobs_worker), while every submit, take and finish still paid to keep it: one b-tree fewer per change.
    sql: `DROP INDEX jobs_endpoint_status;`,
  },
  {
    version: 8,
    name: 'jobs: the newest-first listing index in ascending order',
    // SQLite appends to the right-hand end of a b-tree cheaply (full pages, one leaf per group of inserts); a
    // descending key puts every new job at the left-hand end of its endpoint's range, where each split leaves two
    // half-full pages: twice the pages, and ~0.1 more WAL frames per submitted job (measured: 0.29 against 0.19 per
    // job in groups of 20). The listing walks the ascending index backwards, with no sort either way.
    sql: `DROP INDEX jobs_endpoint_created;
CREATE INDEX jobs_endpoint_created ON jobs (endpoint_id, created_at, id);`,
  },
  {
    version: 9,
    name: 'workers: when a worker was retired',
    // A worker joined from outside gets no job for a lease after its retirement and is then taken back; the time
    // was kept in one node's memory, so a restart ended the pause at once.
    sql: `ALTER TABLE workers ADD COLUMN retired_at INTEGER;`,
  },
  {
    version: 10,
    name: 'job_stops: when the worker fetched the order',
    // A fetched order is kept for RETAKE_AFTER_STOP_MS: the worker does not get that job back meanwhile (its old
    // attempt may still be winding down), where a deleted order let it take the job again at once.
    sql: `ALTER TABLE job_stops ADD COLUMN fetched_at INTEGER;`,
  },
  {
    version: 11,
    name: "secrets: users' named secrets, sealed",
    // As registry_auths: the document holds the sealed value; the unique index makes names unique per user.
    sql: `
CREATE TABLE secrets (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL);
CREATE UNIQUE INDEX secrets_name ON secrets (user_id, name);
`,
  },
  {
    version: 12,
    name: "settings: the server's own, such as the secret key check",
    sql: `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  },
  {
    version: 13,
    name: "webhooks: due deliveries by owner, for a claim that skips some owners' backlog without reading it",
    sql: `CREATE INDEX webhook_deliveries_owner_due ON webhook_deliveries (user_id, next_attempt_at) WHERE state = 'pending';`,
  },
];

export function migrate(db: DatabaseSync): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  const current = row.v ?? 0;
  const latest = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
  if (current > latest) {
    throw new Error(
      `The database schema is at version ${current} but this Wharf knows only up to ${latest}; upgrade Wharf before using this data directory`,
    );
  }
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    db.exec('BEGIN IMMEDIATE');
    try {
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
      db.exec(m.sql);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw new Error(`Migration ${m.version} (${m.name}) failed`, { cause: error });
    }
  }
}

export function schemaVersion(db: DatabaseSync): number {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}
