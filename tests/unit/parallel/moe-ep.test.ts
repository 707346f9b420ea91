import { describe, expect, test } from 'vitest';
import { CpuBackend, float64Alloc } from '../../../src/parallel/backend-cpu.ts';
import { moeEpBlock, type MoeGroups } from '../../../src/parallel/moe-ep.ts';
import { moeGrid } from '../../../src/parallel/moe-grid.ts';
import { moeMeshDegrees, moeWorld } from '../../../src/parallel/moe-layout.ts';
import { moeHolding, rankRows } from '../../../src/parallel/moe-oracle.ts';
import { moeConfig } from '../../../src/reference/moe/config.ts';
import { seededMoeWeights } from '../../../src/reference/moe/weights.ts';
import { caseLayout, expectMoeEpMatches, moeEpProblem, type MoeEpCase } from '../../moe-ep-cases.ts';
import { makeMesh } from '../comm/mesh-groups.ts';
import type { TracePass } from '../../../src/core/trace-event.ts';

// The MoE block on in-process and MessagePort meshes, CPU backend (float64 twins), equals the
// single-device block (src/parallel/moe-oracle.ts: dropless of all the ranks' tokens, with capacity
// of each rank's; aux and z over every rank's distinct tokens) over the grid EP {1, 2, 4} × ETP
// {1, 2} × TP {1, 2} with SP × E {4, 8} × k {1, 2} × {dropless, capacity 1} × {alltoall, allgather}.
// What is not float64: the collectives and Backend.read carry float32, so O(1) values (|y|, the
// gradients ≤ 4 here) are rounded a few times by 2^-24 relative (plus the ETP partial sums, each
// rounded once): tolerance 1e-6; logits are rounded once (|l| < 4: < 3e-7), so a routing margin
// above 1e-6 keeps every decision.
const [T, h] = [8, 8];
const tol = 1e-6;

const grid: readonly MoeEpCase[] = moeGrid;

/** Every rank's block on a mesh of `kind` for case `cs`; the problem, its holding and the results. */
async function runCase(kind: 'in-process' | 'message-port', cs: MoeEpCase, opts: { marked?: boolean } = {}) {
  const l = caseLayout(cs);
  const p = moeEpProblem(cs, T, h);
  const m = makeMesh(kind, moeMeshDegrees(l));
  const N = moeWorld(l);
  const holding = moeHolding(
    l,
    Array.from({ length: N }, (_, r) => m.mesh.coords(r).dp),
  );
  const groups = (r: number): MoeGroups => ({
    ep: m.comm(r, 'ep'),
    etp: m.comm(r, 'etp'),
    tp: m.comm(r, 'tp'),
    dp: m.comm(r, 'dp'),
    edp: m.comm(r, 'edp'),
  });
  const results = await Promise.all(
    Array.from({ length: N }, (_, r) =>
      moeEpBlock(
        new CpuBackend(float64Alloc),
        groups(r),
        p.c,
        h,
        rankRows(p.x, holding.holder[r]!, T, h),
        rankRows(p.dy, holding.holder[r]!, T, h),
        p.w,
        {
          dispatcher: l.dispatcher,
          sp: l.sp,
          ...(opts.marked && {
            trace: { sink: m.recorders[r]!, rank: r, pass: (x: TracePass) => m.recorders[r]!.setPass(x) },
          }),
        },
      ),
    ),
  );
  return { p, m, holding, results };
}

describe('the MoE block on in-process ranks over the whole grid', () => {
  test.each(grid)('at %o equals the single-device block', async (cs) => {
    const { p, m, holding, results } = await runCase('in-process', cs);
    expectMoeEpMatches(p, results, tol, 1e-6, holding);
    m.close();
  });
});

describe('the MoE block with a shared expert (tensor parallel over TP) on in-process ranks', () => {
  const shared: MoeEpCase[] = [
    { ep: 2, E: 4, k: 1, shared: 4 },
    { ep: 4, E: 8, k: 2, capacity: 1, shared: 4, dispatcher: 'allgather' },
    { ep: 2, etp: 2, tp: 2, E: 8, k: 2, shared: 4 },
    { ep: 2, etp: 2, tp: 2, E: 8, k: 2, shared: 4, dispatcher: 'allgather' },
    { ep: 1, tp: 2, E: 4, k: 2, shared: 6, capacity: 1 },
    { ep: 2, tp: 2, sp: false, E: 4, k: 2, shared: 4 },
  ];
  test.each(shared)('at %o equals the single-device block, the shared expert’s gradients too', async (cs) => {
    const { p, m, holding, results } = await runCase('in-process', cs);
    expect(p.want.shared).not.toBeNull();
    expectMoeEpMatches(p, results, tol, 1e-6, holding);
    m.close();
  });
});

describe('the MoE block over MessagePort ranks', () => {
  const some: MoeEpCase[] = [
    { ep: 4, E: 8, k: 2 },
    { ep: 2, etp: 2, tp: 2, E: 8, k: 2, capacity: 1, dispatcher: 'allgather' },
    { ep: 2, E: 8, k: 2, score: 'sigmoid' },
    { ep: 4, E: 4, k: 1, score: 'sigmoid' },
    { ep: 4, E: 8, k: 2, capacity: 1, skew: 3 },
  ];
  test.each(some)('at %o equals the single-device block', async (cs) => {
    const { p, m, holding, results } = await runCase('message-port', cs);
    expectMoeEpMatches(p, results, tol, 1e-6, holding);
    m.close();
  });
});

test('EP alone, alltoall: each rank calls counts, dispatch, combine, aux counts, losses, the two backward all-to-alls, dWr', async () => {
  const { m } = await runCase('in-process', { ep: 4, E: 8, k: 2 });
  expect(m.recorders[0]!.peek().map((e) => e.comm?.tensor)).toEqual([
    'moe.tokens_per_expert',
    'moe.dispatch',
    'moe.combine',
    'moe.aux.counts',
    'moe.losses',
    'moe.combine.grad',
    'moe.dispatch.grad',
    'moe.router.grad',
  ]);
  m.close();
});

test('the block alone (the M036 run) marks its passes: the forward’s GEMMs and collectives forward, the rest backward, on every rank', async () => {
  const { m } = await runCase('in-process', { ep: 2, tp: 2, sp: false, E: 4, k: 2 }, { marked: true });
  for (const rec of m.recorders) {
    const events = rec.peek().map((e) => [e.comm?.tensor ?? e.op, e.phase]);
    const back = events.findIndex(([, phase]) => phase === 'backward');
    expect(events.slice(0, back)).toEqual(
      expect.arrayContaining([
        ['moe.experts', 'forward'],
        ['moe.dispatch', 'forward'],
      ]),
    );
    expect(events.slice(0, back).every(([, phase]) => phase === 'forward')).toBe(true);
    expect(events.slice(back).every(([, phase]) => phase === 'backward')).toBe(true);
    expect(events.slice(back)).toEqual(
      expect.arrayContaining([
        ['moe.experts.backward', 'backward'],
        ['moe.dispatch.grad', 'backward'],
      ]),
    );
  }
  m.close();
});

test('without SP at TP 2 (M036) every token is routed twice: y and dx as one device, the experts’ gradients twice one device’s, the dispatch twice the bytes', async () => {
  const withSp = await runCase('in-process', { ep: 2, tp: 2, E: 4, k: 2 });
  const noSp = await runCase('in-process', { ep: 2, tp: 2, sp: false, E: 4, k: 2 });
  expect(noSp.holding.copies).toBe(2);
  expectMoeEpMatches(noSp.p, noSp.results, tol, 1e-6, noSp.holding);
  // the same logical batch: with SP 2 ranks × 8 tokens each; without, 1 block of 8 on both ranks
  const dispatched = (run: typeof withSp) =>
    run.m.recorders
      .flatMap((r) => r.peek())
      .filter((e) => e.comm?.tensor === 'moe.dispatch')
      .reduce((n, e) => n + e.comm!.peers!.sentBytes.reduce((a, b) => a + b, 0), 0);
  const rows = (run: typeof withSp) => run.results.reduce((n, r) => n + r.expertRows.reduce((a, b) => a + b, 0), 0);
  expect(rows(noSp)).toBe(2 * 8 * 2); // 8 tokens × k 2, twice
  expect(dispatched(noSp)).toBe(rows(noSp) * h * 4);
  withSp.m.close();
  noSp.m.close();
});

test('E not divisible by ep and a shared expert not divisible by tp are refused before anything moves', async () => {
  const m = makeMesh('in-process', { tp: 2, dp: 2, ep: 4, etp: 1 });
  const c = moeConfig(
    { numMoeExperts: 6, moeRouterTopk: 2, moeFfnHiddenSize: 4 },
    { moeExpertCapacityFactor: 1, moeSharedExpertIntermediateSize: 3 },
  );
  const x = new Float64Array(2 * 4);
  const g = {
    ep: m.comm(0, 'ep'),
    etp: m.comm(0, 'etp'),
    tp: m.comm(0, 'tp'),
    dp: m.comm(0, 'dp'),
    edp: m.comm(0, 'edp'),
  };
  await expect(moeEpBlock(new CpuBackend(float64Alloc), g, c, 4, x, x, seededMoeWeights(c, 4, 1))).rejects.toThrow(
    /6 experts do not split over 4 EP ranks.*moeSharedExpertIntermediateSize 3 does not split over 2 TP ranks/,
  );
  m.close();
});
