import { pipelineTimes, type PipelineInput, type PipelineTimes } from '../pipeline/pipeline-schedule.ts';

/** What the pipeline's p2p sends cost a step, ms (pipelineP2p). */
export interface PipelineP2p {
  /** span(with the sends, without their cost to compute) − span(without the sends). */
  readonly exposedMs: number;
  /** span(simulated) − span(with the sends, without their cost to compute): overlapped sends slowing compute. */
  readonly overlapCostMs: number;
}

/**
 * The pipeline's p2p exposure, from the simulated schedule `pipeline` of `pipeIn` (the sends
 * priced at p2pMs; `p2pLossMs` > 0 when an overlapped send slows the op beside it): only spans
 * count, those of the schedule re-run without the sends (p > 1) and without their cost to compute.
 */
export function pipelineP2p(pipeIn: PipelineInput, pipeline: PipelineTimes, p2pLossMs: number): PipelineP2p {
  const noP2p = pipeIn.p > 1 ? pipelineTimes({ ...pipeIn, p2pMs: 0 }) : pipeline;
  const noP2pCost = p2pLossMs > 0 ? pipelineTimes(pipeIn) : pipeline;
  return { exposedMs: noP2pCost.spanMs - noP2p.spanMs, overlapCostMs: pipeline.spanMs - noP2pCost.spanMs };
}
