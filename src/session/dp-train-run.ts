import type { TraceEvent } from '../core/trace-event.ts';
import type { GradBufferLayout } from '../mesh/grad-buckets.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { checkDpOptions, type DpOptions } from '../parallel/dp-options.ts';
import { dpOracle, type DpOracleReport, type ReferenceStep, type ReplicaStep } from '../parallel/dp-oracle.ts';
import { referenceConfig } from '../parallel/oracle.ts';
import { charBatch, encodeChars } from '../parallel/train-batches.ts';
import { trainText } from '../parallel/train-text.ts';
import type { WeightName } from '../parallel/weight-names.ts';
import { adamHyper } from '../reference/adam.ts';
import type { RankPool } from '../ranks/pool.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';

/** What a data-parallel run takes: the TP layer's config (its t the mesh's tp), the sync, K steps at lr. */
export interface DpTrainArgs {
  readonly config: LayerConfig;
  readonly dp: DpOptions;
  readonly steps: number;
  readonly lr: number;
}

/** What it measured and checked. */
export interface DpTrainRun {
  /** Per step, per global rank: the mean loss of its replica's micro-batch. */
  readonly losses: number[][];
  /** Per step: the one-device run's mean loss over the global batch. */
  readonly referenceLosses: number[];
  /** The gradient buffer's layout of each TP rank. */
  readonly layouts: GradBufferLayout<WeightName>[];
  readonly oracle: DpOracleReport;
  /** Per global rank: the elements of each of Adam's moments it holds (the buffer's, or 1/d of it with the distributed optimizer). */
  readonly momentElems: number[];
  /** Every rank's trace events of the run (the DP syncs carry `dpSync`). */
  readonly trace: TraceEvent[];
}

/**
 * Trains the config's layer with data parallel on a mesh pool of t × d ranks
 * (src/ranks/dp-train-programs.ts) and, on rank 0 alone, the same layer on one device over the same
 * global batch by gradient accumulation (src/ranks/grad-accum-programs.ts); checks them against
 * each other after every step (parallel/dp-oracle.ts). Step k's global batch is d micro-batches of
 * the built-in text, replica q taking charBatch(k·d + q).
 */
export async function trainDataParallel(pool: RankPool<LayerWorkerPrograms>, a: DpTrainArgs): Promise<DpTrainRun> {
  const c = a.config;
  const deg = pool.mesh.spec.degrees;
  if (deg.tp !== c.tp || deg.cp !== 1 || deg.pp !== 1)
    throw new Error(
      `trainDataParallel: the pool's mesh is tp ${deg.tp} × cp ${deg.cp} × dp ${deg.dp} × pp ${deg.pp}; data parallel here needs tp = t = ${c.tp}, cp 1, pp 1.`,
    );
  checkDpOptions(a.dp);
  if (c.vocab <= 0) throw new Error('trainDataParallel: the layer needs a vocabulary (vocab > 0) to train on text.');
  if (!Number.isInteger(a.steps) || a.steps < 1)
    throw new Error(`trainDataParallel: steps must be a whole number ≥ 1, got ${a.steps}.`);
  const d = deg.dp;
  const places = Array.from({ length: pool.size }, (_, r) => pool.mesh.coords(r));
  const tokens = encodeChars(trainText);
  const batch = (k: number, q: number) => charBatch(tokens, k * d + q, c.s, c.b);
  await pool.traces();
  try {
    const started = await pool.run('dpTrainStart', { id: 'dp', config: c, dp: a.dp });
    await pool.run('accumStart', { id: 'dp.ref', config: referenceConfig(c) }, [0]);
    const layouts = Array.from({ length: c.tp }, (_, tp) => {
      const s = started[places.findIndex((p) => p.tp === tp)]!;
      return {
        params: s.params,
        buckets: s.buckets,
        numel: s.numel,
        dp: s.dp,
        distributedOptimizer: a.dp.mode === 'distributed-optimizer',
      };
    });
    const losses: number[][] = [];
    const referenceLosses: number[] = [];
    const reference: ReferenceStep[] = [];
    const replicas: ReplicaStep[][] = places.map(() => []);
    let momentElems: number[] = [];
    for (let k = 0; k < a.steps; k++) {
      const replies = await pool.run('dpTrainStep', (r) => ({
        id: 'dp',
        inputs: batch(k, places[r]!.dp),
        lr: a.lr,
        read: true,
      }));
      const [ref] = await pool.run(
        'accumStep',
        { id: 'dp.ref', batches: Array.from({ length: d }, (_, q) => batch(k, q)), lr: a.lr, read: true },
        [0],
      );
      losses.push(replies.map((x) => x.loss));
      referenceLosses.push(ref!.loss);
      reference.push({ grads: ref!.grads!, weights: ref!.weights! });
      replies.forEach((x, r) => replicas[r]!.push({ weights: x.weights!, grads: x.grads! }));
      momentElems = replies.map((x) => x.moments!.reduce((n, p) => n + p.m.length, 0));
    }
    const oracle = dpOracle(c, adamHyper(a.lr), layouts, places, reference, replicas);
    return { losses, referenceLosses, layouts, oracle, momentElems, trace: await pool.traces() };
  } finally {
    await pool.run('dpTrainEnd', { id: 'dp' }).catch(() => undefined);
    await pool.run('accumEnd', { id: 'dp.ref' }, [0]).catch(() => undefined);
  }
}
