import { opSpec, type Backend } from '../../../../src/parallel/backend.ts';
import { moeExpertsBackward, moeExpertsForward } from '../../../../src/parallel/moe-experts.ts';
import { gemmRef, denseProblem } from '../../../../src/reference/gemm.ts';
import type { MoeForward, MoeWeights } from '../../../../src/reference/moe/block.ts';
import type { MoeConfig } from '../../../../src/reference/moe/config.ts';
import { auxLossCounts } from '../../../../src/reference/moe/losses.ts';
import { moeNormalizeRowsKernel, moeSigmoidKernel } from '../../../../src/reference/moe/scores.ts';
import { routerLosses } from '../../../../src/parallel/moe-router-loss.ts';
import {
  moeCombineProbGradKernel,
  moePermuteKernel,
  moeUnpermuteKernel,
} from '../../../../src/reference/moe/permute.ts';
import { routerBackward } from '../../../../src/reference/moe/routing.ts';
import { moeTopkKernel } from '../../../../src/reference/moe/topk.ts';
import { softmaxKernel } from '../../../../src/reference/softmax.ts';

/** What the kernel chain gives, as float32 read-backs and the host's float64 router gradients. */
export interface ChainResult {
  readonly topIdx: Float32Array;
  /** The picks' probabilities before dropping, scored on the backend. */
  readonly topProb: Float32Array;
  readonly y: Float32Array;
  readonly dx: Float64Array;
  readonly router: Float64Array;
  readonly fc1: Float32Array;
  readonly fc2: Float32Array;
  /** The aux and z losses from the kernels. */
  readonly aux: number;
  readonly z: number;
}

/**
 * The MoE block (no shared expert) through the registered kernels on backend `be`, from the
 * reference's logits and routing (its router GEMM and capacity decisions are the host's):
 * softmax or sigmoid scores and top-k (checked by the caller against the routing), permute, the
 * experts' grouped GEMMs (moeExpertsForward), the weighted combine; then the combine's prob
 * gradient, permute with the probs, the experts' backward, unpermute with weights 1, the aux and
 * z losses' logits gradients (routerLosses) — and, on the host, dlogits = routerBackward + those,
 * dWr = xᵀ·dlogits, dx += dlogits·Wrᵀ.
 */
export async function moeChain<T>(
  be: Backend<T>,
  c: MoeConfig,
  h: number,
  x: Float64Array,
  w: MoeWeights,
  dy: Float64Array,
  ref: MoeForward,
): Promise<ChainResult> {
  const E = c.numMoeExperts;
  const f = c.moeFfnHiddenSize;
  const k = c.moeRouterTopk;
  const { routing, perm } = ref;
  const T = routing.tokens;
  const N = perm.rowToken.length;
  const op = opSpec('moe', 'replicated');
  const logits = be.tensor('logits', [T, E], ref.logits);
  const idx = be.tensor('topIdx', [T, k]);
  const vals = be.tensor('topVal', [T, k]);
  // scores: softmax before the top-k over E, or after it over the k picks; or σ, its picks normalised (k > 1)
  const gpuProbs = be.tensor('topProb', [T, k]);
  if (c.moeRouterScoreFunction === 'sigmoid') {
    const scores = be.tensor('scores', [T, E]);
    be.kernel(op, moeSigmoidKernel, [logits, scores], {});
    if (k === 1) be.kernel(op, moeTopkKernel, [scores, idx, gpuProbs], { k });
    else {
      be.kernel(op, moeTopkKernel, [scores, idx, vals], { k });
      be.kernel(op, moeNormalizeRowsKernel, [vals, gpuProbs], {});
    }
  } else if (c.moeRouterPreSoftmax) {
    const scores = be.tensor('scores', [T, E]);
    be.kernel(op, softmaxKernel, [logits, scores], {});
    be.kernel(op, moeTopkKernel, [scores, idx, gpuProbs], { k });
  } else {
    be.kernel(op, moeTopkKernel, [logits, idx, vals], { k });
    be.kernel(op, softmaxKernel, [vals, gpuProbs], {});
  }
  const xt = be.tensor('x', [T, h], x);
  const rowToken = be.tensor('rowToken', [N], Float64Array.from(perm.rowToken));
  const pickRow = be.tensor('pickRow', [T, k], Float64Array.from(perm.pickRow));
  const offsets = be.tensor('offsets', [E + 1], Float64Array.from(perm.offsets));
  const probs = be.tensor(
    'probs',
    [T, k],
    routing.topProb.map((p, i) => p * routing.kept[i]),
  );
  const xp = be.tensor('xp', [N, h]);
  be.kernel(op, moePermuteKernel, [xt, rowToken, be.tensor('ones', [N], new Float64Array(N).fill(1)), xp], {});
  const fc1 = be.tensor('fc1', [E, h, 2 * f], w.fc1);
  const fc2 = be.tensor('fc2', [E, f, h], w.fc2);
  const { yp, saved } = moeExpertsForward(be, xp, fc1, fc2, offsets, f);
  const y = be.tensor('y', [T, h]);
  be.kernel(op, moeUnpermuteKernel, [yp, pickRow, probs, y], {});

  const dyt = be.tensor('dy', [T, h], dy);
  const dw = be.tensor('dTopProb', [T, k]);
  be.kernel(op, moeCombineProbGradKernel, [dyt, yp, pickRow, dw], {});
  const permutedProbs = Float64Array.from(perm.rowPick, (i) => routing.topProb[i]);
  const dyp = be.tensor('dyp', [N, h]);
  be.kernel(op, moePermuteKernel, [dyt, rowToken, be.tensor('pprobs', [N], permutedProbs), dyp], {});
  const dfc1 = be.tensor('dfc1', [E, h, 2 * f]);
  const dfc2 = be.tensor('dfc2', [E, f, h]);
  const dxp = moeExpertsBackward(be, dyp, saved, fc1, fc2, offsets, dfc1, dfc2);
  const dxe = be.tensor('dxExperts', [T, h]);
  be.kernel(
    op,
    moeUnpermuteKernel,
    [dxp, pickRow, be.tensor('onesTk', [T, k], new Float64Array(T * k).fill(1)), dxe],
    {},
  );

  const dTopProb = await be.read(dw);
  const dLogits = routerBackward(c, ref.logits, routing, dTopProb);
  const losses = await routerLosses(be, c, logits, { counts: auxLossCounts(c, ref.logits, T), tokens: T });
  for (const g of losses.grads) (await be.read(g)).forEach((v, i) => (dLogits[i] += v));
  const router = gemmRef(denseProblem(h, E, T, { transA: true }), x, dLogits, new Float64Array(h * E));
  const dx = Float64Array.from(await be.read(dxe));
  gemmRef(denseProblem(T, h, E, { transB: true, accumulate: true }), dLogits, w.router, dx);
  return {
    topIdx: await be.read(idx),
    topProb: await be.read(gpuProbs),
    y: await be.read(y),
    dx,
    router,
    fc1: await be.read(dfc1),
    fc2: await be.read(dfc2),
    aux: losses.aux,
    z: losses.z,
  };
}
