import { describe, expect, test } from 'vitest';
import {
  groupKinds,
  maskedGroups,
  maxMeshRanks,
  rankMesh,
  rankOrder,
  type GroupKind,
  type MeshCoords,
  type MeshDegrees,
  type RankOrder,
} from '../../../src/mesh/rank-layout.ts';
import { groupName, memberName, rankName } from '../../../src/mesh/process-group.ts';

const orders: readonly RankOrder[] = ['tp-cp-ep-dp-pp', 'tp-cp-ep-pp-dp'];

describe("Megatron-Core's rank layout (parallel_state.py, core_v0.19.0)", () => {
  test("gives the initialize_model_parallel docstring's 16 ranks at t 2, p 4, d 2 (default order)", () => {
    const m = rankMesh({ tp: 2, pp: 4, dp: 2 });
    expect(m.world).toBe(16);
    expect(m.groups('tp')).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
      [8, 9],
      [10, 11],
      [12, 13],
      [14, 15],
    ]);
    expect(m.groups('dp')).toEqual([
      [0, 2],
      [1, 3],
      [4, 6],
      [5, 7],
      [8, 10],
      [9, 11],
      [12, 14],
      [13, 15],
    ]);
    expect(m.groups('pp')).toEqual([
      [0, 4, 8, 12],
      [1, 5, 9, 13],
      [2, 6, 10, 14],
      [3, 7, 11, 15],
    ]);
    // cp = 1: every CP group is one rank, and dp-cp is dp.
    expect(m.groups('cp')).toEqual(Array.from({ length: 16 }, (_, r) => [r]));
    expect(m.groups('dp-cp')).toEqual(m.groups('dp'));
    expect(m.coords(13)).toEqual({ tp: 1, cp: 0, dp: 0, pp: 3, etp: 1, ep: 0, edp: 0 });
  });

  test("gives generate_masked_orthogonal_rank_groups' docstring examples (tp-pp-dp 2-2-2; tp-dp-pp 2-3-4)", () => {
    // "if the gpu size is 8 and order is 'tp-pp-dp', size is '2-2-2', the dp_group here is [[0, 4], [1, 5], [2, 6], [3, 7]]"
    expect(rankMesh({ tp: 2, pp: 2, dp: 2 }, rankOrder(true)).groups('dp')).toEqual([
      [0, 4],
      [1, 5],
      [2, 6],
      [3, 7],
    ]);
    // [tp, dp, pp] = [2, 3, 4], mask dp: 24 ranks, more than a mesh here, so through maskedGroups itself.
    const dp = maskedGroups([2, 3, 4], [false, true, false]);
    expect(dp).toHaveLength(8);
    expect(dp[0]).toEqual([0, 2, 4]);
    expect(dp[1]).toEqual([1, 3, 5]);
    expect(dp[7]).toEqual([19, 21, 23]);
  });

  test('puts --use-tp-pp-dp-mapping stages next to each other and replicas far apart', () => {
    const m = rankMesh({ tp: 2, pp: 2, dp: 2 }, 'tp-cp-ep-pp-dp');
    expect(m.groups('tp')).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
    ]);
    expect(m.groups('pp')).toEqual([
      [0, 2],
      [1, 3],
      [4, 6],
      [5, 7],
    ]);
    expect(m.coords(6)).toMatchObject({ tp: 0, pp: 1, dp: 1 });
  });

  test('folds expert parallel into the dense ranks (etp-ep-edp-pp over the same world)', () => {
    // 8 ranks of tp 2 × dp 4; experts ep 4, etp 1: edp = 8 / (1·4·1) = 2; rank = ep + 4·edp.
    const m = rankMesh({ tp: 2, dp: 4, ep: 4, etp: 1 });
    expect(m.edp).toBe(2);
    expect(m.groups('ep')).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(m.groups('edp')).toEqual([
      [0, 4],
      [1, 5],
      [2, 6],
      [3, 7],
    ]);
    expect(m.groups('etp')).toEqual(Array.from({ length: 8 }, (_, r) => [r]));
    // Default etp = tp: tp 2 × dp 2, ep 2 → edp 1; EP strides over the TP pairs.
    const e = rankMesh({ tp: 2, dp: 2, ep: 2 });
    expect(e.groups('etp')).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(e.groups('ep')).toEqual([
      [0, 2],
      [1, 3],
    ]);
    expect(e.groups('edp')).toEqual([[0], [1], [2], [3]]);
  });

  test('names a rank by its coordinates and a group by its kind, index and members', () => {
    const m = rankMesh({ tp: 2, dp: 2 });
    expect(rankName(m.spec, 3)).toBe('rank 3 (tp 1, cp 0, dp 1, pp 0)');
    const dp1 = { kind: 'dp' as const, index: 1, members: m.groups('dp')[1]!, mesh: m.spec };
    expect(groupName(dp1)).toBe('the DP group 1 (ranks 1, 3)');
    expect(memberName(dp1, 1)).toBe('rank 3 (tp 1, cp 0, dp 1, pp 0)');
    expect(memberName({ ...dp1, kind: 'ep' }, 0)).toBe('rank 1 (tp 1, cp 0, dp 0, pp 0; etp 1, ep 0, edp 0)');
  });
});

/** Σ coord · stride over `order` with `sizes`, first token fastest: the rank of those coordinates. */
function rankAt(order: RankOrder, sizes: Record<string, number>, coord: Record<string, number>): number {
  let r = 0;
  let stride = 1;
  for (const t of order.split('-')) {
    r += (coord[t] ?? 0) * stride;
    stride *= sizes[t] ?? 1;
  }
  return r;
}

/** Every legal mesh of at most maxMeshRanks ranks, in both orders, with every ep and etp that fits. */
function allMeshes(): { d: MeshDegrees; order: RankOrder }[] {
  const out: { d: MeshDegrees; order: RankOrder }[] = [];
  const divisors = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1).filter((k) => n % k === 0);
  for (const tp of divisors(16))
    for (const cp of divisors(16 / tp))
      for (const dp of divisors(16 / tp / cp))
        for (const pp of divisors(16 / tp / cp / dp)) {
          const world = tp * cp * dp * pp;
          for (const etp of divisors(world / pp))
            for (const ep of divisors(world / pp / etp))
              for (const order of orders) {
                const edp = world / (etp * ep * pp);
                if (!order.endsWith('pp') && pp > 1 && edp !== dp) continue;
                out.push({ d: { tp, cp, dp, pp, ep, etp }, order });
              }
        }
  return out;
}

describe('the layout against an independent enumeration', () => {
  const meshes = allMeshes();

  test(`covers every legal mesh of at most ${maxMeshRanks} ranks (${meshes.length} of them, both orders)`, () => {
    expect(meshes.length).toBeGreaterThan(500);
  });

  test('every group of every kind is exactly the ranks that share every other coordinate, and coordinates rebuild the rank', () => {
    // Independent of the port: each rank's coordinates read off by division (coordinate = ⌊r / stride⌋ mod size),
    // then groups formed by collecting the ranks whose other coordinates agree.
    const dims: Record<GroupKind, readonly (keyof MeshCoords)[]> = {
      tp: ['tp'],
      cp: ['cp'],
      dp: ['dp'],
      pp: ['pp'],
      'dp-cp': ['dp', 'cp'],
      etp: ['etp'],
      ep: ['ep'],
      edp: ['edp'],
    };
    for (const { d, order } of meshes) {
      const m = rankMesh(d, order);
      const world = d.tp * d.cp * d.dp * d.pp;
      const edp = world / (d.etp * d.ep * d.pp);
      const dense = { tp: d.tp, cp: d.cp, ep: 1, dp: d.dp, pp: d.pp };
      const expert = { tp: d.etp, cp: 1, ep: d.ep, dp: edp, pp: d.pp };
      const coordOf = (r: number, sizes: Record<string, number>, t: string): number => {
        let stride = 1;
        for (const u of order.split('-')) {
          if (u === t) return Math.floor(r / stride) % sizes[u]!;
          stride *= sizes[u]!;
        }
        throw new Error(t);
      };
      const want = (r: number): MeshCoords => ({
        tp: coordOf(r, dense, 'tp'),
        cp: coordOf(r, dense, 'cp'),
        dp: coordOf(r, dense, 'dp'),
        pp: coordOf(r, dense, 'pp'),
        etp: coordOf(r, expert, 'tp'),
        ep: coordOf(r, expert, 'ep'),
        edp: coordOf(r, expert, 'dp'),
      });
      const what = `${JSON.stringify(d)} ${order}`;
      const ranks = [...Array(world).keys()];
      const coords = ranks.map((r) => m.coords(r));
      expect(coords, what).toEqual(ranks.map(want));
      // The coordinates rebuild the rank in both generators.
      expect(
        coords.map((c) => [
          rankAt(order, dense, { tp: c.tp, cp: c.cp, dp: c.dp, pp: c.pp }),
          rankAt(order, expert, { tp: c.etp, ep: c.ep, dp: c.edp, pp: c.pp }),
        ]),
        what,
      ).toEqual(ranks.map((r) => [r, r]));
      const all: (keyof MeshCoords)[] = ['tp', 'cp', 'dp', 'pp', 'etp', 'ep', 'edp'];
      const ofGenerator = (kind: GroupKind): (keyof MeshCoords)[] =>
        ['etp', 'ep', 'edp'].includes(kind) ? ['etp', 'ep', 'edp', 'pp'] : ['tp', 'cp', 'dp', 'pp'];
      const sorted = (gs: readonly (readonly number[])[]) => gs.map((g) => g.join(',')).sort();
      const got: Record<string, string[]> = {};
      const expected: Record<string, string[]> = {};
      for (const kind of groupKinds) {
        // The other coordinates of the same generator stay fixed within a group.
        const kept = all.filter((k) => ofGenerator(kind).includes(k) && !dims[kind].includes(k));
        const byKey = new Map<string, number[]>();
        for (const r of ranks) {
          const key = kept.map((k) => want(r)[k]).join(',');
          byKey.set(key, [...(byKey.get(key) ?? []), r]);
        }
        got[kind] = sorted(m.groups(kind));
        expected[kind] = sorted([...byKey.values()]);
        // Members in ring order ascend (every order's strides grow).
        m.groups(kind).forEach((g) => g.forEach((r, i) => i > 0 && r < g[i - 1]! && (got[kind] = ['unsorted'])));
      }
      expect(got, what).toEqual(expected);
    }
  });
});

describe('bad meshes are refused with the reason and what to write', () => {
  test(`more than ${maxMeshRanks} ranks`, () => {
    expect(() => rankMesh({ tp: 4, dp: 2, pp: 4 })).toThrow(
      'mesh: tp 4 × cp 1 × dp 2 × pp 4 = 32 ranks, more than the 16 allowed here (each rank is a worker with its own GPUDevice, and one shared-memory ring serves at most 16 ranks); lower a degree so that the product is at most 16.',
    );
  });

  test('a degree that is not a whole number ≥ 1', () => {
    expect(() => rankMesh({ tp: 2, dp: 0 })).toThrow(
      'mesh: dp 0 must be a whole number ≥ 1 (1 leaves that dimension out).',
    );
    expect(() => rankMesh({ pp: 1.5 })).toThrow('mesh: pp 1.5 must be a whole number ≥ 1');
  });

  test('experts that do not divide the ranks', () => {
    expect(() => rankMesh({ tp: 2, dp: 3, ep: 4 })).toThrow(
      'mesh: the 6 ranks do not divide into etp 2 × ep 4 × pp 1 = 8 (Megatron: world size not divisible by expert_tensor_model_pipeline_parallel size); choose ep and etp whose product with pp divides 6.',
    );
  });

  test('pp not last with a different expert data parallel degree', () => {
    expect(() => rankMesh({ tp: 2, dp: 2, pp: 2, ep: 2 }, 'tp-cp-ep-pp-dp')).toThrow(
      /with order tp-cp-ep-pp-dp \(pp not last\) and pp 2 > 1 the experts' data parallel degree \(1\) must equal dp 2/,
    );
  });

  test('a rank outside the mesh', () => {
    expect(() => rankMesh({ tp: 2 }).groupOf(2, 'tp')).toThrow('mesh: rank 2 is not a rank of this mesh of 2 (0…1).');
  });
});
