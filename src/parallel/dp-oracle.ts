import type { GradBufferLayout } from '../mesh/grad-buckets.ts';
import { unflattenParams } from '../mesh/grad-buckets.ts';
import { adamDriftBound, type AdamHyper } from '../reference/adam.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import { oracleTolerance } from './oracle.ts';
import { rankOwnership } from './ownership.ts';
import type { WeightName } from './weight-names.ts';
import { cutShard, logicalShape, shardLayout } from './weights.ts';

/** The one-device run's step: its averaged gradients and its weights after the update, logical (t = 1). */
export interface ReferenceStep {
  readonly grads: Partial<Record<WeightName, Float32Array>>;
  readonly weights: Partial<Record<WeightName, Float32Array>>;
}

/** One rank's step: its weight shards after the update and the pieces of the synced gradient buffer it holds. */
export interface ReplicaStep {
  readonly weights: Partial<Record<WeightName, Float32Array>>;
  readonly grads: readonly { readonly start: number; readonly data: Float32Array }[];
}

/** A rank of the mesh by its place: TP rank (which shards) and DP rank (which replica). */
export interface ReplicaPlace {
  readonly tp: number;
  readonly dp: number;
}

/** One check: its worst error against its tolerance (ratio ≤ 1 passes). */
export interface DpCheck {
  readonly what: string;
  readonly step: number;
  readonly maxAbs: number;
  /** max over elements of |error| / tolerance. */
  readonly ratio: number;
  readonly pass: boolean;
}

/** The verdict on a data-parallel run: every check, the worst, pass/fail. */
export interface DpOracleReport {
  readonly checks: DpCheck[];
  readonly worst: DpCheck;
  readonly pass: boolean;
}

const maxAbsOf = (a: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
};

function check(
  what: string,
  step: number,
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: (i: number) => number,
): DpCheck {
  if (got.length !== want.length)
    throw new Error(`dp oracle: ${what} has ${got.length} values, the reference ${want.length}.`);
  let maxAbs = 0,
    ratio = 0;
  for (let i = 0; i < got.length; i++) {
    const e = Math.abs(got[i] - want[i]);
    maxAbs = Math.max(maxAbs, e);
    const t = tol(i);
    ratio = Math.max(ratio, e === 0 ? 0 : t > 0 ? e / t : Infinity);
    if (Number.isNaN(e)) ratio = Infinity;
  }
  return { what, step, maxAbs, ratio, pass: ratio <= 1 };
}

/**
 * Data parallel against one device (gradient accumulation over the same d micro-batches), step by
 * step, for every rank of the mesh:
 * - the averaged gradients the optimizer used equal the one-device run's, cut to the rank's TP
 *   shard, within the layer oracle's tolerance 16·ε·(K + 1)·max|ref| per tensor (parallel/oracle.ts:
 *   float32 sums in other orders — TP shards, the ring's sum of the d replicas against the
 *   accumulation's);
 * - the weights after the update equal the one-device run's within lr·adamDriftBound (Adam moved
 *   by gradients that differ by at most that tolerance; reference/adam.ts) plus one float32 rounding
 *   of |w| per step on each side;
 * - all replicas of a TP rank hold bit-identical weights.
 * `layout` is the buffer's for TP rank tp (the same on every replica).
 */
export function dpOracle(
  c: LayerConfig,
  h: AdamHyper,
  layouts: readonly GradBufferLayout<WeightName>[],
  places: readonly ReplicaPlace[],
  reference: readonly ReferenceStep[],
  replicas: readonly (readonly ReplicaStep[])[],
): DpOracleReport {
  const D = localDims(c);
  const own = rankOwnership(c);
  const cut = (logical: Float32Array, n: WeightName, tp: number): Float32Array =>
    cutShard(logical, logicalShape(c, n), shardLayout(c, D, own[tp], n));
  const checks: DpCheck[] = [];
  const eps32 = 2 ** -23;
  for (const [tp, layout] of layouts.entries()) {
    const ranks = places.flatMap((p, r) => (p.tp === tp ? [r] : []));
    const names = layout.params.map((p) => p.name);
    const refGrads = (n: WeightName) => reference.map((s) => cut(s.grads[n]!, n, tp));
    const deltas = (n: WeightName) => reference.map((s) => oracleTolerance(c, maxAbsOf(s.grads[n]!)));
    for (const [k, ref] of reference.entries()) {
      const step = k + 1;
      // The synced gradient buffer, from every replica's pieces (a shard each with the distributed optimizer).
      const flat = new Float32Array(layout.numel);
      for (const r of ranks) for (const p of replicas[r]![k]!.grads) flat.set(p.data, p.start);
      const synced = unflattenParams(layout, flat);
      for (const n of names) {
        const d = deltas(n)[k]!;
        checks.push(check(`d${n} (tp ${tp})`, step, synced[n], cut(ref.grads[n]!, n, tp), () => d));
        const bound = adamDriftBound(refGrads(n).slice(0, step), deltas(n).slice(0, step), h);
        const wRef = cut(ref.weights[n]!, n, tp);
        const tol = (i: number) => h.lr * bound[i]! + 2 * step * eps32 * Math.abs(wRef[i]!);
        const first = replicas[ranks[0]!]![k]!.weights[n]!;
        checks.push(check(`${n} (tp ${tp})`, step, first, wRef, tol));
        for (const r of ranks.slice(1))
          checks.push(
            check(
              `${n} (tp ${tp}): dp ${places[r]!.dp} against dp ${places[ranks[0]!]!.dp}`,
              step,
              replicas[r]![k]!.weights[n]!,
              first,
              () => 0,
            ),
          );
      }
    }
  }
  const worst = checks.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  return { checks, worst, pass: checks.every((x) => x.pass) };
}
