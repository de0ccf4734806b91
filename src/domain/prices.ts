/**
 * Prices for billing (`/v1/billing/*`, pod `costPerHr`): USD per hour per GPU of a type, per hour per worker of a CPU
 * flavor, and USD per GB-month of network volume. Operators override any of them with a JSON file (`--prices`);
 * types missing from both cost nothing.
 */
export interface PriceTable {
  readonly gpu: Readonly<Record<string, number>>;
  readonly cpu: Readonly<Record<string, number>>;
  readonly volumeGbMonth: number;
}

/** A month of volume storage, for `volumeGbMonth`: 30 days. */
export const MONTH_MS = 30 * 24 * 3600 * 1000;

// prettier-ignore
export const DEFAULT_PRICES: PriceTable = Object.freeze({
  gpu: Object.freeze({
    'NVIDIA GeForce RTX 4090': 0.69, 'NVIDIA A40': 0.4, 'NVIDIA RTX A5000': 0.27, 'NVIDIA GeForce RTX 5090': 0.94,
    'NVIDIA H100 80GB HBM3': 2.99, 'NVIDIA GeForce RTX 3090': 0.46, 'NVIDIA RTX A4500': 0.25, 'NVIDIA L40S': 0.86,
    'NVIDIA H200': 3.99, 'NVIDIA L4': 0.43, 'NVIDIA RTX 6000 Ada Generation': 0.77, 'NVIDIA A100-SXM4-80GB': 1.74,
    'NVIDIA RTX 4000 Ada Generation': 0.26, 'NVIDIA RTX A6000': 0.49, 'NVIDIA A100 80GB PCIe': 1.64,
    'NVIDIA RTX 2000 Ada Generation': 0.24, 'NVIDIA RTX A4000': 0.25, 'NVIDIA RTX PRO 6000 Blackwell Server Edition': 1.84,
    'NVIDIA H100 PCIe': 2.39, 'NVIDIA H100 NVL': 2.79, 'NVIDIA L40': 0.99, 'NVIDIA B200': 5.99,
    'NVIDIA GeForce RTX 3080 Ti': 0.18, 'NVIDIA RTX PRO 6000 Blackwell Workstation Edition': 1.84,
    'NVIDIA GeForce RTX 3080': 0.17, 'NVIDIA GeForce RTX 3070': 0.13, 'AMD Instinct MI300X OAM': 2.49,
    'NVIDIA GeForce RTX 4080 SUPER': 0.33, 'Tesla V100-PCIE-16GB': 0.19, 'Tesla V100-SXM2-32GB': 0.29,
    'NVIDIA RTX 5000 Ada Generation': 0.55, 'NVIDIA GeForce RTX 4070 Ti': 0.19, 'NVIDIA RTX 4000 SFF Ada Generation': 0.26,
    'NVIDIA GeForce RTX 3090 Ti': 0.27, 'NVIDIA RTX A2000': 0.12, 'NVIDIA GeForce RTX 4080': 0.3, 'NVIDIA A30': 0.22,
    'NVIDIA GeForce RTX 5080': 0.45, 'Tesla V100-FHHL-16GB': 0.19, 'NVIDIA H200 NVL': 3.59, 'Tesla V100-SXM2-16GB': 0.19,
    'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition': 1.79, 'NVIDIA A5000 Ada': 0.55,
    'Tesla V100-PCIE-32GB': 0.29, 'NVIDIA  RTX A4500': 0.25, 'NVIDIA  A30': 0.22, 'NVIDIA GeForce RTX 3080TI': 0.18,
    'Tesla T4': 0.11, 'NVIDIA RTX A30': 0.22,
  }),
  cpu: Object.freeze({ cpu3c: 0.06, cpu3g: 0.08, cpu3m: 0.1, cpu5c: 0.08, cpu5g: 0.1, cpu5m: 0.12 }),
  volumeGbMonth: 0.07,
});

/** Overlay a price file's content on the defaults; throws naming the first bad entry. */
export function parsePrices(json: unknown, base: PriceTable = DEFAULT_PRICES): PriceTable {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('prices: expected an object');
  const o = json as Record<string, unknown>;
  const known = new Set(['gpu', 'cpu', 'volumeGbMonth']);
  for (const key of Object.keys(o)) if (!known.has(key)) throw new Error(`prices: unknown key ${key}`);
  const table = (name: 'gpu' | 'cpu'): Record<string, number> => {
    const given = o[name];
    if (given === undefined) return { ...base[name] };
    if (typeof given !== 'object' || given === null || Array.isArray(given))
      throw new Error(`prices.${name}: expected an object of USD per hour`);
    const out: Record<string, number> = { ...base[name] };
    for (const [k, v] of Object.entries(given)) out[k] = price(`prices.${name}["${k}"]`, v);
    return out;
  };
  return Object.freeze({
    gpu: Object.freeze(table('gpu')),
    cpu: Object.freeze(table('cpu')),
    volumeGbMonth:
      o['volumeGbMonth'] === undefined ? base.volumeGbMonth : price('prices.volumeGbMonth', o['volumeGbMonth']),
  });
}

function price(where: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`${where}: expected a number >= 0`);
  return v;
}

/** USD per hour of one worker: its GPUs when it has any, else its CPU flavor. */
export function hourlyPrice(
  prices: PriceTable,
  w: { gpuTypeId: string | null; gpuCount: number; cpuFlavorId: string | null },
): number {
  if (w.gpuTypeId && w.gpuCount > 0) return (prices.gpu[w.gpuTypeId] ?? 0) * w.gpuCount;
  return w.cpuFlavorId ? (prices.cpu[w.cpuFlavorId] ?? 0) : 0;
}
