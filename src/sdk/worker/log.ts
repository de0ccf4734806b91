// Worker log lines. With RUNPOD_ENDPOINT_ID set they are JSON on stdout, the format RunPod's log collector (and
// Wharf's) parses per job; otherwise the Python SDK's human format `LEVEL  | job id | message`.

import type { JobLogger } from './types.ts';

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

const RANK: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 };

export interface WorkerLogger {
  log(level: LogLevel, message: string, jobId?: string): void;
  forJob(jobId: string): JobLogger;
}

export interface LoggerOptions {
  level: string;
  json: boolean;
  /** Where lines go; stdout by default (tests capture it). */
  write?: (line: string) => void;
}

export function createLogger(opts: LoggerOptions): WorkerLogger {
  const threshold = RANK[parseLevel(opts.level)];
  if (!opts.write && process.stdout.listenerCount('error') === 0) {
    // A closed stdout (the reader went away) reports EPIPE asynchronously; without a listener that kills the worker.
    process.stdout.on('error', () => {});
  }
  const write = opts.write ?? ((line: string) => void process.stdout.write(line));
  const log = (level: LogLevel, message: string, jobId?: string): void => {
    if (RANK[level] < threshold) return;
    const line = opts.json
      ? JSON.stringify({ requestId: jobId ?? null, message, level })
      : `${level.padEnd(7)}| ${jobId === undefined ? '' : `${jobId} | `}${message}`;
    // A closed stdout (EPIPE) must not take the worker down with it.
    try {
      write(line + '\n');
    } catch {
      /* ignored */
    }
  };
  return {
    log,
    forJob: (jobId) => ({
      debug: (m) => log('DEBUG', m, jobId),
      info: (m) => log('INFO', m, jobId),
      warn: (m) => log('WARN', m, jobId),
      error: (m) => log('ERROR', m, jobId),
    }),
  };
}

/** Accepts Python's names too (NOTSET and TRACE log everything, WARNING is WARN); unknown names mean DEBUG. */
function parseLevel(name: string): LogLevel {
  switch (name.trim().toUpperCase()) {
    case 'INFO':
      return 'INFO';
    case 'WARN':
    case 'WARNING':
      return 'WARN';
    case 'ERROR':
    case 'CRITICAL':
      return 'ERROR';
    default:
      return 'DEBUG';
  }
}
