import type { LayerPlan } from '../parallel/plan-types.ts';

/**
 * Assumed rates for a timeline without measurements (no WebGPU): GEMMs at `gemmGflops`, other
 * kernels (memory-bound) at `otherGflops`. The defaults are this project's SwiftShader figures
 * (bench:gemm's tuned kernel ≈ 6 GFLOP/s); a page that shows such a timeline says it is modeled.
 */
export interface ComputeModel {
  readonly name: string;
  readonly gemmGflops: number;
  readonly otherGflops: number;
}

/** Rates in the range this project measured on SwiftShader (see README, bench:gemm). */
export const swiftshaderLike: ComputeModel = {
  name: 'assumed 6 GFLOP/s GEMMs, 0.5 GFLOP/s other kernels',
  gemmGflops: 6,
  otherGflops: 0.5,
};

/** Modeled compute time (ms) of every op of the plan, [rank][opIndex]; collectives get 0. */
export function modeledComputeMs(plan: LayerPlan, model: ComputeModel = swiftshaderLike): number[][] {
  const row = plan.ops.map((o) =>
    o.kind === 'collective' ? 0 : o.flops / ((o.kind === 'gemm' ? model.gemmGflops : model.otherGflops) * 1e6),
  );
  return plan.ranks.map(() => [...row]);
}
