// Memory budget of a run, checked before any worker allocates (pure: no DOM, no WebGPU).
import { formatBytes } from '../core/format.ts';
import { type ComputeLimits } from '../core/compute-limits.ts';
import { formatShape } from '../core/shape.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { referenceConfig } from '../parallel/oracle.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import type { ConfigField } from '../parallel/validate.ts';
import { activationTerms, gatheredQkvBytes } from './activations.ts';
import { bytesPerElement, parameterShards } from './parameters.ts';
import { maxStagingInflation, stagedWidth } from '../reference/gemm-staging.ts';

/** WebGPU's guaranteed limits (the spec's defaults): what the CLI checks before a browser starts. */
export const webgpuDefaultLimits: ComputeLimits = {
  maxStorageBufferBindingSize: 134_217_728,
  maxBufferSize: 268_435_456,
  maxComputeWorkgroupsPerDimension: 65_535,
};

/** Share of the device's memory a page may use for one run (ranks, reference, twins together). */
export const pageBudgetFraction = 0.25;

/**
 * Device memory assumed when the browser does not say (navigator.deviceMemory is missing, e.g. in
 * Node): 8 GiB, the largest value Chrome reports (it rounds down to a power of two and caps at 8).
 */
export const assumedDeviceMemoryGiB = 8;

/** The CPU twins (float64 inside each op, on the page's thread) run only when the TP=1 step's memory is at most this. */
export const cpuTwinMaxBytes = 32 * 2 ** 20;

/** … and when the TP=t step is at most this many FLOPs per rank (checked once the plan exists). */
export const cpuTwinMaxFlops = 50e6;

/** The budget a run is checked against: bytes for the whole page, and the adapter's buffer limits. */
export interface MemoryBudget {
  readonly pageBytes: number;
  /** Where pageBytes comes from, in words. */
  readonly pageSource: string;
  readonly limits: ComputeLimits;
  /** Whose limits these are, in words ("this adapter's", "WebGPU's guaranteed"). */
  readonly limitsSource: string;
}

/**
 * The page budget: pageBudgetFraction of navigator.deviceMemory (GiB), or of assumedDeviceMemoryGiB
 * when the browser does not report it: 2 GiB on an 8 GiB (or larger) machine.
 */
export function memoryBudget(
  deviceMemoryGiB: number | undefined,
  limits: ComputeLimits = webgpuDefaultLimits,
  limitsSource = "WebGPU's guaranteed",
): MemoryBudget {
  const known = deviceMemoryGiB !== undefined && Number.isFinite(deviceMemoryGiB) && deviceMemoryGiB > 0;
  const gib = known ? deviceMemoryGiB : assumedDeviceMemoryGiB;
  const what = known ? `this device's ${gib} GiB` : `${gib} GiB assumed (navigator.deviceMemory not reported)`;
  return {
    pageBytes: gib * 2 ** 30 * pageBudgetFraction,
    pageSource: `${pageBudgetFraction * 100}% of ${what}`,
    limits,
    limitsSource,
  };
}

/**
 * One rank's bytes for one step (float32): weights on the GPU and the host copy its worker keeps
 * for re-runs, one gradient per weight, the activations kept for backward (activations.ts),
 * and scratch: one gradient per kept activation (backward holds dP beside P, dX beside X) plus the
 * step's input and upstream gradient [s, b, h], plus the gathered QKV [s, b, W] when groups < t
 * (gatheredQkvBytes: held between the all-gather and the copies out of it, or its gradient until
 * the reduce-scatter), and the staged GEMMs' textures (stagingBound).
 */
export interface RankBudget {
  readonly rank: number;
  readonly weights: number;
  readonly gradients: number;
  readonly activations: number;
  readonly scratch: number;
  readonly staging: number;
  readonly total: number;
}

/**
 * Bytes a rank's staged GEMMs may hold (reference/gemm-staging.ts): two textures, each grown to the
 * largest operand staged in it, at most maxStagingInflation × that operand plus one row of
 * stagedWidth texels (16 bytes each). Every operand is a view of a tensor the rank holds (a weight
 * shard, a kept activation, the [s, b, h] input or its gradient, the gathered QKV), so the largest
 * of those, `largest` bytes, bounds it. Counted whatever the tuner chooses: the budget is checked
 * before tuning, and only SIMD-on-CPU adapters (SwiftShader) pick staged variants.
 */
export function stagingBound(largest: number): number {
  return 2 * (maxStagingInflation * largest + 16 * stagedWidth);
}

/** One tensor of the step as one GPU buffer. */
export interface BufferSize {
  readonly name: string;
  readonly shape: readonly number[];
  readonly bytes: number;
}

/** A reason the run cannot start: `field` is the size to lower. */
export interface BudgetIssue {
  readonly rule: 'page-budget' | 'buffer-limit';
  readonly field: ConfigField;
  /** Every size whose halving would help, most first (the page shows the message by the one just changed). */
  readonly fields: readonly ConfigField[];
  readonly message: string;
}

/** Everything the budget counted, and whether it fits. */
export interface BudgetReport {
  readonly ok: boolean;
  readonly ranks: readonly RankBudget[];
  /** The TP=1 reference on rank 0 (every run is checked against it; its outputs stay cached). */
  readonly reference: RankBudget;
  /** The CPU twins' float64 copy of the TP=1 step: 2 × its tensors (reference.total without staging), or 0 when skipped. */
  readonly cpuTwins: number;
  /** Why the CPU twins are skipped, when they are. */
  readonly cpuTwinsSkipped?: string;
  readonly totalBytes: number;
  /** The largest single buffer (the TP=1 reference holds the unsplit tensors). */
  readonly largestBuffer: BufferSize;
  readonly errors: readonly BudgetIssue[];
}

/** The sizes a message may ask to lower, in the order ties are broken. */
const lowerable = ['s', 'b', 'h', 'ffn', 'vocab', 'heads'] as const satisfies readonly ConfigField[];

function rankBudgets(c: LayerConfig): RankBudget[] {
  const layout = { config: c, ranks: rankOwnership(c) };
  const inputs = 2 * c.s * c.b * c.h * bytesPerElement;
  return layout.ranks.map((_, rank) => {
    const weights = parameterShards(layout, rank).reduce((a, p) => a + p.bytes, 0);
    const activations = activationTerms(layout, rank).reduce((a, x) => a + x.bytes, 0);
    const scratch = activations + inputs + gatheredQkvBytes(c);
    const largest = Math.max(
      ...parameterShards(layout, rank).map((p) => p.bytes),
      ...activationTerms(layout, rank).map((x) => x.bytes),
      inputs / 2,
      gatheredQkvBytes(c),
    );
    const staging = stagingBound(largest);
    return {
      rank,
      weights: 2 * weights,
      gradients: weights,
      activations,
      scratch,
      staging,
      total: 3 * weights + activations + scratch + staging,
    };
  });
}

/** The largest tensor of the unsplit (TP=1) layer: every weight and every kept activation. */
function largestBuffer(c: LayerConfig): BufferSize {
  const ref = referenceConfig(c);
  const layout = { config: ref, ranks: rankOwnership(ref) };
  let best: BufferSize = { name: 'none', shape: [], bytes: 0 };
  for (const p of parameterShards(layout, 0))
    if (p.bytes > best.bytes) best = { name: `weight ${p.name}`, shape: p.shape, bytes: p.bytes };
  for (const a of activationTerms(layout, 0))
    if (a.bytes > best.bytes) best = { name: `${a.op} ${a.tensor}`, shape: a.shape, bytes: a.bytes };
  return best;
}

function totals(c: LayerConfig): { ranks: RankBudget[]; reference: RankBudget; cpuTwins: number; total: number } {
  const ranks = rankBudgets(c);
  const [reference] = rankBudgets(referenceConfig(c));
  const twinBytes = stepTensorBytes(reference);
  const cpuTwins = twinBytes <= cpuTwinMaxBytes ? 2 * twinBytes : 0;
  const total = ranks.reduce((a, r) => a + r.total, 0) + reference.total + cpuTwins;
  return { ranks, reference, cpuTwins, total };
}

/** The sizes whose halving lowers `measure`, most first, and the text "lower s (halving it saves 1 GiB)". */
function whatToLower(c: LayerConfig, measure: (c: LayerConfig) => number): { fields: ConfigField[]; advice: string } {
  const now = measure(c);
  const gains = lowerable
    .filter((f) => c[f] >= 2)
    .map((f) => ({ f, saves: now - measure({ ...c, [f]: Math.floor(c[f] / 2) }) }))
    .filter((g) => g.saves > 0)
    .sort((a, b) => b.saves - a.saves);
  if (!gains.length) return { fields: ['tp'], advice: 'lower the sizes' };
  // Sizes within 1% of the best saving are equal choices (vocab·h: halving either halves the tensor).
  const best = gains.filter((g) => g.saves >= 0.99 * gains[0].saves).map((g) => g.f);
  const either = best.length > 1 ? 'either' : 'it';
  return {
    fields: gains.map((g) => g.f),
    advice: `lower ${best.join(' or ')} (halving ${either} saves ${formatBytes(gains[0].saves)})`,
  };
}

/**
 * Counts each rank's memory, the TP=1 reference's and the CPU twins', and the largest buffer, for a
 * valid configuration, and says what does not fit: the total against the page budget, the largest
 * buffer against the adapter's maxStorageBufferBindingSize and maxBufferSize. O(t) work.
 */
export function budgetRun(c: LayerConfig, budget: MemoryBudget): BudgetReport {
  const { ranks, reference, cpuTwins, total } = totals(c);
  const largest = largestBuffer(c);
  const errors: BudgetIssue[] = [];
  const { maxStorageBufferBindingSize: bind, maxBufferSize: buf } = budget.limits;
  const limit = Math.min(bind, buf);
  if (largest.bytes > limit) {
    const { fields, advice } = whatToLower(c, (x) => largestBuffer(x).bytes);
    errors.push({
      rule: 'buffer-limit',
      field: fields[0],
      fields,
      message:
        `the TP=1 reference's tensor ${largest.name} ${formatShape(largest.shape)} needs ${formatBytes(largest.bytes)} in one buffer, ` +
        `more than ${budget.limitsSource} ${bind <= buf ? 'maxStorageBufferBindingSize' : 'maxBufferSize'} of ${formatBytes(limit)}; ` +
        `${advice}.`,
    });
  }
  if (total > budget.pageBytes) {
    const { fields, advice } = whatToLower(c, (x) => totals(x).total);
    const r0 = ranks[0];
    errors.push({
      rule: 'page-budget',
      field: fields[0],
      fields,
      message:
        `this run needs ${formatBytes(total)}: ${c.tp} rank${c.tp > 1 ? 's' : ''} × ${formatBytes(r0.total)} ` +
        `(weights ${formatBytes(r0.weights)}, gradients ${formatBytes(r0.gradients)}, activations kept for backward ${formatBytes(r0.activations)}, scratch ${formatBytes(r0.scratch)}, staged GEMM textures ${formatBytes(r0.staging)})` +
        ` + the TP=1 reference ${formatBytes(reference.total)}${cpuTwins ? ` + CPU twins ${formatBytes(cpuTwins)}` : ''}` +
        ` — more than the page budget of ${formatBytes(budget.pageBytes)} (${budget.pageSource}); ${advice}.`,
    });
  }
  return {
    ok: errors.length === 0,
    ranks,
    reference,
    cpuTwins,
    cpuTwinsSkipped: cpuTwins ? undefined : twinsTooLarge(stepTensorBytes(reference)),
    totalBytes: total,
    largestBuffer: largest,
    errors,
  };
}

/** A step's tensors (weights, gradients, activations, scratch): what the CPU twins copy in float64, without the GPU's staged GEMM textures. */
const stepTensorBytes = (r: RankBudget): number => r.total - r.staging;

const twinsTooLarge = (bytes: number): string =>
  `CPU twins skipped: the TP=1 step needs ${formatBytes(bytes)}, more than their ${formatBytes(cpuTwinMaxBytes)} limit (float64 on the page's thread).`;

/**
 * Why the CPU twins do not run for `c` (TP=1 memory above cpuTwinMaxBytes, or `stepFlops` per rank
 * above cpuTwinMaxFlops), or undefined when they do.
 */
export function cpuTwinsSkipped(c: LayerConfig, stepFlops: number): string | undefined {
  const [reference] = rankBudgets(referenceConfig(c));
  if (stepTensorBytes(reference) > cpuTwinMaxBytes) return twinsTooLarge(stepTensorBytes(reference));
  if (stepFlops > cpuTwinMaxFlops)
    return `CPU twins skipped: the step is ${Number((stepFlops / 1e6).toPrecision(3))} MFLOP per rank, more than their ${cpuTwinMaxFlops / 1e6} MFLOP limit (float64 on the page's thread).`;
  return undefined;
}

/** Throws one Error with every budget issue (for callers that start work right after). */
export function assertWithinBudget(c: LayerConfig, budget: MemoryBudget): BudgetReport {
  const r = budgetRun(c, budget);
  if (!r.ok) throw new Error(`Over budget: ${r.errors.map((e) => e.message).join(' ')}`);
  return r;
}
