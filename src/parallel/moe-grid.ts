import { moeConfig, type MoeConfig } from '../reference/moe/config.ts';
import { configDefaults, type LayerConfig } from './config.ts';
import { moeLayout, type MoeDispatcher, type MoeLayout } from './moe-layout.ts';

/** One point of the grid the MoE block on the ranks is checked over against one device. */
export interface MoeGridPoint {
  readonly ep: number;
  readonly etp: number;
  /** TP degree of the attention mesh, with SP (Megatron requires it for MoE at t > 1). */
  readonly tp: number;
  readonly dispatcher: MoeDispatcher;
  /** Routed experts. */
  readonly E: number;
  /** Top-k. */
  readonly k: number;
  /** moe_expert_capacity_factor (dropping by probability); absent: dropless. */
  readonly capacity?: number;
}

/**
 * EP {1, 2, 4} × ETP {1, 2} × TP {1, 2} with SP × E {4, 8} × k {1, 2} × {dropless, capacity 1} ×
 * {alltoall, allgather}: 192 points, each on lcm(tp, etp·ep) ≤ 8 ranks.
 */
export const moeGrid: readonly MoeGridPoint[] = [1, 2, 4].flatMap((ep) =>
  [1, 2].flatMap((etp) =>
    [1, 2].flatMap((tp) =>
      (['alltoall', 'allgather'] as const).flatMap((dispatcher) =>
        [4, 8].flatMap((E) =>
          [1, 2].flatMap((k) =>
            [undefined, 1].map((capacity) => ({ ep, etp, tp, dispatcher, E, k, ...(capacity ? { capacity } : {}) })),
          ),
        ),
      ),
    ),
  ),
);

/** The sizes every grid point runs at: hidden h, tokens per rank, the expert FFN width, the seed. */
export interface MoeGridSizes {
  readonly h: number;
  readonly tokens: number;
  readonly ffn: number;
  readonly seed: number;
}

/** What a point runs with (session/moe-run.ts MoeRunArgs takes it as it is). */
export interface MoeGridArgs extends MoeGridSizes {
  readonly config: MoeConfig;
  readonly layout: MoeLayout;
}

/** A point's run: softmax after top-k (before it at k = 1, which Megatron requires), aux 0.01, z 0.001. */
export function moeGridArgs(pt: MoeGridPoint, z: MoeGridSizes): MoeGridArgs {
  return {
    config: moeConfig(
      { numMoeExperts: pt.E, moeRouterTopk: pt.k, moeFfnHiddenSize: z.ffn },
      {
        moeRouterPreSoftmax: pt.k === 1,
        moeExpertCapacityFactor: pt.capacity ?? null,
        moeAuxLossCoeff: 0.01,
        moeZLossCoeff: 0.001,
      },
    ),
    ...z,
    layout: moeLayout(pt.ep, { etp: pt.etp, tp: pt.tp, sp: true, dispatcher: pt.dispatcher }),
  };
}

/** The sizes of the MoE layer's grid: the attention half's (vocab 0) and the block's width (ffn) and seed. */
export type MoeLayerGridSizes = Pick<LayerConfig, 's' | 'b' | 'h' | 'heads' | 'groups' | 'ffn' | 'seed'>;

/** A point's MoE layer: the attention config at the point's TP with SP (vocab 0, no dense MLP run), and the block's args. */
export function moeLayerGridArgs(
  pt: MoeGridPoint,
  z: MoeLayerGridSizes,
): MoeGridArgs & { readonly layer: LayerConfig } {
  const layer: LayerConfig = {
    ...configDefaults,
    s: z.s,
    b: z.b,
    h: z.h,
    heads: z.heads,
    groups: z.groups,
    ffn: z.ffn,
    vocab: 0,
    tp: pt.tp,
    sp: pt.tp > 1,
    seed: z.seed,
  };
  return { ...moeGridArgs(pt, { h: z.h, tokens: (z.s / pt.tp) * z.b, ffn: z.ffn, seed: z.seed }), layer };
}
