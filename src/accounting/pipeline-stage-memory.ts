import { stageClassBytes, stageHeld, type StageClassBytes, type StageUnitBytes } from '../mesh/pipeline-memory.ts';
import { formatPasses, type ScheduledPass } from '../mesh/pipeline-schedules.ts';
import type { PassSpan } from '../parallel/pipeline-step.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { blockWeightNames, chunkBlocks, type PipelineModel } from '../parallel/pipeline-model.ts';
import { activationTerms, type ActivationPart } from './activations.ts';
import { parameterShards } from './parameters.ts';
import { blockWgradInputs, headWgradInputs, wgradInputBytes } from './wgrad-inputs.ts';

/**
 * What one micro-batch and the resident state cost on TP rank `tpRank` of pipeline stage `stage`,
 * from the layer's accounting (activations.ts, parameters.ts; float32): a chunk's saved activations
 * are its blocks' layer terms (input, RMSNorm rstd, Q, K, V, probabilities, the MLP's inputs), plus the
 * token ids on virtual stage 0 and the output layer's input and the loss's logits, max, Σexp and
 * targets on the last; weights are the held blocks' shards plus the embedding on stage 0 and the
 * output layer on stage p − 1; the gradient sums one float per weight element. A backward deferred
 * by ZB-H1 keeps, until W, what its weight-gradient ops read (wgrad-inputs.ts: each linear's input
 * and output gradient, each gain's x, rstd and dN, the embedding's ids and dX, the output layer's
 * input and dLogits) and the gradient buffers they write: deferredPerMicroBatch is that sum. The
 * unchunked MLP's (tpOverlapChunks ≤ 1): the chunked one re-gathers its input in rounds.
 */
export function stageUnitBytes(model: PipelineModel, stage: number, tpRank: number): StageUnitBytes {
  const { p, v } = model;
  const plan = { config: model.layer, ranks: rankOwnership(model.layer) };
  const terms = activationTerms(plan, tpRank);
  const bytesOf = (parts: readonly ActivationPart[]) =>
    terms.filter((t) => parts.includes(t.part)).reduce((a, t) => a + t.bytes, 0);
  const perBlock = bytesOf(['layer', 'coreAttention']);
  const shards = parameterShards(plan, tpRank);
  const weightBytes = (names: readonly string[]) =>
    shards.filter((s) => names.includes(s.weight)).reduce((a, s) => a + s.bytes, 0);
  const blockWeights = weightBytes(blockWeightNames);
  const blocks = chunkBlocks(model)[stage]!;
  const last = p * v - 1;
  const chunkWeights = (c: number) => {
    const k = c * p + stage;
    return (
      blocks[c]!.length * blockWeights + (k === 0 ? weightBytes(['emb']) : 0) + (k === last ? weightBytes(['wout']) : 0)
    );
  };
  const saved = (c: number) => {
    const k = c * p + stage;
    return (
      blocks[c]!.length * perBlock +
      (k === 0 ? bytesOf(['embedding']) : 0) +
      (k === last ? bytesOf(['output', 'loss']) : 0)
    );
  };
  const wIn = wgradInputBytes(blockWgradInputs(model.layer));
  const wInputs = (c: number) => {
    const k = c * p + stage;
    return (
      blocks[c]!.length * wIn +
      (k === 0 && model.layer.vocab > 0 ? wgradInputBytes(headWgradInputs(model.layer, 'emb')) : 0) +
      (k === last && model.layer.vocab > 0 ? wgradInputBytes(headWgradInputs(model.layer, 'wout')) : 0)
    );
  };
  const weights = Array.from({ length: v }, (_, c) => chunkWeights(c)).reduce((a, x) => a + x, 0);
  return {
    weights,
    gradients: weights,
    savedPerMicroBatch: saved,
    deferredPerMicroBatch: (c) => wInputs(c) + chunkWeights(c),
  };
}

/** One pass's classes: what the rank recorded (PassSpan.classes) and what the accounting says. */
export interface PassMemoryCheck {
  readonly pass: ScheduledPass;
  readonly measured: StageClassBytes;
  readonly accounted: StageClassBytes;
}

/** A stage rank's live memory by class after each pass against the accounting. */
export interface StageMemoryCheck {
  readonly stage: number;
  readonly tpRank: number;
  readonly passes: readonly PassMemoryCheck[];
  /** "F2: activations 7520 ≠ 7776", for weights, gradients, activations and deferredW (exact: sums of float32 tensor sizes). */
  readonly mismatches: readonly string[];
}

/**
 * Checks TP rank `tpRank` of stage `stage`: its passes must be the schedule's, and after each the
 * weights, gradient sums, saved activations and (ZB-H1) what the backwards waiting for their W hold
 * equal the accounting (stageUnitBytes × stageHeld).
 */
export function stageMemoryCheck(
  model: PipelineModel,
  stage: number,
  tpRank: number,
  spans: readonly PassSpan[],
): StageMemoryCheck {
  const held = stageHeld(model.schedule, model, stage);
  const accounted = stageClassBytes(held, stageUnitBytes(model, stage, tpRank));
  const mismatches: string[] = [];
  const passes: PassMemoryCheck[] = [];
  if (
    formatPasses(spans, model.v) !==
    formatPasses(
      held.map((h) => h.pass),
      model.v,
    )
  )
    mismatches.push(`the passes ran ${formatPasses(spans, model.v)}, not the schedule's order`);
  else
    spans.forEach((s, i) => {
      if (!s.classes) return;
      const a = accounted[i]!;
      for (const c of ['weights', 'gradients', 'activations', 'deferredW'] as const)
        if (s.classes[c] !== a[c]) mismatches.push(`${s.pass}${s.microBatch}: ${c} ${s.classes[c]} ≠ ${a[c]}`);
      passes.push({ pass: held[i]!.pass, measured: s.classes, accounted: a });
    });
  return { stage, tpRank, passes, mismatches };
}
