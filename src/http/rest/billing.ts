import type { FastifyInstance } from 'fastify';
import type { EndpointBillingQuery as EQ, PodBillingQuery as PQ } from '../../engine/index.ts';
import type { AppDeps } from '../context.ts';
import { meta, userOf } from './common.ts';
import { EndpointBillingQuery, PodBillingQuery, VolumeBillingQuery } from './schemas-management.ts';

type Window = { bucketSize?: 'hour' | 'day' | 'week' | 'month' | 'year'; startTime?: string; endTime?: string };

/**
 * `/v1/billing/*`: the caller's usage in UTC buckets (default `day`). Without `startTime` everything since the
 * first record; without `endTime` up to now. Workers billed without a GPU show their CPU flavor as `gpuTypeId`.
 */
export function registerBillingRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get<{ Querystring: EQ }>(
    '/v1/billing/endpoints',
    { schema: { querystring: EndpointBillingQuery }, config: meta('EndpointBilling', 'Serverless worker usage') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return deps.billing.endpoints(user.id, request.query);
    },
  );
  app.get<{ Querystring: PQ }>(
    '/v1/billing/pods',
    { schema: { querystring: PodBillingQuery }, config: meta('PodBilling', 'Worker usage by pod or GPU type') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return deps.billing.pods(user.id, request.query);
    },
  );
  app.get<{ Querystring: Window }>(
    '/v1/billing/networkvolumes',
    { schema: { querystring: VolumeBillingQuery }, config: meta('NetworkVolumeBilling', 'Network volume storage') },
    async (request) => {
      const user = await userOf(deps, request, 'read');
      return deps.billing.networkVolumes(user.id, request.query);
    },
  );
}
