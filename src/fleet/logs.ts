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
      ring = { lines: [], seq: 0 };
      this.rings.set(endpointId, ring);
    }
    const { jobId, level, message } = parseLine(raw);
    ring.lines.push({ seq: ++ring.seq, time: new Date(now).toISOString(), workerId, jobId, stream, level, message });
    if (ring.lines.length > this.perEndpoint) ring.lines.splice(0, ring.lines.length - this.perEndpoint);
    for (const l of this.listeners) l(endpointId);
  }

  query(endpointId: string, q: LogQuery = {}): LogLine[] {
    const ring = this.rings.get(endpointId);
    if (!ring) return [];
    const limit = Math.min(Math.max(q.limit ?? 500, 1), 5000);
    const out: LogLine[] = [];
    for (let i = ring.lines.length - 1; i >= 0 && out.length < limit; i--) {
      const line = ring.lines[i]!;
      if (q.after !== undefined && line.seq <= q.after) break;
      if (q.workerId && line.workerId !== q.workerId) continue;
      if (q.jobId && line.jobId !== q.jobId) continue;
      out.push(line);
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
