import { afterAll, expect, test } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { DpOracleReport } from '../../../src/parallel/dp-oracle.ts';
import type { DpOptions } from '../../../src/parallel/dp-options.ts';
import type { RankPool } from '../../../src/ranks/pool.ts';
import type { PoolTransport } from '../../../src/ranks/transport.ts';
import { trainDataParallel } from '../../../src/session/dp-train-run.ts';
import type { LayerWorkerPrograms } from '../../../src/session/layer-run.ts';
import { createLayerPool } from '../../../src/session/pools.ts';

// Data parallel on a mesh of t × d rank workers (one GPUDevice each), two Adam steps, checked
// against the unsharded optimizer on one device over the same global batch (gradient accumulation
// over the d micro-batches): parallel/dp-oracle.ts states the tolerances (the layer oracle's
// float32 bound on every averaged gradient, Adam's drift bound on every weight) and requires the
// replicas' weights to be bit-identical. The classroom layer (h 16, vocab 32) keeps it small; a
// bucket size of 600 elements cuts its ≈ 3.4k parameters (t = 1) into several buckets.
//
// {all-reduce, distributed optimizer} × {overlapped, not} on two corners of t ∈ {1, 2} × d ∈ {2, 4}:
// t 1 × d 2 (no TP, the smallest DP group) and t 2 × d 4 (TP collectives in the layer, two DP groups
// of 4); t 1 × d 4 and t 2 × d 2 run no code path these miss (a ring of 4 is t 2 × d 4's, TP beside
// DP too). Then two at t = 2 with sequence parallel, where the norm gains' gradients are final only
// after their TP all-reduce, so their bucket's DP sync waits for it; and one over MessagePorts
// instead of the shared-memory ring. Ordered so that runs on one mesh follow each other (the pool
// is kept until the mesh changes).
type Case = { t: number; d: number; sp?: boolean; transport?: PoolTransport } & DpOptions;
const modes = ['all-reduce', 'distributed-optimizer'] as const;
const grid: Case[] = [
  ...[
    [1, 2],
    [2, 4],
  ].flatMap(([t, d]) => modes.flatMap((mode) => [true, false].map((overlap): Case => ({ t, d, mode, overlap })))),
  { t: 2, d: 4, mode: 'all-reduce', overlap: true, sp: true },
  { t: 2, d: 2, mode: 'distributed-optimizer', overlap: true, sp: true },
  { t: 2, d: 2, mode: 'distributed-optimizer', overlap: true, transport: 'message-port' },
];
const bucketSize = 600;

let pool: { key: string; pool: RankPool<LayerWorkerPrograms> } | undefined;
afterAll(() => pool?.pool.dispose());

async function meshPool(
  t: number,
  d: number,
  transport: 'auto' | PoolTransport,
): Promise<RankPool<LayerWorkerPrograms>> {
  const key = `${t}x${d} ${transport}`;
  if (pool?.key !== key) {
    await pool?.pool.dispose();
    pool = { key, pool: await createLayerPool(t * d, transport, 30_000, { degrees: { tp: t, dp: d } }) };
  }
  return pool.pool;
}

const failures = (r: DpOracleReport) =>
  r.checks
    .filter((x) => !x.pass)
    .slice(0, 8)
    .map((x) => `step ${x.step} ${x.what}: |err| ${x.maxAbs.toExponential(2)}, ${x.ratio.toFixed(2)}× its tolerance`)
    .join('; ');

for (const cs of grid) {
  const name = `t ${cs.t} × d ${cs.d}${cs.sp ? ' with SP' : ''}, ${cs.mode}, ${cs.overlap ? 'overlapped' : 'after backward'}${cs.transport ? ` over ${cs.transport}` : ''}`;
  test(`data parallel (${name}): two Adam steps equal one device's, and the replicas agree bit for bit`, {
    timeout: 600_000,
  }, async () => {
    const p = await meshPool(cs.t, cs.d, cs.transport ?? 'auto');
    const config = configFromPreset('classroom', { tp: cs.t, sp: cs.sp ?? false });
    const run = await trainDataParallel(p, {
      config,
      dp: { mode: cs.mode, overlap: cs.overlap, bucketSize },
      steps: 2,
      lr: 0.01,
    });
    const w = run.oracle.worst;
    console.log(
      `${name}: worst check ${w.what} step ${w.step}: |err| ${w.maxAbs.toExponential(2)} (${w.ratio.toFixed(3)}× tolerance); buckets ${run.layouts[0]!.buckets.length}`,
    );
    expect(run.oracle.pass, failures(run.oracle)).toBe(true);

    // The sync blocks in the trace: per rank and step, one gradient sync per bucket (and one
    // all-gather per bucket with the distributed optimizer), each over the d ranks of its DP group
    // with the bucket's bytes.
    const layout = run.layouts[0]!;
    const buckets = layout.buckets.length;
    if (cs.overlap) expect(buckets).toBeGreaterThan(1);
    else expect(buckets).toBe(1);
    // ZeRO-1: with the distributed optimizer each rank holds 1/d of Adam's state.
    expect(run.momentElems).toEqual(
      run.momentElems.map(() => layout.numel / (cs.mode === 'distributed-optimizer' ? cs.d : 1)),
    );
    const syncs = run.trace.filter((e) => e.dpSync);
    const perStep = buckets * (cs.mode === 'distributed-optimizer' ? 2 : 1);
    expect(syncs.length).toBe(cs.t * cs.d * 2 * perStep);
    for (const e of syncs) {
      const s = e.dpSync!;
      expect(e.comm!.groupSize).toBe(cs.d);
      expect(e.comm!.transport).toBe(cs.transport ?? 'sab-ring');
      expect(e.bytes).toBe(4 * s.numel);
      expect(e.op).toBe(
        { 'grad-all-reduce': 'allReduce', 'grad-reduce-scatter': 'reduceScatter', 'param-all-gather': 'allGather' }[
          s.sync
        ],
      );
    }
    // Overlapped: every bucket but the last is issued while backward still has gradients to
    // produce; after backward: none is.
    const rank0 = syncs.filter((e) => e.rank === 0 && e.dpSync!.step === 1 && e.dpSync!.sync !== 'param-all-gather');
    expect(rank0.map((e) => e.dpSync!.bucket)).toEqual([...Array(buckets).keys()]);
    const toCome = rank0.map((e) => e.dpSync!.gradsToCome);
    if (cs.overlap) {
      expect(toCome.slice(0, -1).every((n) => n > 0)).toBe(true);
      expect(toCome.at(-1)).toBe(0);
    } else expect(toCome.every((n) => n === 0)).toBe(true);
  });
}

test('a bucket size that is not a whole number ≥ 1, or a sync mode not known, is refused before the ranks see it', {
  timeout: 120_000,
}, async () => {
  const p = await meshPool(1, 2, 'auto');
  const config = configFromPreset('classroom', { tp: 1 });
  const train = (dp: DpOptions) => trainDataParallel(p, { config, dp, steps: 1, lr: 0.01 });
  await expect(train({ mode: 'all-reduce', overlap: true, bucketSize: 0.5 })).rejects.toThrow(
    /bucket size 0.5 must be a whole number of elements ≥ 1/,
  );
  await expect(train({ mode: 'zero-3' as never, overlap: false })).rejects.toThrow(
    /sync mode "zero-3" is not one of all-reduce, distributed-optimizer/,
  );
  // The pool is still good for a run.
  expect((await train({ mode: 'all-reduce', overlap: false })).oracle.pass).toBe(true);
});
