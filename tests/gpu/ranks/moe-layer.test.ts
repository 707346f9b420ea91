import { afterAll, describe, expect, test } from 'vitest';
import type { RankPool } from '../../../src/ranks/pool.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { moeLayerGridArgs, type MoeGridPoint } from '../../../src/parallel/moe-grid.ts';
import { moeWorld, type MoeLayout } from '../../../src/parallel/moe-layout.ts';
import { runMoeLayer, runMoeModel, type MoeLayerRunArgs } from '../../../src/session/moe-layer-run.ts';
import { moeLayerPattern } from '../../../src/parallel/moe-layer-freq.ts';
import { moePoolMesh, moeRankTolerance } from '../../../src/session/moe-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';
import { keptPools } from './helpers.ts';

// The transformer layer with the MoE block in place of the dense MLP on rank workers through its
// runner (src/session/moe-layer-run.ts; GPU backend: the attention half's WGSL over the TP group,
// the block's router, permute, grouped GEMMs and combine, their backward) equals one device in
// float64 (src/parallel/moe-layer-oracle.ts): y, dx, the block's input, the attention half's
// gradients, the routing, aux and z, the router's, experts' and shared expert's gradients. The
// points cover every value of the grid the Node test runs whole (tests/unit/parallel/moe-layer.test.ts):
// EP {1, 2, 4}, ETP {1, 2}, TP {1, 2} with SP, E {4, 8}, k {1, 2}, dropless and capacity 1, both
// dispatchers, a shared expert once. Tolerance moeRankTolerance (1e-4) relative to max(1,
// max|oracle|): float32 on the GPU through the attention half and the block's three GEMM-like
// stages over O(1) values; the routing margin is held above the float32 router's logit error
// bound widened by the rank's MoE input error, so equal picks follow from the bound.
const sizes = { s: 16, b: 1, h: 16, heads: 4, groups: 2, ffn: 6, seed: 40 };

// One pool per rank mesh, kept for the file: four of the runs below share EP 2, TP 2's (a pool's
// start and each device's first pipelines are paid once, as the page keeps its pools across runs).
const pools = keptPools<RankPool<LayerWorkerPrograms>>();
afterAll(() => pools.dispose());
function poolFor(l: MoeLayout): Promise<RankPool<LayerWorkerPrograms>> {
  const mesh = moePoolMesh(l);
  return pools.pool(JSON.stringify(mesh), () => createLayerPool(moeWorld(l), 'sab-ring', 10_000, mesh));
}

async function run(pt: MoeGridPoint, shared?: number, vocab = 0) {
  const g = moeLayerGridArgs(pt, sizes);
  const a: MoeLayerRunArgs = {
    layer: { ...g.layer, vocab },
    config: shared ? { ...g.config, moeSharedExpertIntermediateSize: shared } : g.config,
    layout: g.layout,
  };
  return runMoeLayer(await poolFor(a.layout), a);
}

describe('the MoE transformer layer on rank workers', () => {
  test.each<[MoeGridPoint, number | undefined]>([
    [{ ep: 1, etp: 1, tp: 1, dispatcher: 'alltoall', E: 4, k: 1 }, undefined],
    [{ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2, capacity: 1 }, undefined],
    [{ ep: 4, etp: 1, tp: 2, dispatcher: 'allgather', E: 8, k: 1, capacity: 1 }, undefined],
    [{ ep: 2, etp: 2, tp: 1, dispatcher: 'alltoall', E: 4, k: 2 }, 4],
    [{ ep: 1, etp: 2, tp: 2, dispatcher: 'allgather', E: 4, k: 2 }, undefined],
  ])('at %o (shared expert %s) equals one device', async (pt, shared) => {
    const r = await run(pt, shared);
    expect(r.layerOracle.failures).toEqual([]);
    expect(r.layerOracle.tolerance).toBe(moeRankTolerance);
    expect(r.oracle.sameRouting).toBe(true);
    if (pt.capacity !== undefined) expect(r.dropped, 'the capacity drops picks').toBeGreaterThan(0);
    if (shared) expect(r.oracle.checks.some((x) => x.what.includes('shared dfc1'))).toBe(true);
  });
});

test('with a vocabulary (embedding, output layer, cross entropy) the layer equals one device, the loss too (EP 2, TP 2 with SP)', async () => {
  const r = await run({ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2 }, undefined, 30);
  expect(r.layerOracle.failures).toEqual([]);
  expect(r.layerOracle.checks.filter((x) => x.what.endsWith(' loss'))).toHaveLength(2);
  expect(r.loss).toBeGreaterThan(0);
});

test('the MoE layer’s trace carries the attention passes and collectives, the all-to-alls with bytes per peer and the expert GEMMs with their rows (EP 2, TP 2 with SP)', async () => {
  const r = await run({ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2 });
  expect(r.layerOracle.failures).toEqual([]);
  for (const q of [0, 1]) {
    const mine = r.trace.filter((e) => e.rank === q);
    const compute = mine.filter((e) => e.stream === 'compute').map((e) => e.op);
    expect(compute).toEqual(['attention', 'moe.experts', 'moe.experts.backward', 'attention.backward']);
    const tensors = mine.filter((e) => e.stream === 'comm').map((e) => e.comm?.tensor);
    for (const t of [
      'ln1.gather',
      'attn.reduce',
      'moe.dispatch',
      'moe.combine',
      'attn.reduce.backward',
      'norm.grads.reduce',
    ])
      expect(tensors).toContain(t);
    const dispatch = mine.find((e) => e.comm?.tensor === 'moe.dispatch')!;
    const rows = [0, 1].map((j) => r.ranks[q]!.tokensPerExpert.slice(j * 4, (j + 1) * 4).reduce((n, v) => n + v, 0));
    expect(dispatch.comm!.peers!.sentBytes).toEqual(rows.map((n) => n * sizes.h * 4));
    const gemms = mine.filter((e) => e.experts);
    for (const g of gemms) expect(g.experts!.tokens).toEqual(r.ranks[q]!.expertRows);
  }
  expect(r.named[0]!.map((n) => n.name)).toContain('attn.reduce');
  expect(r.straggler.rows).toBe(Math.max(...r.ranks.map((x) => x.expertRows.reduce((a, b) => a + b, 0))));
});

test('three layers with --moe-layer-freq 2 (MoE, dense, MoE) on rank workers equal one device over the three layers (EP 2, TP 2 with SP, capacity 1)', async () => {
  const g = moeLayerGridArgs({ ep: 2, etp: 1, tp: 2, dispatcher: 'alltoall', E: 8, k: 2, capacity: 1 }, sizes);
  const pat = moeLayerPattern(2, 3);
  if (!('pattern' in pat)) throw new Error(pat.error);
  const pool = await poolFor(g.layout);
  const r = await runMoeModel(pool, { layer: g.layer, config: g.config, layout: g.layout, pattern: pat.pattern });
  expect(r.oracle.failures).toEqual([]);
  expect(r.layers.map((x) => x !== null)).toEqual([true, false, true]);
  for (const x of [r.layers[0]!, r.layers[2]!]) {
    expect(x.oracle.sameRouting).toBe(true);
    expect(x.dropped).toBeGreaterThan(0);
    expect(x.ranks.every((q) => q.dispatchBytes > 0)).toBe(true);
  }
  const gemms = r.trace.filter((e) => e.rank === 0 && e.experts).map((e) => e.op);
  expect(gemms).toEqual(['moe.experts', 'moe.experts', 'moe.experts.backward', 'moe.experts.backward']);
});
