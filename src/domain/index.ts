/**
 * Glossary
 * - job: one unit of work submitted to an endpoint (`/run`, `/runsync`); has an id, input and a status.
 * - attempt: one hand-out of a job to a worker. Each take increments `attempt`; only the worker holding the current
 *   attempt may post progress, stream chunks or the result (fencing).
 * - lease: a worker's right to its jobs, renewed by every request it makes (ping, take, result). A worker that stays
 *   silent longer than the lease loses its jobs, which go back to the queue.
 * - worker: a process speaking the worker protocol for one endpoint (started by Wharf or joined from outside).
 * - endpoint: the unit that accepts jobs, with scaling settings and a template.
 * - template: what a worker runs (image, entrypoint, command, env).
 */
export * from './jobs.ts';
export * from './ids.ts';
export * from './resources.ts';
export * from './workers.ts';
export * from './enums.ts';
export * from './storage.ts';
export * from './billing.ts';
export * from './prices.ts';
export * from './text.ts';
