import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../context.ts';
import { registerAccountRoutes } from './accounts.ts';
import { registerBillingRoutes } from './billing.ts';
import { registerPodRoutes } from './pods.ts';
import { registerStorageRoutes } from './storage.ts';

/** The management routes beyond templates and endpoints: volumes, registry auths, pods, billing, keys, users. */
export function registerManagementRoutes(app: FastifyInstance, deps: AppDeps): void {
  registerStorageRoutes(app, deps);
  registerPodRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerAccountRoutes(app, deps);
}
