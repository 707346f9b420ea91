// A job's trace written from a known model: the projection on a "truth" system (kernel classes
// slower than the catalog's model by known factors, a link slower than the catalog's), as the
// importer hands it over (MeasuredTrace). One rank, one ProfilerStep: per kernel class one kernel
// as long as the class's Σ in the step, then every collective of the layer plans (the `full`
// plan, the `block` plan: the fit takes medians per size) as three NCCL kernels with the
// size, group size and group ranks PyTorch records.
import type { CollectiveOp } from '../../../src/comm/collectives.ts';
import { dtypeBytes } from '../../../src/hardware/dtype.ts';
import type { KernelClass } from '../../../src/hardware/calibrated-rates.ts';
import type { SystemSpec } from '../../../src/hardware/systems.ts';
import type { GpuSlice, MeasuredTrace } from '../../../src/kineto/kineto-types.ts';
import type { NcclCollective } from '../../../src/kineto/nccl-kernel.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { modelClassMs, type Layout } from '../../../src/calibrate/trace-what-if.ts';

const kernelName: Record<KernelClass, string> = {
  gemm: 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas',
  attention: 'cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0',
  memory: 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>',
};

const ncclOf: Partial<Record<CollectiveOp, NcclCollective>> = {
  allReduce: 'allReduce',
  allGather: 'allGather',
  reduceScatter: 'reduceScatter',
  ringExchange: 'sendRecv',
};

/**
 * Per collective of the plans, three calls whose times are the model's × (1 + w) for w in `waits`
 * (a peer arriving late stretches an NCCL kernel): the fit's median sees the middle one.
 */
export const waits = [0, 0.02, 0.05] as const;

/** The trace `layout` would leave on `truth`: class sums scaled by truth.kernelScale, collectives on truth's links (× 1 + waits). */
export async function truthTrace(layout: Layout, truth: SystemSpec): Promise<MeasuredTrace> {
  const { kernelScale, ...links } = truth;
  const classMs = await modelClassMs(layout, links);
  const slices: GpuSlice[] = [];
  let t = 0;
  const push = (s: Omit<GpuSlice, 'rank' | 'device' | 'gpuStream' | 't0' | 't1' | 'step'>, ms: number): void => {
    slices.push({ rank: 0, device: 0, gpuStream: 7, step: 1, t0: t, t1: t + ms, ...s });
    t += ms;
  };
  for (const cls of ['gemm', 'attention', 'memory'] as const)
    if (classMs[cls] > 0) push({ work: 'compute', name: kernelName[cls] }, classMs[cls] * (kernelScale?.[cls] ?? 1));
  const p = await projectStep(layout.setup, { system: links, dtype: layout.dtype });
  for (const e of [...p.full.events, ...p.block.events]) {
    const c = e.collective;
    const collective = c && ncclOf[c.op];
    // Finalize-phase ops are 0 in the layer's timeline (the step adds them once).
    if (e.rank !== 0 || !c || !collective || e.t1 <= e.t0) continue;
    for (const w of waits)
      push(
        {
          work: 'comm',
          name: `ncclDevKernel_${collective}`,
          nccl: {
            collective,
            // The plan's payloads are float32; the job's collectives move the training dtype.
            bytes: (c.payloadBytes / 4) * dtypeBytes[layout.dtype],
            groupSize: c.groupSize,
            groupRanks: `[${Array.from({ length: c.groupSize }, (_, i) => i).join(', ')}]`,
          },
        },
        (e.t1 - e.t0 - e.waitMs) * (1 + w),
      );
  }
  return {
    ranks: [
      {
        file: 'truth.json',
        rank: 0,
        rankSource: 'file order',
        groups: [],
        deviceNames: [],
        slices,
        steps: [{ step: 1, t0: 0, t1: t, source: 'gpu_user_annotation' }],
        stats: { chars: 0, events: slices.length, kept: slices.length, dropped: {}, oversized: 0, untimed: 0 },
        notes: [],
      },
    ],
    notes: [],
  };
}
