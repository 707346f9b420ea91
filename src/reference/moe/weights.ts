import { randomArray } from '../random.ts';
import type { MoeWeights } from './block.ts';
import type { MoeConfig } from './config.ts';

/**
 * Seeded MoE weights for hidden size h, every entry uniform in [−scale, scale) (float32 values,
 * held as float64): router [h, E], fc1 [E, h, 2f], fc2 [E, f, h], shared fc1 [h, 2fs] and fc2 [fs, h].
 * The same seed gives the same logical weights on every rank and in the single-device reference.
 */
export function seededMoeWeights(c: MoeConfig, h: number, seed: number, scale = 0.5): MoeWeights {
  const E = c.numMoeExperts;
  const f = c.moeFfnHiddenSize;
  const fs = c.moeSharedExpertIntermediateSize;
  const w = (n: number, s: number): Float64Array => Float64Array.from(randomArray(n, seed + s, scale));
  return {
    router: w(h * E, 0),
    fc1: w(E * h * 2 * f, 1),
    fc2: w(E * f * h, 2),
    shared: fs === null ? null : { fc1: w(h * 2 * fs, 3), fc2: w(fs * h, 4) },
  };
}
