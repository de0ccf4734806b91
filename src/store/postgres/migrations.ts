import { codeOf, type Db } from './db.ts';

/**
 * Numbered, append-only migrations (STYLE.md habit 6), the same logical schema as sqlite/migrations.ts with the same
 * numbers. Timestamps are BIGINT milliseconds; inputs, outputs and documents are TEXT, passed through untouched.
 * `seq` identity columns stand in for SQLite's rowid wherever insertion order breaks ties.
 *
 * Safe when several nodes start at once: each migration inserts its ledger row first, in the same transaction as
 * the change. A second node's insert of the same version waits for the first one's transaction and then fails with
 * a unique violation, which means "another node did it": it moves on to the next version.
 */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'jobs, workers and accounts (and the shared rate-limit counters)',
    sql: `
CREATE TABLE jobs (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT COLLATE "C" PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  webhook TEXT,
  policy TEXT NOT NULL,
  policy_given BOOLEAN NOT NULL,
  low_priority BOOLEAN NOT NULL,
  execution_timeout_ms BIGINT NOT NULL,
  ttl_ms BIGINT NOT NULL,
  s3_config TEXT,
  mode TEXT NOT NULL,
  retention_ms BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  queued_at BIGINT NOT NULL,
  started_at BIGINT,
  completed_at BIGINT,
  expires_at BIGINT NOT NULL,
  results_expire_at BIGINT,
  deadline_at BIGINT,
  attempt INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT,
  output TEXT,
  error TEXT
);
CREATE INDEX jobs_queue ON jobs (endpoint_id, queued_at, seq) WHERE status = 'IN_QUEUE';
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
);
CREATE TABLE stream_cursors (
  job_id TEXT NOT NULL,
  consumer TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (job_id, consumer)
);
CREATE TABLE job_stops (
  worker_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (worker_id, job_id)
);
CREATE TABLE tombstones (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  deleted_at BIGINT NOT NULL
);
CREATE INDEX tombstones_deleted ON tombstones (deleted_at);

CREATE TABLE workers (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  key_hash TEXT,
  version INTEGER NOT NULL,
  managed BOOLEAN NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  gpu_type_id TEXT,
  gpu_count INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  retired BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX workers_endpoint ON workers (endpoint_id);
CREATE UNIQUE INDEX workers_key ON workers (key_hash) WHERE key_hash IS NOT NULL;
CREATE INDEX workers_seen ON workers (last_seen_at);

CREATE TABLE users (seq BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE api_keys (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  doc TEXT NOT NULL
);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE TABLE templates (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE UNIQUE INDEX templates_name ON templates (user_id, name);
CREATE TABLE endpoints (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  template_id TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX endpoints_user ON endpoints (user_id);

-- rate-limiter-flexible's RateLimiterPostgres table (its column order), created here rather than by the library so
-- that nodes starting together never race on CREATE TABLE.
CREATE TABLE rate_limits (key TEXT PRIMARY KEY, points INTEGER NOT NULL DEFAULT 0, expire BIGINT);
CREATE INDEX rate_limits_expire ON rate_limits (expire);
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
CREATE TABLE network_volumes (
  seq BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, user_id TEXT NOT NULL, doc TEXT NOT NULL
);
CREATE INDEX network_volumes_user ON network_volumes (user_id);
CREATE TABLE volume_usage (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  volume_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  size_gb INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT
);
CREATE INDEX volume_usage_user ON volume_usage (user_id, started_at);
CREATE INDEX volume_usage_open ON volume_usage (volume_id) WHERE ended_at IS NULL;
CREATE TABLE registry_auths (
  seq BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE UNIQUE INDEX registry_auths_name ON registry_auths (user_id, name);
CREATE TABLE usage (
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  worker_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  template_id TEXT NOT NULL,
  image_name TEXT NOT NULL,
  gpu_type_id TEXT,
  gpu_count INTEGER NOT NULL,
  cpu_flavor_id TEXT,
  data_center_id TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT
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
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  user_id TEXT,
  url TEXT NOT NULL,
  job TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  created_at BIGINT NOT NULL,
  finished_at BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at BIGINT NOT NULL,
  duration_ms BIGINT NOT NULL,
  status_code INTEGER,
  error TEXT,
  PRIMARY KEY (delivery_id, attempt)
);
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
    // /health, the autoscaler and metrics read these every tick: counting the jobs table grew with the queue. The
    // statement triggers add each statement's changes per (endpoint, status, priority, retried) key in the same
    // transaction, whatever statement makes them. Each server process (backend) adds to rows of its own: one backend
    // runs one transaction at a time, so no two transactions ever wait on each other for a counter row (a single row
    // per key would serialise every submit to an endpoint on it, commit fsync included, and could deadlock). A key's
    // count is the sum of its rows; the leader folds the rows into backend 0 now and then (compactJobCounts).
    // The triggers are created before the backfill: writes that commit after it are counted by them. The functions
    // keep this schema's search_path, so a session writing to these jobs from elsewhere still counts here.
    sql: `
CREATE TABLE job_counts (
  endpoint_id TEXT NOT NULL,
  status TEXT NOT NULL,
  low_priority BOOLEAN NOT NULL,
  retried BOOLEAN NOT NULL,
  backend INTEGER NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (endpoint_id, status, low_priority, retried, backend)
);

CREATE FUNCTION job_counts_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts AS c (endpoint_id, status, low_priority, retried, backend, n)
  SELECT endpoint_id, status, low_priority, retries > 0, pg_backend_pid(), COUNT(*) FROM new_jobs GROUP BY 1, 2, 3, 4
  ON CONFLICT (endpoint_id, status, low_priority, retried, backend) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;

CREATE FUNCTION job_counts_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts AS c (endpoint_id, status, low_priority, retried, backend, n)
  SELECT endpoint_id, status, low_priority, retries > 0, pg_backend_pid(), -COUNT(*) FROM old_jobs GROUP BY 1, 2, 3, 4
  ON CONFLICT (endpoint_id, status, low_priority, retried, backend) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;

-- Keys the statement left unchanged cancel out (a progress post, a ttl change): nothing is written for them.
CREATE FUNCTION job_counts_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts AS c (endpoint_id, status, low_priority, retried, backend, n)
  SELECT endpoint_id, status, low_priority, retried, pg_backend_pid(), SUM(d)
  FROM (SELECT endpoint_id, status, low_priority, retries > 0 AS retried, -1 AS d FROM old_jobs
        UNION ALL
        SELECT endpoint_id, status, low_priority, retries > 0, 1 FROM new_jobs) AS changes
  GROUP BY 1, 2, 3, 4 HAVING SUM(d) <> 0
  ON CONFLICT (endpoint_id, status, low_priority, retried, backend) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;

-- Not used by Wharf. An operator's TRUNCATE waits for every writer (ACCESS EXCLUSIVE) and, with the lock of
-- counts.ts compactJobCounts, for a compaction: nothing is left to count.
CREATE FUNCTION job_counts_truncated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('wharf.job_counts.' || current_schema(), 0));
  DELETE FROM job_counts;
  RETURN NULL;
END $$;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION job_counts_inserted();
CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION job_counts_deleted();
CREATE TRIGGER job_counts_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION job_counts_updated();
CREATE TRIGGER job_counts_truncate AFTER TRUNCATE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_truncated();

INSERT INTO job_counts (endpoint_id, status, low_priority, retried, backend, n)
SELECT endpoint_id, status, low_priority, retries > 0, 0, COUNT(*) FROM jobs GROUP BY 1, 2, 3, 4;

CREATE INDEX jobs_queue_normal ON jobs (endpoint_id, queued_at) WHERE status = 'IN_QUEUE' AND NOT low_priority;
`,
  },
  {
    version: 7,
    name: "fleet_status: the leader autoscaler's statuses, for every node to show",
    // Only the leader runs the autoscaler; /health and a queued job's status on any node show why jobs wait from here.
    sql: `
CREATE TABLE fleet_status (
  endpoint_id TEXT PRIMARY KEY,
  throttled INTEGER NOT NULL,
  reason TEXT,
  message TEXT
);
`,
  },
  {
    version: 8,
    name: 'workers: when a worker was retired',
    // A worker joined from outside gets no job for a lease after its retirement and is then taken back; the time
    // was kept in the memory of the node that saw it, so another node (or a restart) ended the pause at once.
    sql: `ALTER TABLE workers ADD COLUMN retired_at BIGINT;`,
  },
  {
    version: 9,
    name: 'job_stops: when the worker fetched the order',
    // A fetched order is kept for RETAKE_AFTER_STOP_MS: the worker does not get that job back meanwhile (its old
    // attempt may still be winding down), where a deleted order let it take the job again at once.
    sql: `ALTER TABLE job_stops ADD COLUMN fetched_at BIGINT;`,
  },
  {
    version: 10,
    name: "secrets: users' named secrets, sealed",
    // As registry_auths: the document holds the sealed value; the unique index makes names unique per user.
    sql: `
CREATE TABLE secrets (
  seq BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE UNIQUE INDEX secrets_name ON secrets (user_id, name);
`,
  },
  {
    version: 11,
    name: "settings: the server's own, such as the secret key check",
    sql: `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  },
  {
    version: 12,
    name: 'fleet_status: the workers a crash loop holds back',
    // Shown as unhealthy on every node for as long as the loop lasts; a leader of the version before writes none (0).
    sql: `ALTER TABLE fleet_status ADD COLUMN unhealthy INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 13,
    name: "webhooks: due deliveries by owner, for a claim that skips some owners' backlog without reading it",
    sql: `CREATE INDEX webhook_deliveries_owner_due ON webhook_deliveries (user_id, next_attempt_at) WHERE state = 'pending';`,
  },
];

export const LATEST = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

const UNIQUE_VIOLATION = '23505';

export async function migrate(db: Db): Promise<void> {
  // The schema and the ledger are created under a transaction-scoped advisory lock keyed by the schema, so nodes
  // starting at once do it one after the other. Unserialised, concurrent CREATE … IF NOT EXISTS collide in the
  // catalog, as a different error depending on timing (unique violation, duplicate table, "type … already exists").
  await db.tx(async (c) => {
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`wharf.migrate:${db.schema ?? ''}`]);
    if (db.schema) await c.query(`CREATE SCHEMA IF NOT EXISTS "${db.schema}"`);
    await c.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
  });
  const current = await schemaVersion(db);
  if (current > LATEST) {
    throw new Error(
      `The database schema is at version ${current} but this Wharf knows only up to ${LATEST}; upgrade Wharf before using this database`,
    );
  }
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    try {
      await db.tx(async (c) => {
        // Ledger row first: it is the lock that makes a second node wait, then skip (see the header).
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          Date.now(),
        ]);
        await c.query(m.sql);
      });
    } catch (error) {
      if (codeOf(error) === UNIQUE_VIOLATION) continue; // another node applied this one
      throw new Error(`Migration ${m.version} (${m.name}) failed`, { cause: error });
    }
  }
}

export async function schemaVersion(db: Db): Promise<number> {
  const [row] = await db.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
  return row?.v ?? 0;
}
