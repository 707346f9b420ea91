// Which priced class a compute kernel of a trace belongs to, from its name.
import type { KernelClass } from '../hardware/calibrated-rates.ts';

/**
 * Fused attention kernels: FlashAttention 2 (`flash_fwd_kernel`, `flash_bwd_…`), FlashAttention 3
 * (`flash::FlashAttnFwdSm90<…>`), cuDNN's fused attention as Transformer Engine runs it
 * (`cudnn_generated_fort_native_sdpa_…`), PyTorch's memory-efficient and FMHA kernels (`fmha_…`).
 * Tested before the GEMM names: FlashAttention 3's template arguments name cutlass.
 */
const attention = /flash|fmha|sdpa|attn/i;
/**
 * GEMMs: cuBLAS/cuBLASLt (`sm90_xmma_gemm_…`, `ampere_bf16_s16816gemm_…`, `nvjet_…` on Hopper and
 * Blackwell), CUTLASS (`cutlass::Kernel<…Gemm…>`, `cutlass_80_tensorop_…`), Transformer Engine's
 * userbuffers GEMMs.
 */
const gemm = /gemm|xmma|nvjet|cutlass|cublas/i;

/** The class of a compute kernel named `name`: attention, GEMM, else memory-bound (elementwise, norms, casts, the optimizer). */
export function kernelClassOf(name: string): KernelClass {
  if (attention.test(name)) return 'attention';
  if (gemm.test(name)) return 'gemm';
  return 'memory';
}
