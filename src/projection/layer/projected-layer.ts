import type { RankSlowdown } from '../../core/rank-slowdown.ts';
import { withSlowLink, withSlowRank } from '../../schedule/durations.ts';
import { dtypeBytes, type TrainDtype } from '../../hardware/dtype.ts';
import { flashAttentionUs } from '../../hardware/flash-attention.ts';
import { dispatchGapsUs, hostDispatchModel } from '../../hardware/host-dispatch.ts';
import { collectiveTimeUs, type Interconnect } from '../../hardware/interconnect.ts';
import { kernelModel, memoryBoundUs, type GemmTime } from '../../hardware/kernel-time.ts';
import { gemmTimeOn, scaledKernelUs } from '../../hardware/calibrated-rates.ts';
import {
  commFootprint,
  commSms,
  ncclFootprint,
  overlapSlowdown,
  overlappedKernelUs,
  type CommFootprint,
} from '../../hardware/overlap-cost.ts';
import { bytesPerElement } from '../../accounting/parameters.ts';
import { groupLink, type SystemSpec } from '../../hardware/systems.ts';
import type { LayerPlan, PlannedOp } from '../../parallel/plan-types.ts';
import { scheduleStep, type StepDurations, type Timeline } from '../../schedule/schedule.ts';
import { capturedOps } from './cuda-graph-scope.ts';
import { defaultKernelOptions, resolveKernels, usesCudaGraphs, type KernelOptions } from './kernel-options.ts';
import { linearProducts, pricedOps, type PricedOp } from './priced-ops.ts';

export { kernelBytes } from './priced-ops.ts';

/**
 * A real machine to project onto: a system of the catalog (or custom), the training dtype, and
 * how its kernels run (absent: `defaultKernelOptions`, the projection's behaviour before the
 * kernel switches).
 */
export interface Machine {
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
  readonly kernels?: KernelOptions;
  /**
   * Each process group's ring link as a placement on the node topology prices it
   * (placement-links.ts: slowest hop, shared links); absent: group-links.ts's rank-order defaults.
   */
  readonly placed?: Readonly<Record<'tp' | 'cp' | 'dpCp' | 'pp' | 'embedding', Interconnect>>;
  /** With `placed`: a physical link the DP × CP rings share with the TP or pipeline rings (link-sharing.ts). */
  readonly placedShared?: Readonly<Partial<Record<'tp' | 'pp', string>>>;
}

/** True for ops a training step runs once, after every micro-batch (a plan's finalize phase). */
export const isPerStep = (op: PlannedOp): boolean => op.phase !== 'forward' && op.phase !== 'backward';

/**
 * The link a TP group of `t` adjacent ranks uses on `system`: it holds min(t, GPUs per node)
 * ranks per node, so it stays on the intra-node link while t ≤ GPUs per node and crosses the
 * network beyond.
 */
export const tpGroupLink = (system: SystemSpec, t: number): Interconnect =>
  groupLink(system, t, Math.min(t, system.gpusPerNode));

/** The timeline caption's communication source for a run at degree `t` projected on `machine` (and its placed TP ring, when placed). */
export function projectedCommSource(machine: Machine, t: number): string {
  const { system } = machine;
  const link = tpGroupLink(system, t);
  const where =
    link === system.intra
      ? link.label
      : `${link.label}: the TP group of ${t} spans ${Math.ceil(t / system.gpusPerNode)} nodes of ${system.gpusPerNode} GPUs`;
  const placed = machine.placed?.tp;
  return `projected on ${placed ? `${where}; ${placed.label}` : where} (alpha-beta ring, ${system.collectiveBaseUs} µs NCCL base latency per call), payloads in ${machine.dtype}`;
}

/**
 * Projected time (µs) of one collective of the plan on `system`: the base cost of an NCCL call
 * plus the ring model on the link its group uses (TP ranks adjacent: a group of t holds
 * min(t, GPUs per node) ranks per node). The plan's payloads are float32; they are re-priced at
 * the training dtype.
 */
export function projectedCollectiveUs(op: PlannedOp, machine: Machine): number {
  if (op.kind !== 'collective' || op.collective.groupSize <= 1) return 0;
  const c = op.collective;
  const { system } = machine;
  const link = machine.placed?.tp ?? tpGroupLink(system, c.groupSize);
  const payload = (c.payloadBytes / bytesPerElement) * dtypeBytes[machine.dtype];
  return system.collectiveBaseUs + collectiveTimeUs(c.op, payload, c.groupSize, link);
}

/** Per-op projection of a plan: durations for scheduleStep and each GEMM's model output. */
export interface ProjectedOps extends StepDurations {
  /** [opIndex]: the GEMM model's answer for GEMM ops priced as one GEMM. */
  readonly gemm: readonly (GemmTime | undefined)[];
  /** The priced ops the plan became under the machine's kernel options (priced-ops.ts). */
  readonly priced: readonly PricedOp[];
  /** [opIndex]: idle time host dispatch leaves before the op (eager), ms; included in computeMs. */
  readonly hostGapMs: readonly number[];
  /** [opIndex]: time the op's kernels lose to collectives running beside them, ms; included in computeMs. */
  readonly overlapCostMs: readonly number[];
}

/**
 * One priced cost's device time (µs) and whether HBM, not math, bounds it: GEMMs and
 * FlashAttention at the clock a training step's power cap sustains (sustained-clock.ts).
 */
export function costUs(
  p: PricedOp,
  op: PlannedOp,
  machine: Machine,
): { us: number; memoryBound: boolean; g?: GemmTime } {
  const gpu = machine.system.gpu;
  switch (p.cost.kind) {
    case 'gemm': {
      const g = gemmTimeOn(machine.system, p.cost.shape, p.cost.precision, 'sustained');
      return { us: scaledKernelUs(machine.system, 'gemm', g.us), memoryBound: g.memoryBound, g };
    }
    case 'memory':
      return { us: scaledKernelUs(machine.system, 'memory', memoryBoundUs(p.cost.bytes, gpu)), memoryBound: true };
    case 'flash':
      return {
        us: scaledKernelUs(
          machine.system,
          'attention',
          flashAttentionUs(
            p.cost.flops,
            p.cost.headDim,
            p.cost.pass,
            gpu,
            machine.dtype,
            kernelModel,
            { seq: p.cost.seq, kernel: p.cost.kernel },
            'sustained',
          ),
        ),
        memoryBound: false,
      };
    case 'collective':
      return { us: projectedCollectiveUs(op, machine), memoryBound: false };
  }
}

/**
 * Every op's projected time on `machine` (ms), the same on every rank (the ranks run the same
 * shapes). Ops of a finalize phase get 0 here: the step projection adds them once per step.
 *   compute op = Σ its priced kernels (GEMM model, memory-bound, FlashAttention), each with its
 *                launch (inside CUDA graphs: the graph's 0.5 µs instead of the stream's 0.9 µs;
 *                the ops the --cuda-graph-modules scope captures, cuda-graph-scope.ts)
 *              + the host-dispatch gap before it (eager ops; a captured op issues at no host
 *                cost, host-dispatch.ts)
 *              + what collectives beside it cost it (overlap-cost.ts) when `overlap` is on: the
 *                plan's asynchronous collectives (NCCL) slow the ops marked to run under them;
 *                with --tp-comm-overlap each TP all-gather / reduce-scatter runs in chunks under
 *                its GEMM (see tpCommOverlap below)
 * `overlap` is the schedule's (projectLayer passes it); absent, no collective runs beside a
 * kernel and none slows it.
 */
export function projectOps(plan: LayerPlan, machine: Machine, overlap = false): ProjectedOps {
  const kernels = resolveKernels(machine.kernels ?? defaultKernelOptions, machine.system.gpu.arch);
  if (kernels.tpCommOverlap && !(plan.config.sp && plan.config.tp > 1))
    throw new Error(
      '--tp-comm-overlap needs tensor parallelism with sequence parallelism (t > 1 and --sp): Megatron asserts it.',
    );
  const priced = pricedOps(plan, machine.dtype, kernels);
  const n = plan.ops.length;
  const deviceUs = new Array<number>(n).fill(0);
  const kernelCount = new Array<number>(n).fill(0);
  const longest = new Array<number>(n).fill(0);
  const memoryBound = new Array<boolean>(n).fill(false);
  const gemm: (GemmTime | undefined)[] = new Array<GemmTime | undefined>(n).fill(undefined);
  const graphSaving = usesCudaGraphs(kernels) ? kernelModel.launchUs - hostDispatchModel.graphLaunchUs : 0;
  const captured = usesCudaGraphs(kernels)
    ? capturedOps(plan, kernels.cudaGraphModules ?? [])
    : new Array<boolean>(n).fill(false);
  for (const p of priced) {
    const op = plan.ops[p.planIndex]!;
    const c = costUs(p, op, machine);
    kernelCount[p.planIndex]! += 1;
    if (p.cost.kind === 'collective') {
      deviceUs[p.planIndex] = c.us;
      continue;
    }
    deviceUs[p.planIndex]! += c.us - (captured[p.planIndex] ? graphSaving : 0);
    if (c.us > longest[p.planIndex]!) {
      longest[p.planIndex] = c.us;
      memoryBound[p.planIndex] = c.memoryBound;
    }
    if (c.g && op.kind === 'gemm') gemm[p.planIndex] = c.g;
  }
  const compute = plan.ops.map((op, i) => (op.kind === 'collective' || isPerStep(op) ? 0 : deviceUs[i]!));
  const comm = plan.ops.map((op, i) => (op.kind === 'collective' && !isPerStep(op) ? deviceUs[i]! : 0));
  const overlapCost = new Array<number>(n).fill(0);
  const times: OpTimes = { compute, comm, memoryBound, cost: overlapCost };
  if (overlap) asyncOverlapCost(plan, machine, times);
  if (kernels.tpCommOverlap) tpCommOverlap(plan, machine, times);

  const hostGap = new Array<number>(n).fill(0);
  if (!captured.every(Boolean)) {
    const seq = plan.ops.filter((op) => !isPerStep(op));
    const gaps = dispatchGapsUs(
      seq.map((op) => ({
        deviceUs: op.kind === 'collective' ? (overlap && op.overlap.async ? 0 : comm[op.index]!) : compute[op.index]!,
        hostUs: captured[op.index] ? 0 : kernelCount[op.index]! * hostDispatchModel.eagerUs,
      })),
    );
    // A gap before a collective lands on the next compute op (the comm stream is not the host's).
    let carry = 0;
    seq.forEach((op, k) => {
      carry += gaps[k]!;
      if (op.kind === 'collective') return;
      hostGap[op.index] = carry;
      compute[op.index]! += carry;
      carry = 0;
    });
  }
  const ms = (us: number): number => us / 1e3;
  const computeMs = compute.map(ms);
  const commMs = comm.map(ms);
  return {
    gemm,
    priced,
    hostGapMs: hostGap.map(ms),
    overlapCostMs: overlapCost.map(ms),
    computeMs: plan.ranks.map(() => computeMs),
    commMs: plan.ranks.map(() => commMs),
  };
}

/** Per-op device times (µs) being priced, [opIndex]: compute, comm, whether HBM bounds the op, and its overlap cost. */
interface OpTimes {
  readonly compute: number[];
  readonly comm: number[];
  readonly memoryBound: readonly boolean[];
  readonly cost: number[];
}

/**
 * Slows the compute ops `under`, in order, while a collective of `windowUs` with footprint
 * `foot` runs beside them (overlap-cost.ts); returns their total time after slowing.
 */
function slowUnder(
  under: readonly number[],
  windowUs: number,
  foot: CommFootprint,
  machine: Machine,
  t: OpTimes,
): number {
  let window = windowUs;
  let total = 0;
  for (const j of under) {
    const us = t.compute[j]!;
    const slowed =
      window > 0 ? overlappedKernelUs(us, window, overlapSlowdown(t.memoryBound[j]!, machine.system.gpu, foot)) : us;
    window -= slowed;
    t.cost[j]! += slowed - us;
    t.compute[j] = slowed;
    total += slowed;
  }
  return total;
}

/**
 * The plan's asynchronous collectives (Megatron's async dgrad all-reduce / reduce-scatter and
 * the SP re-gather for the wgrad) run beside the compute ops marked `underAsync` next to them
 * (after them in plan order, else before): each such op is slowed (overlap-cost.ts) while the
 * collective's window lasts.
 */
function asyncOverlapCost(plan: LayerPlan, machine: Machine, times: OpTimes): void {
  const { comm } = times;
  for (const op of plan.ops) {
    if (op.kind !== 'collective' || !op.overlap.async || isPerStep(op) || comm[op.index]! <= 0) continue;
    const link = tpGroupLink(machine.system, op.collective.groupSize);
    const foot = ncclFootprint(op.collective.op, link);
    slowUnder(neighbours(plan, op.index), comm[op.index]!, foot, machine, times);
  }
}

/** The compute ops marked to run under the asynchronous collective at `i`: those right after it, else right before. */
function neighbours(plan: LayerPlan, i: number): number[] {
  const run = (from: number, step: number): number[] => {
    const out: number[] = [];
    for (let j = from; j >= 0 && j < plan.ops.length; j += step) {
      const o = plan.ops[j]!;
      if (o.kind === 'collective') continue;
      if (!o.overlap.underAsync) break;
      out.push(j);
    }
    return out;
  };
  const after = run(i + 1, 1);
  return after.length ? after : run(i - 1, -1);
}

/**
 * --tp-comm-overlap (Transformer Engine userbuffers, `initialize_ub` defaults): each synchronous
 * TP all-gather is split into t chunks exchanged around the ring under the GEMM that consumes it
 * (ring_exchange: qkv/fc1 fprop, proj/fc2 dgrad; 1 SM, copy engines); each forward reduce-scatter
 * into 4 chunks under the GEMM that produces it (pipeline: proj/fc2 fprop; 16 SMs); a backward
 * reduce-scatter runs whole beside its GEMM (bulk; 16 SMs). With G' the GEMM slowed by the
 * communicator (overlap-cost.ts), C the collective and n chunks:
 *   GEMM + collective = max(G', C) + min(G', C)/n   (one chunk of the shorter is not hidden: the
 *                                                    pipeline's fill; bulk: n = ∞)
 * priced as the GEMM's G' plus an exposed remainder on the collective.
 */
function tpCommOverlap(plan: LayerPlan, machine: Machine, times: OpTimes): void {
  const { comm } = times;
  for (const op of plan.ops) {
    if (op.kind !== 'collective' || op.overlap.async || isPerStep(op)) continue;
    const c = op.collective;
    if (c.groupSize <= 1 || (c.op !== 'allGather' && c.op !== 'reduceScatter')) continue;
    const group = pairedGemms(plan, op.index, c.op === 'allGather' ? 1 : -1);
    if (!group.length) continue;
    const link = tpGroupLink(machine.system, c.groupSize);
    const method =
      c.op === 'allGather'
        ? { sms: commSms.ubRingExchange, chunks: c.groupSize }
        : op.phase === 'forward'
          ? { sms: commSms.ubPipeline, chunks: 4 }
          : { sms: commSms.ubBulk, chunks: Infinity };
    const foot = commFootprint(c.op, link.busGBps, method.sms);
    const C = comm[op.index]!;
    const g = slowUnder(group, C, foot, machine, times);
    const total = Math.max(g, C) + Math.min(g, C) / method.chunks;
    comm[op.index] = total - g;
  }
}

/**
 * The GEMMs of one linear next to the collective at `i` in direction `step` (+1: the ones
 * consuming it, −1: the ones producing it): the contiguous linear-layer GEMMs of the first one's
 * role (q, k, v of linear_qkv; a dgrad and the wgrad after it are not one GEMM; attention's
 * batched GEMMs are no linear).
 */
function pairedGemms(plan: LayerPlan, i: number, step: 1 | -1): number[] {
  const out: number[] = [];
  for (let j = i + step; j >= 0 && j < plan.ops.length; j += step) {
    const o = plan.ops[j]!;
    const linear = o.kind === 'gemm' && linearProducts.has(o.gemm.site.product);
    if (!linear || (out.length && o.role !== plan.ops[out[0]!]!.role)) {
      if (out.length || o.kind === 'collective') break;
      continue;
    }
    out.push(j);
  }
  return out;
}

/**
 * One micro-batch of the plan scheduled on `machine` (projected kernels and links); `slow`
 * (#slow=r:f) makes rank r's compute f× the projection (withSlowRank), a straggler on the cluster;
 * `slowlink` (#slowlink=r:f) every collective f× (withSlowLink).
 */
export function projectLayer(
  plan: LayerPlan,
  machine: Machine,
  overlap: boolean,
  slow?: RankSlowdown | null,
  slowlink?: RankSlowdown | null,
): Timeline {
  return scheduleStep(plan, withSlowLink(withSlowRank(projectOps(plan, machine, overlap), slow), slowlink), {
    overlap,
  });
}
