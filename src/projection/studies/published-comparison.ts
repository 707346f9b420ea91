import { systems } from '../../hardware/systems.ts';
import type { ClusterModel } from '../../megatron/parallel-layout.ts';
import { publishedFlops, publishedStepS, type PublishedRun } from '../../megatron/published-runs.ts';
import { projectStep } from '../step/cluster-projection.ts';
import { defaultKernelOptions, type KernelOptions } from '../layer/kernel-options.ts';
import { layoutSetup, type LayoutSetup } from './layout-setup.ts';

/** A published run as the projection takes it: the setup, its kernels, what it cannot express, what it approximates. */
export interface PublishedSetup extends LayoutSetup {
  /** How the run's kernels are priced: its architecture, attention backend and TP communication overlap. */
  readonly kernels: KernelOptions;
  /** Expressed, but not exactly as the run had it (one line each). */
  readonly approximations: readonly string[];
}

/**
 * Maps a published run flag by flag onto the projection. A GPT run is priced with `layerArch: 'gpt'`
 * (priced-ops.ts: the plan's gate GEMMs dropped, so the MLP is GeLU's two h × 4h GEMMs, with
 * LayerNorm, biases, dropout and learned positions); fused attention (cuDNN's, which Transformer
 * Engine picks on Hopper) prices its time and its memory; --tp-comm-overlap is the kernels' chunked overlap (it needs SP, as Megatron asserts).
 */
export function publishedSetup(run: PublishedRun): PublishedSetup {
  const m = run.model;
  const approximations: string[] = [];
  if (m.layerArch === 'gpt')
    approximations.push(
      `GPT priced as a transform of the Llama plan (priced-ops.ts); its weights and activations in memory still follow the plan's SwiGLU MLP of ffn ${m.ffn} (three h × ffn matrices, not two)`,
    );
  const model: ClusterModel = {
    sizes: { s: m.s, h: m.h, heads: m.heads, groups: m.groups, ffn: m.ffn, vocab: m.vocab },
    layers: m.layers,
  };
  const extras = { flashAttention: run.flashAttention };
  const laid = layoutSetup(model, run.layout, run.gpus, run.globalBatch, extras);
  const kernels: KernelOptions = {
    ...defaultKernelOptions,
    layerArch: m.layerArch,
    // Megatron's default --attention-backend auto leaves the choice to Transformer Engine, which
    // disables FlashAttention "to give FusedAttention preference on Hopper+" (get_attention_backend
    // in transformer_engine/pytorch/attention/dot_product_attention/utils.py): cuDNN's kernel.
    attentionBackend: run.flashAttention ? (systems[run.system].gpu.arch === 'ampere' ? 'flash' : 'fused') : 'unfused',
    tpCommOverlap: laid.tpCommOverlap,
    // Megatron's loss without --cross-entropy-loss-fusion (no source states the flag).
    crossEntropy: 'megatron',
    // Megatron's training default (--no-gradient-accumulation-fusion not given by any source).
    gradAccumulationFusion: true,
  };
  // The run's Megatron-Core release where it behaves differently from core_v0.19.0 (megatron-release.ts).
  const setup = run.release ? { ...laid.setup, megatronRelease: run.release.megatronRelease } : laid.setup;
  return { ...laid, setup, kernels, approximations };
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
  const step = await projectStep(mapped.setup, {
    system: systems[run.system],
    dtype: run.dtype,
    kernels: mapped.kernels,
  });
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
