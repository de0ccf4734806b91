// Summaries of the V8 CPU profiles the server child wrote for the measured windows (--profile DIR): where the server's
// time went, by area (SQLite, Fastify, Node's HTTP, Wharf's own layers, GC, idle) and by function, self and total.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { round, table } from './stats.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const SQLITE_NATIVE = new Set(['run', 'all', 'get', 'exec', 'prepare', 'iterate']);

function area(f: CallFrame): string {
  const { url, functionName: fn } = f;
  if (fn === '(idle)' || fn === '(program)' || fn === '(garbage collector)') return fn;
  if (url === '' && SQLITE_NATIVE.has(fn)) return 'node:sqlite (native)';
  if (url.includes('/src/store/')) return 'wharf store (JS)';
  if (url.includes('/src/http/')) return 'wharf http';
  if (url.includes('/src/engine/')) return 'wharf engine';
  if (url.includes('/src/sdk/')) return 'wharf worker SDK';
  if (url.includes('/src/')) return 'wharf other';
  if (/node_modules\/(fastify|find-my-way|avvio|@fastify|fast-json-stringify|light-my-request|ajv|typebox)/.test(url))
    return 'fastify (+ajv, router)';
  if (url.includes('node_modules/pino')) return 'pino';
  if (url.startsWith('node:') || url === '') {
    if (/http|_http|net|stream|llhttp|tcp/.test(url)) return 'node http/net/streams';
    return url === '' ? 'native / builtins' : 'node internals';
  }
  return 'other';
}

const keyOf = (f: CallFrame): string =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;

export function summarise(path: string): string {
  const p = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const areas = new Map<string, number>();
  let all = 0;
  let busy = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(p.samples[i]!);
    if (!node) continue;
    all += dt;
    const a = area(node.callFrame);
    areas.set(a, (areas.get(a) ?? 0) + dt);
    if (a === '(idle)') continue;
    busy += dt;
    const k = keyOf(node.callFrame);
    self.set(k, (self.get(k) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (!f.url.includes('/src/') && !f.url.includes('/bench/') && !SQLITE_NATIVE.has(f.functionName)) continue;
      const key = keyOf(f);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + dt);
    }
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => [k, round(v), `${round((v / busy) * 100)}%`]);
  return [
    `#### ${path.split('/').pop()} — ${round(all)} ms sampled, ${round(busy)} ms busy (${round((busy / all) * 100)}%)`,
    '',
    table(
      ['area (self time)', 'ms', 'of busy'],
      [...areas.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, round(v), k === '(idle)' ? '' : `${round((v / busy) * 100)}%`]),
    ),
    '',
    table(['function (self time)', 'ms', 'of busy'], top(self, 15)),
    '',
    table(['Wharf function or SQLite call (total time, callees included)', 'ms', 'of busy'], top(total, 20)),
  ].join('\n');
}

export function summariseProfiles(dir: string): string {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .map((f) => summarise(join(dir, f)))
    .join('\n\n');
}
