// The MoE block under expert parallelism checked against one device (src/parallel/moe-oracle.ts),
// in Node (tests/unit/parallel, CPU backend) and on rank workers (tests/gpu/ranks, GPU backend):
// EP rank q holds tokens [q·T, (q + 1)·T) of the group's batch; aux 0.01 and z 0.001 throughout.
import { expect } from 'vitest';
import type { MoeEpResult } from '../src/parallel/moe-ep.ts';
import {
  moeOracle,
  moeProblem,
  moeWant,
  ownTokens,
  type MoeHolding,
  type MoeProblem,
  type MoeWant,
} from '../src/parallel/moe-oracle.ts';
import { moeConfig } from '../src/reference/moe/config.ts';
import { moeLayout, moeWorld, type MoeDispatcher, type MoeLayout } from '../src/parallel/moe-layout.ts';

export { rankRows } from '../src/parallel/moe-oracle.ts';

/** One grid point: EP degree (and the rest of the layout), experts, top-k, the router's score function, a capacity factor, a router skew. */
export interface MoeEpCase {
  readonly ep: number;
  readonly etp?: number;
  readonly tp?: number;
  /** Sequence parallel when tp > 1 (default true; false: the M036 demonstration). */
  readonly sp?: boolean;
  readonly dispatcher?: MoeDispatcher;
  readonly E: number;
  readonly k: number;
  readonly preSoftmax?: boolean;
  readonly score?: 'softmax' | 'sigmoid';
  /** moe_expert_capacity_factor, dropping by probability; absent: dropless. */
  readonly capacity?: number;
  readonly skew?: number;
  /** moe_shared_expert_intermediate_size; absent: no shared expert. */
  readonly shared?: number;
}

/** A case's layout. */
export const caseLayout = (cs: MoeEpCase): MoeLayout =>
  moeLayout(cs.ep, { etp: cs.etp ?? 1, tp: cs.tp ?? 1, sp: cs.sp ?? true, dispatcher: cs.dispatcher ?? 'alltoall' });

/** A case's config (SwiGLU width 6), its problem on `blocks` token blocks of T tokens (default: one per rank of its layout), and the one-device answers. */
export function moeEpProblem(
  cs: MoeEpCase,
  T: number,
  h: number,
  seed = 41,
  blocks?: number,
): MoeProblem & { want: MoeWant } {
  const { E, k, preSoftmax = k === 1, score = 'softmax', capacity, skew = 0 } = cs;
  const c = moeConfig(
    { numMoeExperts: E, moeRouterTopk: k, moeFfnHiddenSize: 6 },
    {
      moeRouterPreSoftmax: preSoftmax,
      moeRouterScoreFunction: score,
      moeExpertCapacityFactor: capacity ?? null,
      moeAuxLossCoeff: 0.01,
      moeZLossCoeff: 0.001,
      routerSkew: skew,
      moeSharedExpertIntermediateSize: cs.shared ?? null,
    },
  );
  const l = caseLayout(cs);
  const p = moeProblem(c, h, T, blocks ?? moeWorld(l) / (l.sp ? 1 : l.tp), seed);
  return { ...p, want: moeWant(p) };
}

/**
 * The EP group's results equal the oracle (moeOracle: picks, logits within `margin`, the rest
 * within `tol`); the oracle's routing margin exceeds `margin`, so equal picks are not luck; a
 * capacity case drops picks.
 */
export function expectMoeEpMatches(
  p: ReturnType<typeof moeEpProblem>,
  results: readonly MoeEpResult[],
  tol: number,
  margin: number,
  holding: MoeHolding = ownTokens(results.length),
): void {
  if (p.c.moeExpertCapacityFactor !== null)
    expect(
      p.want.dropped.reduce((a, b) => a + b, 0),
      'the capacity drops picks',
    ).toBeGreaterThan(0);
  const report = moeOracle(p, p.want, results, tol, margin, holding);
  expect(report.failures).toEqual([]);
  expect(report.ok).toBe(true);
  results.forEach((r, q) => {
    const b = holding.holder[q]!;
    expect(r.dropped, `rank ${q} dropped`).toBe(p.want.dropped[b]);
    expect(r.tokensPerExpert, `rank ${q} tokens per expert`).toEqual(p.want.tokensPerExpert[b]);
  });
}
