import { describe, expect, test } from 'vitest';
import { kernelClassOf } from '../../../src/kineto/kernel-class.ts';

// Kernel names as Kineto records them in Megatron/Transformer Engine traces on Hopper and Ampere.
describe('kernelClassOf', () => {
  test.each([
    [
      'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas',
      'gemm',
    ],
    ['ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn', 'gemm'],
    ['nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT', 'gemm'],
    ['void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)', 'gemm'],
    [
      'void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, true>(Flash_fwd_params)',
      'attention',
    ],
    [
      'void flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, cutlass::bfloat16_t>>',
      'attention',
    ],
    ['cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0', 'attention'],
    ['void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>', 'memory'],
    [
      'void transformer_engine::rmsnorm::rmsnorm_fwd_tuned_kernel<transformer_engine::rmsnorm::Kernel_traits<>>',
      'memory',
    ],
    ['void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>', 'memory'],
  ] as const)('%s → %s', (name, cls) => {
    expect(kernelClassOf(name)).toBe(cls);
  });
});
