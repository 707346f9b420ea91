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
 * Megatron's rule on the flag (arguments.py:1803-1807): the hybrid optimizer reuses the
 * precision-aware optimizer's code path; and the fraction is a share.
 */
export function checkOptimizerCpuOffload(o: OptimizerCpuOffload, precisionAwareOptimizer: boolean): void {
  if (!precisionAwareOptimizer)
    throw new Error(
      'The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer` (arguments.py:1803-1807): add it.',
    );
  if (!(o.fraction >= 0 && o.fraction <= 1))
    throw new Error(`--optimizer-offload-fraction (${o.fraction}) must be between 0 and 1.`);
}
