export { WharfMetrics, type MetricsSources, type WebhookOutcome } from './metrics.ts';
