import { soloCollectives } from '../comm/solo.ts';
import { addKernel } from '../reference/add.ts';
import type { MoeWeights } from '../reference/moe/block.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import { randomArray } from '../reference/random.ts';
import { CpuBackend, float64Alloc, type Float64Tensor } from './backend-cpu.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import { LayerComm } from './layer-comm.ts';
import {
  attentionHalfBackward,
  attentionHalfForward,
  embedBackward,
  embedForward,
  lossBackward,
  lossForward,
  mlpNormBackward,
  preNorm,
  type StepInputs,
} from './layer.ts';
import { moeLayerWeights, type MoeLayerRankResult } from './moe-layer.ts';
import { moeWorld, type MoeLayout } from './moe-layout.ts';
import {
  compareWithin,
  concat,
  moeHolding,
  moeOracle,
  moeWantForward,
  type MoeOracleCheck,
  type MoeOracleReport,
  type MoeProblem,
  type MoeWant,
} from './moe-oracle.ts';
import { referenceConfig } from './oracle.ts';
import { rankOwnership } from './ownership.ts';
import { opSpec } from './backend.ts';
import { rankWeightArrays, stepInputs } from './step-data.ts';
import type { WeightName } from './weight-names.ts';
import { cutShard, logicalShape, shardLayout, tensorSeed, type WeightSet } from './weights.ts';

// The MoE layer on the ranks (moe-layer.ts) checked against one device. The layout folds tp·dp
// attention ranks and etp·ep·edp expert ranks onto N = lcm(tp, etp·ep) (moe-layout.ts); DP replica
// d (of N/tp) runs its own micro-batch x_d, dy_d [s, b, h]; rank q at (tp j, dp d) holds rows
// [j·s/t, (j + 1)·s/t) of replica d's (its SP shard). One device runs, in float64 (CPU twins,
// float64 storage):
//   per replica: x2_d = the attention half at t = 1, ln2_d = RMSNorm(x2_d; g2)
//   the MoE block on the ranks' ln2 shards in rank order (moe-oracle.ts moeWant: dropless, one
//     routing call over all of them; with capacity, one per rank's shard, as each rank routes)
//   per replica: y_d = x2_d + MoE rows; backward from dy_d through the block's dln2, the ln2 norm
//     and the attention half; the attention half's gradients summed over replicas (DDP).
// With a vocabulary x_d = embed(ids_d) and dy_d the gradient of the mean cross entropy of y_d·W_out
// against targets_d (layer.ts embedForward, lossForward, lossBackward at t = 1).

/** The MoE layer's problem: the layer's config, the block's config and weights, each DP replica's data. */
export interface MoeLayerProblem {
  readonly c: LayerConfig;
  readonly layout: MoeLayout;
  readonly mc: MoeConfig;
  readonly mw: MoeWeights;
  /** Layer input x_d and upstream gradient dy_d [s, b, h] of each DP replica (N/tp of them); empty with a vocabulary. */
  readonly x: readonly Float32Array[];
  readonly dy: readonly Float32Array[];
  /** With a vocabulary, each replica's token ids and targets [s, b] (step-data.ts stepInputs). */
  readonly batches?: readonly StepInputs[];
}

/** Where a rank sits in the attention mesh: its TP and DP coordinates. */
export interface AttentionCoords {
  readonly tp: number;
  readonly dp: number;
}

/**
 * The problem of `c` (its attention weights from c.seed) with the block `mc` under `layout`: MoE
 * weights seededMoeWeights(mc, h, c.seed), replica d's x and dy uniform in [−1, 1) from
 * tensorSeed(c.seed, `moe.x.${d}`) and `moe.dy.${d}`; with a vocabulary its ids and targets
 * (stepInputs with the seed tensorSeed(c.seed, `moe.batch.${d}`)).
 */
export function moeLayerProblem(c: LayerConfig, mc: MoeConfig, layout: MoeLayout): MoeLayerProblem {
  const dp = moeWorld(layout) / layout.tp;
  const n = c.s * c.b * c.h;
  const mw = seededMoeWeights(mc, c.h, c.seed);
  const replicas = Array.from({ length: dp }, (_, d) => d);
  if (c.vocab > 0)
    return {
      c,
      layout,
      mc,
      mw,
      x: [],
      dy: [],
      batches: replicas.map((d) => stepInputs({ ...c, seed: tensorSeed(c.seed, `moe.batch.${d}`) })),
    };
  const data = (what: string) => replicas.map((d) => randomArray(n, tensorSeed(c.seed, `moe.${what}.${d}`)));
  return { c, layout, mc, mw, x: data('x'), dy: data('dy') };
}

/** The data rank (tp j, dp d) runs: its replica's ids and targets with a vocabulary, else its SP shard of the replica's x and dy. */
export function rankData(p: MoeLayerProblem, q: AttentionCoords): StepInputs {
  if (p.batches) return p.batches[q.dp]!;
  return {
    x: Float32Array.from(rankShard(p.c, p.x[q.dp]!, q.tp)),
    dy: Float32Array.from(rankShard(p.c, p.dy[q.dp]!, q.tp)),
  };
}

/** Rank (tp j, dp d)'s rows of replica d's [s, b, h] array: its SP shard [s/t, b, h] (the whole array at t = 1). */
export function rankShard<A extends Float32Array | Float64Array>(c: LayerConfig, a: A, j: number): A {
  const rows = a.length / c.tp;
  return a.subarray(j * rows, (j + 1) * rows) as A;
}

/**
 * The block's rows [ranks·T, h] and the replicas' activations [s, b, h] (T = s/t·b), each way: rank r
 * at coords[r] holds its SP shard (TP rank q.tp) of its replica's (q.dp) tokens.
 */
export function moeBlockRows(
  c: LayerConfig,
  coords: readonly AttentionCoords[],
  replicas: number,
  { s, b, h }: { readonly s: number; readonly b: number; readonly h: number },
) {
  const T = (s / c.tp) * b;
  return {
    /** Every rank's shard of its replica's [s, b, h], in rank order. */
    inRankOrder: (per: readonly Float64Array[]): Float64Array =>
      concat(coords.map((q) => rankShard(c, per[q.dp]!, q.tp))),
    /** Each replica's [s, b, h] from the ranks' rows. */
    perReplica: (a: Float64Array): Float64Array[] =>
      Array.from({ length: replicas }, (_, d) => {
        const out = new Float64Array(s * b * h);
        coords.forEach((q, r) => {
          if (q.dp === d) out.set(a.subarray(r * T * h, (r + 1) * T * h), q.tp * T * h);
        });
        return out;
      }),
  };
}

/** One device's answers: per replica y, dx (none with a vocabulary), the loss [s, b] (with one) and the MoE input [s, b, h]; the gradients summed over replicas; the block's. */
export interface MoeLayerWant {
  readonly y: readonly Float64Array[];
  readonly dx: readonly Float64Array[];
  readonly loss: readonly Float64Array[];
  readonly moeInput: readonly Float64Array[];
  readonly grads: Readonly<Partial<Record<WeightName, Float64Array>>>;
  /** The block's problem over the ranks' shards in rank order, and its single-device answers. */
  readonly block: MoeProblem;
  readonly moe: MoeWant;
}

/** The single-device layer (see the header) for ranks at `coords` (rank q's at q). */
export async function moeLayerWant(p: MoeLayerProblem, coords: readonly AttentionCoords[]): Promise<MoeLayerWant> {
  const { c, mc, mw } = p;
  const c1 = referenceConfig(c);
  const own = rankOwnership(c1)[0]!;
  const { s, b, h } = localDims(c1);
  const shape = [s, b, h];
  const shards = rankWeightArrays(c1, own);
  const names = moeLayerWeights(c1);
  const dp = moeWorld(p.layout) / p.layout.tp;
  const replicas = await Promise.all(
    Array.from({ length: dp }, async (_, d) => {
      const be = new CpuBackend(float64Alloc);
      const lc = new LayerComm(soloCollectives<Float64Tensor>(), (t: Float64Tensor) => t.shape);
      const w: WeightSet<Float64Tensor> = {};
      for (const n of names) w[n] = be.tensor(n, shards[n]!.shape, shards[n]!.data);
      const batch = p.batches?.[d];
      const ids = batch ? be.tensor('ids', [s, b], batch.ids!) : undefined;
      const x = ids ? await embedForward(be, lc, c1, own, w, ids) : be.tensor('x', shape, p.x[d]!);
      const { x2, saved } = await attentionHalfForward(be, lc, c1, own, w, x);
      const ln2 = preNorm(be, c1, 'ln2', x2, w.g2!);
      return { be, lc, w, x2, saved, ln2, ids, batch };
    }),
  );
  const grads = replicas.map((): WeightSet<Float64Tensor> => ({}));
  const T = (s / c.tp) * b;
  const { inRankOrder, perReplica } = moeBlockRows(c, coords, replicas.length, { s, b, h });
  const blockX = { c: mc, h, T, ranks: coords.length, w: mw, x: inRankOrder(replicas.map((r) => r.ln2.n.data)) };
  const fwd = moeWantForward(blockX);
  const moeY = perReplica(fwd.y);
  const ys: Float64Array[] = [];
  const losses: Float64Array[] = [];
  const dys = await Promise.all(
    replicas.map(async (r, d) => {
      const y = r.be.tensor('y', shape);
      r.be.kernel(opSpec('residual.mlp', 'replicated'), addKernel, [r.x2, r.be.tensor('moe.y', shape, moeY[d]), y], {});
      ys.push(y.data);
      if (!r.batch) return r.be.tensor('dy', shape, p.dy[d]);
      const head = await lossForward(r.be, r.lc, c1, own, r.w, y, r.be.tensor('targets', [s, b], r.batch.targets!));
      losses[d] = head.loss.data;
      return lossBackward(r.be, r.lc, c1, own, r.w, head.saved, grads[d]!);
    }),
  );
  const block: MoeProblem = { ...blockX, dy: inRankOrder(dys.map((t: Float64Tensor) => t.data)) };
  const moe = fwd.backward(block.dy);
  const moeDx = perReplica(moe.dx);
  const dxs: Float64Array[] = [];
  for (const [d, r] of replicas.entries()) {
    const { be, lc, w, x2, saved, ln2 } = r;
    const g = grads[d]!;
    const dln2 = be.tensor('d.ln2', shape, moeDx[d]);
    const dx2 = mlpNormBackward(be, c1, w, { x2, rstd2: ln2.rstd, dln2, dy: dys[d]! }, g);
    const dx = await attentionHalfBackward(be, lc, c1, w, saved, dx2, g);
    if (r.ids) await embedBackward(be, lc, c1, own, w, r.ids, dx, g);
    else dxs.push(dx.data);
  }
  const summed = Object.fromEntries(
    names.map((n) => [
      n,
      grads.reduce((acc, g) => acc.map((v, i) => v + g[n]!.data[i]!), new Float64Array(shards[n]!.data.length)),
    ]),
  );
  return { y: ys, dx: dxs, loss: losses, moeInput: replicas.map((r) => r.ln2.n.data), grads: summed, block, moe };
}

/** The MoE layer's ranks against one device: the layer's own checks, the block's (moeOracle), every failure in words. */
export interface MoeLayerOracleReport {
  readonly ok: boolean;
  /** |rank − oracle| allowed, relative to max(1, max|oracle|) of each compared tensor. */
  readonly tolerance: number;
  /** y, dx, the MoE input and the attention half's gradients of every rank. */
  readonly checks: readonly MoeOracleCheck[];
  /** The block inside the layer: routing, losses (aux, z), the router's, experts' and shared expert's gradients. */
  readonly moe: MoeOracleReport;
  readonly failures: readonly string[];
}

/** max |a_i|. */
export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

/** A comparison within tolerance · max(1, max|oracle|). */
export const scaledCompare =
  (tolerance: number) =>
  (what: string, got: ArrayLike<number>, ref: Float64Array): MoeOracleCheck =>
    compareWithin(what, got, ref, tolerance * Math.max(1, maxAbs(ref)));

/** Rank q's (TP rank j) gradient shards `got` against the logical ones `want`, each scaled as scaledCompare. */
export function gradShardChecks(
  c: LayerConfig,
  q: number,
  j: number,
  want: Partial<Record<WeightName, Float64Array>>,
  got: Partial<Record<WeightName, Float32Array>>,
  tolerance: number,
  prefix = '',
): MoeOracleCheck[] {
  const D = localDims(c);
  const own = rankOwnership(c)[j]!;
  return (Object.entries(want) as [WeightName, Float64Array][]).map(([n, g]) => {
    const shard = cutShard(Float32Array.from(g), logicalShape(c, n), shardLayout(c, D, own, n));
    return scaledCompare(tolerance)(`rank ${q} ${prefix}d${n}`, got[n] ?? [], Float64Array.from(shard));
  });
}

/**
 * The ranks' results (rank q's at q, at `coords`) against `want`: y, dx and the MoE input of the
 * rank's shard, each attention shard's gradient within tolerance · max(1, max|oracle|); the block
 * through moeOracle, with the logit error bound widened by the ranks' MoE input error:
 * |Δ(x·W_r)| ≤ h · max|Δx| · max|W_r| + logitError (the router GEMM's own rounding).
 */
export function moeLayerOracle(
  p: MoeLayerProblem,
  want: MoeLayerWant,
  results: readonly MoeLayerRankResult[],
  coords: readonly AttentionCoords[],
  tolerance: number,
  logitError: number,
): MoeLayerOracleReport {
  const { c } = p;
  const checks: MoeOracleCheck[] = [];
  const within = scaledCompare(tolerance);
  let inputErr = 0;
  results.forEach((r, q) => {
    const { tp: j, dp: d } = coords[q]!;
    const input = within(`rank ${q} MoE input`, r.moeInput, rankShard(c, want.moeInput[d]!, j));
    inputErr = Math.max(inputErr, input.worst);
    checks.push(within(`rank ${q} y`, r.y, rankShard(c, want.y[d]!, j)), input);
    if (c.vocab > 0) checks.push(within(`rank ${q} loss`, r.loss ?? [], want.loss[d]!));
    else checks.push(within(`rank ${q} dx`, r.dx, rankShard(c, want.dx[d]!, j)));
    checks.push(...gradShardChecks(c, q, j, want.grads, r.grads, tolerance));
  });
  const bound = c.h * inputErr * maxAbs(p.mw.router) + logitError;
  const moe = moeOracle(
    want.block,
    want.moe,
    results.map((r) => r.moe),
    tolerance,
    bound,
    moeHolding(
      p.layout,
      coords.map((x) => x.dp),
    ),
  );
  const failures = [
    ...checks.filter((x) => !x.ok).map((x) => `${x.what}: worst |Δ| ${x.worst} at ${x.at} > ${x.tolerance}`),
    ...moe.failures,
  ];
  return { ok: failures.length === 0, tolerance, checks, moe, failures };
}
