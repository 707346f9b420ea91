import { moeEpBlock, type MoeEpResult } from '../parallel/moe-ep.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import type { GroupKind } from '../mesh/rank-layout.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { kernelContext } from './layer-programs.ts';

/** One EP rank's MoE block: its tokens x and dy [T, h], the config and the seed of the logical weights. */
export interface MoeEpArgs {
  /** The group the experts are spread over (default 'ep'). */
  readonly group?: GroupKind;
  readonly config: MoeConfig;
  readonly h: number;
  readonly seed: number;
  readonly x: Float32Array;
  readonly dy: Float32Array;
}

/**
 * The MoE block with the alltoall dispatcher on this rank's GPU over its EP group
 * (parallel/moe-ep.ts): every rank builds the same logical weights from the seed
 * (seededMoeWeights) and keeps the router and its own experts' shards. Its expert GEMMs go on the
 * rank's trace as compute events with their token rows (`experts`).
 */
export async function moeEpProgram(ctx: RankContext, a: MoeEpArgs): Promise<MoeEpResult> {
  const be = new GpuBackend(kernelContext(ctx.device));
  try {
    return await moeEpBlock(
      be,
      ctx.mesh.group(a.group ?? 'ep').comm,
      a.config,
      a.h,
      a.x,
      a.dy,
      seededMoeWeights(a.config, a.h, a.seed),
      { sink: ctx.trace, rank: ctx.mesh.rank },
    );
  } finally {
    be.releaseAll();
  }
}

/** The MoE programs of the layer's rank workers (they run WGSL kernels, so not the collectives-only worker's). */
export const moeEpPrograms = { moeEp: moeEpProgram };
