// Kineto traces shaped like a real Megatron-Core job's: every rank of a t × DP job on nodes of 8
// GPUs, each with the process groups Megatron creates for it (rank order tp-cp-ep-dp-pp, cp = ep =
// pp = 1: TP group ⌊r/t⌋·t + [0, t), DP group r mod t + t·[0, DP); parallel_state.py at
// core_v0.19.0, RankGenerator) as PyTorch writes them (distributedInfo.pg_config: pg_name,
// pg_desc, pg_size, ranks) and NCCL kernels carrying `Process Group Name/Description/Ranks`.
//
// One step per ProfilerStep#N (CPU and GPU annotations, as torch.profiler writes both): per layer,
// forward and backward with SP — all-gather, GEMMs, reduce-scatter, twice each way — then the
// vocab-parallel cross-entropy's three TP all-reduces (MAX, target, Σ exp; cross_entropy.py), the
// DP gradient all-reduce per bucket, the finalize all-reduce of the norms' gradients in the TP group,
// and Adam. Ranks run in lockstep: a collective's kernel starts on each rank when that rank reaches
// it and ends on all of them when the last member arrives plus the transfer (NCCL kernels wait for
// the slowest peer), so a slowed rank shows up as waiting on its peers.

/** The job the traces stand for. */
export interface TracedJob {
  readonly tp: number;
  readonly dp: number;
  readonly layers: number;
  /** ProfilerStep numbers traced. */
  readonly steps: readonly number[];
  /** rank → its compute time factor in step `step` (1 = as the others). */
  readonly slow?: { readonly rank: number; readonly step: number; readonly factor: number };
}

/** Compute kernel and transfer times, µs (round figures, not a measurement). */
export const us = {
  gemm: 300,
  attention: 200,
  elementwise: 40,
  adam: 250,
  ag: 120,
  rs: 120,
  ceAllReduce: 15,
  dpBucket: 400,
};
/** DP gradient buckets per step. */
export const dpBuckets = 3;

type Dim = 'tp' | 'dp';
type Op =
  | { readonly kind: 'compute'; readonly name: string; readonly us: number }
  | {
      readonly kind: 'comm';
      readonly coll: 'allreduce' | '_allgather_base' | '_reduce_scatter_base';
      readonly dim: Dim;
      readonly us: number;
    };

const gemm: Op = {
  kind: 'compute',
  name: 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas',
  us: us.gemm,
};
const ag: Op = { kind: 'comm', coll: '_allgather_base', dim: 'tp', us: us.ag };
const rs: Op = { kind: 'comm', coll: '_reduce_scatter_base', dim: 'tp', us: us.rs };
const compute = (name: string, t: number): Op => ({ kind: 'compute', name, us: t });

/** One step's ops, the same on every rank. */
function stepOps(layers: number): Op[] {
  const forward: Op[] = [
    ag,
    gemm,
    compute('flash_fwd_kernel', us.attention),
    gemm,
    rs,
    ag,
    gemm,
    compute('swiglu_kernel', us.elementwise),
    gemm,
    rs,
  ];
  const backward: Op[] = [
    ag,
    gemm,
    gemm,
    compute('swiglu_bwd_kernel', us.elementwise),
    rs,
    ag,
    gemm,
    gemm,
    compute('flash_bwd_kernel', 2 * us.attention),
    rs,
  ];
  const ce: Op = { kind: 'comm', coll: 'allreduce', dim: 'tp', us: us.ceAllReduce };
  return [
    ...Array.from({ length: layers }, () => forward).flat(),
    gemm,
    ce,
    ce,
    ce,
    ...Array.from({ length: layers }, () => backward).flat(),
    ...Array.from({ length: dpBuckets }, (): Op => ({ kind: 'comm', coll: 'allreduce', dim: 'dp', us: us.dpBucket })),
    { kind: 'comm', coll: 'allreduce', dim: 'tp', us: us.ceAllReduce },
    compute('multi_tensor_apply_kernel<AdamFunctor<float>>', us.adam),
  ];
}

/** The ranks of rank r's group in dimension `dim`. */
export function groupRanks(job: TracedJob, r: number, dim: Dim): number[] {
  return dim === 'tp'
    ? Array.from({ length: job.tp }, (_, i) => Math.floor(r / job.tp) * job.tp + i)
    : Array.from({ length: job.dp }, (_, i) => (r % job.tp) + i * job.tp);
}

/** PyTorch's name of each group as rank r sees it ("0" is the world), and Megatron's description. */
function groupsOf(job: TracedJob, r: number): Record<Dim | 'world', { name: string; desc: string; ranks: number[] }> {
  const world = Array.from({ length: job.tp * job.dp }, (_, i) => i);
  return {
    world: { name: '0', desc: 'default_pg', ranks: world },
    dp: { name: '1', desc: 'DATA_PARALLEL_GROUP_WITH_CP', ranks: groupRanks(job, r, 'dp') },
    tp: { name: '2', desc: 'TENSOR_MODEL_PARALLEL_GROUP', ranks: groupRanks(job, r, 'tp') },
  };
}

interface Kernel {
  readonly rank: number;
  readonly step: number;
  readonly op: Op;
  readonly t0: number;
  readonly t1: number;
}

/** Every rank's GPU kernels, simulated in lockstep. */
function simulate(job: TracedJob): { kernels: Kernel[]; steps: { step: number; t0: number; t1: number }[] } {
  const n = job.tp * job.dp;
  const clock = new Array<number>(n).fill(0);
  const kernels: Kernel[] = [];
  const steps: { step: number; t0: number; t1: number }[] = [];
  for (const step of job.steps) {
    const t0 = Math.max(...clock);
    clock.fill(t0);
    for (const op of stepOps(job.layers)) {
      if (op.kind === 'compute') {
        for (let r = 0; r < n; r++) {
          const f = job.slow && job.slow.rank === r && job.slow.step === step ? job.slow.factor : 1;
          kernels.push({ rank: r, step, op, t0: clock[r]!, t1: clock[r]! + op.us * f });
          clock[r]! += op.us * f;
        }
        continue;
      }
      const ends = new Map<number, number>();
      for (let r = 0; r < n; r++) {
        const g = groupRanks(job, r, op.dim);
        ends.set(r, Math.max(...g.map((x) => clock[x]!)) + op.us);
      }
      for (let r = 0; r < n; r++) {
        kernels.push({ rank: r, step, op, t0: clock[r]!, t1: ends.get(r)! });
        clock[r] = ends.get(r)!;
      }
    }
    steps.push({ step, t0, t1: Math.max(...clock) });
  }
  return { kernels, steps };
}

const ncclKernelName: Record<Extract<Op, { kind: 'comm' }>['coll'], string> = {
  allreduce: 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)',
  _allgather_base: 'ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)',
  _reduce_scatter_base: 'ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)',
};

/** The Kineto JSON of every rank of `job`, rank r at index r. */
export function megatronJobTraces(job: TracedJob): string[] {
  const { kernels, steps } = simulate(job);
  const base = 1_000_000;
  const ts = (t: number): number => base + t;
  return Array.from({ length: job.tp * job.dp }, (_, r) => {
    const groups = groupsOf(job, r);
    const events: object[] = [];
    for (const s of steps) {
      const step = { name: `ProfilerStep#${s.step}`, ts: ts(s.t0), dur: s.t1 - s.t0 };
      events.push({ ph: 'X', cat: 'user_annotation', pid: 4242, tid: 4242, ...step, args: {} });
      events.push({ ph: 'X', cat: 'gpu_user_annotation', pid: r, tid: 7, ...step, args: {} });
    }
    let corr = 0;
    for (const k of kernels) {
      if (k.rank !== r) continue;
      corr++;
      const op = k.op;
      const common = { device: r % 8, context: 1, correlation: corr };
      if (op.kind === 'compute') {
        events.push({
          ph: 'X',
          cat: 'kernel',
          name: op.name,
          pid: r % 8,
          tid: 7,
          ts: ts(k.t0),
          dur: k.t1 - k.t0,
          args: { ...common, stream: 7 },
        });
        continue;
      }
      const g = groups[op.dim];
      const nelems = op.dim === 'dp' ? 8 << 20 : 1 << 20;
      events.push({
        ph: 'X',
        cat: 'kernel',
        name: ncclKernelName[op.coll],
        pid: r % 8,
        tid: 20,
        ts: ts(k.t0),
        dur: k.t1 - k.t0,
        args: {
          ...common,
          stream: 20,
          'Collective name': op.coll,
          'In msg nelems': op.coll === '_allgather_base' ? nelems / g.ranks.length : nelems,
          'Out msg nelems': op.coll === '_reduce_scatter_base' ? nelems / g.ranks.length : nelems,
          'Group size': g.ranks.length,
          dtype: 'BFloat16',
          'Process Group Name': g.name,
          'Process Group Description': g.desc,
          'Process Group Ranks': `[${g.ranks.join(', ')}]`,
        },
      });
    }
    return JSON.stringify({
      schemaVersion: 1,
      deviceProperties: [{ id: r % 8, name: 'NVIDIA H100 80GB HBM3', numSms: 132 }],
      distributedInfo: {
        backend: 'nccl',
        rank: r,
        world_size: job.tp * job.dp,
        pg_count: 3,
        pg_config: Object.values(groups).map((g) => ({
          pg_name: g.name,
          pg_desc: g.desc,
          backend_config: 'cuda:nccl',
          pg_size: g.ranks.length,
          ranks: g.ranks,
        })),
        nccl_version: '2.21.5',
      },
      displayTimeUnit: 'ms',
      baseTimeNanoseconds: 1759300000000000000,
      traceEvents: events,
      traceName: `rank-${r}.json`,
    });
  });
}

/** The kernels' count per step on one rank: TP all-gathers, TP reduce-scatters, TP all-reduces, DP all-reduces. */
export function expectedCollectives(job: TracedJob): {
  tpAllGather: number;
  tpReduceScatter: number;
  tpAllReduce: number;
  dpAllReduce: number;
} {
  return { tpAllGather: 4 * job.layers, tpReduceScatter: 4 * job.layers, tpAllReduce: 3 + 1, dpAllReduce: dpBuckets };
}
