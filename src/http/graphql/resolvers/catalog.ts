/**
 * Catalogue queries: GPU types (with this server's price table), serverless GPU pools, CPU flavors and data centers. Ids are the
 * exact strings of spec/rest-graphql-facts.md §1.2 and §2.3. Availability (`dataCenters.gpuAvailability`,
 * `lowestPrice.stockStatus` and its counts) is this node's GPUs, in this node's data center: runpodctl's `gpu list`
 * shows only the types that have some.
 */
import { availableParallelism, totalmem } from 'node:os';
import {
  CPU_FLAVOR_IDS,
  CPU_GB_PER_VCPU,
  DATA_CENTER_IDS,
  GPU_TYPE_IDS,
  memoryLimitMb,
} from '../../../domain/index.ts';
import { GPU_POOLS } from '../../../fleet/index.ts';
import type { GpuStock } from '../../../fleet/index.ts';
import type { NodeGpuStock } from '../../context.ts';
import type { GqlContext, ResolverMap } from '../context.ts';
import { countryOf } from '../convert.ts';

/** Memory of each GPU type in GB (vendor specifications). */
// prettier-ignore
const MEMORY_GB: Readonly<Record<string, number>> = {
  'NVIDIA GeForce RTX 4090': 24, 'NVIDIA A40': 48, 'NVIDIA RTX A5000': 24, 'NVIDIA GeForce RTX 5090': 32,
  'NVIDIA H100 80GB HBM3': 80, 'NVIDIA GeForce RTX 3090': 24, 'NVIDIA RTX A4500': 20, 'NVIDIA L40S': 48,
  'NVIDIA H200': 141, 'NVIDIA L4': 24, 'NVIDIA RTX 6000 Ada Generation': 48, 'NVIDIA A100-SXM4-80GB': 80,
  'NVIDIA RTX 4000 Ada Generation': 20, 'NVIDIA RTX A6000': 48, 'NVIDIA A100 80GB PCIe': 80,
  'NVIDIA RTX 2000 Ada Generation': 16, 'NVIDIA RTX A4000': 16, 'NVIDIA RTX PRO 6000 Blackwell Server Edition': 96,
  'NVIDIA H100 PCIe': 80, 'NVIDIA H100 NVL': 94, 'NVIDIA L40': 48, 'NVIDIA B200': 180, 'NVIDIA GeForce RTX 3080 Ti': 12,
  'NVIDIA RTX PRO 6000 Blackwell Workstation Edition': 96, 'NVIDIA GeForce RTX 3080': 10, 'NVIDIA GeForce RTX 3070': 8,
  'AMD Instinct MI300X OAM': 192, 'NVIDIA GeForce RTX 4080 SUPER': 16, 'Tesla V100-PCIE-16GB': 16,
  'Tesla V100-SXM2-32GB': 32, 'NVIDIA RTX 5000 Ada Generation': 32, 'NVIDIA GeForce RTX 4070 Ti': 12,
  'NVIDIA RTX 4000 SFF Ada Generation': 20, 'NVIDIA GeForce RTX 3090 Ti': 24, 'NVIDIA RTX A2000': 6,
  'NVIDIA GeForce RTX 4080': 16, 'NVIDIA A30': 24, 'NVIDIA GeForce RTX 5080': 16, 'Tesla V100-FHHL-16GB': 16,
  'NVIDIA H200 NVL': 141, 'Tesla V100-SXM2-16GB': 16, 'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition': 96,
  'NVIDIA A5000 Ada': 32, 'Tesla V100-PCIE-32GB': 32, 'NVIDIA  RTX A4500': 20, 'NVIDIA  A30': 24,
  'NVIDIA GeForce RTX 3080TI': 12, 'Tesla T4': 16, 'NVIDIA RTX A30': 24,
};

const COUNTRIES: Readonly<Record<string, string>> = {
  US: 'United States',
  CA: 'Canada',
  RO: 'Romania',
  SE: 'Sweden',
  IS: 'Iceland',
  CZ: 'Czech Republic',
  NL: 'Netherlands',
  AU: 'Australia',
  JP: 'Japan',
  NO: 'Norway',
  FR: 'France',
};

/** Most GPUs one worker can be given. */
const MAX_GPU_COUNT = 8;

const displayNameOf = (id: string): string => id.replace(/^(NVIDIA|AMD Instinct)\s+/, '').replace(/^GeForce\s+/, '');

/**
 * RunPod's stock levels, which runpodctl ranks High > Medium > Low, for `count` GPUs of one type: High while at
 * least half of them are free, Medium while `count` are, Low when all are taken (the type is here: jobs wait for it).
 */
function stockStatus(stock: GpuStock, count = 1): 'High' | 'Medium' | 'Low' {
  if (stock.free >= count && stock.free * 2 >= stock.total) return 'High';
  return stock.free >= count ? 'Medium' : 'Low';
}

/** This node's GPUs of one type when `dataCenterId` (absent: any) is this node's. */
function stockOf(node: NodeGpuStock | null | undefined, gpuTypeId: string, dataCenterId: string | null | undefined) {
  if (!node || (dataCenterId != null && dataCenterId !== node.dataCenterId)) return undefined;
  return node.types.find((t) => t.gpuTypeId === gpuTypeId);
}

type LowestPriceInput = {
  gpuCount?: number | null;
  dataCenterId?: string | null;
  minMemoryInGb?: number | null;
  minVcpuCount?: number | null;
} | null;

/**
 * The memory (GB) and vCPUs a GPU worker of this node can have: the whole machine, but no more memory than the node's
 * per-worker cap (--worker-memory-mb), which every executor sets as a GPU worker's memory limit where given (the
 * process executor where it has cgroups), as a GPU pod's memoryInGb says too.
 * `runpodctl get cloud` lists a GPU type only when its lowestPrice has them (minMemory, minVcpu).
 */
function machineOf(workerMemoryMb: number | undefined): { memoryGb: number; vcpus: number } {
  const memoryMb = memoryLimitMb(workerMemoryMb ?? 0, Math.floor(totalmem() / 2 ** 20));
  return { memoryGb: Math.floor(memoryMb / 1024), vcpus: availableParallelism() };
}

function gpuTypeView(id: string, ctx: GqlContext) {
  const price = ctx.deps.billing.prices.gpu[id] ?? 0;
  const displayName = displayNameOf(id);
  return {
    id,
    displayName,
    manufacturer: id.startsWith('AMD') ? 'AMD' : 'Nvidia',
    memoryInGb: MEMORY_GB[id] ?? null,
    cudaCores: null,
    secureCloud: true,
    communityCloud: false,
    maxGpuCount: MAX_GPU_COUNT,
    maxGpuCountSecureCloud: MAX_GPU_COUNT,
    maxGpuCountCommunityCloud: 0,
    securePrice: price,
    communityPrice: price,
    oneMonthPrice: price,
    threeMonthPrice: price,
    sixMonthPrice: price,
    oneWeekPrice: price,
    communitySpotPrice: price,
    secureSpotPrice: price,
    lowestPrice: (args: { input?: LowestPriceInput }) => {
      const count = args.input?.gpuCount ?? 1;
      const here = stockOf(ctx.deps.gpuStock?.(), id, args.input?.dataCenterId);
      const machine = machineOf(ctx.deps.workerMemoryMb);
      const fits =
        here !== undefined &&
        here.total >= count &&
        machine.memoryGb >= (args.input?.minMemoryInGb ?? 0) &&
        machine.vcpus >= (args.input?.minVcpuCount ?? 0);
      return {
        gpuName: displayName,
        gpuTypeId: id,
        minimumBidPrice: price * count,
        uninterruptablePrice: price * count,
        stockStatus: here ? stockStatus(here, count) : null,
        totalCount: here?.total ?? 0,
        rentedCount: here ? here.total - here.free : 0,
        maxUnreservedGpuCount: here?.free ?? 0,
        minMemory: fits ? machine.memoryGb : null,
        minVcpu: fits ? machine.vcpus : null,
      };
    },
  };
}

export function dataCenterView(id: string, node: NodeGpuStock | null | undefined) {
  const country = countryOf(id);
  const gpuAvailability =
    node?.dataCenterId === id
      ? node.types.map((t) => ({
          gpuTypeId: t.gpuTypeId,
          displayName: displayNameOf(t.gpuTypeId),
          stockStatus: stockStatus(t),
        }))
      : [];
  return { id, name: id, location: COUNTRIES[country] ?? country, gpuAvailability };
}

const CPU_GROUP_NAMES: Readonly<Record<string, string>> = { c: 'Compute-Optimized', g: 'General Purpose' };

/**
 * A CPU flavor as flash reads it (`cpuFlavors { specifics(input: {dataCenterId, instanceId}) { stockStatus } }`). CPU
 * workers need no GPU: a node that runs workers can start one of any flavor, so its stock is High there.
 */
function cpuFlavorView(id: string, ctx: GqlContext) {
  const family = id.slice(-1);
  const groupName = CPU_GROUP_NAMES[family] ?? family;
  return {
    id,
    groupId: id.slice(0, -1),
    groupName,
    displayName: `${groupName} (${id.slice(0, -1)})`,
    // What endpoint-input.ts and the REST schema accept for vcpuCount.
    minVcpu: 1,
    maxVcpu: 512,
    ramMultiplier: CPU_GB_PER_VCPU[family] ?? null,
    specifics: (args: { input?: { dataCenterId?: string | null } | null }) => {
      const node = ctx.deps.gpuStock?.();
      const dc = args.input?.dataCenterId;
      const here = node != null && (dc == null || dc === node.dataCenterId);
      const price = ctx.deps.billing.prices.cpu[id] ?? 0;
      return { stockStatus: here ? 'High' : null, securePrice: price, slsPrice: price };
    },
  };
}

type GpuFilter = { id?: string | null; ids?: ReadonlyArray<string | null> | null };

export const catalogResolvers: ResolverMap = {
  Query: {
    gpuTypes: (_: unknown, args: { input?: GpuFilter | null }, ctx: GqlContext) => {
      const f = args.input ?? {};
      const wanted = [...(f.id ? [f.id] : []), ...(f.ids ?? []).flatMap((x) => (x ? [x] : []))];
      const ids = wanted.length > 0 ? GPU_TYPE_IDS.filter((t) => wanted.includes(t)) : GPU_TYPE_IDS;
      return ids.map((id) => gpuTypeView(id, ctx));
    },
    serverlessGpuPools: () =>
      Object.entries(GPU_POOLS).map(([id, pool]) => ({ id, gpuTypeIds: [...pool.types], memoryInGb: pool.memoryGb })),
    cpuFlavors: (_: unknown, args: { input?: { id?: string | null } | null }, ctx: GqlContext) => {
      const id = args.input?.id;
      return CPU_FLAVOR_IDS.filter((f) => id == null || f === id).map((f) => cpuFlavorView(f, ctx));
    },
    dataCenters: (_: unknown, _args: unknown, ctx: GqlContext) => {
      const node = ctx.deps.gpuStock?.();
      return DATA_CENTER_IDS.map((id) => dataCenterView(id, node));
    },
  },
};
