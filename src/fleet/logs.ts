/**
 * Worker logs: every stdout/stderr line of managed workers, per endpoint, in a bounded ring (the oldest lines go
 * first), tagged with the job id when the line says which job it is about. The official SDK writes JSON lines
 * `{"requestId": <job id>, "message", "level"}` when RUNPOD_ENDPOINT_ID is set; the TypeScript SDK does the same.
 */
export interface LogLine {
  /** Position in the endpoint's log, increasing; use it as a cursor (`after`). */
  seq: number;
  time: string;
  workerId: string;
  jobId: string | null;
  stream: 'stdout' | 'stderr';
  level: string | null;
  message: string;
}

export interface LogQuery {
  workerId?: string | undefined;
  jobId?: string | undefined;
  after?: number | undefined;
  limit?: number | undefined;
}

interface Ring {
  lines: LogLine[];
  seq: number;
}

export class LogBook {
  private readonly rings = new Map<string, Ring>();
  private readonly perEndpoint: number;
  private readonly listeners = new Set<(endpointId: string) => void>();

  constructor(perEndpoint = 10_000) {
    this.perEndpoint = perEndpoint;
  }

  append(endpointId: string, workerId: string, stream: 'stdout' | 'stderr', raw: string, now = Date.now()): void {
    let ring = this.rings.get(endpointId);
    if (!ring) {
      // Numbered from the time the ring began (× 1000): a cursor a reader kept across a server restart is below
      // every line of the new run, so it gets them all rather than none until the count catches up.
      ring = { lines: [], seq: now * 1000 };
      this.rings.set(endpointId, ring);
    }
    const { jobId, level, message } = parseLine(raw);
    ring.lines.push({ seq: ++ring.seq, time: new Date(now).toISOString(), workerId, jobId, stream, level, message });
    if (ring.lines.length > this.perEndpoint) ring.lines.splice(0, ring.lines.length - this.perEndpoint);
    for (const l of this.listeners) l(endpointId);
  }

  /**
   * Without `after`: the newest `limit` lines (a tail). With `after`: the oldest `limit` lines after that cursor, so a
   * reader that pages on from the last line it got (a follower) never skips any, however many arrived at once.
   * Oldest first either way.
   */
  query(endpointId: string, q: LogQuery = {}): LogLine[] {
    const ring = this.rings.get(endpointId);
    if (!ring) return [];
    const limit = Math.min(Math.max(q.limit ?? 500, 1), 5000);
    const wanted = (line: LogLine): boolean =>
      (!q.workerId || line.workerId === q.workerId) && (!q.jobId || line.jobId === q.jobId);
    const out: LogLine[] = [];
    if (q.after !== undefined) {
      for (let i = firstAfter(ring.lines, q.after); i < ring.lines.length && out.length < limit; i++) {
        if (wanted(ring.lines[i]!)) out.push(ring.lines[i]!);
      }
      return out;
    }
    for (let i = ring.lines.length - 1; i >= 0 && out.length < limit; i--) {
      if (wanted(ring.lines[i]!)) out.push(ring.lines[i]!);
    }
    return out.reverse();
  }

  onAppend(listener: (endpointId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  drop(endpointId: string): void {
    this.rings.delete(endpointId);
  }
}

function parseLine(raw: string): { jobId: string | null; level: string | null; message: string } {
  if (raw.startsWith('{')) {
    try {
      const parsed = JSON.parse(raw) as Record<string, unknown>;
      if (typeof parsed === 'object' && parsed !== null && 'message' in parsed) {
        const requestId = parsed['requestId'];
        return {
          jobId: typeof requestId === 'string' ? requestId : null,
          level: typeof parsed['level'] === 'string' ? parsed['level'] : null,
          message: typeof parsed['message'] === 'string' ? parsed['message'] : JSON.stringify(parsed['message']),
        };
      }
    } catch {
      // Not JSON after all: keep the raw line.
    }
  }
  return { jobId: null, level: null, message: raw };
}

/** The index of the first line numbered after `seq` (lines are in increasing order): a binary search. */
function firstAfter(lines: readonly LogLine[], seq: number): number {
  let lo = 0;
  let hi = lines.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (lines[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
