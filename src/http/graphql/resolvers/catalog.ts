/**
 * Static catalogue queries: GPU types (with this server's price table), serverless GPU pools and data centers.
 * Ids are the exact strings of spec/rest-graphql-facts.md §1.2 and §2.3.
 */
import { DATA_CENTER_IDS, GPU_TYPE_IDS } from '../../../domain/index.ts';
import { GPU_POOLS } from '../../../fleet/index.ts';
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

function gpuTypeView(id: string, ctx: GqlContext) {
  const price = ctx.deps.billing.prices.gpu[id] ?? 0;
  const displayName = id.replace(/^(NVIDIA|AMD Instinct)\s+/, '').replace(/^GeForce\s+/, '');
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
    lowestPrice: (args: { input?: { gpuCount?: number | null } | null }) => ({
      gpuName: displayName,
      gpuTypeId: id,
      minimumBidPrice: price * (args.input?.gpuCount ?? 1),
      uninterruptablePrice: price * (args.input?.gpuCount ?? 1),
      stockStatus: null,
    }),
  };
}

export function dataCenterView(id: string) {
  const country = countryOf(id);
  return { id, name: id, location: COUNTRIES[country] ?? country, gpuAvailability: [] };
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
    dataCenters: () => DATA_CENTER_IDS.map(dataCenterView),
  },
};
