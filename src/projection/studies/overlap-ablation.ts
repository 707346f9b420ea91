import type { TrainingSetup } from '../../megatron/training-setup.ts';
import { assembleStep, type StepProjection } from '../step/cluster-projection.ts';
import { type ExposedByGroup } from '../step/step-times.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import { LayerPricingCache } from '../step/layer-pricing-cache.ts';
import type { LinkSharingCost } from '../links/link-sharing.ts';
import {
  combinationRejection,
  notApplicable,
  overlapFlags,
  withOverlaps,
  type OverlapFlag,
} from '../layer/overlap-flags.ts';
import type { Machine } from '../layer/projected-layer.ts';

/**
 * The overlap ablation of seed 004 M102 (docs/sources.md): every overlap that can apply to a setup
 * alone, in pairs and all on, each projected with what it hides and what it costs (overlap-flags.ts),
 * so that a combination slower than one of its subsets — an interaction — shows. Every subset of the
 * applicable overlaps is projected (at most 2⁶ = 64 steps over at most 2³ layer pricings); the rows
 * shown are the baseline, the singles, the pairs and all on.
 *
 *   worse than its best subset:  step(S) > min over proper subsets T ⊂ S of step(T)
 *   pair interaction:            step(AB) − step(A) − step(B) + step(∅)   (0 when the two add up)
 *   because of a shared link:    worse, and step(S) − sharing(S) ≤ step(best subset): without what
 *                                its overlapped DP collectives lost to a shared link
 *                                (link-sharing.ts) S would not be worse
 */
export interface OverlapAblation {
  /** The overlaps that can apply to the setup, in overlapFlags order. */
  readonly applicable: readonly OverlapFlag[];
  /** The ones that cannot, each with why. */
  readonly notApplicable: readonly { readonly flag: OverlapFlag; readonly reason: string }[];
  /** Baseline (none on), each single, each pair, all on. */
  readonly rows: readonly AblationRow[];
  /** The fastest of every subset projected (not only the rows shown). */
  readonly best: { readonly flags: readonly OverlapFlag[]; readonly stepMs: number };
  /** Rows flagged worse than their best subset. */
  readonly flagged: number;
  /** Of those, the ones a shared link makes worse (AblationResult.sharedLinkCause). */
  readonly flaggedForSharedLink: number;
}

/** One combination of overlaps: its projection, or why Megatron would not launch it. */
export interface AblationRow {
  readonly flags: readonly OverlapFlag[];
  readonly result: AblationResult | { readonly ok: false; readonly reason: string };
}

/** The figures of one combination (ms per step, bytes per GPU). */
export interface AblationResult {
  readonly ok: true;
  readonly stepMs: number;
  /** step − the baseline's step (negative: faster). */
  readonly vsBaselineMs: number;
  readonly exposedByGroup: ExposedByGroup;
  readonly exposedMs: number;
  /** Compute lost to the DP and PP communication beside it (the TP overlaps' is inside the layer's kernels). */
  readonly overlapCostMs: { readonly dp: number; readonly pp: number };
  /** Memory the overlaps hold (userbuffers, p2p receives posted ahead). */
  readonly inFlightBytes: number;
  readonly peakBytes: number;
  readonly oom: boolean;
  /** Overlapped DP collectives that shared a link with TP or pipeline traffic (empty: none). */
  readonly linkSharing: readonly LinkSharingCost[];
  /** What the shared links added to the step, ms (inside exposedByGroup.dp). */
  readonly linkSharingMs: number;
  /** The fastest proper subset (the baseline for a single). */
  readonly bestSubset?: { readonly flags: readonly OverlapFlag[]; readonly stepMs: number };
  readonly worseThanBestSubset: boolean;
  /** Worse than its best subset only because of the links it shares: which link, shared by what. */
  readonly sharedLinkCause?: readonly LinkSharingCost[];
  /** Pairs: step(AB) − step(A) − step(B) + step(∅). */
  readonly interactionMs?: number;
}

/** Subsets of `flags` as arrays in flags' order, by bit mask. */
const subset = (flags: readonly OverlapFlag[], mask: number): OverlapFlag[] => flags.filter((_, i) => (mask >> i) & 1);

/** Bit count of a mask. */
const bits = (mask: number): number => {
  let n = 0;
  for (let x = mask; x; x &= x - 1) n++;
  return n;
};

/** What the ablation reads of one projected combination. */
export type AblationFigures = Omit<
  AblationResult,
  'ok' | 'vsBaselineMs' | 'bestSubset' | 'worseThanBestSubset' | 'sharedLinkCause' | 'interactionMs'
>;

/** The figures of a projected step. */
const figuresOf = (s: StepProjection): AblationFigures => ({
  stepMs: s.stepMs,
  exposedByGroup: s.exposedByGroup,
  exposedMs: s.exposedMs,
  overlapCostMs: s.overlapCostMs,
  inFlightBytes: s.overlapBuffers.reduce((a, b) => a + b.bytes, 0),
  peakBytes: s.memory.totalBytes,
  oom: s.memory.oom,
  linkSharing: s.linkSharing,
  linkSharingMs: s.linkSharingMs,
});

/**
 * Ablates the overlaps of `setup` on `machine` (the setup's and kernels' own overlap switches are
 * replaced, everything else kept); throws with the validation message when the setup itself is
 * illegal.
 */
export async function ablateOverlaps(setup: TrainingSetup, machine: Machine): Promise<OverlapAblation> {
  const kernels = machine.kernels ?? defaultKernelOptions;
  const applicable: OverlapFlag[] = [];
  const skipped: { flag: OverlapFlag; reason: string }[] = [];
  for (const flag of overlapFlags) {
    const reason = notApplicable(flag, setup);
    if (reason) skipped.push({ flag, reason });
    else applicable.push(flag);
  }
  const caches = new Map<boolean, LayerPricingCache>();
  const cacheFor = (m: Machine): LayerPricingCache => {
    const key = m.kernels?.tpCommOverlap ?? false;
    let c = caches.get(key);
    if (!c) caches.set(key, (c = new LayerPricingCache(m)));
    return c;
  };
  const results = new Map<number, AblationFigures | string>();
  for (let mask = 0; mask < 1 << applicable.length; mask++) {
    const on = new Set(subset(applicable, mask));
    const rejection = combinationRejection(on);
    if (rejection) {
      results.set(mask, rejection);
      continue;
    }
    const v = withOverlaps(setup, kernels, on);
    const m: Machine = { ...machine, kernels: v.kernels };
    results.set(mask, figuresOf(assembleStep(v.setup, m, await cacheFor(m).price(v.setup))));
  }
  return { ...ablationTable(applicable, results), notApplicable: skipped };
}

/**
 * The ablation's rows from every subset's figures (`results` by bit mask over `applicable`: bit i
 * set = applicable[i] on; a string says why that combination is not launched). The baseline
 * (mask 0) must be projected.
 */
export function ablationTable(
  applicable: readonly OverlapFlag[],
  results: ReadonlyMap<number, AblationFigures | string>,
): Omit<OverlapAblation, 'notApplicable'> {
  const n = applicable.length;
  const stepOf = (mask: number): number | undefined => {
    const s = results.get(mask);
    return typeof s === 'object' ? s.stepMs : undefined;
  };
  const base = stepOf(0);
  if (base === undefined) throw new Error('the ablation needs the baseline (no overlap) projected.');
  const bestSubsetOf = (mask: number): { flags: OverlapFlag[]; stepMs: number } | undefined => {
    let best: { flags: OverlapFlag[]; stepMs: number } | undefined;
    for (let sub = (mask - 1) & mask; ; sub = (sub - 1) & mask) {
      const ms = stepOf(sub);
      if (ms !== undefined && (!best || ms < best.stepMs)) best = { flags: subset(applicable, sub), stepMs: ms };
      if (sub === 0) break;
    }
    return best;
  };
  // Differences below this are the summation order's rounding, not an interaction.
  const eps = 1e-9 * base;
  const shown = [...results.keys()].filter((mask) => bits(mask) <= 2 || mask === (1 << n) - 1);
  shown.sort((a, b) => bits(a) - bits(b) || a - b);
  const rows: AblationRow[] = shown.map((mask) => {
    const flags = subset(applicable, mask);
    const s = results.get(mask)!;
    if (typeof s === 'string') return { flags, result: { ok: false, reason: s } };
    const bestSubset = mask === 0 ? undefined : bestSubsetOf(mask);
    const pair = bits(mask) === 2 ? applicable.map((_, i) => 1 << i).filter((b) => mask & b) : undefined;
    const singles = pair?.map(stepOf);
    const interaction =
      singles && singles[0] !== undefined && singles[1] !== undefined
        ? s.stepMs - singles[0] - singles[1] + base
        : undefined;
    const worse = bestSubset !== undefined && s.stepMs > bestSubset.stepMs + eps;
    const byLink = worse && s.linkSharingMs > 0 && s.stepMs - s.linkSharingMs <= bestSubset.stepMs + eps;
    return {
      flags,
      result: {
        ok: true,
        ...s,
        vsBaselineMs: s.stepMs - base,
        ...(bestSubset && { bestSubset }),
        worseThanBestSubset: worse,
        ...(byLink && { sharedLinkCause: s.linkSharing }),
        ...(interaction !== undefined && { interactionMs: Math.abs(interaction) < eps ? 0 : interaction }),
      },
    };
  });
  let best = { flags: [] as OverlapFlag[], stepMs: base };
  for (const mask of results.keys()) {
    const ms = stepOf(mask);
    if (ms !== undefined && ms < best.stepMs - eps) best = { flags: subset(applicable, mask), stepMs: ms };
  }
  return {
    applicable,
    rows,
    best,
    flagged: rows.filter((r) => r.result.ok && r.result.worseThanBestSubset).length,
    flaggedForSharedLink: rows.filter((r) => r.result.ok && r.result.sharedLinkCause).length,
  };
}
