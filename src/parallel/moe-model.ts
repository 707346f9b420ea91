import type { MoeConfig } from '../reference/moe/config.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import type { Backend } from './backend.ts';
import type { LayerConfig } from './config.ts';
import { localDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import { blockBackward, blockForward, finalizeBlockGrads } from './layer.ts';
import type { MoeEpResult, MoeGroups, MoeTrace } from './moe-ep.ts';
import { moeLayerDenseWeights, moeLayerForward, sumOverDp } from './moe-layer.ts';
import type { MoeDispatcher } from './moe-layout.ts';
import type { RankOwnership } from './plan-types.ts';
import { rankWeightArrays } from './step-data.ts';
import type { WeightName } from './weight-names.ts';
import type { WeightSet } from './weights.ts';

// L transformer layers on one rank (pipeline p = 1), each with the dense MLP or the MoE block as
// its pattern says (moe-layer-freq.ts; gpt_layer_specs.py get_gpt_decoder_block_spec): layer ℓ's
// weights seeded by moeModelLayerSeed(c, ℓ), its MoE weights seededMoeWeights(mc, h, that seed).
//   forward  x → layer 0 → … → layer L−1 → y          (dense: layer.ts blockForward; MoE: moe-layer.ts)
//   backward dy → layer L−1 → … → layer 0 → dx        (each layer's own backward, in reverse)
// then per layer the norm gains' gradients over TP (SP) and every gradient over DP.

/** Layer ℓ's seed: the model's moved by 1000·(ℓ + 1), as the pipeline model's blocks (pipeline-model.ts layerSeed). */
export const moeModelLayerSeed = (c: LayerConfig, l: number): number => c.seed + 1000 * (l + 1);

/** Layer ℓ's attention config (its seed) and, when MoE, its logical MoE weights. */
export function moeModelLayer(c: LayerConfig, mc: MoeConfig, pattern: readonly boolean[], l: number) {
  const layer: LayerConfig = { ...c, seed: moeModelLayerSeed(c, l) };
  return { layer, moe: pattern[l]! ? seededMoeWeights(mc, c.h, layer.seed) : null };
}

/** The dense layer's weights (with its MLP). */
export const denseLayerWeights: readonly WeightName[] = [...moeLayerDenseWeights, 'wfc1', 'wdown'];

/** One rank's L layers, read back: y and dx [sl, b, h]; per layer its gradients (TP shards, summed over DP) and, for an MoE layer, the block's results. */
export interface MoeModelRankResult {
  readonly y: Float32Array;
  readonly dx: Float32Array;
  readonly layers: readonly {
    readonly grads: Partial<Record<WeightName, Float32Array>>;
    readonly moe: MoeEpResult | null;
    readonly moeInput: Float32Array | null;
  }[];
}

/**
 * The model's step on one rank (see the header): `pattern[ℓ]` true for an MoE layer; x and dy
 * [sl, b, h] the rank's tokens. Every layer's weights are cut from its seed here.
 */
export async function moeModelStep<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  c: LayerConfig,
  own: RankOwnership,
  groups: MoeGroups,
  mc: MoeConfig,
  pattern: readonly boolean[],
  x: Float32Array | Float64Array,
  dy: Float32Array | Float64Array,
  opts: { readonly dispatcher: MoeDispatcher; readonly trace?: MoeTrace },
): Promise<MoeModelRankResult> {
  const { sl, b, h } = localDims(c);
  const shape = [sl, b, h];
  const upload = (layer: LayerConfig, names: readonly WeightName[]): WeightSet<T> => {
    const shards = rankWeightArrays(layer, own);
    const w: WeightSet<T> = {};
    for (const n of names) w[n] = be.tensor(n, shards[n]!.shape, shards[n]!.data);
    return w;
  };
  type Back = (dy: T, grads: WeightSet<T>) => Promise<{ dx: T; moe: MoeEpResult | null }>;
  const backs: { back: Back; layer: LayerConfig; names: readonly WeightName[]; moeInput: Float32Array | null }[] = [];
  const pass = opts.trace?.pass ?? (() => {});
  pass('forward');
  let act = be.tensor('x', shape, x);
  for (let l = 0; l < pattern.length; l++) {
    const { layer, moe } = moeModelLayer(c, mc, pattern, l);
    if (moe) {
      const w = upload(layer, moeLayerDenseWeights);
      const f = await moeLayerForward(be, lc, layer, own, w, groups, mc, moe, act, opts);
      act = f.y;
      backs.push({ back: (d, g) => f.backward(d, g), layer, names: moeLayerDenseWeights, moeInput: f.moeInput });
    } else {
      const w = upload(layer, denseLayerWeights);
      const f = await blockForward(be, lc, layer, own, w, act);
      act = f.y;
      backs.push({
        back: async (d, g) => {
          const r = await blockBackward(be, lc, layer, w, f.saved, d, g);
          be.release(r.dx2);
          return { dx: r.dx, moe: null };
        },
        layer,
        names: denseLayerWeights,
        moeInput: null,
      });
    }
  }
  const y = await be.read(act);
  be.release(act);
  pass('backward');
  let d = be.tensor('dy', shape, dy);
  const grads = backs.map((): WeightSet<T> => ({}));
  const moes: (MoeEpResult | null)[] = [];
  for (let l = backs.length - 1; l >= 0; l--) {
    const r = await backs[l]!.back(d, grads[l]!);
    moes[l] = r.moe;
    d = r.dx;
  }
  const dx = await be.read(d);
  be.release(d);
  const layers = [];
  pass('finalize'); // every layer's SP norms' all-reduce and DP sum of the gradients
  for (const [l, s] of backs.entries()) {
    await finalizeBlockGrads(be, lc, s.layer, grads[l]!);
    layers.push({ grads: await sumOverDp(be, groups.dp, grads[l]!, s.names), moe: moes[l]!, moeInput: s.moeInput });
  }
  return { y, dx, layers };
}
