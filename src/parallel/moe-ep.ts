import { hostTensor, type HostTensor } from '../comm/host-tensor.ts';
import { sharedNow } from '../core/clock.ts';
import type { TraceEvent, TracePass } from '../core/trace-event.ts';
import type { TraceSink } from '../core/trace-recorder.ts';
import { denseProblem } from '../reference/gemm.ts';
import type { MoeWeights } from '../reference/moe/block.ts';
import { addRouterBias, checkMoeConfig, type MoeConfig } from '../reference/moe/config.ts';
import { auxLossCounts } from '../reference/moe/losses.ts';
import {
  moeCombineProbGradKernel,
  moePermuteKernel,
  moeUnpermuteKernel,
  permutationOf,
} from '../reference/moe/permute.ts';
import { routeTokens, routerBackward, type MoeRouting } from '../reference/moe/routing.ts';
import { backwardSplits } from '../comm/all-to-all.ts';
import { addInPlaceKernel } from '../reference/add.ts';
import { opSpec, type Backend } from './backend.ts';
import { epPlan, reorder, type EpComm } from './ep-dispatch.ts';
import { etpExpertShard, etpGatherRows, etpPlan, etpReduceRows } from './moe-etp.ts';
import type { MoeDispatcher } from './moe-layout.ts';
import { moeExpertsBackward, moeExpertsForward } from './moe-experts.ts';
import { routerLosses } from './moe-router-loss.ts';

// One rank's MoE block, forward and backward, with either Megatron token dispatcher
// (Megatron-Core core_v0.19.0 moe_layer.py MoELayer.forward, token_dispatcher.py
// MoEAlltoAllTokenDispatcher, MoEAllGatherTokenDispatcher), under expert parallelism (ep), expert
// tensor parallelism (etp) and the attention mesh's tp·dp folded over the same ranks (moe-layout.ts);
// no shared expert. The rank holds T tokens x [T, h] (its sequence shard under SP; without SP its
// TP peers hold the same ones), the router, and of the E/ep experts [ep_rank·E/ep, …) the ETP
// shard etp_rank (moe-etp.ts etpExpertShard). Capacity, when set, is applied per routing call — over
// the rank's own T tokens, as Megatron's router does (apply_router_token_dropping); a dropped pick
// is neither sent nor combined (permutationOf leaves it out).
//   logits = x · Wr (backend GEMM) + the router skew (host) → routeTokens (the tie rule)
//   alltoall: permute, counts all-gathered over EP, all-to-all over EP, rows all-gathered over ETP,
//     sorted by local expert → experts → back the same way (ETP partials summed) → combine
//   allgather: tokens, picks and probs all-gathered over the tp_ep group (EP then ETP); the local
//     experts' picks permuted, run and combined into [G, h]; reduce-scattered over the same ranks
//   y = Σ_j p_j · yp(pick j) (moeUnpermute)
//   aux: c_e and the token count summed over every rank's distinct tokens (TP under SP, then DP:
//     Megatron's global_aux_loss over tp·dp·cp) (moe.aux.counts); each rank's share of the loss
//     coeff · E / (k · T_g²) · Σ_e c_e · Σ_t S[t, e], and of z = coeff_z / T_g · Σ_t lse_t² (kernels
//     moeAuxLoss, moeZLoss; moe-router-loss.ts), summed the same way (moe.losses): the single-device
//     losses of all the distinct tokens
// Backward of L = ⟨dy, y⟩ + aux + z:
//   dp = ⟨dy_t, yp(pick)⟩ (moeCombineProbGrad); dyp = p · dy permuted; the dispatch reversed
//   (moe.combine.grad, moe.dispatch.grad); dx = Σ_j dxp(pick j) (moeUnpermute, w = 1)
//   dlogits = routerBackward (host) + ∂aux + ∂z (moeAuxLoss, moeZLoss in the forward; moe-router-loss.ts); dWr = xᵀ · dlogits, dx += dlogits · Wrᵀ (backend),
//   dWr summed like the aux counts (moe.router.grad): the router is replicated.
// An expert shard's gradient is whole over the tp_ep group's tokens (every row routed to the expert
// from those ranks reaches the shard); summed over edp (moe.experts.grad.*), the ranks holding it.

/** One rank's block: the forward's outputs and every gradient, read back. */
export interface MoeEpResult {
  /** The rank's logits [T, E] from the backend's router GEMM (float32 on a GPU), the skew added. */
  readonly logits: Float32Array;
  /** Expert of pick j of token t at t·k + j ([T, k]). */
  readonly topIdx: Int32Array;
  /** Picks of this rank's tokens per expert after capacity [E]. */
  readonly tokensPerExpert: readonly number[];
  /** Picks of this rank's tokens dropped by capacity. */
  readonly dropped: number;
  /** The global index of the rank's first local expert, and its ETP rank (which f/etp shard it holds). */
  readonly firstExpert: number;
  readonly etpRank: number;
  /** Rows each of this rank's local experts processed [E/ep]. */
  readonly expertRows: readonly number[];
  /** y [T, h]. */
  readonly y: Float32Array;
  /** The aux and z losses of every rank's distinct tokens, the same on every rank. */
  readonly aux: number;
  readonly z: number;
  /** dx [T, h]. */
  readonly dx: Float32Array;
  /** dWr [h, E], summed over the ranks. */
  readonly router: Float32Array;
  /** The local experts' ETP shard's dfc1 [E/ep, h, 2f/etp] and dfc2 [E/ep, f/etp, h], summed over edp. */
  readonly fc1: Float32Array;
  readonly fc2: Float32Array;
  /** The shared expert's TP shard's dfc1 [h, 2fs/tp] and dfc2 [fs/tp, h], summed over DP; null without one. */
  readonly shared: { readonly fc1: Float32Array; readonly fc2: Float32Array } | null;
  /** The rank's TP rank (which fs/tp shard of the shared expert it holds). */
  readonly tpRank: number;
}

/** What moeEpBlock refuses: one message per problem, none when it runs. */
export function moeEpErrors(c: MoeConfig, ep: number, etp = 1, tp = 1): string[] {
  const errors: string[] = [];
  if (c.numMoeExperts % ep !== 0)
    errors.push(`${c.numMoeExperts} experts do not split over ${ep} EP ranks; pick numMoeExperts divisible by ep.`);
  if (c.moeFfnHiddenSize % etp !== 0)
    errors.push(
      `moeFfnHiddenSize ${c.moeFfnHiddenSize} does not split over ${etp} ETP ranks; pick it divisible by etp.`,
    );
  const fs = c.moeSharedExpertIntermediateSize;
  if (fs !== null && fs % tp !== 0)
    errors.push(
      `moeSharedExpertIntermediateSize ${fs} does not split over ${tp} TP ranks (the shared expert is tensor parallel); pick it divisible by tp.`,
    );
  return errors;
}

/** Where a rank's expert GEMMs are recorded: its trace and its global rank; `pass` marks where the step's pass changes (TraceRecorder.setPass). */
export interface MoeTrace {
  readonly sink: TraceSink;
  readonly rank: number;
  readonly pass?: (pass: TracePass) => void;
}

/**
 * Runs `body` (kernels, and collectives it awaits) between two flushes and records it as one
 * compute event on the rank's trace: `op`, its shape, flops and extra fields (an expert GEMM's rows).
 */
export async function timedSpan<R>(
  be: Pick<Backend<unknown>, 'flush'>,
  trace: MoeTrace | undefined,
  event: Pick<TraceEvent, 'op' | 'shape' | 'flops' | 'experts'>,
  body: () => R | Promise<R>,
): Promise<R> {
  if (!trace) return body();
  await be.flush();
  const t0 = sharedNow();
  const out = await body();
  await be.flush();
  trace.sink.record({ rank: trace.rank, stream: 'compute', bytes: 0, t0, t1: sharedNow(), phases: [], ...event });
  return out;
}

/**
 * Runs the local experts' GEMMs (`body`) as one timed compute event `op` with their token rows;
 * flops per row: forward 2·h·2f + 2·f·h = 6hf, backward twice that.
 */
function timedExperts<R>(
  be: Pick<Backend<unknown>, 'flush'>,
  trace: MoeTrace | undefined,
  op: 'moe.experts' | 'moe.experts.backward',
  info: { firstExpert: number; tokens: readonly number[]; h: number; f: number },
  body: () => R,
): Promise<R> {
  const rows = info.tokens.reduce((a, n) => a + n, 0);
  return timedSpan(
    be,
    trace,
    {
      op,
      shape: [rows, info.h],
      flops: (op === 'moe.experts' ? 6 : 12) * rows * info.h * info.f,
      experts: { firstExpert: info.firstExpert, tokens: info.tokens },
    },
    body,
  );
}

/** A rank's groups as the MoE block uses them (a group of one rank where a degree is 1). */
export interface MoeGroups {
  /** The experts are spread over it; the alltoall dispatcher's all-to-alls. */
  readonly ep: EpComm;
  /** Expert tensor parallel: ranks sharing the EP coordinate, each with f/etp of every local expert. */
  readonly etp: EpComm;
  /** The attention mesh's TP and DP groups: their product is every rank. */
  readonly tp: EpComm;
  readonly dp: EpComm;
  /** Expert data parallel: ranks holding the same expert shard (their gradients summed). */
  readonly edp: EpComm;
}

/** How the block runs: the dispatcher, whether TP ranks hold their own tokens (SP), where its expert GEMMs are recorded. */
export interface MoeBlockOptions {
  readonly dispatcher: MoeDispatcher;
  /**
   * sequence_parallel in the MoE region: each TP rank routes tokens of its own (true), or every TP
   * rank the same tokens (false: the M036 demonstration; each token routed tp times).
   */
  readonly sp: boolean;
  readonly trace?: MoeTrace;
}

/** The experts' part of the block, either dispatcher: y's routed part, and its backward. */
interface ExpertsPath {
  readonly y: Float32Array;
  readonly expertRows: readonly number[];
  readonly firstExpert: number;
  /** From dy [T, h]: dx through the experts [T, h], dL/dp of every pick [T, k], the local shard's weight gradients. */
  backward(
    dy: Float32Array | Float64Array,
  ): Promise<{ dx: Float32Array; dTopProb: Float32Array; fc1: Float32Array; fc2: Float32Array }>;
}

/** Sums over a group, skipped when it is one rank. */
const sumOver = async (g: EpComm, t: HostTensor, tensor: string): Promise<HostTensor> =>
  g.size === 1 ? t : g.allReduce(t, 'sum', tensor);

/**
 * The MoE block on one rank (see the header): `w` holds the logical weights (every rank the same,
 * seededMoeWeights), of which the rank uses the router and its shard of its local experts; x and
 * dy [T, h] its tokens.
 */
export async function moeEpBlock<T>(
  be: Backend<T>,
  groups: MoeGroups,
  c: MoeConfig,
  h: number,
  x: Float32Array | Float64Array,
  dy: Float32Array | Float64Array,
  w: MoeWeights,
  opts: MoeBlockOptions = { dispatcher: 'alltoall', sp: true },
): Promise<MoeEpResult> {
  if (dy.length !== x.length)
    throw new Error(
      `MoE under expert parallelism: x and dy must both be [T, h]; got ${x.length} and ${dy.length} values.`,
    );
  const pass = opts.trace?.pass ?? (() => {});
  pass('forward');
  const f = await moeEpForward(be, groups, c, h, x, w, opts);
  pass('backward'); // the block's gradients are summed over EDP inside it: no finalize of its own
  return f.backward(dy);
}

/** The block's forward on one rank: its output y [T, h], the losses, and the backward from dy [T, h] to every result. */
export interface MoeEpForward {
  readonly y: Float32Array;
  readonly aux: number;
  readonly z: number;
  backward(dy: Float32Array | Float64Array): Promise<MoeEpResult>;
}

/** The forward half of moeEpBlock (the same arguments but dy); its `backward` runs the rest once. */
export async function moeEpForward<T>(
  be: Backend<T>,
  groups: MoeGroups,
  c: MoeConfig,
  h: number,
  x: Float32Array | Float64Array,
  w: MoeWeights,
  opts: MoeBlockOptions = { dispatcher: 'alltoall', sp: true },
): Promise<MoeEpForward> {
  checkMoeConfig(c);
  const errors = moeEpErrors(c, groups.ep.size, groups.etp.size, groups.tp.size);
  if (errors.length > 0) throw new Error(`MoE under expert parallelism: ${errors.join(' ')}`);
  const E = c.numMoeExperts;
  const T = x.length / h;
  if (!Number.isInteger(T))
    throw new Error(`MoE under expert parallelism: x must be [T, h] with h = ${h}; got ${x.length} values.`);
  const op = (label: string) => opSpec(label, 'replicated', { megatron: 'MoELayer' });
  // Ranks whose tokens are distinct: every rank under SP; without it, TP peers hold the same ones.
  const distinct = async (t: HostTensor, tensor: string) =>
    sumOver(groups.dp, opts.sp ? await sumOver(groups.tp, t, tensor) : t, tensor);

  // router and routing
  const xt = be.tensor('x', [T, h], x);
  const wr = be.tensor('router.weight', [h, E], w.router);
  const logitsT = be.tensor('moe.logits', [T, E]);
  be.gemm(op('moe.router'), denseProblem(T, E, h), xt, wr, logitsT);
  const logits = addRouterBias(c, await be.read(logitsT));
  const routing = routeTokens(c, logits, T);
  const path =
    opts.dispatcher === 'alltoall'
      ? await alltoallExperts(be, groups, c, h, xt, routing, w, opts.trace)
      : await allgatherExperts(be, groups, c, h, x, routing, w, opts.trace);
  const shared = await sharedExpert(be, groups, c, h, x, w, opts.sp);
  const y = shared ? path.y.map((v, i) => v + shared.y[i]!) : path.y;

  // losses over every rank's distinct tokens (Megatron's global_aux_loss: counts over tp·dp·cp)
  const local = auxLossCounts(c, logits, T);
  const summed = await distinct(hostTensor([E + 1], Float32Array.from([...local, T])), 'moe.aux.counts');
  const group = { counts: summed.data.subarray(0, E), tokens: summed.data[E]! };
  // the kernels read the logits the routing saw: the GEMM's, or with the router skew added here
  const routed = c.routerSkew === 0 ? logitsT : be.tensor('moe.logits.skewed', [T, E], logits);
  const rl = await routerLosses(be, c, routed, group);
  const losses = await distinct(hostTensor([2], Float32Array.from([rl.aux, rl.z])), 'moe.losses');

  const aux = losses.data[0]!;
  const z = losses.data[1]!;
  const backward = async (dy: Float32Array | Float64Array): Promise<MoeEpResult> => {
    if (dy.length !== x.length)
      throw new Error(`MoE under expert parallelism: dy must be [T, h] as x; got ${dy.length} values, x ${x.length}.`);
    be.phase = 'backward';
    const back = await path.backward(dy);
    const sharedBack = await shared?.backward(dy);
    if (sharedBack) back.dx.forEach((_, i) => (back.dx[i] += sharedBack.dx[i]!));
    const dl = be.tensor('d.moe.logits', [T, E], routerBackward(c, logits, routing, back.dTopProb));
    for (const g of rl.grads) be.kernel(op('moe.router.loss.grad'), addInPlaceKernel, [dl, g], {});
    const dWr = be.tensor('d.router.weight', [h, E]);
    be.gemm(op('moe.router.wgrad'), denseProblem(h, E, T, { transA: true }), xt, dl, dWr);
    const dxT = be.tensor('dx', [T, h], back.dx);
    be.gemm(op('moe.router.dgrad'), denseProblem(T, h, E, { transB: true, accumulate: true }), dl, wr, dxT);
    // The router is replicated: its gradient summed over every rank's distinct tokens (TP for SP
    // parameters, then DP, as finalize_model_grads and DDP do).
    const router = await distinct(hostTensor([h, E], await be.read(dWr)), 'moe.router.grad');
    // Each expert shard's gradient summed over the ranks holding it (expert DDP over edp).
    const L = E / groups.ep.size;
    const fs = c.moeFfnHiddenSize / groups.etp.size;
    const fc1 = await sumOver(groups.edp, hostTensor([L, h, 2 * fs], back.fc1), 'moe.experts.grad.fc1');
    const fc2 = await sumOver(groups.edp, hostTensor([L, fs, h], back.fc2), 'moe.experts.grad.fc2');
    return {
      logits,
      topIdx: routing.topIdx,
      tokensPerExpert: Array.from(routing.tokensPerExpert),
      dropped: routing.dropped,
      firstExpert: path.firstExpert,
      etpRank: groups.etp.rank,
      expertRows: path.expertRows,
      y,
      aux,
      z,
      dx: await be.read(dxT),
      router: router.data,
      fc1: fc1.data,
      fc2: fc2.data,
      shared: sharedBack ? { fc1: sharedBack.fc1, fc2: sharedBack.fc2 } : null,
      tpRank: groups.tp.rank,
    };
  };
  return { y, aux, z, backward };
}

/** The rank's shard of its local experts on the backend, the GEMMs' record, and the experts run forward and backward on expert-major rows. */
function localExperts<T>(
  be: Backend<T>,
  c: MoeConfig,
  h: number,
  w: MoeWeights,
  groups: MoeGroups,
  trace: MoeTrace | undefined,
) {
  const L = c.numMoeExperts / groups.ep.size;
  const firstExpert = groups.ep.rank * L;
  const etp = groups.etp.size;
  const fs = c.moeFfnHiddenSize / etp;
  const shard = etpExpertShard(w, h, c.moeFfnHiddenSize, firstExpert, L, etp, groups.etp.rank);
  const fc1 = be.tensor('moe.fc1.weight', [L, h, 2 * fs], shard.fc1);
  const fc2 = be.tensor('moe.fc2.weight', [L, fs, h], shard.fc2);
  return {
    L,
    firstExpert,
    fs,
    /** rows [R, h] expert-major at `offsets` → partial outputs [R, h] (summed over ETP by the caller) and the backward. */
    async forward(rows: HostTensor, offsets: Int32Array) {
      const tokens = Array.from({ length: L }, (_, l) => offsets[l + 1]! - offsets[l]!);
      const gemms = { firstExpert, tokens, h, f: fs };
      const R = offsets[L]!;
      const off = be.tensor('moe.offsets', [L + 1], Float64Array.from(offsets));
      const inT = be.tensor('moe.received', [R, h], rows.data);
      const { yp, saved } = await timedExperts(be, trace, 'moe.experts', gemms, () =>
        moeExpertsForward(be, inT, fc1, fc2, off, fs),
      );
      return {
        tokens,
        yp: hostTensor([R, h], await be.read(yp)),
        backward: async (dRows: HostTensor) => {
          const dfc1 = be.tensor('d.moe.fc1.weight', [L, h, 2 * fs]);
          const dfc2 = be.tensor('d.moe.fc2.weight', [L, fs, h]);
          const dIn = be.tensor('d.moe.received', [R, h], dRows.data);
          const dxp = await timedExperts(be, trace, 'moe.experts.backward', gemms, () =>
            moeExpertsBackward(be, dIn, saved, fc1, fc2, off, dfc1, dfc2),
          );
          return { dx: hostTensor([R, h], await be.read(dxp)), fc1: await be.read(dfc1), fc2: await be.read(dfc2) };
        },
      };
    },
  };
}

/**
 * The alltoall dispatcher (MoEAlltoAllTokenDispatcher): permute → counts all-gathered over EP →
 * all-to-all over EP → (ETP > 1: rows all-gathered over ETP, moe-etp.ts) → chunks sorted by local
 * expert → experts → unsort → (ETP: partials reduce-scattered) → all-to-all back → combine.
 */
async function alltoallExperts<T>(
  be: Backend<T>,
  groups: MoeGroups,
  c: MoeConfig,
  h: number,
  xt: T,
  routing: MoeRouting,
  w: MoeWeights,
  trace: MoeTrace | undefined,
): Promise<ExpertsPath> {
  const op = (label: string) => opSpec(label, 'replicated', { megatron: 'MoEAlltoAllTokenDispatcher' });
  const k = c.moeRouterTopk;
  const T = routing.tokens;
  const { ep, etp } = groups;
  const perm = permutationOf(routing);
  const N = perm.rowToken.length;
  const plan = await epPlan(ep, routing.tokensPerExpert);
  const ePlan = await etpPlan(etp, plan);
  const experts = localExperts(be, c, h, w, groups, trace);
  const host = async (t: T): Promise<HostTensor> => hostTensor(be.shapeOf(t), await be.read(t));
  const rowToken = be.tensor('moe.rowToken', [N], Float64Array.from(perm.rowToken));
  const pickRow = be.tensor('moe.pickRow', [T, k], Float64Array.from(perm.pickRow));
  const xp = be.tensor('moe.xp', [N, h]);
  be.kernel(
    op('moe.permute'),
    moePermuteKernel,
    [xt, rowToken, be.tensor('ones', [N], new Float64Array(N).fill(1)), xp],
    {},
  );
  // rows to the experts' ranks (source-major), to the whole ETP group, sorted by local expert
  const toExperts = async (rows: HostTensor, tensor: string): Promise<HostTensor> => {
    const received = await ep.allToAll(rows, plan.splits, tensor);
    return reorder(await etpGatherRows(etp, ePlan, received, `${tensor}.etp`), ePlan.order, false);
  };
  // expert-major rows back: unsorted, ETP partials summed, all-to-all to the tokens' ranks
  const fromExperts = async (rows: HostTensor, tensor: string): Promise<HostTensor> => {
    const own = await etpReduceRows(etp, ePlan, reorder(rows, ePlan.order, true), `${tensor}.etp`);
    return ep.allToAll(own, backwardSplits(plan.splits), tensor);
  };
  const run = await experts.forward(await toExperts(await host(xp), 'moe.dispatch'), ePlan.offsets);
  const backT = be.tensor('moe.yp', [N, h], (await fromExperts(run.yp, 'moe.combine')).data);
  const probs = be.tensor(
    'moe.probs',
    [T, k],
    routing.topProb.map((p, i) => p * routing.kept[i]!),
  );
  const yT = be.tensor('y', [T, h]);
  be.kernel(op('moe.combine'), moeUnpermuteKernel, [backT, pickRow, probs, yT], {});
  return {
    y: await be.read(yT),
    expertRows: run.tokens,
    firstExpert: experts.firstExpert,
    backward: async (dy) => {
      const dyT = be.tensor('dy', [T, h], dy);
      const dw = be.tensor('d.moe.probs', [T, k]);
      be.kernel(op('moe.combine.prob.grad'), moeCombineProbGradKernel, [dyT, backT, pickRow, dw], {});
      const rowProbs = Float64Array.from(perm.rowPick, (i) => routing.topProb[i]!);
      const dyp = be.tensor('d.moe.yp', [N, h]);
      be.kernel(
        op('moe.combine.grad'),
        moePermuteKernel,
        [dyT, rowToken, be.tensor('moe.rowProbs', [N], rowProbs), dyp],
        {},
      );
      const g = await run.backward(await toExperts(await host(dyp), 'moe.combine.grad'));
      const dxp = be.tensor('d.moe.xp', [N, h], (await fromExperts(g.dx, 'moe.dispatch.grad')).data);
      const dxT = be.tensor('d.moe.x', [T, h]);
      be.kernel(
        op('moe.permute.grad'),
        moeUnpermuteKernel,
        [dxp, pickRow, be.tensor('ones.tk', [T, k], new Float64Array(T * k).fill(1)), dxT],
        {},
      );
      return { dx: await be.read(dxT), dTopProb: await be.read(dw), fc1: g.fc1, fc2: g.fc2 };
    },
  };
}

/** all-gather over EP then ETP (the tp_ep group, ETP fastest in its rank order): [T, n] → [etp·ep·T, n], [j][q][t]. */
async function gatherTpEp(g: MoeGroups, t: HostTensor, tensor: string): Promise<HostTensor> {
  const overEp = g.ep.size === 1 ? t : await g.ep.allGather(t, 0, tensor);
  return g.etp.size === 1 ? overEp : g.etp.allGather(overEp, 0, `${tensor}.etp`);
}

/** Its reverse, summing: reduce-scatter over ETP then EP: [etp·ep·T, n] → this rank's [T, n]. */
async function scatterTpEp(g: MoeGroups, t: HostTensor, tensor: string): Promise<HostTensor> {
  const overEtp = g.etp.size === 1 ? t : await g.etp.reduceScatter(t, 0, 'sum', `${tensor}.etp`);
  return g.ep.size === 1 ? overEtp : g.ep.reduceScatter(overEtp, 0, 'sum', tensor);
}

/**
 * The allgather dispatcher (MoEAllGatherTokenDispatcher): every rank of the tp_ep group (etp·ep
 * ranks) all-gathers the tokens, their picks and probs; each rank permutes the gathered picks of
 * its local experts, runs them, and unpermutes weighted into [G, h]; a reduce-scatter over the same
 * ranks sums every rank's (and every ETP shard's) part of each token back onto its owner.
 */
async function allgatherExperts<T>(
  be: Backend<T>,
  groups: MoeGroups,
  c: MoeConfig,
  h: number,
  x: Float32Array | Float64Array,
  routing: MoeRouting,
  w: MoeWeights,
  trace: MoeTrace | undefined,
): Promise<ExpertsPath> {
  const op = (label: string) => opSpec(label, 'replicated', { megatron: 'MoEAllGatherTokenDispatcher' });
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const T = routing.tokens;
  const experts = localExperts(be, c, h, w, groups, trace);
  const { L, firstExpert } = experts;
  const xg = await gatherTpEp(groups, hostTensor([T, h], Float32Array.from(x)), 'moe.dispatch');
  const picks = await gatherTpEp(groups, hostTensor([T, k], Float32Array.from(routing.topIdx)), 'moe.dispatch.map');
  const kept = routing.topProb.map((p, i) => p * routing.kept[i]!);
  // [T, 2k]: (kept, prob · kept) of every pick
  const pairs = Float32Array.from({ length: 2 * T * k }, (_, i) =>
    i % 2 === 0 ? routing.kept[i >> 1]! : kept[i >> 1]!,
  );
  const keptMap = await gatherTpEp(groups, hostTensor([T, 2 * k], pairs), 'moe.dispatch.probs');
  const G = xg.shape[0]!;
  // the gathered picks of this rank's experts: a routing whose other picks count as dropped
  const topIdx = Int32Array.from(picks.data);
  const local = new Uint8Array(G * k);
  const probs = new Float64Array(G * k);
  const tokensPerExpert = new Int32Array(E);
  for (let i = 0; i < G * k; i++) {
    const e = topIdx[i]!;
    if (keptMap.data[2 * i] === 1 && e >= firstExpert && e < firstExpert + L) {
      local[i] = 1;
      probs[i] = keptMap.data[2 * i + 1]!;
      tokensPerExpert[e]++;
    }
  }
  const mine: MoeRouting = {
    tokens: G,
    experts: E,
    topk: k,
    topIdx,
    topProb: probs,
    kept: local,
    capacity: null,
    tokensPerExpert,
    dropped: 0,
  };
  const perm = permutationOf(mine);
  const N = perm.rowToken.length;
  const offsets = perm.offsets.slice(firstExpert, firstExpert + L + 1);
  const xgT = be.tensor('moe.gathered', [G, h], xg.data);
  const rowToken = be.tensor('moe.rowToken', [N], Float64Array.from(perm.rowToken));
  const pickRow = be.tensor('moe.pickRow', [G, k], Float64Array.from(perm.pickRow));
  const xp = be.tensor('moe.xp', [N, h]);
  be.kernel(
    op('moe.permute'),
    moePermuteKernel,
    [xgT, rowToken, be.tensor('ones', [N], new Float64Array(N).fill(1)), xp],
    {},
  );
  const run = await experts.forward(hostTensor([N, h], await be.read(xp)), offsets);
  const ypT = be.tensor('moe.yp', [N, h], run.yp.data);
  const yg = be.tensor('moe.y.gathered', [G, h]);
  be.kernel(op('moe.combine'), moeUnpermuteKernel, [ypT, pickRow, be.tensor('moe.probs', [G, k], probs), yg], {});
  const y = await scatterTpEp(groups, hostTensor([G, h], await be.read(yg)), 'moe.combine');
  return {
    y: y.data,
    expertRows: run.tokens,
    firstExpert,
    backward: async (dy) => {
      const dyg = await gatherTpEp(groups, hostTensor([T, h], Float32Array.from(dy)), 'moe.combine.grad');
      const dygT = be.tensor('d.moe.y.gathered', [G, h], dyg.data);
      const dw = be.tensor('d.moe.probs', [G, k]);
      be.kernel(op('moe.combine.prob.grad'), moeCombineProbGradKernel, [dygT, ypT, pickRow, dw], {});
      const rowProbs = Float64Array.from(perm.rowPick, (i) => probs[i]!);
      const dyp = be.tensor('d.moe.yp', [N, h]);
      be.kernel(
        op('moe.combine.grad'),
        moePermuteKernel,
        [dygT, rowToken, be.tensor('moe.rowProbs', [N], rowProbs), dyp],
        {},
      );
      const g = await run.backward(hostTensor([N, h], await be.read(dyp)));
      const dxg = be.tensor('d.moe.x.gathered', [G, h]);
      be.kernel(
        op('moe.permute.grad'),
        moeUnpermuteKernel,
        [
          be.tensor('d.moe.xp', [N, h], g.dx.data),
          pickRow,
          be.tensor('ones.gk', [G, k], new Float64Array(G * k).fill(1)),
          dxg,
        ],
        {},
      );
      const dx = await scatterTpEp(groups, hostTensor([G, h], await be.read(dxg)), 'moe.dispatch.grad');
      const dTopProb = await scatterTpEp(groups, hostTensor([G, k], await be.read(dw)), 'moe.combine.prob.grad');
      return { dx: dx.data, dTopProb: dTopProb.data, fc1: g.fc1, fc2: g.fc2 };
    },
  };
}

/**
 * The shared expert (shared_experts.py SharedExpertMLP: a SwiGLU MLP of width fs on every token,
 * tensor parallel like the dense MLP): the rank's TP shard (fc1's gate and up columns [j·fs/tp, …),
 * fc2's rows; etpExpertShard of one expert) on the TP group's tokens — under SP all-gathered
 * (`moe.shared.gather`) and the partial outputs reduce-scattered (`moe.shared.reduce`), without SP
 * the partials all-reduced; run as one expert of the grouped GEMM. Its gradients are summed over DP.
 */
async function sharedExpert<T>(
  be: Backend<T>,
  groups: MoeGroups,
  c: MoeConfig,
  h: number,
  x: Float32Array | Float64Array,
  w: MoeWeights,
  sp: boolean,
) {
  const fs0 = c.moeSharedExpertIntermediateSize;
  if (fs0 === null || !w.shared) return null;
  const { tp, dp } = groups;
  const fs = fs0 / tp.size;
  const shard = etpExpertShard(w.shared, h, fs0, 0, 1, tp.size, tp.rank);
  const fc1 = be.tensor('moe.shared.fc1.weight', [1, h, 2 * fs], shard.fc1);
  const fc2 = be.tensor('moe.shared.fc2.weight', [1, fs, h], shard.fc2);
  const T = x.length / h;
  const split = sp && tp.size > 1;
  const gather = async (t: Float32Array | Float64Array, tensor: string): Promise<Float32Array> =>
    split ? (await tp.allGather(hostTensor([T, h], Float32Array.from(t)), 0, tensor)).data : Float32Array.from(t);
  const reduce = async (t: Float32Array, tensor: string): Promise<Float32Array> => {
    if (tp.size === 1) return t;
    const ht = hostTensor([t.length / h, h], t);
    return (split ? await tp.reduceScatter(ht, 0, 'sum', tensor) : await tp.allReduce(ht, 'sum', tensor)).data;
  };
  const xs = await gather(x, 'moe.shared.gather');
  const Ts = xs.length / h;
  const off = be.tensor('moe.shared.offsets', [2], Float64Array.from([0, Ts]));
  const xsT = be.tensor('moe.shared.x', [Ts, h], xs);
  const { yp, saved } = moeExpertsForward(be, xsT, fc1, fc2, off, fs);
  const y = await reduce(await be.read(yp), 'moe.shared.reduce');
  return {
    y,
    backward: async (dy: Float32Array | Float64Array) => {
      const dys = be.tensor('d.moe.shared.y', [Ts, h], await gather(dy, 'moe.shared.grad.gather'));
      const dfc1 = be.tensor('d.moe.shared.fc1.weight', [1, h, 2 * fs]);
      const dfc2 = be.tensor('d.moe.shared.fc2.weight', [1, fs, h]);
      const dxs = moeExpertsBackward(be, dys, saved, fc1, fc2, off, dfc1, dfc2);
      const dx = await reduce(await be.read(dxs), 'moe.shared.grad.reduce');
      const sum = async (t: T, shape: number[], tensor: string) =>
        (await sumOver(dp, hostTensor(shape, await be.read(t)), tensor)).data;
      return {
        dx,
        fc1: await sum(dfc1, [h, 2 * fs], 'moe.shared.grad.fc1'),
        fc2: await sum(dfc2, [fs, h], 'moe.shared.grad.fc2'),
      };
    },
  };
}
