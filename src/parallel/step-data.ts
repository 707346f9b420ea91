import { randomArray, rng } from '../reference/random.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import type { StepInputs } from './layer.ts';
import type { RankOwnership } from './plan-types.ts';
import { cutShard, logicalShape, logicalWeight, shardLayout, tensorSeed, weightsOf } from './weights.ts';
import type { WeightName } from './weight-names.ts';

/** Seeded token ids in [0, vocab): [s, b] as float32. */
function tokenIds(n: number, vocab: number, seed: number): Float32Array {
  const next = rng(seed);
  return Float32Array.from({ length: n }, () => Math.floor(next() * vocab));
}

/**
 * The step's logical data from the config's seed: ids and targets in [0, vocab) (with a
 * vocabulary), else x and the upstream gradient dy [s, b, h] uniform in ±1 (dy scaled by 1/(s·b),
 * the size a mean loss would give). TP=t and TP=1 runs of one config see the same data.
 */
export function stepInputs(c: LayerConfig): StepInputs {
  const tokens = c.s * c.b;
  if (c.vocab > 0) {
    return {
      ids: tokenIds(tokens, c.vocab, tensorSeed(c.seed, 'ids')),
      targets: tokenIds(tokens, c.vocab, tensorSeed(c.seed, 'targets')),
    };
  }
  const n = tokens * c.h;
  return { x: randomArray(n, tensorSeed(c.seed, 'x')), dy: randomArray(n, tensorSeed(c.seed, 'dy'), 1 / tokens) };
}

/** A shard as host data: its local shape and values. */
export interface ShardData {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** A rank's weight shards, cut from the seeded logical weights. */
export function rankWeightArrays(c: LayerConfig, own: RankOwnership): Partial<Record<WeightName, ShardData>> {
  const D = localDims(c);
  const out: Partial<Record<WeightName, ShardData>> = {};
  for (const name of weightsOf(c)) {
    const layout = shardLayout(c, D, own, name);
    out[name] = { shape: layout.shape, data: cutShard(logicalWeight(c, name), logicalShape(c, name), layout) };
  }
  return out;
}

/** Uploads a rank's shards through `make` (a backend's tensor constructor). */
export function uploadWeights<T>(
  shards: Partial<Record<WeightName, ShardData>>,
  make: (name: string, shape: readonly number[], data: Float32Array) => T,
): { [K in WeightName]?: T } {
  const w: { [K in WeightName]?: T } = {};
  for (const [name, s] of Object.entries(shards) as [WeightName, ShardData][]) w[name] = make(name, s.shape, s.data);
  return w;
}
