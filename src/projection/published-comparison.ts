import { systems } from '../hardware/systems.ts';
import type { ClusterModel } from '../megatron/parallel-layout.ts';
import { publishedFlops, publishedStepS, type PublishedRun } from '../megatron/published-runs.ts';
import { swigluFfn } from '../parallel/config.ts';
import { projectStep } from './cluster-projection.ts';
import { layoutSetup, type LayoutSetup } from './layout-setup.ts';

/** A published run as the projection takes it: the setup, what it cannot express, what it approximates. */
export interface PublishedSetup extends LayoutSetup {
  /** Expressed, but not exactly as the run had it (one line each). */
  readonly approximations: readonly string[];
}

/**
 * Maps a published run flag by flag onto the projection. The step model's block is Llama's
 * (RMSNorm, RoPE, SwiGLU, no biases): a GPT run's GeLU MLP of two h × 4h GEMMs becomes a SwiGLU
 * MLP of ffn = 8h/3 rounded up to 64 (three h × ffn GEMMs: the same weights and FLOPs to the
 * rounding), its LayerNorm, biases and learned positions the Llama equivalents.
 */
export function publishedSetup(run: PublishedRun): PublishedSetup {
  const m = run.model;
  const approximations: string[] = [];
  let ffn = m.ffn;
  if (m.arch === 'gpt') {
    ffn = swigluFfn(m.h);
    approximations.push(
      `GeLU MLP h × ${m.ffn} (2 GEMMs) as SwiGLU ffn ${ffn} (3 GEMMs, ${((100 * (3 * ffn)) / (2 * m.ffn) - 100).toFixed(2)}% MLP FLOPs)`,
      'LayerNorm, biases and learned positions as RMSNorm, no biases and RoPE',
    );
  }
  const model: ClusterModel = {
    sizes: { s: m.s, h: m.h, heads: m.heads, groups: m.groups, ffn, vocab: m.vocab },
    layers: m.layers,
  };
  const extras = { flashAttention: run.flashAttention };
  return { ...layoutSetup(model, run.layout, run.gpus, run.globalBatch, extras), approximations };
}

/** Projected against published for one run (projected without the flags `mapped.unexpressed` lists). */
export interface PublishedComparison {
  readonly run: PublishedRun;
  readonly mapped: PublishedSetup;
  /** The iteration time the source's throughput implies (its FLOP count / (N · its FLOP/s)), s. */
  readonly publishedStepS: number;
  readonly projectedStepS: number;
  /** The source's FLOP count over the projected step, per GPU. */
  readonly projectedTflopsPerGpu: number;
  /** projected step / published step − 1 (positive: the projection is slower). */
  readonly stepError: number;
  readonly projectedMemoryGiB: number;
  readonly oom: boolean;
}

/** Projects `run` (leaving out what the step model cannot express, listed) beside the published figure. */
export async function comparePublished(run: PublishedRun): Promise<PublishedComparison> {
  const mapped = publishedSetup(run);
  const pub = publishedStepS(run);
  const step = await projectStep(mapped.setup, { system: systems[run.system], dtype: run.dtype });
  const s = step.stepMs / 1e3;
  return {
    run,
    mapped,
    publishedStepS: pub,
    projectedStepS: s,
    projectedTflopsPerGpu: publishedFlops(run) / (run.gpus * s) / 1e12,
    stepError: s / pub - 1,
    projectedMemoryGiB: step.memory.totalBytes / 2 ** 30,
    oom: step.memory.oom,
  };
}
