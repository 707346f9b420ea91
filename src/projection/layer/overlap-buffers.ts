import { dtypeBytes } from '../../hardware/dtype.ts';
import type { GpuSpec } from '../../hardware/gpus.ts';
import type { TrainingSetup } from '../../megatron/training-setup.ts';
import type { KernelOptions } from './kernel-options.ts';
import type { OverlapFlag, OverlapSet } from './overlap-flags.ts';

/** Memory one overlap holds on a GPU for as long as it is on, and why it is that much. */
export interface OverlapBuffer {
  readonly flag: OverlapFlag;
  readonly label: string;
  readonly bytes: number;
}

/**
 * Transformer Engine's userbuffers for --tp-comm-overlap (transformer_engine/pytorch/module/base.py,
 * `initialize_ub`, as Megatron's _initialize_tp_communicators calls it with shape
 * [s·b/cp, h]): one registered buffer of that shape per overlapped GEMM site — ring_exchange
 * qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; pipeline proj_fprop, fc2_fprop; bulk qkv_dgrad,
 * qkv_wgrad, fc1_dgrad, fc1_wgrad — in the activation dtype, except the six all-gather buffers
 * (qkv_fprop, qkv_dgrad, proj_dgrad, fc1_fprop, fc1_dgrad, fc2_dgrad) in fp8 (1 byte) under the
 * fp8 recipe; and the cuBLAS workspace repeated for _NUM_MAX_UB_STREAMS = 3 concurrent GEMM
 * streams (32 MiB on Hopper and newer, 4 MiB before: get_cublas_workspace_size_bytes), i.e.
 * two workspaces more than without it. Allocated once, resident.
 */
export const userbufferModel = { buffers: 10, fp8Buffers: 6, gemmStreams: 3 } as const;

/** cuBLAS workspace bytes Transformer Engine allocates per stream on `gpu`. */
export const cublasWorkspaceBytes = (gpu: GpuSpec): number =>
  gpu.arch === 'hopper' || gpu.arch === 'blackwell' ? 32 * 2 ** 20 : 4 * 2 ** 20;

/**
 * The memory each overlap that is on holds per GPU (0 with the reason where it holds none):
 *   tpCommOverlap  userbuffers (above), resident
 *   overlapP2p     the interleaved schedule posts the next forward's activation and the next
 *                  backward's gradient receives before computing the current ones
 *                  (schedules.py, overlap_p2p_comm): two [s/(t·cp) or s/cp, b, h] buffers beside
 *                  the steady state's live activations
 *   asyncDgrad, spRegather  none beyond the synchronous path: the same gathered input and dgrad
 *                  tensors, only issued earlier (layers.py)
 *   overlapGradReduce, overlapParamGather  none: the buckets are views of the contiguous gradient
 *                  and parameter buffers, reduced and gathered in place (param_and_grad_buffer.py)
 * `tokens` is the rank's tokens of one sequence at a stage boundary (s/(t·cp) with SP, s/cp without).
 */
export function overlapBuffers(
  on: OverlapSet,
  setup: TrainingSetup,
  kernels: KernelOptions,
  dtype: keyof typeof dtypeBytes,
  gpu: GpuSpec,
  tokens: number,
): OverlapBuffer[] {
  const out: OverlapBuffer[] = [];
  const b = dtypeBytes[dtype];
  const { s, h } = setup.sizes;
  const cp = setup.cp ?? 1;
  if (on.tpCommOverlap) {
    const shape = ((s * setup.sizes.b) / cp) * h;
    const fp8 = kernels.fp8 !== 'none' ? userbufferModel.fp8Buffers : 0;
    const bytes =
      shape * (fp8 * 1 + (userbufferModel.buffers - fp8) * b) +
      (userbufferModel.gemmStreams - 1) * cublasWorkspaceBytes(gpu);
    out.push({
      flag: 'tpCommOverlap',
      label: `userbuffers: ${userbufferModel.buffers} × [s·b/cp, h] and ${userbufferModel.gemmStreams - 1} more cuBLAS workspaces`,
      bytes,
    });
  }
  if (on.overlapP2p)
    out.push({
      flag: 'overlapP2p',
      label: 'p2p receives posted ahead: the next activation and gradient [tokens, b, h]',
      bytes: 2 * tokens * setup.sizes.b * h * b,
    });
  const none = (flag: OverlapFlag, label: string): void => {
    if (on[flag]) out.push({ flag, label, bytes: 0 });
  };
  none('asyncDgrad', 'none: the dgrad tensor exists either way, the reduce is only issued earlier');
  none('spRegather', 'none: the gathered input exists either way, the gather is only issued earlier');
  none('overlapGradReduce', 'none: buckets are views of the contiguous gradient buffer, reduced in place');
  none('overlapParamGather', 'none: buckets are views of the contiguous parameter buffer, gathered in place');
  return out;
}
