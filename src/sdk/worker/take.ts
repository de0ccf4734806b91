// Turns a 200 answer to job-take / job-take-batch into jobs, as leniently and as strictly as the Python SDK
// (spec 1.6, 1.7): JSON content type required; an object or an array of objects; each needs `id` and `input`.

import type { HttpResponse } from './http.ts';
import { isPlainObject } from './result.ts';
import type { Job } from './types.ts';

export interface TakeResult {
  jobs: Job[];
  /** Log lines for job objects that were dropped (no result is posted for them, as in Python). */
  rejected: string[];
}

export function takeResponseJobs(res: HttpResponse): TakeResult {
  const none: TakeResult = { jobs: [], rejected: [] };
  // Python treats any other content type, and an empty body, as "no job".
  if (!res.contentType.toLowerCase().includes('application/json') || res.text.trim() === '') return none;
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    return none;
  }
  const items = Array.isArray(body) ? body : isPlainObject(body) ? [body] : [];
  const result: TakeResult = { jobs: [], rejected: [] };
  for (const item of items) {
    // Python accepts any id; a numeric one is made a string, which is what handlers and URLs expect.
    if (isPlainObject(item) && (typeof item.id === 'string' || typeof item.id === 'number') && 'input' in item) {
      result.jobs.push({ ...item, id: String(item.id), input: item.input });
    } else {
      // Python validates single objects only and would crash on a bad array item; we drop it the same way.
      const id = isPlainObject(item) && typeof item.id === 'string' ? ` (id ${item.id})` : '';
      result.rejected.push(`Job has missing field(s): id or input.${id}`);
    }
  }
  return result;
}
