// The MoE block under expert parallelism checked against one device, in Node (tests/unit/parallel,
// CPU backend) and on rank workers (tests/gpu/ranks, GPU backend): EP rank q holds tokens
// [q·T, (q + 1)·T) of the group's batch; the oracle runs moeForward/moeBackward on all ep·T.
import { expect } from 'vitest';
import type { MoeEpResult } from '../src/parallel/moe-ep.ts';
import {
  moeBackward,
  moeForward,
  type MoeForward,
  type MoeGrads,
  type MoeWeights,
} from '../src/reference/moe/block.ts';
import { moeConfig, type MoeConfig } from '../src/reference/moe/config.ts';
import { routingMargin } from '../src/reference/moe/routing.ts';
import { seededMoeWeights } from '../src/reference/moe/weights.ts';
import { randomArray } from '../src/reference/random.ts';

/** One grid point: EP degree, experts, top-k, and the router's score function. */
export interface MoeEpCase {
  readonly ep: number;
  readonly E: number;
  readonly k: number;
  readonly preSoftmax?: boolean;
}

/** A case's config (SwiGLU width 6, aux 0.01, z 0.001), weights, the group's tokens and the oracle. */
export function moeEpProblem(
  { E, k, ep, preSoftmax = k === 1 }: MoeEpCase,
  T: number,
  h: number,
  seed = 41,
): { c: MoeConfig; w: MoeWeights; x: Float64Array; dy: Float64Array; ref: MoeForward; grads: MoeGrads } {
  const c = moeConfig(
    { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 6 },
    { moeRouterPreSoftmax: preSoftmax, moeAuxLossCoeff: 0.01, moeZLossCoeff: 0.001 },
  );
  const w = seededMoeWeights(c, h, seed);
  const x = Float64Array.from(randomArray(ep * T * h, seed + 10));
  const dy = Float64Array.from(randomArray(ep * T * h, seed + 11));
  const ref = moeForward(c, h, ep * T, x, w);
  return { c, w, x, dy, ref, grads: moeBackward(c, h, x, w, ref, dy) };
}

/** Rank q's rows of a [ep·T, h] array. */
export const rankRows = (a: Float64Array, q: number, T: number, h: number): Float64Array =>
  a.subarray(q * T * h, (q + 1) * T * h);

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
 * the aux and z losses, dWr on every rank, each expert's dfc1 and dfc2 on its owner; returns the
 * largest error seen. The routing margin of the oracle's logits is asserted above `margin`
 * (a bound on the ranks' logit error), so equal picks are not luck.
 */
export function expectMoeEpMatches(
  p: ReturnType<typeof moeEpProblem>,
  results: readonly MoeEpResult[],
  T: number,
  h: number,
  tol: number,
  margin: number,
): void {
  const { c, ref, grads } = p;
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const f = c.moeFfnHiddenSize;
  const ep = results.length;
  const L = E / ep;
  expect(routingMargin(c, ref.logits, ref.routing)).toBeGreaterThan(margin);
  results.forEach((r, q) => {
    near(`rank ${q} logits`, r.logits, rankRows(ref.logits, q, T, E), margin);
    expect(Array.from(r.topIdx), `rank ${q} picks`).toEqual(
      Array.from(ref.routing.topIdx.subarray(q * T * k, (q + 1) * T * k)),
    );
    near(`rank ${q} y`, r.y, rankRows(ref.y, q, T, h), tol);
    near(`rank ${q} dx`, r.dx, rankRows(grads.dx, q, T, h), tol);
    near(`rank ${q} aux, z`, [r.aux, r.z], [ref.aux, ref.z], tol);
    near(`rank ${q} dWr`, r.router, grads.router, tol);
    near(
      `rank ${q} dfc1 (experts ${q * L}…)`,
      r.fc1,
      grads.fc1.subarray(q * L * h * 2 * f, (q + 1) * L * h * 2 * f),
      tol,
    );
    near(`rank ${q} dfc2 (experts ${q * L}…)`, r.fc2, grads.fc2.subarray(q * L * f * h, (q + 1) * L * f * h), tol);
  });
}
