// The MoE classroom steps read the single-device block on the ranks' tokens: every count agrees across
// the steps, the aux loss's gradient pushes load from the busiest expert to the idlest, and M036 counts t copies;
// against a run, a count that differs fails its check.
import { describe, expect, test } from 'vitest';
import { defaultSettings, type Settings } from '../../../../src/ui/settings/state.ts';
import { moeRunArgsOf, withMoePreset } from '../../../../src/ui/settings/moe-settings.ts';
import { moeProblemSteps, moeRunSteps, moeSteps, type MoeStep } from '../../../../src/ui/classroom/moe-steps.ts';
import { moeProblem, rankRows } from '../../../../src/parallel/moe-oracle.ts';
import { moeForward } from '../../../../src/reference/moe/block.ts';
import type { MoeRun } from '../../../../src/session/moe-run.ts';
import type { MoeLayerRun } from '../../../../src/session/moe-layer-run.ts';

const classroom: Settings = withMoePreset(defaultSettings, 'classroom');
const step = (steps: readonly MoeStep[], id: MoeStep['id']): MoeStep => steps.find((s) => s.id === id)!;

describe('MoE classroom steps on the classroom preset (4 ranks × 8 tokens, 8 experts, top-2, EP 4)', () => {
  const steps = moeSteps(moeRunArgsOf(classroom));

  test('seven steps in order, the router listing 16 of the 32 tokens with their two picks', () => {
    expect(steps.map((s) => s.id)).toEqual(['router', 'permute', 'dispatch', 'grouped-gemm', 'combine', 'aux', 'm036']);
    const r = step(steps, 'router');
    expect(r.rows).toHaveLength(16);
    expect(r.rows[0]![0]).toBe('0 (rank 0)');
    expect(r.rows[8]![0]).toBe('8 (rank 1)');
    for (const row of r.rows) for (const pick of row.slice(1)) expect(String(pick)).toMatch(/^[0-7] \(0\.\d{3}\)$/);
  });

  test('the permutation, the dispatch and the grouped GEMM count the same 64 rows', () => {
    const perm = step(steps, 'permute').rows.map((row) => Number(row[1]));
    expect(perm.reduce((a, b) => a + b, 0)).toBe(64);
    const sent = step(steps, 'dispatch').rows.map((row) =>
      row.slice(1).reduce<number>((a, cell) => a + Number(/^(\d+) rows?/.exec(String(cell))![1]), 0),
    );
    expect(sent).toEqual([16, 16, 16, 16]);
    const gemm = step(steps, 'grouped-gemm').rows;
    expect(gemm.map((row) => row[2])).toEqual([0, 1, 2, 3].map((j) => perm[2 * j]! + perm[2 * j + 1]!));
  });

  test('the combine: y is the sum of the weighted expert rows it lists', () => {
    const rows = step(steps, 'combine').rows;
    const y = rows.at(-1)!.slice(1).map(Number);
    const parts = rows.slice(0, -1).map((row) => row.slice(1).map(Number));
    y.forEach((v, i) => expect(parts.reduce((a, p) => a + p[i]!, 0)).toBeCloseTo(v, 2)); // each term printed to 3 decimals
  });

  test('the aux gradient is positive on the most-picked expert and negative on the least-picked', () => {
    const rows = step(steps, 'aux').rows.map((row) => ({ c: Number(row[1]), g: Number(row[2]) }));
    const most = rows.reduce((a, b) => (b.c > a.c ? b : a));
    const least = rows.reduce((a, b) => (b.c < a.c ? b : a));
    expect(most.c).toBeGreaterThan(least.c);
    expect(most.g).toBeGreaterThan(0);
    expect(least.g).toBeLessThan(0);
  });

  test('M036: without SP at t = 2 each of the 64 rows is dispatched twice', () => {
    expect(step(steps, 'm036').rows).toEqual([
      ['with SP', 64, 64 * 16 * 4, 1],
      ['without SP (M036)', 128, 128 * 16 * 4, 2],
    ]);
  });

  test('a skewed router with capacity 1 marks the dropped picks', () => {
    const s = moeSteps(moeRunArgsOf({ ...classroom, skew: 4, capacity: 1 }));
    expect(step(s, 'router').text).toMatch(/Capacity 2 tokens per expert: \d+ picks dropped/);
    expect(
      step(s, 'router')
        .rows.flat()
        .some((v) => String(v).endsWith('✗')),
    ).toBe(true);
  });
});

describe('the MoE steps checked against a run', () => {
  const a = moeRunArgsOf(classroom);
  const T = a.tokens;
  // What the ranks would report if they routed as the float64 block does (rank q: block q under SP).
  const p = moeProblem(a.config, a.h, T, 4, a.seed);
  const per = [0, 1, 2, 3].map((q) => moeForward(a.config, a.h, T, rankRows(p.x, q, T, a.h), p.w).routing);
  const load = Array.from({ length: 8 }, (_, e) => per.reduce((n, r) => n + r.tokensPerExpert[e]!, 0));
  const coords = { tp: 0, cp: 0, dp: 0, pp: 0, etp: 0, ep: 0, edp: 0 };
  const run = (tokensPerExpert: (q: number) => number[]): MoeRun =>
    ({
      ranks: per.map((_, q) => ({
        rank: q,
        coords: { ...coords, ep: q },
        tokensPerExpert: tokensPerExpert(q),
        firstExpert: 2 * q,
        expertRows: load.slice(2 * q, 2 * q + 2),
        tokenBlock: q,
        dispatchBytes: 0,
      })),
      aux: 0,
      copies: 1,
      trace: [],
    }) as unknown as MoeRun; // the fields the checks read

  test('equal counts pass; one pick moved to another expert on rank 2 fails that rank only', () => {
    const ok = step(
      moeSteps(
        a,
        run((q) => Array.from(per[q]!.tokensPerExpert)),
      ),
      'router',
    ).checks;
    expect(ok.map((c) => c.pass)).toEqual([true, true, true, true]);
    const moved = (q: number) => {
      const c = Array.from(per[q]!.tokensPerExpert);
      if (q === 2) [c[0], c[1]] = [c[0]! - 1, c[1]! + 1];
      return c;
    };
    expect(step(moeSteps(a, run(moved)), 'router').checks.map((c) => c.pass)).toEqual([true, true, false, true]);
    expect(step(moeSteps(a, run(moved)), 'grouped-gemm').checks.every((c) => c.pass)).toBe(true);
  });

  test('inside the layer the steps read the run’s own block (its ln2 tokens), not a second float64 layer', () => {
    // another seed's tokens than the settings give: a recomputation from the layer could not produce these rows
    const block = moeProblem(a.config, a.h, T, 4, a.seed + 1);
    const fromBlock = (q: number) => moeForward(a.config, a.h, T, rankRows(block.x, q, T, a.h), block.w).routing;
    const layerRun = {
      ...run((q) => Array.from(fromBlock(q).tokensPerExpert)),
      layer: undefined, // not read: the run's block is
      block,
    } as unknown as MoeLayerRun;
    const steps = moeRunSteps(a, layerRun);
    expect(steps.map((x) => x.rows)).toEqual(moeProblemSteps(block, a.layout).map((x) => x.rows));
    expect(steps.map((x) => x.rows)).not.toEqual(moeSteps(a).map((x) => x.rows));
    expect(step(steps, 'router').checks.map((c) => c.pass)).toEqual([true, true, true, true]);
  });

  test('without a run the steps carry no checks', () => {
    expect(moeSteps(a).every((s) => s.checks.length === 0)).toBe(true);
  });
});
