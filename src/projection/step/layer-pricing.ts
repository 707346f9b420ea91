import { configDefaults, type LayerConfig } from '../../parallel/config.ts';
import { makePlan } from '../../parallel/plan.ts';
import type { LayerPlan, PlannedOp } from '../../parallel/plan-types.ts';
import { setupConfig, type TrainingSetup } from '../../megatron/training-setup.ts';
import type { Timeline } from '../../schedule/schedule.ts';
import { projectLayer, projectOps, type Machine } from '../layer/projected-layer.ts';
import { stagePieces } from '../layer/stage-pieces.ts';
import { coreAttentionMs } from '../links/context-parallel.ts';

/** The two plans of a configuration: with the vocabulary (one block inside) and the block alone. */
export type LayerPlans = { readonly full: LayerPlan; readonly block: LayerPlan };

/** The two plans of a configuration (LayerPlans). */
export async function plans(c: LayerConfig): Promise<LayerPlans> {
  const full = (await makePlan(c)).plan;
  const block = c.vocab > 0 ? (await makePlan({ ...c, vocab: 0 })).plan : full;
  return { full, block };
}
/**
 * What a step's layers cost on a machine, independent of depth, degrees other than t and cp,
 * batch and recompute: the two plans one rank runs (with the vocabulary, and one block alone)
 * scheduled with projected kernels and TP links, their pieces, core attention's time, and the
 * TP = 1 GEMM FLOPs. Setups with the same sizes, micro-batch, t, SP, cp and overlap on the same
 * machine share it (the advisor caches it: planning and scheduling the layer is the expensive
 * part of a step).
 */
export interface LayerPricing {
  readonly full: LayerPlan;
  readonly block: LayerPlan;
  readonly fullT: Timeline;
  readonly blockT: Timeline;
  readonly pieces: ReturnType<typeof stagePieces>;
  readonly core: ReturnType<typeof coreAttentionMs>;
  /** The TP = 1, full-sequence plans (model FLOPs). */
  readonly ref: { readonly full: LayerPlan; readonly block: LayerPlan };
}

/**
 * Which TP ranks a pricing schedules: `all` (the timelines the page draws) or `first`, rank 0
 * alone. The two give the same step, exposed time and memory: projectOps prices every rank's op
 * alike (the ranks run the same shapes) and a collective's transfer is the slowest member's, so
 * rank 0's timeline is every rank's; `first` costs 1/t of the scheduling.
 */
export type PricedRanks = 'all' | 'first';

/**
 * The model-FLOP plans of `setup`'s sizes: TP = 1, the full sequence (no CP), no SP. They depend
 * on the sizes and micro-batch alone, so a search shares them across t and cp.
 */
export function referencePlans(setup: TrainingSetup): Promise<LayerPricing['ref']> {
  return plans({ ...configDefaults, ...setup.sizes, tp: 1, sp: false });
}

/** Prices the layer of `setup` on `machine` (the part of a step planning and scheduling give). */
export async function priceLayers(
  setup: TrainingSetup,
  machine: Machine,
  ranks: PricedRanks = 'all',
  reference?: Promise<LayerPricing['ref']>,
  planned0?: Promise<LayerPlans>,
): Promise<LayerPricing> {
  const c = setupConfig(setup);
  const planned = await (planned0 ?? plans(c));
  const async = asyncCollectives(setup);
  const only = (p: LayerPlan): LayerPlan =>
    withAsync(ranks === 'all' ? p : { ...p, ranks: p.ranks.slice(0, 1) }, async);
  const full = only(planned.full);
  const block = planned.block === planned.full ? full : only(planned.block);
  const overlap = async.dgrad || async.regather;
  const fullT = projectLayer(full, machine, overlap);
  const blockT = full === block ? fullT : projectLayer(block, machine, overlap);
  const pieces = stagePieces(full, fullT, block, blockT);
  const core = coreAttentionMs(block, projectOps(block, machine));
  return { full, block, fullT, blockT, pieces, core, ref: await (reference ?? referencePlans(setup)) };
}

/** Which of the plan's asynchronous collectives `setup` issues asynchronously: the dgrad reduces and the SP re-gathers. */
const asyncCollectives = (setup: TrainingSetup): { dgrad: boolean; regather: boolean } => ({
  dgrad: setup.overlap,
  regather: setup.overlapSpRegather ?? setup.overlap,
});

/** True for the SP re-gather of a column-parallel linear's input (the plan's one asynchronous all-gather). */
const isRegather = (op: PlannedOp): boolean => op.kind === 'collective' && op.collective.op === 'allGather';

/**
 * The plan with the asynchronous collectives `async` leaves out made synchronous (the plan marks
 * both kinds async; the schedule's overlap option then holds for the rest).
 */
function withAsync(plan: LayerPlan, async: { dgrad: boolean; regather: boolean }): LayerPlan {
  if (async.dgrad === async.regather) return plan;
  const keep = (op: PlannedOp): boolean => (isRegather(op) ? async.regather : async.dgrad);
  return {
    ...plan,
    ops: plan.ops.map((op) =>
      op.kind === 'collective' && op.overlap.async && !keep(op)
        ? { ...op, overlap: { ...op.overlap, async: false } }
        : op,
    ),
  };
}
