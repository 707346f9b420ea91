import type { AllToAll } from '../comm/all-to-all.ts';
import type { Collectives } from '../comm/collectives.ts';
import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { sharedNow } from '../core/clock.ts';
import type { TraceSink } from '../core/trace-recorder.ts';
import { denseProblem } from '../reference/gemm.ts';
import type { MoeWeights } from '../reference/moe/block.ts';
import { addRouterBias, checkMoeConfig, type MoeConfig } from '../reference/moe/config.ts';
import { auxLoss, auxLossCounts, zLoss } from '../reference/moe/losses.ts';
import {
  moeCombineProbGradKernel,
  moePermuteKernel,
  moeUnpermuteKernel,
  permutationOf,
} from '../reference/moe/permute.ts';
import { routeTokens, routerBackward } from '../reference/moe/routing.ts';
import { opSpec, type Backend } from './backend.ts';
import { epDispatchRows, epPlan, epReturnRows } from './ep-dispatch.ts';
import { moeExpertsBackward, moeExpertsForward } from './moe-experts.ts';

// One EP rank's MoE block, forward and backward, with the alltoall token dispatcher
// (Megatron-Core core_v0.19.0 moe_layer.py MoELayer.forward, token_dispatcher.py
// MoEAlltoAllTokenDispatcher; tp = etp = 1, no shared expert). Capacity, when set, is applied
// per routing call — over the rank's own T tokens, as Megatron's router does (apply_router_token_dropping);
// a dropped pick is neither sent nor combined (permutationOf leaves it out). The rank holds its own
// T tokens x [T, h] (the group's batch is the ranks' tokens concatenated in rank order) and the
// E/ep experts [rank·E/ep, (rank + 1)·E/ep):
//   logits = x · Wr (backend GEMM) + the router skew (host) → routeTokens, permutationOf on the host (the tie rule)
//   tokens_per_expert all-gathered (moe.tokens_per_expert); xp = permute(x) (moePermute)
//   all-to-all (moe.dispatch) → sort_chunks_by_idxs → moeExpertsForward → unsort → all-to-all (moe.combine)
//   y = Σ_j p_j · yp(pick j) (moeUnpermute)
//   aux: c_e and the token count all-reduced (moe.aux.counts); each rank's share of the group's
//     loss coeff · E / (k · T_g²) · Σ_e c_e · Σ_t S[t, e], and of z = coeff_z / T_g · Σ_t lse_t²,
//     all-reduced (moe.losses): the single-device losses of the concatenated tokens
// Backward of L = ⟨dy, y⟩ + aux + z:
//   dp = ⟨dy_t, yp(pick)⟩ (moeCombineProbGrad); dyp = p · dy permuted (moePermute)
//   all-to-all with the dispatch splits (moe.combine.grad) → moeExpertsBackward → all-to-all back
//   (moe.dispatch.grad) → dx = Σ_j dxp(pick j) (moeUnpermute, w = 1)
//   dlogits = routerBackward + ∂aux + ∂z (host); dWr = xᵀ · dlogits, dx += dlogits · Wrᵀ (backend),
//   dWr all-reduced over the group (moe.router.grad): the router is replicated, so its gradient is
//   the sum of the ranks'.
// The expert weights' gradients are whole on their owner: every row routed to an expert reaches it.

/** A rank's EP group communicator on host arrays. */
export type EpComm = Collectives<HostTensor> & AllToAll<HostTensor>;

/** One EP rank's block: the forward's outputs and every gradient, read back. */
export interface MoeEpResult {
  /** The rank's logits [T, E] from the backend's router GEMM (float32 on a GPU). */
  readonly logits: Float32Array;
  /** Expert of pick j of token t at t·k + j ([T, k]). */
  readonly topIdx: Int32Array;
  /** Every EP rank's tokens per expert [ep][E], after capacity. */
  readonly counts: readonly (readonly number[])[];
  /** Picks of this rank's tokens dropped by capacity. */
  readonly dropped: number;
  /** Rows each of this rank's local experts processed (from every EP rank) [E/ep]. */
  readonly expertRows: readonly number[];
  /** y [T, h]. */
  readonly y: Float32Array;
  /** The group's aux and z losses (the concatenated tokens'), the same on every rank. */
  readonly aux: number;
  readonly z: number;
  /** dx [T, h]. */
  readonly dx: Float32Array;
  /** dWr [h, E], summed over the group. */
  readonly router: Float32Array;
  /** The local experts' dfc1 [E/ep, h, 2f] and dfc2 [E/ep, f, h]. */
  readonly fc1: Float32Array;
  readonly fc2: Float32Array;
}

/** What moeEpBlock refuses (no shared expert under EP yet): one message per problem, none when it runs. */
export function moeEpErrors(c: MoeConfig, ep: number): string[] {
  const errors: string[] = [];
  if (c.numMoeExperts % ep !== 0)
    errors.push(`${c.numMoeExperts} experts do not split over ${ep} EP ranks; pick numMoeExperts divisible by ep.`);
  if (c.moeSharedExpertIntermediateSize !== null)
    errors.push(
      'moeSharedExpertIntermediateSize: the shared expert is not implemented under expert parallelism; set it to null.',
    );
  return errors;
}

/** Where a rank's expert GEMMs are recorded: its trace and its global rank. */
export interface MoeTrace {
  readonly sink: TraceSink;
  readonly rank: number;
}

/**
 * Runs the local experts' GEMMs (`body`) between two flushes and records them as one compute event
 * `op` with their token rows; flops per row: forward 2·h·2f + 2·f·h = 6hf, backward twice that.
 */
async function timedExperts<R>(
  be: Pick<Backend<unknown>, 'flush'>,
  trace: MoeTrace | undefined,
  op: 'moe.experts' | 'moe.experts.backward',
  info: { firstExpert: number; tokens: readonly number[]; h: number; f: number },
  body: () => R,
): Promise<R> {
  if (!trace) return body();
  await be.flush();
  const t0 = sharedNow();
  const out = body();
  await be.flush();
  const rows = info.tokens.reduce((a, n) => a + n, 0);
  trace.sink.record({
    rank: trace.rank,
    stream: 'compute',
    op,
    shape: [rows, info.h],
    bytes: 0,
    t0,
    t1: sharedNow(),
    phases: [],
    flops: (op === 'moe.experts' ? 6 : 12) * rows * info.h * info.f,
    experts: { firstExpert: info.firstExpert, tokens: info.tokens },
  });
  return out;
}

/**
 * The MoE block on one EP rank (see the header): `w` holds the logical weights (every rank the
 * same, seededMoeWeights), of which the rank uses the router and its own experts; x and dy [T, h].
 */
export async function moeEpBlock<T>(
  be: Backend<T>,
  comm: EpComm,
  c: MoeConfig,
  h: number,
  x: Float32Array | Float64Array,
  dy: Float32Array | Float64Array,
  w: MoeWeights,
  trace?: MoeTrace,
): Promise<MoeEpResult> {
  checkMoeConfig(c);
  const errors = moeEpErrors(c, comm.size);
  if (errors.length > 0) throw new Error(`MoE under expert parallelism: ${errors.join(' ')}`);
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const f = c.moeFfnHiddenSize;
  const T = x.length / h;
  if (!Number.isInteger(T) || dy.length !== x.length)
    throw new Error(
      `MoE under expert parallelism: x and dy must both be [T, h] with h = ${h}; got ${x.length} and ${dy.length} values.`,
    );
  const op = (label: string) => opSpec(label, 'replicated', { megatron: 'MoELayer' });
  const host = async (t: T): Promise<HostTensor> => hostTensor(be.shapeOf(t), await be.read(t));

  // router and routing
  const xt = be.tensor('x', [T, h], x);
  const wr = be.tensor('router.weight', [h, E], w.router);
  const logitsT = be.tensor('moe.logits', [T, E]);
  be.gemm(op('moe.router'), denseProblem(T, E, h), xt, wr, logitsT);
  const logits = addRouterBias(c, await be.read(logitsT));
  const routing = routeTokens(c, logits, T);
  const perm = permutationOf(routing);
  const N = perm.rowToken.length;
  const plan = await epPlan(comm, routing.tokensPerExpert);
  const L = E / comm.size;
  const R = plan.offsets[L]!;
  const expertRows = Array.from({ length: L }, (_, l) => plan.offsets[l + 1]! - plan.offsets[l]!);
  const gemms = { firstExpert: plan.firstExpert, tokens: expertRows, h, f };

  // dispatch, experts, combine
  const rowToken = be.tensor('moe.rowToken', [N], Float64Array.from(perm.rowToken));
  const pickRow = be.tensor('moe.pickRow', [T, k], Float64Array.from(perm.pickRow));
  const xp = be.tensor('moe.xp', [N, h]);
  be.kernel(
    op('moe.permute'),
    moePermuteKernel,
    [xt, rowToken, be.tensor('ones', [N], new Float64Array(N).fill(1)), xp],
    {},
  );
  const received = await epDispatchRows(comm, plan, await host(xp), 'moe.dispatch');
  const offsets = be.tensor('moe.offsets', [L + 1], Float64Array.from(plan.offsets));
  const fc1 = be.tensor(
    'moe.fc1.weight',
    [L, h, 2 * f],
    w.fc1.subarray(plan.firstExpert * h * 2 * f, (plan.firstExpert + L) * h * 2 * f),
  );
  const fc2 = be.tensor(
    'moe.fc2.weight',
    [L, f, h],
    w.fc2.subarray(plan.firstExpert * f * h, (plan.firstExpert + L) * f * h),
  );
  const receivedT = be.tensor('moe.received', [R, h], received.data);
  const { yp, saved } = await timedExperts(be, trace, 'moe.experts', gemms, () =>
    moeExpertsForward(be, receivedT, fc1, fc2, offsets, f),
  );
  const back = be.tensor('moe.yp', [N, h], (await epReturnRows(comm, plan, await host(yp), 'moe.combine')).data);
  const probs = be.tensor(
    'moe.probs',
    [T, k],
    routing.topProb.map((p, i) => p * routing.kept[i]!),
  );
  const yT = be.tensor('y', [T, h]);
  be.kernel(op('moe.combine'), moeUnpermuteKernel, [back, pickRow, probs, yT], {});
  const y = await be.read(yT);

  // losses over the group's tokens
  const local = auxLossCounts(c, logits, T);
  const summed = await comm.allReduce(hostTensor([E + 1], Float32Array.from([...local, T])), 'sum', 'moe.aux.counts');
  const group = { counts: summed.data.subarray(0, E), tokens: summed.data[E]! };
  const auxL = auxLoss(c, logits, T, group);
  const zL = zLoss(c, logits, T, group.tokens);
  const losses = await comm.allReduce(hostTensor([2], Float32Array.from([auxL.loss, zL.loss])), 'sum', 'moe.losses');

  // backward
  be.phase = 'backward';
  const dyT = be.tensor('dy', [T, h], dy);
  const dw = be.tensor('d.moe.probs', [T, k]);
  be.kernel(op('moe.combine.prob.grad'), moeCombineProbGradKernel, [dyT, back, pickRow, dw], {});
  const permutedProbs = Float64Array.from(perm.rowPick, (i) => routing.topProb[i]!);
  const dyp = be.tensor('d.moe.yp', [N, h]);
  be.kernel(
    op('moe.combine.grad'),
    moePermuteKernel,
    [dyT, rowToken, be.tensor('moe.rowProbs', [N], permutedProbs), dyp],
    {},
  );
  const dReceived = await epDispatchRows(comm, plan, await host(dyp), 'moe.combine.grad');
  const dfc1 = be.tensor('d.moe.fc1.weight', [L, h, 2 * f]);
  const dfc2 = be.tensor('d.moe.fc2.weight', [L, f, h]);
  const dReceivedT = be.tensor('d.moe.received', [R, h], dReceived.data);
  const dxLocal = await timedExperts(be, trace, 'moe.experts.backward', gemms, () =>
    moeExpertsBackward(be, dReceivedT, saved, fc1, fc2, offsets, dfc1, dfc2),
  );
  const dxp = be.tensor(
    'd.moe.xp',
    [N, h],
    (await epReturnRows(comm, plan, await host(dxLocal), 'moe.dispatch.grad')).data,
  );
  const dxT = be.tensor('dx', [T, h]);
  be.kernel(
    op('moe.permute.grad'),
    moeUnpermuteKernel,
    [dxp, pickRow, be.tensor('ones.tk', [T, k], new Float64Array(T * k).fill(1)), dxT],
    {},
  );
  const dLogits = routerBackward(c, logits, routing, await be.read(dw));
  dLogits.forEach((_, i) => (dLogits[i] += auxL.dLogits[i]! + zL.dLogits[i]!));
  const dl = be.tensor('d.moe.logits', [T, E], dLogits);
  const dWr = be.tensor('d.router.weight', [h, E]);
  be.gemm(op('moe.router.wgrad'), denseProblem(h, E, T, { transA: true }), xt, dl, dWr);
  be.gemm(op('moe.router.dgrad'), denseProblem(T, h, E, { transB: true, accumulate: true }), dl, wr, dxT);
  const router = await comm.allReduce(await host(dWr), 'sum', 'moe.router.grad');
  return {
    logits,
    topIdx: routing.topIdx,
    counts: plan.counts,
    dropped: routing.dropped,
    expertRows,
    y,
    aux: losses.data[0]!,
    z: losses.data[1]!,
    dx: await be.read(dxT),
    router: router.data,
    fc1: await be.read(dfc1),
    fc2: await be.read(dfc2),
  };
}
