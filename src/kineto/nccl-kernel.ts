// What an NCCL kernel of a PyTorch profiler (Kineto) trace did: its collective, dtype, algorithm and size.

/** The collective an NCCL kernel runs; 'unknown' when neither its name nor its args say. */
export type NcclCollective =
  | 'allReduce'
  | 'allGather'
  | 'reduceScatter'
  | 'broadcast'
  | 'reduce'
  | 'sendRecv'
  | 'allToAll'
  | 'gather'
  | 'scatter'
  | 'barrier'
  | 'unknown';

/** One NCCL kernel's call, from its name and (PyTorch ≥ 2.1 traces) the args Kineto copies from `record_param_comms`. */
export interface NcclCall {
  readonly collective: NcclCollective;
  /** Element type, normalized: 'float32', 'bfloat16', 'float16', 'int8', …; undefined when not recorded. */
  readonly dtype?: string;
  /** NCCL algorithm and protocol from the kernel name ('RING', 'TREE', 'NVLS', …; 'LL', 'LL128', 'SIMPLE'). */
  readonly algorithm?: string;
  readonly protocol?: string;
  /** Reduction from the kernel name ('Sum', 'Max', …). */
  readonly reduction?: string;
  /** Payload in the nccl-tests convention: max(in, out) elements × element size (all-reduce: the buffer, reduce-scatter: its input, all-gather: its output). */
  readonly bytes?: number;
  readonly inElements?: number;
  readonly outElements?: number;
  readonly groupSize?: number;
  /** Process group name and description (e.g. "TENSOR_MODEL_PARALLEL_GROUP"), and its global ranks as recorded ("[0, 1]"). */
  readonly groupName?: string;
  readonly groupDesc?: string;
  readonly groupRanks?: string;
}

/** True for NCCL device kernels: `ncclKernel_…` (NCCL ≤ 2.18) and `ncclDevKernel_…` (NCCL ≥ 2.19). */
export function isNcclKernel(name: string): boolean {
  return name.startsWith('ncclKernel_') || name.startsWith('ncclDevKernel_');
}

const nameKinds: Record<string, NcclCollective> = {
  AllReduce: 'allReduce',
  AllGather: 'allGather',
  ReduceScatter: 'reduceScatter',
  Broadcast: 'broadcast',
  Reduce: 'reduce',
  SendRecv: 'sendRecv',
  Send: 'sendRecv',
  Recv: 'sendRecv',
  AllToAll: 'allToAll',
};
const algorithms = new Set(['RING', 'TREE', 'COLLNET', 'COLLNET_DIRECT', 'COLLNET_CHAIN', 'NVLS', 'NVLS_TREE', 'PAT']);
const protocols = new Set(['LL', 'LL128', 'SIMPLE']);
const reductions = new Set(['Sum', 'Prod', 'Min', 'Max', 'PreMulSum', 'SumPostDiv']);

/** Element types by every spelling: NCCL kernel names (f32, float, bf16, __nv_bfloat16, …) and torch dtype names (Float, BFloat16, …). */
const dtypes: Record<string, { name: string; bytes: number }> = {};
for (const [name, bytes, spellings] of [
  ['float32', 4, ['f32', 'float', 'Float', 'float32']],
  ['float64', 8, ['f64', 'double', 'Double', 'float64']],
  ['float16', 2, ['f16', 'half', 'Half', 'float16']],
  ['bfloat16', 2, ['bf16', '__nv_bfloat16', 'bfloat16', 'BFloat16']],
  ['float8_e4m3', 1, ['f8e4m3', '__nv_fp8_e4m3', 'Float8_e4m3fn']],
  ['float8_e5m2', 1, ['f8e5m2', '__nv_fp8_e5m2', 'Float8_e5m2']],
  ['int8', 1, ['i8', 'int8_t', 'Char', 'int8']],
  ['uint8', 1, ['u8', 'uint8_t', 'Byte', 'uint8', 'Bool']],
  ['int32', 4, ['i32', 'int32_t', 'Int', 'int32']],
  ['uint32', 4, ['u32', 'uint32_t', 'uint32']],
  ['int64', 8, ['i64', 'int64_t', 'Long', 'int64']],
  ['uint64', 8, ['u64', 'uint64_t', 'uint64']],
] as const)
  for (const s of [name, ...spellings]) dtypes[s] = { name, bytes };

/** The normalized dtype and its size in bytes for any spelling NCCL or torch use; undefined when unknown. */
export function dtypeOf(spelling: string): { name: string; bytes: number } | undefined {
  return dtypes[spelling];
}

/**
 * The collective of a torch `Collective name` arg ("allreduce", "_allgather_base",
 * "reduce_scatter_tensor_coalesced", "all_to_all", "send", …).
 */
export function collectiveFromTorchName(name: string): NcclCollective {
  const n = name.toLowerCase().replace(/[^a-z]/g, '');
  if (n.includes('allreduce')) return 'allReduce';
  if (n.includes('reducescatter')) return 'reduceScatter';
  if (n.includes('allgather')) return 'allGather';
  if (n.includes('alltoall')) return 'allToAll';
  if (n.includes('broadcast')) return 'broadcast';
  if (n.includes('barrier')) return 'barrier';
  if (n === 'send' || n === 'recv' || n.includes('sendrecv') || n.includes('batchisendirecv')) return 'sendRecv';
  if (n.includes('reduce')) return 'reduce';
  if (n.includes('gather')) return 'gather';
  if (n.includes('scatter')) return 'scatter';
  return 'unknown';
}

/**
 * What an NCCL kernel name says: `ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)` (NCCL ≤ 2.18:
 * collective, algorithm, protocol, reduction, type) or `ncclDevKernel_AllReduce_Sum_f32_RING_LL(…)`
 * (NCCL ≥ 2.19: collective, reduction, type, algorithm, protocol; AllGather and Broadcast carry no
 * reduction or type, `ncclDevKernel_Generic` nothing). Tokens are recognized by value, not place.
 */
export function parseNcclKernelName(name: string): Omit<NcclCall, 'bytes' | 'inElements' | 'outElements'> {
  const body = name.replace(/^nccl(Dev)?Kernel_/, '').replace(/\(.*$/, '');
  const tokens = body.split('_');
  let collective: NcclCollective = 'unknown';
  let dtype: string | undefined;
  let algorithm: string | undefined;
  let protocol: string | undefined;
  let reduction: string | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const two = i + 1 < tokens.length ? `${t}_${tokens[i + 1]}` : '';
    if (i === 0 && nameKinds[t]) collective = nameKinds[t]!;
    else if (algorithms.has(two)) {
      algorithm = two;
      i++;
    } else if (algorithms.has(t)) algorithm = t;
    else if (protocols.has(t)) protocol = t;
    else if (reductions.has(t)) reduction = t;
    else if (dtypes[two]) {
      dtype = dtypes[two]!.name;
      i++;
    } else if (dtypes[t]) dtype = dtypes[t]!.name;
  }
  if (!dtype) {
    const nv = /__nv_(bfloat16|fp8_e4m3|fp8_e5m2)/.exec(body);
    if (nv) dtype = dtypes[`__nv_${nv[1]}`]?.name;
  }
  return {
    collective,
    ...(dtype && { dtype }),
    ...(algorithm && { algorithm }),
    ...(protocol && { protocol }),
    ...(reduction && { reduction }),
  };
}

/** The args `ncclCall` reads: calls with equal name and equal values of these are equal. */
export const ncclArgKeys = [
  'Collective name',
  'In msg nelems',
  'Out msg nelems',
  'Group size',
  'dtype',
  'Process Group Name',
  'Process Group Description',
  'Process Group Ranks',
] as const;

/** Parsed kernel names (a trace repeats a few names many times); bounded by the distinct names of the traces read. */
const byName = new Map<string, ReturnType<typeof parseNcclKernelName>>();

const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The call of an NCCL kernel from its name and args. The args (`Collective name`, `In msg nelems`,
 * `Out msg nelems`, `Group size`, `dtype`, `Process Group Name/Description/Ranks`, written by
 * Kineto's output_json.cpp from the linked `record_param_comms` op) win over the name where both speak.
 */
export function ncclCall(name: string, args: Readonly<Record<string, unknown>> | undefined): NcclCall {
  let fromName = byName.get(name);
  if (!fromName) byName.set(name, (fromName = parseNcclKernelName(name)));
  const a = args ?? {};
  const torchName = str(a['Collective name']);
  const fromArgs = torchName ? collectiveFromTorchName(torchName) : 'unknown';
  const dt = str(a['dtype']);
  const dtype = (dt && dtypeOf(dt)?.name) ?? fromName.dtype;
  const inElements = num(a['In msg nelems']);
  const outElements = num(a['Out msg nelems']);
  const size = dtype ? dtypeOf(dtype)?.bytes : undefined;
  const elements =
    inElements !== undefined || outElements !== undefined ? Math.max(inElements ?? 0, outElements ?? 0) : undefined;
  const groupSize = num(a['Group size']);
  const groupName = str(a['Process Group Name']);
  const groupDesc = str(a['Process Group Description']);
  const groupRanks = str(a['Process Group Ranks']);
  return {
    ...fromName,
    collective: fromArgs !== 'unknown' ? fromArgs : fromName.collective,
    ...(dtype && { dtype }),
    ...(elements !== undefined && size !== undefined && { bytes: elements * size }),
    ...(inElements !== undefined && { inElements }),
    ...(outElements !== undefined && { outElements }),
    ...(groupSize !== undefined && { groupSize }),
    ...(groupName && { groupName }),
    ...(groupDesc && { groupDesc }),
    ...(groupRanks && { groupRanks }),
  };
}
