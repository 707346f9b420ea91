// The MoE block under expert parallelism checked against one device, in Node (tests/unit/parallel,
// CPU backend) and on rank workers (tests/gpu/ranks, GPU backend): EP rank q holds tokens
// [q·T, (q + 1)·T) of the group's batch.
//   dropless: the oracle is moeForward/moeBackward on all ep·T tokens (aux 0.01, z 0.001).
//   capacity: Megatron's router drops per routing call, i.e. over each rank's own T tokens
//     (router.py apply_router_token_dropping on the rank's logits), so the oracle is
//     moeForward/moeBackward on each rank's tokens alone — y and dx its rows, dW_r and each expert's
//     gradients the sum over ranks — with the aux and z losses off (they are the group's, above).
import { expect } from 'vitest';
import type { MoeEpResult } from '../src/parallel/moe-ep.ts';
import { moeBackward, moeForward, type MoeWeights } from '../src/reference/moe/block.ts';
import { moeConfig, type MoeConfig } from '../src/reference/moe/config.ts';
import { routingMargin } from '../src/reference/moe/routing.ts';
import { seededMoeWeights } from '../src/reference/moe/weights.ts';
import { randomArray } from '../src/reference/random.ts';

/** One grid point: EP degree, experts, top-k, the router's score function, a capacity factor. */
export interface MoeEpCase {
  readonly ep: number;
  readonly E: number;
  readonly k: number;
  readonly preSoftmax?: boolean;
  readonly score?: 'softmax' | 'sigmoid';
  /** moe_expert_capacity_factor, dropping by probability; absent: dropless. */
  readonly capacity?: number;
}

/** What every rank must give, the group's arrays concatenated in rank order (logits, picks, y, dx) or whole. */
export interface MoeEpWant {
  readonly logits: Float64Array;
  readonly topIdx: Int32Array;
  readonly y: Float64Array;
  readonly dx: Float64Array;
  readonly aux: number;
  readonly z: number;
  readonly router: Float64Array;
  readonly fc1: Float64Array;
  readonly fc2: Float64Array;
  /** The smallest routing margin of the oracle's routing calls. */
  readonly margin: number;
  /** Picks dropped by capacity over the group. */
  readonly dropped: number;
}

/** Rank q's rows of a [ep·T, n] array. */
export const rankRows = <A extends Float64Array | Int32Array>(a: A, q: number, T: number, n: number): A =>
  a.subarray(q * T * n, (q + 1) * T * n) as A;

const concat = (parts: readonly Float64Array[]): Float64Array => Float64Array.from(parts.flatMap((p) => Array.from(p)));
const sum = (parts: readonly Float64Array[]): Float64Array =>
  parts.reduce((a, p) => a.map((v, i) => v + p[i]!), new Float64Array(parts[0]!.length));

/** A case's config (SwiGLU width 6), weights, the group's tokens and what the ranks must give. */
export function moeEpProblem(
  { E, k, ep, preSoftmax = k === 1, score = 'softmax', capacity }: MoeEpCase,
  T: number,
  h: number,
  seed = 41,
): { c: MoeConfig; w: MoeWeights; x: Float64Array; dy: Float64Array; want: MoeEpWant } {
  const losses = capacity === undefined ? { moeAuxLossCoeff: 0.01, moeZLossCoeff: 0.001 } : { moeAuxLossCoeff: 0 };
  const c = moeConfig(
    { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 6 },
    {
      moeRouterPreSoftmax: preSoftmax,
      moeRouterScoreFunction: score,
      moeExpertCapacityFactor: capacity ?? null,
      ...losses,
    },
  );
  const w = seededMoeWeights(c, h, seed);
  const x = Float64Array.from(randomArray(ep * T * h, seed + 10));
  const dy = Float64Array.from(randomArray(ep * T * h, seed + 11));
  const calls =
    capacity === undefined
      ? [{ x, dy, n: ep * T }]
      : [...Array(ep).keys()].map((q) => ({ x: rankRows(x, q, T, h), dy: rankRows(dy, q, T, h), n: T }));
  const runs = calls.map((r) => {
    const ref = moeForward(c, h, r.n, r.x, w);
    return { ref, grads: moeBackward(c, h, r.x, w, ref, r.dy) };
  });
  const want: MoeEpWant = {
    logits: concat(runs.map((r) => r.ref.logits)),
    topIdx: Int32Array.from(runs.flatMap((r) => Array.from(r.ref.routing.topIdx))),
    y: concat(runs.map((r) => r.ref.y)),
    dx: concat(runs.map((r) => r.grads.dx)),
    aux: runs.reduce((a, r) => a + r.ref.aux, 0),
    z: runs.reduce((a, r) => a + r.ref.z, 0),
    router: sum(runs.map((r) => r.grads.router)),
    fc1: sum(runs.map((r) => r.grads.fc1)),
    fc2: sum(runs.map((r) => r.grads.fc2)),
    margin: Math.min(...runs.map((r) => routingMargin(c, r.ref.logits, r.ref.routing))),
    dropped: runs.reduce((a, r) => a + r.ref.routing.dropped, 0),
  };
  return { c, w, x, dy, want };
}

/** |a − b| ≤ tol element by element, naming the worst. */
function near(what: string, got: ArrayLike<number>, want: ArrayLike<number>, tol: number): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  let worst = 0;
  let at = 0;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i]! - want[i]!);
    if (!(d <= worst)) [worst, at] = [d, i];
  }
  expect(worst, `${what}: worst error at ${at} (${got[at]} vs ${want[at]})`).toBeLessThanOrEqual(tol);
}

/**
 * The EP group's results (rank q's at q) equal the oracle: the same picks, y and dx row blocks,
 * the aux and z losses, dWr on every rank, each expert's dfc1 and dfc2 on its owner. The oracle's
 * routing margin is asserted above `margin` (a bound on the ranks' logit error, to which their
 * logits are held), so equal picks are not luck.
 */
export function expectMoeEpMatches(
  p: ReturnType<typeof moeEpProblem>,
  results: readonly MoeEpResult[],
  T: number,
  h: number,
  tol: number,
  margin: number,
): void {
  const { c, want } = p;
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const f = c.moeFfnHiddenSize;
  const ep = results.length;
  const L = E / ep;
  expect(want.margin).toBeGreaterThan(margin);
  if (c.moeExpertCapacityFactor !== null) expect(want.dropped, 'the capacity drops picks').toBeGreaterThan(0);
  results.forEach((r, q) => {
    near(`rank ${q} logits`, r.logits, rankRows(want.logits, q, T, E), margin);
    expect(Array.from(r.topIdx), `rank ${q} picks`).toEqual(Array.from(rankRows(want.topIdx, q, T, k)));
    near(`rank ${q} y`, r.y, rankRows(want.y, q, T, h), tol);
    near(`rank ${q} dx`, r.dx, rankRows(want.dx, q, T, h), tol);
    near(`rank ${q} aux, z`, [r.aux, r.z], [want.aux, want.z], tol);
    near(`rank ${q} dWr`, r.router, want.router, tol);
    near(
      `rank ${q} dfc1 (experts ${q * L}…)`,
      r.fc1,
      want.fc1.subarray(q * L * h * 2 * f, (q + 1) * L * h * 2 * f),
      tol,
    );
    near(`rank ${q} dfc2 (experts ${q * L}…)`, r.fc2, want.fc2.subarray(q * L * f * h, (q + 1) * L * f * h), tol);
  });
}
