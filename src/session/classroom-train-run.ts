import type { LayerConfig } from '../parallel/config.ts';
import { referenceConfig } from '../parallel/oracle.ts';
import { charBatch, encodeChars } from '../parallel/train-batches.ts';
import { trainText } from '../parallel/train-text.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';
import type { RankPool } from '../ranks/pool.ts';

/** One step of the demo: the TP=t and TP=1 mean losses and the spread of the replicated norm gains. */
export interface TrainPoint {
  /** 1-based step. */
  readonly step: number;
  /** Mean loss of the TP=t run (before this step's update). */
  readonly loss: number;
  /** Mean loss of the TP=1 run on the same batch. */
  readonly lossRef: number;
  /** max over ranks r and elements i of |g_r[i] − g_0[i]| for the RMSNorm gains g1 and g2 after the update. */
  readonly spread: number;
}

/** What the demo runs: config (t, SP, the skip switch, sizes), K steps at learning rate lr. */
export interface TrainArgs {
  readonly config: LayerConfig;
  readonly steps: number;
  readonly lr: number;
  readonly signal?: AbortSignal;
  readonly onStep?: (p: TrainPoint) => void;
}

/** max_r max_i |a_r[i] − a_0[i]| over ranks' copies of one replicated tensor. */
export function replicaSpread(copies: readonly ArrayLike<number>[]): number {
  let m = 0;
  for (const c of copies.slice(1)) for (let i = 0; i < c.length; i++) m = Math.max(m, Math.abs(c[i] - copies[0][i]));
  return m;
}

/**
 * Trains the config's layer for K steps on the pool's t ranks and, on rank 0 alone, at TP = 1
 * from the same seeded weights, on the same character batches of the built-in text (each step:
 * forward, backward, Adam on every shard, src/ranks/classroom-train-programs.ts). Stops before
 * the next step when the signal aborts (rejecting with its reason); frees the runs either way.
 */
export async function trainClassroom(pool: RankPool<LayerWorkerPrograms>, a: TrainArgs): Promise<TrainPoint[]> {
  const c = a.config;
  if (pool.size !== c.tp) throw new Error(`trainClassroom: the pool has ${pool.size} ranks but t = ${c.tp}.`);
  if (c.vocab <= 0) throw new Error('trainClassroom: the layer needs a vocabulary (vocab > 0) to train on text.');
  if (!Number.isInteger(a.steps) || a.steps < 1)
    throw new Error(`trainClassroom: steps must be a whole number ≥ 1, got ${a.steps}.`);
  const tokens = encodeChars(trainText);
  const points: TrainPoint[] = [];
  try {
    await pool.run('trainStart', { id: 'tp', config: c });
    await pool.run('trainStart', { id: 'ref', config: referenceConfig(c), solo: true }, [0]);
    for (let k = 1; k <= a.steps; k++) {
      a.signal?.throwIfAborted();
      const inputs = charBatch(tokens, k - 1, c.s, c.b);
      const tp = await pool.run('trainStep', { id: 'tp', inputs, lr: a.lr });
      const [ref] = await pool.run('trainStep', { id: 'ref', inputs, lr: a.lr }, [0]);
      const spread = Math.max(replicaSpread(tp.map((r) => r.g1)), replicaSpread(tp.map((r) => r.g2)));
      const p = { step: k, loss: tp[0].loss, lossRef: ref.loss, spread };
      points.push(p);
      a.onStep?.(p);
    }
    return points;
  } finally {
    await pool.run('trainEnd', { id: 'tp' }).catch(() => undefined);
    await pool.run('trainEnd', { id: 'ref' }, [0]).catch(() => undefined);
  }
}
