import { denseProblem, gemmRef } from '../gemm.ts';
import { swigluBackwardRef, swigluRef } from '../swiglu.ts';
import { addRouterBias, checkMoeConfig, type MoeConfig } from './config.ts';
import { groupedGemmRef, groupedGemmWgradRef } from './grouped-gemm.ts';
import { auxLoss, zLoss } from './losses.ts';
import { combineProbGradRef, permuteRef, permutationOf, unpermuteRef, type MoePermutation } from './permute.ts';
import { routeTokens, routerBackward, type MoeRouting } from './routing.ts';

// The MoE block on one device in float64, forward and backward (Megatron-Core core_v0.19.0
// moe_layer.py MoELayer.forward): T tokens x [T, h], E experts of SwiGLU width f, top-k.
//   logits = x · Wr + b                      Wr [h, E] (Megatron's router.weight [E, h], transposed);
//                                            b the router skew (config.ts routerBias; 0 by default)
//   routing, capacity                        routing.ts
//   xp = permute(x)                          [N, h], N kept picks grouped by expert (permute.ts)
//   H = xp · fc1_e;  a = silu(H[:, :f]) ⊙ H[:, f:];  yp = a · fc2_e     fc1 [E, h, 2f], fc2 [E, f, h]
//   y = unpermute(yp, probs) + shared(x)     shared: the same SwiGLU MLP, fc1 [h, 2fs], fc2 [fs, h]
//   aux, z                                   losses.ts
// Megatron multiplies the prob into the activation before fc2 (experts.py TEGroupedMLP.forward,
// weighted_bias_swiglu_impl); fc2 is linear without bias, so p · (a · fc2) is the same y.
// The backward is of L = ⟨dy, y⟩ + aux + z (MoEAuxLossAutoScaler scale 1).

/** The block's weights, float64, row-major. */
export interface MoeWeights {
  /** [h, E]. */
  readonly router: Float64Array;
  /** Every expert's linear_fc1 [E, h, 2f]: gate columns [0, f), up columns [f, 2f). */
  readonly fc1: Float64Array;
  /** Every expert's linear_fc2 [E, f, h]. */
  readonly fc2: Float64Array;
  /** The shared expert's linear_fc1 [h, 2fs] and linear_fc2 [fs, h], or null without one. */
  readonly shared: { readonly fc1: Float64Array; readonly fc2: Float64Array } | null;
}

/** What the forward computes and the backward reads. */
export interface MoeForward {
  /** The block's output [T, h]. */
  readonly y: Float64Array;
  readonly aux: number;
  readonly z: number;
  /** x · Wr [T, E]. */
  readonly logits: Float64Array;
  readonly routing: MoeRouting;
  readonly perm: MoePermutation;
  /** Permuted input [N, h], fc1 output [N, 2f], activation [N, f], expert output before weighting [N, h]. */
  readonly xp: Float64Array;
  readonly fc1Out: Float64Array;
  readonly act: Float64Array;
  readonly yp: Float64Array;
  /** The shared expert's fc1 output [T, 2fs] and activation [T, fs], or null. */
  readonly sharedSaved: { readonly fc1Out: Float64Array; readonly act: Float64Array } | null;
}

/** Gradients of L with respect to x and every weight, shaped as the tensors they belong to. */
export interface MoeGrads {
  readonly dx: Float64Array;
  readonly router: Float64Array;
  readonly fc1: Float64Array;
  readonly fc2: Float64Array;
  readonly shared: { readonly fc1: Float64Array; readonly fc2: Float64Array } | null;
}

/** The gate and up halves of [rows, 2f] as two [rows, f]. */
function halves(hf: Float64Array, f: number): [Float64Array, Float64Array] {
  const rows = f === 0 ? 0 : hf.length / (2 * f);
  const g = new Float64Array(rows * f);
  const u = new Float64Array(rows * f);
  for (let r = 0; r < rows; r++) {
    g.set(hf.subarray(r * 2 * f, r * 2 * f + f), r * f);
    u.set(hf.subarray(r * 2 * f + f, (r + 1) * 2 * f), r * f);
  }
  return [g, u];
}

/** [rows, f] gate and up side by side as [rows, 2f]. */
function joined(g: Float64Array, u: Float64Array, f: number): Float64Array {
  const rows = f === 0 ? 0 : g.length / f;
  const hf = new Float64Array(rows * 2 * f);
  for (let r = 0; r < rows; r++) {
    hf.set(g.subarray(r * f, (r + 1) * f), r * 2 * f);
    hf.set(u.subarray(r * f, (r + 1) * f), r * 2 * f + f);
  }
  return hf;
}

/** C [M, N] = op(A) · op(B) in float64 (the dense GEMM twin). */
const matmul = (
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  M: number,
  N: number,
  K: number,
  opts: { transA?: boolean; transB?: boolean } = {},
): Float64Array => gemmRef(denseProblem(M, N, K, opts), a, b, new Float64Array(M * N));

function checkSizes(c: MoeConfig, h: number, T: number, x: ArrayLike<number>, w: MoeWeights): void {
  const E = c.numMoeExperts;
  const f = c.moeFfnHiddenSize;
  const fs = c.moeSharedExpertIntermediateSize;
  const want: [string, number, number][] = [
    ['x [T, h]', x.length, T * h],
    ['router [h, E]', w.router.length, h * E],
    ['fc1 [E, h, 2f]', w.fc1.length, E * h * 2 * f],
    ['fc2 [E, f, h]', w.fc2.length, E * f * h],
  ];
  if ((fs === null) !== (w.shared === null))
    throw new Error(
      `MoE block: moeSharedExpertIntermediateSize is ${fs} but the weights ${w.shared ? 'have' : 'lack'} a shared expert; give both or neither.`,
    );
  if (fs !== null && w.shared)
    want.push(
      ['shared fc1 [h, 2fs]', w.shared.fc1.length, h * 2 * fs],
      ['shared fc2 [fs, h]', w.shared.fc2.length, fs * h],
    );
  for (const [what, got, need] of want)
    if (got !== need)
      throw new Error(`MoE block: ${what} holds ${got} values; ${need} are needed (h = ${h}, T = ${T}).`);
}

/** The MoE block's forward on T tokens x [T, h] (see the header). */
export function moeForward(c: MoeConfig, h: number, T: number, x: ArrayLike<number>, w: MoeWeights): MoeForward {
  checkMoeConfig(c);
  checkSizes(c, h, T, x, w);
  const E = c.numMoeExperts;
  const f = c.moeFfnHiddenSize;
  const k = c.moeRouterTopk;
  const logits = addRouterBias(c, matmul(x, w.router, T, E, h));
  const routing = routeTokens(c, logits, T);
  const perm = permutationOf(routing);
  const N = perm.rowToken.length;
  const xp = permuteRef(x, h, perm.rowToken, new Float64Array(N).fill(1));
  const fc1Out = groupedGemmRef(xp, w.fc1, perm.offsets, h, 2 * f);
  const act = swigluRef(...halves(fc1Out, f));
  const yp = groupedGemmRef(act, w.fc2, perm.offsets, f, h);
  const probs = routing.topProb.map((p, i) => p * routing.kept[i]);
  const y = unpermuteRef(yp, h, perm.pickRow, probs, k);
  let sharedSaved: MoeForward['sharedSaved'] = null;
  const fs = c.moeSharedExpertIntermediateSize;
  if (fs !== null && w.shared) {
    const sFc1Out = matmul(x, w.shared.fc1, T, 2 * fs, h);
    const sAct = swigluRef(...halves(sFc1Out, fs));
    matmul(sAct, w.shared.fc2, T, h, fs).forEach((v, i) => (y[i] += v));
    sharedSaved = { fc1Out: sFc1Out, act: sAct };
  }
  const aux = auxLoss(c, logits, T).loss;
  const z = zLoss(c, logits, T).loss;
  return { y, aux, z, logits, routing, perm, xp, fc1Out, act, yp, sharedSaved };
}

/** Gradients of ⟨dy, y⟩ + aux + z with respect to x and every weight, from the forward's saved tensors. */
export function moeBackward(
  c: MoeConfig,
  h: number,
  x: ArrayLike<number>,
  w: MoeWeights,
  fwd: MoeForward,
  dy: ArrayLike<number>,
): MoeGrads {
  const E = c.numMoeExperts;
  const f = c.moeFfnHiddenSize;
  const k = c.moeRouterTopk;
  const { routing, perm } = fwd;
  const T = routing.tokens;
  // combine: y[t] += p · yp[n]  ⇒  dyp[n] = p · dy[t],  dp = ⟨dy[t], yp[n]⟩
  const permutedProbs = Float64Array.from(perm.rowPick, (i) => routing.topProb[i]);
  const dyp = permuteRef(dy, h, perm.rowToken, permutedProbs);
  const dTopProb = combineProbGradRef(dy, fwd.yp, h, perm.pickRow, k);
  // experts: yp = a · fc2_e, a = swiglu(H), H = xp · fc1_e
  const fc2 = groupedGemmWgradRef(fwd.act, dyp, perm.offsets, f, h);
  const dact = groupedGemmRef(dyp, w.fc2, perm.offsets, h, f, true);
  const [g, u] = halves(fwd.fc1Out, f);
  const { dg, du } = swigluBackwardRef(g, u, dact);
  const dH = joined(dg, du, f);
  const fc1 = groupedGemmWgradRef(fwd.xp, dH, perm.offsets, h, 2 * f);
  const dxp = groupedGemmRef(dH, w.fc1, perm.offsets, 2 * f, h, true);
  // permute's backward: dx[t] = Σ over t's kept picks of dxp[row]
  const dx = unpermuteRef(dxp, h, perm.pickRow, new Float64Array(T * k).fill(1), k);
  // router: dlogits from the combine's probs, the aux loss and the z-loss; logits = x · Wr
  const dLogits = routerBackward(c, fwd.logits, routing, dTopProb);
  const aux = auxLoss(c, fwd.logits, T).dLogits;
  const z = zLoss(c, fwd.logits, T).dLogits;
  dLogits.forEach((_, i) => (dLogits[i] += aux[i] + z[i]));
  const router = matmul(x, dLogits, h, E, T, { transA: true });
  matmul(dLogits, w.router, T, h, E, { transB: true }).forEach((v, i) => (dx[i] += v));
  let shared: MoeGrads['shared'] = null;
  const fs = c.moeSharedExpertIntermediateSize;
  if (fs !== null && w.shared && fwd.sharedSaved) {
    const sFc2 = matmul(fwd.sharedSaved.act, dy, fs, h, T, { transA: true });
    const sDact = matmul(dy, w.shared.fc2, T, fs, h, { transB: true });
    const [sg, su] = halves(fwd.sharedSaved.fc1Out, fs);
    const s = swigluBackwardRef(sg, su, sDact);
    const sDH = joined(s.dg, s.du, fs);
    const sFc1 = matmul(x, sDH, h, 2 * fs, T, { transA: true });
    matmul(sDH, w.shared.fc1, T, h, 2 * fs, { transB: true }).forEach((v, i) => (dx[i] += v));
    shared = { fc1: sFc1, fc2: sFc2 };
  }
  return { dx, router, fc1, fc2, shared };
}
