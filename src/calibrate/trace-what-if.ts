// What-if from a trace: the rates one job's Kineto traces measured (kernel time per class against
// the model's, α–β of its own collectives) put into its system, and other layouts of the same
// model projected on that system.
import type { KernelClass, KernelScale, MeasuredCollectiveOp } from '../hardware/calibrated-rates.ts';
import type { TrainDtype } from '../hardware/dtype.ts';
import type { SystemSpec } from '../hardware/systems.ts';
import { kernelClassOf } from '../kineto/kernel-class.ts';
import type { GpuSlice, MeasuredTrace } from '../kineto/kineto-types.ts';
import type { NcclCollective } from '../kineto/nccl-kernel.ts';
import type { TrainingSetup } from '../megatron/training-setup.ts';
import { defaultKernelOptions, type KernelOptions } from '../projection/layer/kernel-options.ts';
import { cudaGraphRefusalsOf } from '../projection/step/chunk-times.ts';
import { projectStep, type StepProjection } from '../projection/step/cluster-projection.ts';
import { ringTerms } from './collective-fit.ts';

/** One layout of the model: its setup and training dtype, and how it is named in tables. */
export interface Layout {
  readonly label: string;
  readonly setup: TrainingSetup;
  readonly dtype: TrainDtype;
  /** How the job ran its kernels (absent: the projection's defaults, eager). */
  readonly kernels?: KernelOptions;
}

/** One kernel class: Σ kernel time per step measured on the busiest rank, the model's for the job, and their ratio. */
export interface ClassRate {
  readonly cls: KernelClass;
  readonly measuredMs: number;
  readonly modelMs: number;
  /** measured / model; 1 where either is 0 (the class keeps the model's time). */
  readonly scale: number;
}

/**
 * α and B of one link (the node's GPU link, or the network at some ranks per node) fitted to the
 * trace's collectives on it, every collective kind and group size together.
 */
export interface LinkFit {
  readonly scope: 'intra' | 'inter';
  /** Network fits: ranks of a group per node (min(k, NICs) NICs carried each ring); intra: the group's size, largest. */
  readonly ranksPerNode: number;
  readonly alphaUs: number;
  /** Intra: the ring's bus bandwidth; inter: one NIC's (the fit's B / min(k, NICs)), GB/s. */
  readonly busGBps: number;
  /** 'α and B': both from the line; 'B': one kind of point only, α kept from the catalog link. */
  readonly how: 'α and B' | 'B';
  readonly calls: number;
  /** Distinct (collective, group size, size) points: their median times were fitted. */
  readonly points: number;
  /** Largest |model − median|/median over the points. */
  readonly maxRelError: number;
  /** The collectives the points are of, e.g. "allGather×4, reduceScatter×4, allReduce×4". */
  readonly what: string;
}

/** The rates of a trace and the system that carries them. */
export interface TraceRates {
  /** The ProfilerStep measured (the last one), or undefined for the whole trace. */
  readonly step: number | undefined;
  /** The rank whose compute kernels add up longest in that window (the model's busiest stage). */
  readonly rank: number;
  /** The measured step: the window's longest GPU span over the ranks, ms. */
  readonly measuredStepMs: number;
  readonly classes: readonly ClassRate[];
  readonly links: readonly LinkFit[];
  /** `base` with `kernelScale`, and the fitted links' α and B in place of the catalog's. */
  readonly system: SystemSpec;
  readonly notes: readonly string[];
}

/** A layout projected on the catalog system and on the trace's rates. */
export type WhatIfRow =
  | {
      readonly layout: Layout;
      readonly ok: true;
      readonly nominal: StepProjection;
      readonly reprojected: StepProjection;
    }
  | { readonly layout: Layout; readonly ok: false; readonly reason: string };

/** The job's own layout re-projected (its measured step beside) and the other layouts. */
export interface WhatIf {
  readonly rates: TraceRates;
  readonly job: WhatIfRow;
  readonly rows: readonly WhatIfRow[];
}

const classes: readonly KernelClass[] = ['gemm', 'attention', 'memory'];

/** The model's op for an NCCL kernel's collective; undefined for those it does not price (reduce, gather, barrier, …). */
const measuredOp: Partial<Record<NcclCollective, MeasuredCollectiveOp>> = {
  allReduce: 'allReduce',
  allGather: 'allGather',
  reduceScatter: 'reduceScatter',
  broadcast: 'broadcast',
  sendRecv: 'sendRecv',
  allToAll: 'allToAll',
};

/**
 * The job's kernels inside CUDA graphs: no host-dispatch gaps, which shrink as kernels grow and
 * would hide part of them. full_iteration: the impl Megatron allows with full recomputation
 * (cuda-graph-rules.ts).
 */
const graphKernels = (layout: Layout): KernelOptions => ({
  ...(layout.kernels ?? defaultKernelOptions),
  cudaGraphImpl: 'full_iteration',
});

/**
 * Why the class sums cannot be priced for `layout` (undefined: they can). They are priced inside a
 * whole-layer CUDA graph (full_iteration), which Megatron refuses for a layer with dropout (GPT's
 * 0.1) and selective core_attn, mlp or moe recompute (cuda-graph-rules.ts, transformer_config.py:2545-2566),
 * though the job itself ran eager: eager, the host-dispatch gaps would hide part of each class's
 * time and the sums would not be exact.
 */
export function classSumRefusal(layout: Layout): string | undefined {
  const why = cudaGraphRefusalsOf(layout.setup, graphKernels(layout));
  return why.length
    ? `the what-if prices the job's kernel classes inside a whole-layer CUDA graph (full_iteration, so that no host-dispatch gap hides kernel time), and Megatron refuses that graph for this job: ${why.join(' ')} Rate a trace of a job without that recompute, or of a layer without dropout (Llama).`
    : undefined;
}

/** The projected compute of the busiest stage in one step (all micro-batches, recompute, embedding and output) plus the optimizer, ms. */
async function computeMs(layout: Layout, system: SystemSpec): Promise<number> {
  const p = await projectStep(layout.setup, { system, dtype: layout.dtype, kernels: graphKernels(layout) });
  return Math.max(...p.pipeline.busyMs) + p.optimizerMs;
}

/**
 * `base` with communication that costs nothing: no NCCL base latency, α = 0, links and NICs of
 * unbounded bandwidth, no fits. On it a stage's busy time is its kernels alone (no exposed
 * collective, no kernel slowed by one beside it).
 */
function withoutCommunication(base: SystemSpec): SystemSpec {
  const free = { alphaUs: 0, busGBps: Number.MAX_VALUE };
  const { fitted: _i, ...intra } = base.intra;
  const { fitted: _n, ...inter } = base.inter;
  return {
    ...base,
    collectiveBaseUs: 0,
    intra: { ...intra, ...free },
    inter: { ...inter, alphaUs: 0, nicGBps: Number.MAX_VALUE },
  };
}

/**
 * Σ model time per step of each kernel class on the busiest stage (every micro-batch, recomputed
 * forwards, embedding and output, the optimizer), ms: on `base` without communication
 * (withoutCommunication) and inside CUDA graphs (no host-dispatch gaps), every kernel of the class
 * priced at 2× its time (`kernelScale`) less every kernel at 1×. Exact: the class's kernels add
 * into the stage's busy time and nothing else changes with them. Refused with the reason where
 * Megatron refuses that graph for the job (classSumRefusal).
 */
export async function modelClassMs(layout: Layout, base: SystemSpec): Promise<Record<KernelClass, number>> {
  const refusal = classSumRefusal(layout);
  if (refusal) throw new Error(refusal);
  const plain: SystemSpec = { ...withoutCommunication(base), kernelScale: { gemm: 1, attention: 1, memory: 1 } };
  const at1 = await computeMs(layout, plain);
  const out = { gemm: 0, attention: 0, memory: 0 };
  for (const cls of classes) {
    const twice = { ...plain, kernelScale: { ...plain.kernelScale!, [cls]: 2 } };
    out[cls] = (await computeMs(layout, twice)) - at1;
  }
  return out;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const i = s.length >> 1;
  return s.length % 2 ? s[i]! : (s[i - 1]! + s[i]!) / 2;
};

/** The global ranks of a group as recorded ("[0, 1, 8, 9]"); empty when unreadable. */
const groupRanks = (text: string | undefined): number[] => (text?.match(/\d+/g) ?? []).map(Number);

/** One point of a link fit: a collective kind on t ranks, S bytes, the median of its kernels' times, µs. */
interface LinkPoint {
  readonly op: MeasuredCollectiveOp;
  readonly t: number;
  readonly bytes: number;
  readonly timeUs: number;
}

/**
 * α and 1/B of the ring model through `points` at once: T − base = steps·α + S·f/B with steps and
 * f the collective's on t ranks (ringTerms), least squares on the relative error (weights 1/T², as
 * fitLine), normal equations in (α, 1/B). α is identifiable when the points differ in
 * steps/(S·f) — a step's small calls (the cross-entropy's all-reduces of s·b floats, the norms'
 * gradients) beside its large ones; otherwise, or when the line gives α < 0, α is `alphaUs` and
 * only 1/B is fitted. Undefined when no positive B fits.
 */
function fitLink(
  points: readonly LinkPoint[],
  baseUs: number,
  alphaUs: number,
): { alphaUs: number; busGBps: number; how: LinkFit['how']; maxRelError: number } | undefined {
  const rows = points.map((p) => {
    const { steps, factor } = ringTerms(p.op, p.t);
    return { x1: steps, x2: p.bytes * factor, y: p.timeUs - baseUs, w: 1 / (p.timeUs * p.timeUs) };
  });
  let s11 = 0;
  let s12 = 0;
  let s22 = 0;
  let s1y = 0;
  let s2y = 0;
  for (const r of rows) {
    s11 += r.w * r.x1 * r.x1;
    s12 += r.w * r.x1 * r.x2;
    s22 += r.w * r.x2 * r.x2;
    s1y += r.w * r.x1 * r.y;
    s2y += r.w * r.x2 * r.y;
  }
  const det = s11 * s22 - s12 * s12;
  let alpha = det > 1e-9 * s11 * s22 ? (s22 * s1y - s12 * s2y) / det : Number.NaN;
  let c = (s11 * s2y - s12 * s1y) / det;
  let how: LinkFit['how'] = 'α and B';
  if (!(alpha >= 0) || !(c > 0)) {
    alpha = alphaUs;
    how = 'B';
    c = (s2y - alpha * s12) / s22;
  }
  if (!(c > 0)) return undefined;
  const maxRelError = Math.max(
    ...points.map((p, i) => {
      const r = rows[i]!;
      return Math.abs(baseUs + r.x1 * alpha + r.x2 * c - p.timeUs) / p.timeUs;
    }),
  );
  return { alphaUs: alpha, busGBps: 1 / (c * 1e3), how, maxRelError };
}

/**
 * The links' α and B from the window's NCCL kernels (every rank). Each call goes to its scope:
 * the node's link when its group's recorded ranks share a node (nodes of `gpusPerNode`; without
 * ranks, when the group fits in one), else the network at the group's ranks per node. Per
 * (collective, group size, size) the median kernel time — an NCCL kernel's time includes waiting
 * for its slowest peer, so the job's skew is in the rate — then fitLink over all of a scope's
 * points. The network's B is what min(k, NICs) NICs carried (k ranks per node): one NIC's is B
 * over that, as groupLink prices it; of several k, the one with the most calls.
 */
function linkFits(comm: readonly GpuSlice[], base: SystemSpec, notes: string[]): LinkFit[] {
  const scopes = new Map<
    string,
    { scope: 'intra' | 'inter'; perNode: number; points: Map<string, number[]>; calls: number }
  >();
  let unsized = 0;
  for (const s of comm) {
    const c = s.nccl;
    const op = c && measuredOp[c.collective];
    if (!c || !op) continue;
    if (c.bytes === undefined || c.groupSize === undefined || c.bytes <= 0 || c.groupSize < 2) {
      unsized++;
      continue;
    }
    const members = groupRanks(c.groupRanks);
    const nodes = members.length
      ? new Set(members.map((r) => Math.floor(r / base.gpusPerNode))).size
      : Math.ceil(c.groupSize / base.gpusPerNode);
    const scope = nodes === 1 ? 'intra' : 'inter';
    const perNode = scope === 'intra' ? c.groupSize : Math.ceil(c.groupSize / nodes);
    const key = scope === 'intra' ? 'intra' : `inter:${perNode}`;
    const g = scopes.get(key) ?? { scope, perNode, points: new Map(), calls: 0 };
    g.perNode = Math.max(g.perNode, perNode);
    const pk = `${op}:${c.groupSize}:${c.bytes}`;
    const list = g.points.get(pk) ?? [];
    list.push((s.t1 - s.t0) * 1e3);
    g.points.set(pk, list);
    g.calls++;
    scopes.set(key, g);
  }
  if (unsized)
    notes.push(
      `${unsized} NCCL kernels carry no size or group size (PyTorch < 2.1 traces, or record_param_comms missing): left out of the link fits.`,
    );
  const fits: LinkFit[] = [];
  for (const g of [...scopes.values()].sort((a, b) => b.calls - a.calls)) {
    if (g.scope === 'inter' && fits.some((f) => f.scope === 'inter')) {
      notes.push(
        `network calls at ${g.perNode} ranks per node (${g.calls}) left out: the fit at the most-used placement is kept.`,
      );
      continue;
    }
    const points: LinkPoint[] = [...g.points.entries()].map(([k, us]) => {
      const [op, t, bytes] = k.split(':');
      return { op: op as MeasuredCollectiveOp, t: Number(t), bytes: Number(bytes), timeUs: median(us) };
    });
    const catalogAlpha = g.scope === 'intra' ? base.intra.alphaUs : base.inter.alphaUs;
    const fit = fitLink(points, base.collectiveBaseUs, catalogAlpha);
    const count = new Map<string, number>();
    for (const p of points) count.set(p.op, (count.get(p.op) ?? 0) + 1);
    const what = [...count.entries()].map(([op, n]) => `${op}×${n}`).join(', ');
    if (!fit) {
      notes.push(
        `${g.scope === 'intra' ? 'node link' : 'network'}: ${what} do not fit a positive bandwidth: the catalog link is kept.`,
      );
      continue;
    }
    const nics = g.scope === 'inter' ? Math.max(1, Math.min(g.perNode, base.inter.nicsPerNode)) : 1;
    fits.push({
      scope: g.scope,
      ranksPerNode: g.perNode,
      alphaUs: fit.alphaUs,
      busGBps: fit.busGBps / nics,
      how: fit.how,
      calls: g.calls,
      points: points.length,
      maxRelError: fit.maxRelError,
      what,
    });
  }
  return fits;
}

/**
 * The rates of `trace`, a job run as `job` on `base`. Window: the last ProfilerStep (warm), else
 * the whole trace. Kernel classes (kineto/kernel-class.ts) on the rank whose compute kernels add
 * up longest: scale = Σ measured kernel time / the model's Σ for the class (modelClassMs), so a
 * GEMM of another layout is priced by the tile model's FLOPs and shape at the rate the job's
 * GEMMs ran, a memory-bound kernel by its bytes at the job's effective bandwidth, FlashAttention
 * likewise. Collectives: linkFits.
 */
export async function traceRates(trace: MeasuredTrace, job: Layout, base: SystemSpec): Promise<TraceRates> {
  const notes: string[] = [];
  const stepIds = [...new Set(trace.ranks.flatMap((r) => r.steps.map((s) => s.step)))].sort((a, b) => a - b);
  const step = stepIds.at(-1);
  const inWindow = (s: GpuSlice): boolean => step === undefined || s.step === step;
  if (step === undefined) notes.push('no ProfilerStep# marks: the whole trace is taken as one step.');
  let rank = trace.ranks[0]!.rank;
  let best: Record<KernelClass, number> = { gemm: 0, attention: 0, memory: 0 };
  let bestTotal = -1;
  let span = 0;
  const comm: GpuSlice[] = [];
  for (const r of trace.ranks) {
    const sums = { gemm: 0, attention: 0, memory: 0 };
    let t0 = Infinity;
    let t1 = -Infinity;
    for (const s of r.slices) {
      if (!inWindow(s)) continue;
      t0 = Math.min(t0, s.t0);
      t1 = Math.max(t1, s.t1);
      if (s.work === 'compute') sums[kernelClassOf(s.name)] += s.t1 - s.t0;
      else if (s.work === 'comm') comm.push(s);
    }
    if (t1 > t0) span = Math.max(span, t1 - t0);
    const total = sums.gemm + sums.attention + sums.memory;
    if (total > bestTotal) {
      bestTotal = total;
      best = sums;
      rank = r.rank;
    }
  }
  const model = await modelClassMs(job, base);
  const rates: ClassRate[] = classes.map((cls) => {
    const measuredMs = best[cls];
    const modelMs = model[cls];
    const ok = measuredMs > 0 && modelMs > 0;
    if (!ok && (measuredMs > 0 || modelMs > 0))
      notes.push(
        `${cls}: ${measuredMs > 0 ? 'measured' : 'modelled'} only (${(measuredMs || modelMs).toFixed(3)} ms): the class keeps the model's time.`,
      );
    return { cls, measuredMs, modelMs, scale: ok ? measuredMs / modelMs : 1 };
  });
  const links = linkFits(comm, base, notes);
  const kernelScale: KernelScale = { gemm: rates[0]!.scale, attention: rates[1]!.scale, memory: rates[2]!.scale };
  const intra = links.find((f) => f.scope === 'intra');
  const inter = links.find((f) => f.scope === 'inter');
  if (base.intra.fitted?.length || base.inter.fitted?.length)
    notes.push(
      "the system's nccl-tests fits price their own collectives and group sizes; the trace's α and B the rest.",
    );
  const system: SystemSpec = {
    ...base,
    name: `${base.name}+trace`,
    label: `${base.label}, rates of a trace`,
    kernelScale,
    intra: intra
      ? { ...base.intra, alphaUs: intra.alphaUs, busGBps: intra.busGBps, source: `fitted to the trace's ${intra.what}` }
      : base.intra,
    inter: inter
      ? { ...base.inter, alphaUs: inter.alphaUs, nicGBps: inter.busGBps, source: `fitted to the trace's ${inter.what}` }
      : base.inter,
    source: `${base.source}; kernel classes and collectives rated from a trace (${step === undefined ? 'whole trace' : `ProfilerStep#${step}`}, rank ${rank})`,
  };
  return { step, rank, measuredStepMs: span, classes: rates, links, system, notes };
}

async function projectRow(layout: Layout, base: SystemSpec, rated: SystemSpec): Promise<WhatIfRow> {
  try {
    const machine = { dtype: layout.dtype, ...(layout.kernels && { kernels: layout.kernels }) };
    const nominal = await projectStep(layout.setup, { ...machine, system: base });
    const reprojected = await projectStep(layout.setup, { ...machine, system: rated });
    return { layout, ok: true, nominal, reprojected };
  } catch (e) {
    return { layout, ok: false, reason: (e as Error).message };
  }
}

/** `job`'s trace rated (traceRates), then `job` and each of `others` projected on `base` and on the rated system. */
export async function whatIfFromTrace(
  trace: MeasuredTrace,
  job: Layout,
  base: SystemSpec,
  others: readonly Layout[],
): Promise<WhatIf> {
  const rates = await traceRates(trace, job, base);
  const rows: WhatIfRow[] = [];
  for (const l of others) rows.push(await projectRow(l, base, rates.system));
  return { rates, job: await projectRow(job, base, rates.system), rows };
}
