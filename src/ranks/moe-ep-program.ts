import { moeEpBlock, type MoeEpResult, type MoeGroups, type MoeTrace } from '../parallel/moe-ep.ts';
import type { MoeDispatcher } from '../parallel/moe-layout.ts';
import type { MoeConfig } from '../reference/moe/config.ts';
import { seededMoeWeights } from '../reference/moe/weights.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { kernelContext } from './layer-programs.ts';

/** One rank's MoE block: its tokens x and dy [T, h], the config, the seed of the logical weights, the dispatcher and SP. */
export interface MoeEpArgs {
  readonly config: MoeConfig;
  readonly h: number;
  readonly seed: number;
  readonly x: Float32Array;
  readonly dy: Float32Array;
  readonly dispatcher: MoeDispatcher;
  /** Each TP rank holds tokens of its own (sequence parallel), or the TP group the same ones (M036). */
  readonly sp: boolean;
}

/** Where a rank's MoE step records: its trace, its global rank, and each pass it enters (TraceRecorder.setPass; the program resets it after). */
export const rankMoeTrace = (ctx: RankContext): MoeTrace => ({
  sink: ctx.trace,
  rank: ctx.mesh.rank,
  pass: (p) => ctx.trace.setPass(p),
});

/**
 * The MoE block on this rank's GPU over its mesh's ep, etp, tp, dp and edp groups
 * (parallel/moe-ep.ts): every rank builds the same logical weights from the seed
 * (seededMoeWeights) and keeps the router and its shard of its own experts. Its expert GEMMs go on
 * the rank's trace as compute events with their token rows (`experts`).
 */
export async function moeEpProgram(ctx: RankContext, a: MoeEpArgs): Promise<MoeEpResult> {
  const be = new GpuBackend(kernelContext(ctx.device));
  const g = (kind: keyof MoeGroups) => ctx.mesh.group(kind).comm;
  try {
    return await moeEpBlock(
      be,
      { ep: g('ep'), etp: g('etp'), tp: g('tp'), dp: g('dp'), edp: g('edp') },
      a.config,
      a.h,
      a.x,
      a.dy,
      seededMoeWeights(a.config, a.h, a.seed),
      { dispatcher: a.dispatcher, sp: a.sp, trace: rankMoeTrace(ctx) },
    );
  } finally {
    ctx.trace.setPass(undefined);
    be.releaseAll();
  }
}

/** The MoE programs of the layer's rank workers (they run WGSL kernels, so not the collectives-only worker's). */
export const moeEpPrograms = { moeEp: moeEpProgram };
