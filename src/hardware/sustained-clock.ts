import type { GpuSpec } from './gpus.ts';

/**
 * The clock a training step's tensor-core kernels run at, against the clock the GEMM anchors ran at.
 *
 * The GEMM model's η is a maximum achievable matmul rate (MAMF, gpus.ts): a burst after an idle
 * start, at the boost clock (1980 MHz on H100 and H200). A training step keeps every GPU of the node
 * at its power cap (700 W H100/H200, 1000 W B200) for the whole step, so its GEMMs run at the clock
 * the cap sustains. mamf-finder measures both on one node in one run: MSMF, the rate once the SM
 * clock has settled under the cap with every other GPU computing, and MAMF, the burst (gpus.ts
 * `sustained`: H200 755.5 vs 852.1 TFLOP/s bf16, 1850–1938 vs 1980 MHz; B200 1437.5 vs 1746.7).
 *
 *   r = MSMF / MAMF              (H100, H200 0.887; B200, GB200 0.823)
 *   in-step rate = r · isolated rate, for the main loop and its L2 operand stream (the SMs' clock
 *   domain); HBM-bound kernels keep their rate (the memory clock is not the one that throttles).
 *
 * Applied to every tensor-core-bound kernel of a step: the GEMMs and FlashAttention (whose own
 * anchors, FlashAttention-3/-4's benchmarks, are bursts likewise). Assumed: the fp8 GEMMs' ratio
 * equals bf16's (no fp8 pair is published; fp8 draws at least as much power per SM). Where no
 * pair is published (V100, A100) r = 1: the A100's anchor (271.2 of 312) may hold at 400 W or not —
 * no source says, so nothing is assumed.
 */
export function sustainedClockRatio(gpu: GpuSpec): number {
  const s = gpu.sustained;
  return s ? s.msmf / s.mamf : 1;
}

/**
 * Which clock a kernel is priced at: `burst`, the isolated measurement's (a benchmark of one kernel,
 * as the anchors and TE #2053 were timed); `sustained`, a training step's (× sustainedClockRatio).
 */
export type KernelClock = 'burst' | 'sustained';

/** The factor `clock` applies to a tensor-core-bound kernel's rate on `gpu`. */
export const clockFactor = (gpu: GpuSpec, clock: KernelClock): number =>
  clock === 'sustained' ? sustainedClockRatio(gpu) : 1;
