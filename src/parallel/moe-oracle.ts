import { denseProblem, gemmRef } from '../reference/gemm.ts';
import { moeBackward, moeForward, type MoeWeights } from '../reference/moe/block.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { auxLoss, zLoss } from '../reference/moe/losses.ts';
import { routingMargin } from '../reference/moe/routing.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import { randomArray } from '../reference/random.ts';
import type { MoeEpResult } from './moe-ep.ts';
import { etpExpertShard } from './moe-etp.ts';
import type { MoeLayout } from './moe-layout.ts';

// The MoE block under expert parallelism checked against one device. The group's batch is the
// ranks' tokens concatenated in rank order: rank q holds rows [q·T, (q + 1)·T) of x and dy.
//   dropless: one routing call over all the group's tokens (moeForward/moeBackward of the
//     concatenation, aux and z taken out and added below) — what one device computes.
//   capacity: Megatron's router drops per routing call, over each rank's own T tokens (router.py
//     apply_router_token_dropping on the rank's logits), so the routing, y, dx and the expert
//     gradients are one call per rank, the router's and experts' gradients summed over ranks.
//   aux and z: of the group's concatenated logits (auxLoss, zLoss over all ranks·T tokens; the
//     aux counts are the picks before dropping), their dlogits taken through logits = x·Wr + b:
//     dWr += xᵀ·dl, dx += dl·Wrᵀ.

/** An MoE block's problem on a group: its config, the seeded logical weights, the group's tokens x and upstream gradient dy [ranks·T, h] (`ranks` blocks of T distinct tokens). */
export interface MoeProblem {
  readonly c: MoeConfig;
  readonly h: number;
  /** Tokens per rank. */
  readonly T: number;
  readonly ranks: number;
  readonly w: MoeWeights;
  readonly x: Float64Array;
  readonly dy: Float64Array;
}

/** The problem of `ranks` ranks of T tokens each: weights from `seed` (seededMoeWeights), x and dy from seed + 10 and seed + 11 (uniform in [−1, 1)). */
export function moeProblem(c: MoeConfig, h: number, T: number, ranks: number, seed: number): MoeProblem {
  return {
    c,
    h,
    T,
    ranks,
    w: seededMoeWeights(c, h, seed),
    x: Float64Array.from(randomArray(ranks * T * h, seed + 10)),
    dy: Float64Array.from(randomArray(ranks * T * h, seed + 11)),
  };
}

/** Rank q's rows of a [ranks·T, n] array. */
export const rankRows = <A extends Float64Array | Int32Array>(a: A, q: number, T: number, n: number): A =>
  a.subarray(q * T * n, (q + 1) * T * n) as A;

/** What the ranks must give: the group's arrays concatenated in rank order (logits, picks, y, dx) or whole (losses, weight gradients). */
export interface MoeWant {
  /** Logits [ranks·T, E] (the router skew included). */
  readonly logits: Float64Array;
  readonly topIdx: Int32Array;
  readonly y: Float64Array;
  readonly dx: Float64Array;
  readonly aux: number;
  readonly z: number;
  readonly router: Float64Array;
  /** Every expert's dfc1 [E, h, 2f] and dfc2 [E, f, h]. */
  readonly fc1: Float64Array;
  readonly fc2: Float64Array;
  /** The shared expert's dfc1 [h, 2fs] and dfc2 [fs, h], or null without one. */
  readonly shared: { readonly fc1: Float64Array; readonly fc2: Float64Array } | null;
  /** Tokens per expert after dropping, per rank [ranks][E]. */
  readonly tokensPerExpert: readonly (readonly number[])[];
  /** Picks dropped by capacity, per rank. */
  readonly dropped: readonly number[];
  /** The smallest routing margin of the routing calls (routingMargin): how far the routing is from changing. */
  readonly margin: number;
}

/** Arrays end to end. */
export const concat = (parts: readonly Float64Array[]): Float64Array => {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};
const sum = (parts: readonly Float64Array[]): Float64Array =>
  parts.reduce((a, p) => a.map((v, i) => v + p[i]!), new Float64Array(parts[0]!.length));

/** The single-device block's answers for `p` (see the header), in float64. */
export function moeWant(p: MoeProblem): MoeWant {
  return moeWantForward(p).backward(p.dy);
}

/** The single-device block's forward for `p` (its dy unused): y [ranks·T, h], and the backward from dy [ranks·T, h] to every answer. */
export function moeWantForward(p: Omit<MoeProblem, 'dy'>): {
  readonly y: Float64Array;
  backward(dy: Float64Array): MoeWant;
} {
  const { c, h, T, ranks, w, x } = p;
  const noLoss: MoeConfig = { ...c, moeAuxLossCoeff: 0, moeZLossCoeff: null };
  const perCall = c.moeExpertCapacityFactor !== null;
  const calls = !perCall
    ? [{ x, n: ranks * T, q: 0 }]
    : Array.from({ length: ranks }, (_, q) => ({ x: rankRows(x, q, T, h), n: T, q }));
  const fwd = calls.map((r) => ({ r, ref: moeForward(noLoss, h, r.n, r.x, w) }));
  const y = concat(fwd.map((f) => f.ref.y));
  return { y, backward: (dy) => wantBackward(p, perCall, fwd, dy) };
}

/** The rest of moeWant once dy [ranks·T, h] is known. */
function wantBackward(
  p: Omit<MoeProblem, 'dy'>,
  perCall: boolean,
  fwd: readonly { r: { x: Float64Array; n: number; q: number }; ref: ReturnType<typeof moeForward> }[],
  dy: Float64Array,
): MoeWant {
  const { c, h, T, ranks, w, x } = p;
  const E = c.numMoeExperts;
  const noLoss: MoeConfig = { ...c, moeAuxLossCoeff: 0, moeZLossCoeff: null };
  const runs = fwd.map(({ r, ref }) => ({
    ref,
    grads: moeBackward(noLoss, h, r.x, w, ref, perCall ? rankRows(dy, r.q, T, h) : dy),
  }));
  const logits = concat(runs.map((r) => r.ref.logits));
  const Tg = ranks * T;
  const aux = auxLoss(c, logits, Tg);
  const z = zLoss(c, logits, Tg);
  const dl = aux.dLogits.map((v, i) => v + z.dLogits[i]!);
  const router = sum(runs.map((r) => r.grads.router));
  gemmRef(denseProblem(h, E, Tg, { transA: true, accumulate: true }), x, dl, router);
  const dx = concat(runs.map((r) => r.grads.dx));
  gemmRef(denseProblem(Tg, h, E, { transB: true, accumulate: true }), dl, w.router, dx);
  const routings = runs.map((r) => r.ref.routing);
  const perRank = (q: number) => (perCall ? routings[q]! : null);
  const topIdx = Int32Array.from(routings.flatMap((r) => Array.from(r.topIdx)));
  const tokensPerExpert = Array.from({ length: ranks }, (_, q) => {
    const own = perRank(q);
    if (own) return Array.from(own.tokensPerExpert);
    const n = new Array<number>(E).fill(0);
    rankRows(topIdx, q, T, c.moeRouterTopk).forEach((e) => n[e]!++);
    return n;
  });
  return {
    logits,
    topIdx,
    y: concat(runs.map((r) => r.ref.y)),
    dx,
    aux: aux.loss,
    z: z.loss,
    router,
    fc1: sum(runs.map((r) => r.grads.fc1)),
    fc2: sum(runs.map((r) => r.grads.fc2)),
    shared: runs[0]!.grads.shared
      ? {
          fc1: sum(runs.map((r) => r.grads.shared!.fc1)),
          fc2: sum(runs.map((r) => r.grads.shared!.fc2)),
        }
      : null,
    tokensPerExpert,
    dropped: Array.from({ length: ranks }, (_, q) => perRank(q)?.dropped ?? 0),
    margin: Math.min(...runs.map((r) => routingMargin(noLoss, r.ref.logits, r.ref.routing))),
  };
}

/** One compared quantity: the largest |rank − oracle| over its elements, and where. */
export interface MoeOracleCheck {
  /** What was compared, e.g. "rank 2 dfc1 (experts 4…5)". */
  readonly what: string;
  readonly worst: number;
  /** Index of the worst element. */
  readonly at: number;
  readonly tolerance: number;
  readonly ok: boolean;
}

/** The ranks against one device: every check, whether the routing is the same, and the routing margin against the ranks' logit error bound. */
export interface MoeOracleReport {
  readonly ok: boolean;
  /** |rank − oracle| allowed on y, dx, the losses and every gradient. */
  readonly tolerance: number;
  /** The oracle's routing margin, which must exceed `logitError` for equal routing to follow from the bound. */
  readonly margin: number;
  /** A bound on the ranks' logit error (float32 router GEMM); logits are held to it. */
  readonly logitError: number;
  /** Every rank picked the oracle's experts for every token. */
  readonly sameRouting: boolean;
  readonly checks: readonly MoeOracleCheck[];
  /** The failed checks and routing mismatches in words (empty when ok). */
  readonly failures: readonly string[];
}

/** |a − b| ≤ tol element by element: the worst element and whether it passes (lengths must match). */
export function compareWithin(
  what: string,
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: number,
): MoeOracleCheck {
  if (got.length !== want.length)
    return {
      what: `${what}: ${got.length} values, want ${want.length}`,
      worst: Infinity,
      at: -1,
      tolerance: tol,
      ok: false,
    };
  let worst = 0;
  let at = 0;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i]! - want[i]!);
    if (!(d <= worst)) [worst, at] = [d, i];
  }
  return { what, worst, at, tolerance: tol, ok: worst <= tol };
}

/** How the ranks hold the problem: which token block each rank routes, the ETP degree, how often each token is routed. */
export interface MoeHolding {
  /** holder[r]: the token block rank r holds (r itself under SP; its DP replica's without it). */
  readonly holder: readonly number[];
  readonly etp: number;
  /** The TP degree: the shared expert is split over it. */
  readonly tp: number;
  /** Copies of each token that reach the experts (tp without SP, the M036 demonstration; else 1): the experts' gradients are that many times one device's. */
  readonly copies: number;
}

/**
 * The holding of a layout over ranks whose dense DP coordinates are `dp` (rank r's at r; cp = pp = 1):
 * under SP (or tp 1) rank r holds block r; without SP a TP group holds its DP replica's block, routed
 * tp times.
 */
export function moeHolding(l: MoeLayout, dp: readonly number[]): MoeHolding {
  const copies = l.sp ? 1 : l.tp;
  return { holder: dp.map((d, r) => (copies === 1 ? r : d)), etp: l.etp, tp: l.tp, copies };
}

/** Every rank its own block, no ETP: the EP-only holding of `ranks` ranks. */
export const ownTokens = (ranks: number): MoeHolding => ({
  holder: [...Array(ranks).keys()],
  etp: 1,
  tp: 1,
  copies: 1,
});

/**
 * The ranks' results (rank r's at r) against the single-device answers: the same picks; logits
 * within `logitError`; y and dx row blocks of the block each rank holds, the aux and z losses,
 * dWr on every rank, each expert shard's dfc1 and dfc2 (× copies) on its holders, each rank's TP
 * shard of the shared expert's within `tolerance`.
 */
export function moeOracle(
  p: MoeProblem,
  want: MoeWant,
  results: readonly MoeEpResult[],
  tolerance: number,
  logitError: number,
  holding: MoeHolding = ownTokens(results.length),
): MoeOracleReport {
  const { c, h, T } = p;
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const f = c.moeFfnHiddenSize;
  const checks: MoeOracleCheck[] = [];
  const failures: string[] = [];
  let sameRouting = true;
  const grads = { fc1: want.fc1.map((v) => v * holding.copies), fc2: want.fc2.map((v) => v * holding.copies) };
  results.forEach((r, q) => {
    const b = holding.holder[q]!;
    checks.push(compareWithin(`rank ${q} logits`, r.logits, rankRows(want.logits, b, T, E), logitError));
    const picks = rankRows(want.topIdx, b, T, k);
    const bad = picks.findIndex((e, i) => r.topIdx[i] !== e);
    if (bad >= 0 || r.topIdx.length !== picks.length) {
      sameRouting = false;
      failures.push(
        `rank ${q} pick ${bad} (token ${Math.floor(bad / k)}): expert ${r.topIdx[bad]}, one device ${picks[bad]}`,
      );
    }
    const L = r.expertRows.length;
    const e0 = r.firstExpert;
    const shard = etpExpertShard(grads, h, f, e0, L, holding.etp, r.etpRank);
    const which = `experts ${e0}…${e0 + L - 1}${holding.etp > 1 ? `, ETP shard ${r.etpRank}/${holding.etp}` : ''}`;
    checks.push(
      compareWithin(`rank ${q} y`, r.y, rankRows(want.y, b, T, h), tolerance),
      compareWithin(`rank ${q} dx`, r.dx, rankRows(want.dx, b, T, h), tolerance),
      compareWithin(`rank ${q} aux, z`, [r.aux, r.z], [want.aux, want.z], tolerance),
      compareWithin(`rank ${q} dWr`, r.router, want.router, tolerance),
      compareWithin(`rank ${q} dfc1 (${which})`, r.fc1, shard.fc1, tolerance),
      compareWithin(`rank ${q} dfc2 (${which})`, r.fc2, shard.fc2, tolerance),
    );
    const fs = c.moeSharedExpertIntermediateSize;
    if (fs !== null && want.shared) {
      const mine = etpExpertShard(want.shared, h, fs, 0, 1, holding.tp, r.tpRank);
      const of = holding.tp > 1 ? ` (TP shard ${r.tpRank}/${holding.tp})` : '';
      if (!r.shared) failures.push(`rank ${q} gave no shared expert gradients`);
      else
        checks.push(
          compareWithin(`rank ${q} shared dfc1${of}`, r.shared.fc1, mine.fc1, tolerance),
          compareWithin(`rank ${q} shared dfc2${of}`, r.shared.fc2, mine.fc2, tolerance),
        );
    }
  });
  for (const x of checks) if (!x.ok) failures.push(`${x.what}: worst |Δ| ${x.worst} at ${x.at} > ${x.tolerance}`);
  if (!(want.margin > logitError))
    failures.push(
      `routing margin ${want.margin} ≤ the logit error bound ${logitError}: equal routing would be luck; pick another seed or fewer ties`,
    );
  return { ok: failures.length === 0, tolerance, margin: want.margin, logitError, sameRouting, checks, failures };
}
