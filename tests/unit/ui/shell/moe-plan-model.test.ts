// The top card's MoE block with experts set: router, dispatch (the chosen dispatcher over EP and ETP), the
// experts' grouped GEMMs with each rank's local shapes, the shared expert, combine — from the run's own
// arguments (moeRunArgsOf), and the rows each rank's experts ran once the run is in.
import { describe, expect, test } from 'vitest';
import type { MoeRun } from '../../../../src/session/moe-run.ts';
import { moeRunArgsOf, withMoePreset } from '../../../../src/ui/settings/moe-settings.ts';
import { defaultSettings, type Settings } from '../../../../src/ui/settings/state.ts';
import { moePlan, moeWeightRows, planTensorText, type MoePlan } from '../../../../src/ui/shell/moe-plan-model.ts';

const classroom: Settings = withMoePreset(defaultSettings, 'classroom');
const tensor = (p: MoePlan, stage: string, name: string) =>
  p.stages.find((s) => s.stage === stage)!.tensors.find((x) => x.name === name)!;

describe('moePlan', () => {
  test('the classroom MoE (8 experts of 16, top-2, EP 4, t 1): four stages with the alltoall dispatcher and each rank’s local shapes', () => {
    const p = moePlan(moeRunArgsOf(classroom));
    expect(p.stages.map((s) => s.stage)).toEqual(['router', 'dispatch', 'experts', 'combine']);
    expect(p.ranks).toBe(4);
    expect(p.degrees).toEqual({ tp: 1, dp: 4, ep: 4, etp: 1, edp: 1 });
    expect(p.stages[1]!.megatron).toMatch(/^MoEAlltoAllTokenDispatcher/);
    expect(p.stages[1]!.words).toMatch(/all-to-all over the 4 EP ranks/);
    expect(tensor(p, 'router', 'W_r').shape).toEqual([16, 8]);
    expect(tensor(p, 'router', 'x').shape).toEqual([8, 16]); // s·b = 8 tokens on each rank at t 1
    expect(tensor(p, 'dispatch', 'permuted').shape).toEqual([16, 16]); // dropless: T·k rows
    expect(planTensorText(tensor(p, 'experts', 'fc1'))).toBe('[L, h, 2f′] = [2, 16, 32]');
    expect(tensor(p, 'experts', 'fc2').shape).toEqual([2, 16, 16]);
    expect(tensor(p, 'experts', 'fc1 out').shape).toBeNull(); // R: the routing's
    expect(p.expertRows).toBeNull();
  });

  test('the allgather dispatcher at t 2 with SP, EP 2, ETP 2, a shared expert and a capacity factor', () => {
    const s: Settings = {
      ...classroom,
      tp: 2,
      sp: true,
      ep: 2,
      etp: 2,
      dispatcher: 'allgather',
      sharedFfn: 8,
      capacity: 1,
    };
    const p = moePlan(moeRunArgsOf(s));
    expect(p.stages.map((x) => x.stage)).toEqual(['router', 'dispatch', 'experts', 'shared', 'combine']);
    expect(p.degrees).toEqual({ tp: 2, dp: 2, ep: 2, etp: 2, edp: 1 });
    expect(p.stages[1]!.megatron).toMatch(/^MoEAllGatherTokenDispatcher/);
    expect(p.stages[1]!.words).toMatch(/2 EP × 2 ETP ranks/);
    expect(tensor(p, 'router', 'x').shape).toEqual([4, 16]); // s·b/t under SP
    expect(tensor(p, 'dispatch', 'gathered').shape).toEqual([16, 16]); // G = T·EP·ETP
    expect(tensor(p, 'experts', 'fc1').shape).toEqual([4, 16, 16]); // L = 8/2, 2f/ETP = 16
    expect(tensor(p, 'experts', 'fc2').shape).toEqual([4, 8, 16]);
    expect(tensor(p, 'shared', 'fc1').shape).toEqual([16, 8]); // [h, 2f_s/t]
    expect(tensor(p, 'shared', 'rows').shape).toEqual([8, 16]); // gathered over TP: T·t
    expect(p.stages[0]!.words).toMatch(/at most ⌈T·k\/E · 1⌉ = 1 picks per expert/);
  });

  test('with capacity the alltoall dispatch’s rows are the kept picks, not a fixed T·k', () => {
    const p = moePlan(moeRunArgsOf({ ...classroom, capacity: 1 }));
    expect(tensor(p, 'dispatch', 'permuted')).toMatchObject({ symbolic: '[≤ T·k, h]', shape: null });
  });

  test('once the run is in, each rank’s first expert and rows per local expert come from it', () => {
    const run = {
      ranks: [0, 1].map((rank) => ({ rank, firstExpert: 4 * rank, expertRows: [rank + 1, 2, 3, 4] })),
    } as unknown as MoeRun; // only the ranks' rows are read
    const p = moePlan(moeRunArgsOf({ ...classroom, ep: 2 }), run);
    expect(p.expertRows).toEqual([
      { rank: 0, experts: { firstExpert: 0, tokens: [1, 2, 3, 4] } },
      { rank: 1, experts: { firstExpert: 4, tokens: [2, 2, 3, 4] } },
    ]);
  });

  test('the shapes card’s owners: every rank of lcm(t, ETP·EP), its attention TP rank and DP replica, its experts and f′ columns', () => {
    const owners = (x: Settings) =>
      moePlan(moeRunArgsOf(x)).owners.map((o) => [o.rank, o.tp, o.dp, o.experts, o.expertFfn, o.edp]);
    // classroom: t 1, EP 4 → 4 ranks, each its own DP replica's attention and 2 of the 8 experts, whole f = 16
    expect(owners(classroom)).toEqual([
      [0, 0, 0, [0, 2], [0, 16], 0],
      [1, 0, 1, [2, 4], [0, 16], 0],
      [2, 0, 2, [4, 6], [0, 16], 0],
      [3, 0, 3, [6, 8], [0, 16], 0],
    ]);
    // t 2 with SP, EP 2, ETP 2 → lcm(2, 4) = 4: dense rank = tp + 2·dp, expert rank = etp + 2·ep (tp-cp-ep-dp-pp)
    expect(owners({ ...classroom, tp: 2, sp: true, ep: 2, etp: 2 })).toEqual([
      [0, 0, 0, [0, 4], [0, 8], 0],
      [1, 1, 0, [0, 4], [8, 16], 0],
      [2, 0, 1, [4, 8], [0, 8], 0],
      [3, 1, 1, [4, 8], [8, 16], 0],
    ]);
    // t 4 with SP, EP 2 → lcm(4, 2) = 4 ranks, EDP 2: ranks 0 and 2 (EDP replicas 0, 1) hold experts 0–3, ranks 1 and 3 experts 4–7
    expect(owners({ ...classroom, tp: 4, sp: true, ep: 2 }).map((o) => [o[0], o[1], o[3], o[5]])).toEqual([
      [0, 0, [0, 4], 0],
      [1, 1, [4, 8], 0],
      [2, 2, [0, 4], 1],
      [3, 3, [4, 8], 1],
    ]);
  });

  test('the shapes card’s weights: the router on every rank, each rank’s experts’ shard and the shared expert’s, in float32 bytes', () => {
    const rows = (x: Settings) =>
      moeWeightRows(moePlan(moeRunArgsOf(x))).map((w) => [w.stage, w.tensor.name, w.tensor.shape, w.bytes, w.holds]);
    expect(rows(classroom)).toEqual([
      ['router', 'W_r', [16, 8], 512, 'replicated'],
      ['experts', 'fc1', [2, 16, 32], 4096, 'shard'], // L = 8/4 experts of [h, 2f]
      ['experts', 'fc2', [2, 16, 16], 2048, 'shard'],
    ]);
    expect(rows({ ...classroom, ep: 1, tp: 2, sp: true, sharedFfn: 8 })).toEqual([
      ['router', 'W_r', [16, 8], 512, 'replicated'],
      ['experts', 'fc1', [8, 16, 32], 16384, 'replicated'], // EP 1, ETP 1: every expert on both ranks (EDP 2)
      ['experts', 'fc2', [8, 16, 16], 8192, 'replicated'],
      ['shared', 'fc1', [16, 8], 512, 'shard'], // [h, 2f_s/t]
      ['shared', 'fc2', [4, 16], 256, 'shard'],
    ]);
  });
});
