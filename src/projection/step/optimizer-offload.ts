import { quoted } from '../../core/quote.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { OptimizerCpuOffload, TrainingSetup } from '../../megatron/training-setup.ts';

/** The optimizer-step terms of an offloaded optimizer, ms per step. */
export interface OffloadedStep {
  readonly d2hMs: number;
  readonly cpuMs: number;
  readonly h2dMs: number;
  /** What the three add to the step: their sum, or their max with the overlap. */
  readonly addedMs: number;
}

/**
 * Megatron's HybridDeviceOptimizer (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py,
 * core_v0.19.0) on P_off = f · (this GPU's optimizer parameters):
 *   D2H   the gradients into pinned fp32 host tensors (:104-114): 4·P_off bytes at the host link;
 *   CPU   Adam on the host (torch's CPU Adam, fp32): read the gradient, read and write the fp32 main
 *         weight and both moments, 4 + 2·4 + 2·2·4 = 28 bytes per parameter at the GPU's share of
 *         the host's DRAM bandwidth (memory-bound, at the datasheet peak: a bound);
 *   H2D   the updated fp32 weights copied back into the GPU's parameters (:117-124): 4·P_off bytes.
 * In sequence (the step waits for the D2H event, then steps, then its post-hook copies back,
 * :150-172), or overlapped chunk by chunk with --overlap-cpu-optimizer-d2h-h2d: max of the three.
 */
export function offloadedStepMs(params: number, o: OptimizerCpuOffload, system: SystemSpec): OffloadedStep {
  const host = system.host;
  if (!host)
    throw new Error(
      `--optimizer-cpu-offload: ${system.label} has no host link or CPU memory figures; choose a DGX or GB200 system.`,
    );
  const p = o.fraction * params;
  const d2hMs = (4 * p) / (host.linkGBps * 1e6);
  const cpuMs = (28 * p) / (host.dramGBps * 1e6);
  const h2dMs = (4 * p) / (host.linkGBps * 1e6);
  return {
    d2hMs,
    cpuMs,
    h2dMs,
    addedMs: o.overlapD2hH2d ? Math.max(d2hMs, cpuMs, h2dMs) : d2hMs + cpuMs + h2dMs,
  };
}

/** The share of the optimizer state that stays on the GPU: 1 − f with --optimizer-cpu-offload, else 1. */
export const gpuOptimizerShare = (setup: Pick<TrainingSetup, 'optimizerCpuOffload'>): number =>
  1 - (setup.optimizerCpuOffload?.fraction ?? 0);

/**
 * The rule on --optimizer-offload-fraction f, page and CLI alike: a share from 0 to 1, or undefined.
 * Megatron itself asserts nothing on f (arguments.py:1803-1811 checks only the precision-aware
 * optimizer and the fp8 recipe; argparse reads a float, :2785): HybridDeviceOptimizer moves whole
 * parameters to the host while the moved count is below f × this GPU's parameters
 * (hybrid_optimizer.py:258, :273), so f = 0 moves none (the GPU optimizer steps them all, :211-214),
 * f > 1 moves all as 1 does, f < 0 none as 0 does. The projection prices the share f directly
 * (gpuOptimizerShare, offloadedStepMs), so a value outside [0, 1], or not a number, is refused here.
 */
export function optimizerOffloadFractionRefusal(f: number): string | undefined {
  if (f >= 0 && f <= 1) return undefined;
  return `--optimizer-offload-fraction ${f}: the share of the optimizer moved to the host is from 0 to 1; Megatron takes any float but moves all parameters at f ≥ 1 and none at f ≤ 0 (hybrid_optimizer.py:258, :273): write 1 for all, 0 for none, or a share such as 0.5.`;
}

/** --optimizer-offload-fraction's text as argparse reads it (a float), then optimizerOffloadFractionRefusal. */
export function parseOptimizerOffloadFraction(text: string): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v))
    throw new Error(
      `--optimizer-offload-fraction ${quoted(text)}: write the share of the optimizer moved to the host, a number from 0 to 1 such as 0.5.`,
    );
  const why = optimizerOffloadFractionRefusal(v);
  if (why) throw new Error(why);
  return v;
}

/**
 * Megatron's rule on the flag (arguments.py:1803-1807): the hybrid optimizer reuses the
 * precision-aware optimizer's code path; and the fraction's (optimizerOffloadFractionRefusal).
 */
export function checkOptimizerCpuOffload(o: OptimizerCpuOffload, precisionAwareOptimizer: boolean): void {
  if (!precisionAwareOptimizer)
    throw new Error(
      'The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer` (arguments.py:1803-1807): add it.',
    );
  const why = optimizerOffloadFractionRefusal(o.fraction);
  if (why) throw new Error(why);
}
