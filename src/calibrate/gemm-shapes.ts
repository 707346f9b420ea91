import { setupConfig, type TrainingSetup } from '../megatron/training-setup.ts';
import { defaultKernelOptions, resolveKernels } from '../projection/layer/kernel-options.ts';
import { pricedOps } from '../projection/layer/priced-ops.ts';
import type { Machine } from '../projection/layer/projected-layer.ts';
import { plans } from '../projection/step/layer-pricing.ts';
import type { SweepShape } from './gemm-sweep.ts';

/**
 * Every distinct GEMM the projection prices for one rank of `setup` on `machine` (the layer with
 * the vocabulary: QKV, projection, MLP, attention's batched products, the output layer; forward,
 * dgrad and wgrad), in plan order, each once per (M, N, K, batch, precision) and labelled with
 * the first plan op that runs it. These are the shapes the bundle's sweep times: its measurement
 * replaces the model for exactly these (calibrated-rates.ts gemmTimeOn).
 */
export async function sweepShapes(setup: TrainingSetup, machine: Machine): Promise<SweepShape[]> {
  const { full } = await plans(setupConfig(setup));
  const seen = new Set<string>();
  const out: SweepShape[] = [];
  const kernels = resolveKernels(machine.kernels ?? defaultKernelOptions, machine.system.gpu.arch);
  for (const p of pricedOps(full, machine.dtype, kernels)) {
    if (p.cost.kind !== 'gemm') continue;
    const { M, N, K, batch } = p.cost.shape;
    const key = `${M},${N},${K},${batch},${p.cost.precision}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const label = full.ops[p.planIndex]!.name.replace(/[,\s]+/g, '_');
    out.push({ label, M, N, K, batch, precision: p.cost.precision });
  }
  return out;
}
