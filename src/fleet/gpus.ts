/**
 * GPU inventory and placement (DESIGN.md §3 "GPUs and placement"). The inventory lists this machine's GPUs —
 * discovered with nvidia-smi or declared in configuration — and hands each GPU to one worker at a time.
 * Pool ids and GPU type ids are the exact strings of spec/rest-graphql-facts.md (§1.2 GPU_TYPE_IDS, §2.3 gpuIds).
 */
import { execFile } from 'node:child_process';
import { allowsAnyDataCenter, nearestName } from '../domain/index.ts';
import { cudaRefusal, type CudaLimits } from './cuda.ts';

export interface Gpu {
  index: string;
  name: string;
  memoryGb: number;
  uuid?: string;
}

/** Serverless GPU pools → GPU type ids in preference order; memory is the pool's nominal size in GB. */
export const GPU_POOLS: Readonly<Record<string, { memoryGb: number; types: readonly string[] }>> = Object.freeze({
  AMPERE_16: {
    memoryGb: 16,
    types: ['NVIDIA RTX A4000', 'NVIDIA RTX A4500', 'NVIDIA RTX 4000 Ada Generation', 'NVIDIA RTX 2000 Ada Generation'],
  },
  AMPERE_24: { memoryGb: 24, types: ['NVIDIA L4', 'NVIDIA RTX A5000', 'NVIDIA GeForce RTX 3090'] },
  ADA_24: { memoryGb: 24, types: ['NVIDIA GeForce RTX 4090'] },
  ADA_32_PRO: { memoryGb: 32, types: ['NVIDIA GeForce RTX 5090'] },
  AMPERE_48: { memoryGb: 48, types: ['NVIDIA RTX A6000', 'NVIDIA A40'] },
  ADA_48_PRO: { memoryGb: 48, types: ['NVIDIA L40', 'NVIDIA L40S', 'NVIDIA RTX 6000 Ada Generation'] },
  AMPERE_80: { memoryGb: 80, types: ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe'] },
  ADA_80_PRO: { memoryGb: 80, types: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe', 'NVIDIA H100 NVL'] },
  HOPPER_141: { memoryGb: 141, types: ['NVIDIA H200', 'NVIDIA H200 NVL'] },
  BLACKWELL_96: {
    memoryGb: 96,
    types: [
      'NVIDIA RTX PRO 6000 Blackwell Server Edition',
      'NVIDIA RTX PRO 6000 Blackwell Workstation Edition',
      'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition',
    ],
  },
  BLACKWELL_180: { memoryGb: 180, types: ['NVIDIA B200'] },
});

/** GPU_TYPE_IDS in spec order (the double-space entries are real ids; they sort after their canonical twin). */
// prettier-ignore
export const GPU_TYPE_IDS: readonly string[] = Object.freeze([
  'NVIDIA GeForce RTX 4090', 'NVIDIA A40', 'NVIDIA RTX A5000', 'NVIDIA GeForce RTX 5090', 'NVIDIA H100 80GB HBM3',
  'NVIDIA GeForce RTX 3090', 'NVIDIA RTX A4500', 'NVIDIA L40S', 'NVIDIA H200', 'NVIDIA L4', 'NVIDIA RTX 6000 Ada Generation',
  'NVIDIA A100-SXM4-80GB', 'NVIDIA RTX 4000 Ada Generation', 'NVIDIA RTX A6000', 'NVIDIA A100 80GB PCIe',
  'NVIDIA RTX 2000 Ada Generation', 'NVIDIA RTX A4000', 'NVIDIA RTX PRO 6000 Blackwell Server Edition', 'NVIDIA H100 PCIe',
  'NVIDIA H100 NVL', 'NVIDIA L40', 'NVIDIA B200', 'NVIDIA GeForce RTX 3080 Ti',
  'NVIDIA RTX PRO 6000 Blackwell Workstation Edition', 'NVIDIA GeForce RTX 3080', 'NVIDIA GeForce RTX 3070',
  'AMD Instinct MI300X OAM', 'NVIDIA GeForce RTX 4080 SUPER', 'Tesla V100-PCIE-16GB', 'Tesla V100-SXM2-32GB',
  'NVIDIA RTX 5000 Ada Generation', 'NVIDIA GeForce RTX 4070 Ti', 'NVIDIA RTX 4000 SFF Ada Generation',
  'NVIDIA GeForce RTX 3090 Ti', 'NVIDIA RTX A2000', 'NVIDIA GeForce RTX 4080', 'NVIDIA A30', 'NVIDIA GeForce RTX 5080',
  'Tesla V100-FHHL-16GB', 'NVIDIA H200 NVL', 'Tesla V100-SXM2-16GB',
  'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition', 'NVIDIA A5000 Ada', 'Tesla V100-PCIE-32GB',
  'NVIDIA  RTX A4500', 'NVIDIA  A30', 'NVIDIA GeForce RTX 3080TI', 'Tesla T4', 'NVIDIA RTX A30',
]);

/**
 * Names differ between drivers and the API ("A100-SXM4-80GB" vs "NVIDIA A100-SXM4-80GB", "RTX 3080TI" vs
 * "RTX 3080 Ti", double spaces): compare without vendor/brand words, case, spaces and punctuation.
 */
export function normaliseGpuName(name: string): string {
  return words(name).join('');
}

function words(name: string): string[] {
  return name
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '' && !BRAND_WORDS.has(w));
}
const BRAND_WORDS = new Set(['nvidia', 'geforce', 'tesla', 'quadro']);

/** Same words in another order: "A100-PCIE-80GB" (some drivers) is the type id "NVIDIA A100 80GB PCIe". */
const wordSet = (name: string): string => words(name).sort().join(' ');

/** The GPU type id for a physical GPU's name: exact, then normalised, then same words; null if unknown. */
export function matchGpuType(name: string): string | null {
  if (GPU_TYPE_IDS.includes(name)) return name;
  const joined = normaliseGpuName(name);
  const byJoined = GPU_TYPE_IDS.find((id) => normaliseGpuName(id) === joined);
  if (byJoined !== undefined) return byJoined;
  const set = wordSet(name);
  return GPU_TYPE_IDS.find((id) => wordSet(id) === set) ?? null;
}

const sameType = (a: string, b: string): boolean =>
  a === b || normaliseGpuName(a) === normaliseGpuName(b) || wordSet(a) === wordSet(b);

function splitList(spec: string): string[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * An endpoint's `gpuIds` ("AMPERE_16,-NVIDIA RTX A4500") → acceptable GPU type ids in priority order, exclusions
 * applied. Entries may be pool ids or type ids. Empty → [] (any GPU); only exclusions → every known type but those.
 * Unknown entries are kept as literal type names (a GPU that nvidia-smi found may be named outside GPU_TYPE_IDS);
 * validateGpuIds reports them.
 */
export function parseGpuIds(spec: string): string[] {
  const entries = splitList(spec);
  const excluded = entries.filter((e) => e.startsWith('-')).map((e) => e.slice(1).trim());
  const included = entries.filter((e) => !e.startsWith('-'));
  const expanded = included.length === 0 && excluded.length > 0 ? [...GPU_TYPE_IDS] : included.flatMap(expand);
  const out: string[] = [];
  for (const id of expanded) {
    if (excluded.some((x) => sameType(x, id))) continue;
    if (out.some((o) => sameType(o, id))) continue;
    out.push(id);
  }
  return out;
}

function expand(entry: string): readonly string[] {
  return GPU_POOLS[entry]?.types ?? [matchGpuType(entry) ?? entry];
}

/** null when every entry of `gpuIds` is a known pool or GPU type id, else a message naming the unknown ones. */
export function validateGpuIds(spec: string): string | null {
  const unknown = splitList(spec)
    .map((e) => (e.startsWith('-') ? e.slice(1).trim() : e))
    .filter((e) => GPU_POOLS[e] === undefined && matchGpuType(e) === null);
  if (unknown.length === 0) return null;
  return `unknown GPU pool or type id ${unknown.map((u) => `'${u}'`).join(', ')}; pools are ${Object.keys(GPU_POOLS).join(', ')}`;
}

/** Output of `nvidia-smi --query-gpu=index,name,memory.total,uuid --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(csv: string): Gpu[] {
  const gpus: Gpu[] = [];
  for (const line of csv.split(/\r?\n/)) {
    const [index, name, memory, uuid] = line.split(',').map((f) => f.trim());
    if (index === undefined || index === '' || name === undefined || name === '') continue;
    const mib = Number(memory);
    const gpu: Gpu = { index, name, memoryGb: Number.isFinite(mib) ? Math.round(mib / 1024) : 0 };
    if (uuid !== undefined && uuid !== '' && uuid !== '[N/A]') gpu.uuid = uuid;
    gpus.push(gpu);
  }
  return gpus;
}

export const NVIDIA_SMI_ARGS: readonly string[] = [
  '--query-gpu=index,name,memory.total,uuid',
  '--format=csv,noheader,nounits',
];

/**
 * This machine's GPUs through nvidia-smi; [] when nvidia-smi is not installed. A failing nvidia-smi (driver not
 * loaded) throws, so a GPU machine with a broken driver is noticed instead of quietly running as CPU-only.
 */
export async function discoverGpus(opts: { command?: string; timeoutMs?: number } = {}): Promise<Gpu[]> {
  const command = opts.command ?? 'nvidia-smi';
  // 15 s: nvidia-smi can hang on a wedged driver; the server must still start (or fail) in bounded time.
  const timeout = opts.timeoutMs ?? 15_000;
  const stdout = await new Promise<string | null>((resolve, reject) => {
    execFile(command, NVIDIA_SMI_ARGS, { timeout, encoding: 'utf8' }, (err, out) => {
      if (err === null) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return resolve(null);
      reject(
        new Error(`${command} failed (${err.message.trim()}); declare the GPUs in configuration (or 'none') instead`, {
          cause: err,
        }),
      );
    });
  });
  return stdout === null ? [] : parseNvidiaSmi(stdout);
}

/**
 * A declared inventory: "NVIDIA GeForce RTX 4090:2,NVIDIA A40:1" (count defaults to 1), or "none" / "" for a
 * CPU-only machine. Indices are numbered in order; memory comes from the type's pool when known. A name that is no
 * GPU type id (matchGpuType) is refused: endpoints ask for type ids only, so such a GPU ("NVIDIA A4O", a typo) would
 * be placed for no endpoint that names a type, and anything at all ("garbage") would start as a GPU machine.
 */
export function parseDeclaredGpus(spec: string): Gpu[] {
  const trimmed = spec.trim();
  if (trimmed === '' || trimmed.toLowerCase() === 'none') return [];
  const gpus: Gpu[] = [];
  for (const entry of splitList(trimmed)) {
    const colon = entry.lastIndexOf(':');
    const rawName = (colon === -1 ? entry : entry.slice(0, colon)).trim();
    const rawCount = colon === -1 ? '1' : entry.slice(colon + 1).trim();
    const count = Number(rawCount);
    if (rawName === '' || !/^\d+$/.test(rawCount) || count < 1) {
      throw new Error(
        `bad GPU declaration '${entry}': expected '<GPU type id>:<count>', e.g. 'NVIDIA A40:2', or 'none'`,
      );
    }
    const name = matchGpuType(rawName);
    if (name === null) {
      const near = nearestName(rawName, GPU_TYPE_IDS, normaliseGpuName);
      throw new Error(
        `unknown GPU type '${rawName}'${near ? ` (did you mean '${near}'?)` : ''}: ` +
          `"wharf serve --help" lists the GPU type ids`,
      );
    }
    const pool = Object.values(GPU_POOLS).find((p) => p.types.includes(name));
    for (let i = 0; i < count; i += 1) gpus.push({ index: String(gpus.length), name, memoryGb: pool?.memoryGb ?? 0 });
  }
  return gpus;
}

export interface GpuRequest extends CudaLimits {
  count: number;
  /** Priority order; empty = any type. */
  acceptableTypes: string[];
  /** Empty or absent = any data center. */
  dataCenterIds?: string[];
}

export type GpuAllocation =
  | { ok: true; indices: string[]; gpuTypeId: string }
  | { ok: false; reason: 'no-capacity' | 'never-placeable'; message: string };

/** The GPUs of one type on a node: how many, and how many no worker holds. */
export interface GpuStock {
  gpuTypeId: string;
  total: number;
  free: number;
}

interface Slot {
  gpu: Gpu;
  typeId: string;
  workerId: string | null;
}

export class GpuInventory {
  readonly dataCenterId: string;
  /** The CUDA version the GPU driver supports (nvidia-smi, or configured); null = unknown, CUDA limits not applied. */
  readonly cudaVersion: string | null;
  /** Workers' data centers are chosen by the cluster (Kubernetes with a data-center node label), not by this node's. */
  private readonly dataCentersPlacedElsewhere: boolean;
  private readonly slots: Slot[];

  constructor(
    gpus: Gpu[],
    opts: { dataCenterId: string; cudaVersion?: string | null; dataCentersPlacedElsewhere?: boolean },
  ) {
    this.dataCenterId = opts.dataCenterId;
    this.cudaVersion = opts.cudaVersion ?? null;
    this.dataCentersPlacedElsewhere = opts.dataCentersPlacedElsewhere ?? false;
    this.slots = gpus.map((gpu) => ({ gpu, typeId: matchGpuType(gpu.name) ?? gpu.name, workerId: null }));
  }

  /**
   * Give `request.count` GPUs of one type to `workerId`; a CPU worker (count 0) gets [] where its data centers allow
   * this node.
   */
  allocate(workerId: string, request: GpuRequest): GpuAllocation {
    const refusal = this.placementRefusal(request);
    if (refusal !== null) return { ok: false, reason: 'never-placeable', message: refusal };
    if (request.count <= 0) return { ok: true, indices: [], gpuTypeId: '' };
    if (this.slots.some((s) => s.workerId === workerId)) {
      throw new Error(`worker ${workerId} already holds GPUs; release them before allocating again`);
    }
    const plan = this.plan(request);
    if (!plan.ok) return plan;
    for (const slot of plan.slots) slot.workerId = workerId;
    return { ok: true, indices: plan.slots.map((s) => s.gpu.index), gpuTypeId: plan.typeId };
  }

  /** Idempotent: releasing a worker without GPUs does nothing. */
  release(workerId: string): void {
    for (const slot of this.slots) if (slot.workerId === workerId) slot.workerId = null;
  }

  free(): number {
    return this.slots.filter((s) => s.workerId === null).length;
  }

  /** This node's GPUs by type, in machine order, and how many of each no worker holds (GraphQL's availability). */
  stock(): GpuStock[] {
    const byType = new Map<string, GpuStock>();
    for (const slot of this.slots) {
      const entry = byType.get(slot.typeId) ?? { gpuTypeId: slot.typeId, total: 0, free: 0 };
      entry.total += 1;
      if (slot.workerId === null) entry.free += 1;
      byType.set(slot.typeId, entry);
    }
    return [...byType.values()];
  }

  /**
   * How many more workers with this request fit now: the autoscaler's `capacity`. `ifFreed`: as if these workers'
   * GPUs were free (standbys that could make way).
   */
  capacityFor(request: GpuRequest, ifFreed: ReadonlySet<string> = new Set()): number {
    if (this.placementRefusal(request) !== null) return 0;
    if (request.count <= 0) return Infinity;
    const free = (s: Slot): boolean => s.workerId === null || ifFreed.has(s.workerId);
    let n = 0;
    for (const typeId of this.candidateTypes(request)) {
      n += Math.floor(this.slots.filter((s) => s.typeId === typeId && free(s)).length / request.count);
    }
    return n;
  }

  /** Whether `workerId` holds GPUs of a type the request accepts (freeing them could help it). */
  holdsFor(workerId: string, request: GpuRequest): boolean {
    const types = this.candidateTypes(request);
    return this.slots.some((s) => s.workerId === workerId && types.includes(s.typeId));
  }

  describe(): {
    dataCenterId: string;
    cudaVersion: string | null;
    gpus: Array<{
      index: string;
      name: string;
      gpuTypeId: string;
      memoryGb: number;
      uuid?: string;
      workerId: string | null;
    }>;
  } {
    return {
      dataCenterId: this.dataCenterId,
      cudaVersion: this.cudaVersion,
      gpus: this.slots.map((s) => ({ ...s.gpu, gpuTypeId: s.typeId, workerId: s.workerId })),
    };
  }

  /**
   * Why the request's placement limits forbid this node (its data center; for GPU workers, its driver's CUDA
   * version), or null when they allow it. The one rule for starting a worker here (allocate) and for keeping one
   * running: the supervisor retires the workers of an endpoint whose limits were changed to forbid this node.
   */
  placementRefusal(request: GpuRequest): string | null {
    const dcs = request.dataCenterIds ?? [];
    const here = this.dataCentersPlacedElsewhere || allowsAnyDataCenter(dcs);
    if (!here && !dcs.some((dc) => dc.trim() === this.dataCenterId)) {
      return `this node is in data center '${this.dataCenterId}'; the endpoint's dataCenterIds are ${dcs.join(', ')}`;
    }
    return request.count > 0 ? cudaRefusal(this.cudaVersion, request) : null;
  }

  /** The machine's type ids that the request accepts, in the request's priority order (machine order for "any"). */
  private candidateTypes(request: GpuRequest): string[] {
    const present = [...new Set(this.slots.map((s) => s.typeId))];
    if (request.acceptableTypes.length === 0) return present;
    const out: string[] = [];
    for (const wanted of request.acceptableTypes) {
      for (const typeId of present) if (sameType(wanted, typeId) && !out.includes(typeId)) out.push(typeId);
    }
    return out;
  }

  private plan(
    request: GpuRequest,
  ): { ok: true; slots: Slot[]; typeId: string } | Exclude<GpuAllocation, { ok: true }> {
    const types = this.candidateTypes(request);
    if (types.length === 0) {
      const have = [...new Set(this.slots.map((s) => s.typeId))].join(', ') || 'no GPUs';
      const wanted = request.acceptableTypes.join(', ') || 'any GPU';
      return {
        ok: false,
        reason: 'never-placeable',
        message: `no GPU of type ${wanted} on this node (it has ${have})`,
      };
    }
    let largest = 0;
    for (const typeId of types) {
      const ofType = this.slots.filter((s) => s.typeId === typeId);
      largest = Math.max(largest, ofType.length);
      const free = ofType.filter((s) => s.workerId === null);
      if (free.length >= request.count) return { ok: true, slots: free.slice(0, request.count), typeId };
    }
    if (largest < request.count) {
      const message = `the endpoint needs ${request.count} GPUs of one type; this node has at most ${largest} of an acceptable type`;
      return { ok: false, reason: 'never-placeable', message };
    }
    const message = `not enough free GPUs of an acceptable type right now (${this.free()} of ${this.slots.length} free on this node)`;
    return { ok: false, reason: 'no-capacity', message };
  }
}
