import { soloCollectives } from '../comm/solo.ts';
import { addKernel } from '../reference/add.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { CpuBackend, float64Alloc, type Float64Tensor } from './backend-cpu.ts';
import { opSpec } from './backend.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import { LayerComm } from './layer-comm.ts';
import {
  attentionHalfBackward,
  attentionHalfForward,
  blockBackward,
  blockForward,
  mlpNormBackward,
  preNorm,
} from './layer.ts';
import { moeLayerDenseWeights } from './moe-layer.ts';
import {
  gradShardChecks,
  maxAbs,
  moeBlockRows,
  rankShard,
  scaledCompare,
  type AttentionCoords,
} from './moe-layer-oracle.ts';
import type { MoeLayout } from './moe-layout.ts';
import { denseLayerWeights, moeModelLayer, type MoeModelRankResult } from './moe-model.ts';
import {
  moeHolding,
  moeOracle,
  moeWantForward,
  type MoeOracleCheck,
  type MoeOracleReport,
  type MoeWant,
} from './moe-oracle.ts';
import { referenceConfig } from './oracle.ts';
import { rankOwnership } from './ownership.ts';
import { rankWeightArrays } from './step-data.ts';
import type { WeightName } from './weight-names.ts';
import type { WeightSet } from './weights.ts';

// L layers (moe-model.ts) against one device, in float64 (CPU twins, float64 storage): DP replica
// d runs x_d through the layers at t = 1, layer by layer for all replicas at once, because an MoE
// layer's block routes the ranks' shards of every replica together (moe-oracle.ts moeWantForward:
// dropless one routing call over all; capacity one per rank's shard); the backward in reverse, the
// block's from the replicas' dy at its output (its backward), each layer's gradients summed over
// replicas. The data is moeLayerProblem's (moe-layer-oracle.ts).

/** The problem: the base config (vocab 0), the block, the layout, the pattern, each replica's x and dy [s, b, h]. */
export interface MoeModelProblem {
  readonly c: LayerConfig;
  readonly mc: MoeConfig;
  readonly layout: MoeLayout;
  readonly pattern: readonly boolean[];
  readonly x: readonly Float32Array[];
  readonly dy: readonly Float32Array[];
}

/** One device's answers: per replica y and dx; per layer its logical gradients summed over replicas and, for an MoE layer, the block's problem and answers. */
export interface MoeModelWant {
  readonly y: readonly Float64Array[];
  readonly dx: readonly Float64Array[];
  readonly layers: readonly {
    readonly grads: Partial<Record<WeightName, Float64Array>>;
    readonly moe: { readonly want: MoeWant; readonly block: Parameters<typeof moeOracle>[0] } | null;
  }[];
}

/** The single-device model (see the header) for ranks at `coords` (rank q's at q). */
export async function moeModelWant(p: MoeModelProblem, coords: readonly AttentionCoords[]): Promise<MoeModelWant> {
  const { c, mc, pattern } = p;
  const c1 = referenceConfig(c);
  const own = rankOwnership(c1)[0]!;
  const { s, b, h } = localDims(c1);
  const shape = [s, b, h];
  const T = (s / c.tp) * b;
  const reps = p.x.map((x) => {
    const be = new CpuBackend(float64Alloc);
    return {
      be,
      lc: new LayerComm(soloCollectives<Float64Tensor>(), (t: Float64Tensor) => t.shape),
      act: be.tensor('x', shape, x),
    };
  });
  const { inRankOrder, perReplica } = moeBlockRows(c, coords, reps.length, { s, b, h });
  type Back = (dys: Float64Tensor[], grads: WeightSet<Float64Tensor>[]) => Promise<Float64Tensor[]>;
  const layers: { back: Back; names: readonly WeightName[]; moe: MoeModelWant['layers'][number]['moe'] }[] = [];
  for (let l = 0; l < pattern.length; l++) {
    const { layer, moe: mw } = moeModelLayer(c1, mc, pattern, l);
    const names = mw ? moeLayerDenseWeights : denseLayerWeights;
    const shards = rankWeightArrays(layer, own);
    const ws = reps.map((r) => {
      const w: WeightSet<Float64Tensor> = {};
      for (const n of names) w[n] = r.be.tensor(n, shards[n]!.shape, shards[n]!.data);
      return w;
    });
    if (!mw) {
      const fs = await Promise.all(reps.map((r, d) => blockForward(r.be, r.lc, layer, own, ws[d]!, r.act)));
      reps.forEach((r, d) => (r.act = fs[d]!.y));
      layers.push({
        names,
        moe: null,
        back: (dys, grads) =>
          Promise.all(
            reps.map(
              async (r, d) => (await blockBackward(r.be, r.lc, layer, ws[d]!, fs[d]!.saved, dys[d]!, grads[d]!)).dx,
            ),
          ),
      });
      continue;
    }
    const halves = await Promise.all(reps.map((r, d) => attentionHalfForward(r.be, r.lc, layer, own, ws[d]!, r.act)));
    const ln2 = reps.map((r, d) => preNorm(r.be, layer, 'ln2', halves[d]!.x2, ws[d]!.g2!));
    const block = { c: mc, h, T, ranks: coords.length, w: mw, x: inRankOrder(ln2.map((n) => n.n.data)) };
    const fwd = moeWantForward(block);
    const moeY = perReplica(fwd.y);
    reps.forEach((r, d) => {
      const y = r.be.tensor('y', shape);
      r.be.kernel(
        opSpec('residual.mlp', 'replicated'),
        addKernel,
        [halves[d]!.x2, r.be.tensor('moe.y', shape, moeY[d]), y],
        {},
      );
      r.act = y;
    });
    const entry: (typeof layers)[number] = {
      names,
      moe: null,
      back: async (dys, grads) => {
        const want = fwd.backward(inRankOrder(dys.map((t) => t.data)));
        entry.moe = { want, block: { ...block, dy: inRankOrder(dys.map((t) => t.data)) } };
        const dln2 = perReplica(want.dx);
        return Promise.all(
          reps.map(async (r, d) => {
            const dx2 = mlpNormBackward(
              r.be,
              layer,
              ws[d]!,
              { x2: halves[d]!.x2, rstd2: ln2[d]!.rstd, dln2: r.be.tensor('d.ln2', shape, dln2[d]), dy: dys[d]! },
              grads[d]!,
            );
            return attentionHalfBackward(r.be, r.lc, layer, ws[d]!, halves[d]!.saved, dx2, grads[d]!);
          }),
        );
      },
    };
    layers.push(entry);
  }
  const y = reps.map((r) => r.act.data);
  let d = reps.map((r, i) => r.be.tensor('dy', shape, p.dy[i]));
  const grads = layers.map(() => reps.map((): WeightSet<Float64Tensor> => ({})));
  for (let l = layers.length - 1; l >= 0; l--) d = await layers[l]!.back(d, grads[l]!);
  return {
    y,
    dx: d.map((t) => t.data),
    layers: layers.map((L, l) => ({
      moe: L.moe,
      grads: Object.fromEntries(
        L.names.map((n) => [
          n,
          grads[l]!.reduce(
            (acc, g) => acc.map((v, i) => v + g[n]!.data[i]!),
            new Float64Array(grads[l]![0]![n]!.data.length),
          ),
        ]),
      ),
    })),
  };
}

/** The model's ranks against one device: per layer the rank's gradients, y and dx; each MoE layer's block by moeOracle. */
export interface MoeModelOracleReport {
  readonly ok: boolean;
  readonly tolerance: number;
  readonly checks: readonly MoeOracleCheck[];
  /** Per layer, the block's report (null for a dense layer). */
  readonly moe: readonly (MoeOracleReport | null)[];
  readonly failures: readonly string[];
}

/**
 * The ranks (rank q's at q, at `coords`) against `want`: y and dx of the rank's shard, every
 * layer's gradient shards within tolerance · max(1, max|oracle|); every MoE layer's block by
 * moeOracle, its logit bound widened by the rank's block-input error against one device's
 * (h · max|Δx| · max|W_r| + logitError).
 */
export function moeModelOracle(
  p: MoeModelProblem,
  want: MoeModelWant,
  results: readonly MoeModelRankResult[],
  coords: readonly AttentionCoords[],
  tolerance: number,
  logitError: number,
): MoeModelOracleReport {
  const { c } = p;
  const checks: MoeOracleCheck[] = [];
  const within = scaledCompare(tolerance);
  results.forEach((r, q) => {
    const { tp: j, dp: d } = coords[q]!;
    checks.push(
      within(`rank ${q} y`, r.y, rankShard(c, want.y[d]!, j)),
      within(`rank ${q} dx`, r.dx, rankShard(c, want.dx[d]!, j)),
    );
    want.layers.forEach((L, l) =>
      checks.push(...gradShardChecks(c, q, j, L.grads, r.layers[l]!.grads, tolerance, `layer ${l} `)),
    );
  });
  const holding = moeHolding(
    p.layout,
    coords.map((x) => x.dp),
  );
  const moe = want.layers.map((L, l) => {
    if (!L.moe) return null;
    const { block, want: w } = L.moe;
    let inputErr = 0;
    results.forEach((r, q) => {
      const got = r.layers[l]!.moeInput!;
      const ref = block.x.subarray(q * got.length, (q + 1) * got.length);
      for (let i = 0; i < got.length; i++) inputErr = Math.max(inputErr, Math.abs(got[i]! - ref[i]!));
    });
    const bound = c.h * inputErr * maxAbs(block.w.router) + logitError;
    return moeOracle(
      block,
      w,
      results.map((r) => r.layers[l]!.moe!),
      tolerance,
      bound,
      holding,
    );
  });
  const failures = [
    ...checks.filter((x) => !x.ok).map((x) => `${x.what}: worst |Δ| ${x.worst} at ${x.at} > ${x.tolerance}`),
    ...moe.flatMap((m, l) => (m ? m.failures.map((f) => `layer ${l}: ${f}`) : [])),
  ];
  return { ok: failures.length === 0, tolerance, checks, moe, failures };
}
