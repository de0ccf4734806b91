import type { Store, StoreCapabilities } from '../types.ts';
import type { ClusterNode, ClusterOptions } from '../types-cluster.ts';
import { PgCluster } from './cluster.ts';
import { countVerbs } from './counts.ts';
import { Db, parseTarget } from './db.ts';
import { jobVerbs } from './jobs.ts';
import { migrate, schemaVersion } from './migrations.ts';
import { requestVerbs } from './requests.ts';
import { resourceVerbs } from './resources.ts';
import { sweepVerbs } from './sweeps.ts';
import { managementVerbs } from './volumes.ts';
import { webhookVerbs } from './webhooks.ts';
import { workerVerbs } from './workers.ts';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:5432/database`, optionally `?schema=name&pool_size=20` (db.ts parseTarget). */
  url: string;
  /** The schema to use; overrides the URL's `schema` parameter. Created by migrate() when missing. */
  schema?: string | null;
  /** Connections in the pool (default: the URL's pool_size, else 20). LISTEN and leader connections come on top. */
  poolSize?: number;
}

/** A PostgreSQL store: the Store verbs, plus the multi-node facilities of this node. */
export interface PostgresStore extends Store {
  /** This node's part in the cluster (one per process; created on first call). */
  cluster(opts?: ClusterOptions): ClusterNode;
}

const CAPABILITIES: StoreCapabilities = Object.freeze({ name: 'postgres', multiNode: true });

/**
 * The shared store of multi-node deployments (DESIGN.md §3 "Multi-node"). Each verb is one transaction (or one
 * statement) committed before its promise resolves; concurrent transactions commit in parallel, so no group commit
 * is needed. Jobs are taken with FOR UPDATE SKIP LOCKED. Connection loss surfaces as STORE_UNAVAILABLE (503); the pool
 * dials again on the next use, so a node recovers by itself when the database returns.
 */
export function openPostgresStore(opts: PostgresStoreOptions): PostgresStore {
  const db = new Db(parseTarget(opts.url, opts.schema), opts.poolSize);
  let cluster: PgCluster | undefined;
  return {
    capabilities: CAPABILITIES,
    migrate: () => migrate(db),
    async ping() {
      await schemaVersion(db);
    },
    // Every PostgreSQL write is durable at COMMIT (synchronous_commit on), sync submissions included.
    async whenDurable() {},
    async close() {
      await cluster?.stop();
      await db.close();
    },
    cluster(clusterOpts) {
      cluster ??= new PgCluster(db, clusterOpts);
      return cluster;
    },
    ...jobVerbs(db),
    ...countVerbs(db),
    ...sweepVerbs(db),
    ...workerVerbs(db),
    ...resourceVerbs(db),
    ...managementVerbs(db),
    ...webhookVerbs(db),
    ...requestVerbs(db),
  };
}
