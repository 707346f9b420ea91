import type { LayerPlan } from '../../parallel/plan-types.ts';
import { defaultKernelOptions } from '../layer/kernel-options.ts';
import { modelGemmFlops } from '../layer/priced-ops.ts';
import type { Machine } from '../layer/projected-layer.ts';
import { isCoreAttention } from '../links/context-parallel.ts';
import type { ChunkRecompute } from '../layer/recompute.ts';
import type { LayerPricing } from './layer-pricing.ts';

/** GEMM FLOPs of the plan's ops (one rank), optionally only those `keep` selects. */
const gemmFlops = (p: LayerPlan, keep: (o: LayerPlan['ops'][number]) => boolean = () => true): number =>
  p.ops.reduce((a, o) => a + (o.kind === 'gemm' && keep(o) ? o.gemm.flops : 0), 0);

/** FLOPs of the reference plans on a machine: model FLOPs with and without the vocabulary, forward layer, forward core attention. */
interface ReferenceFlops {
  readonly full: number;
  readonly block: number;
  readonly fwdLayer: number;
  readonly fwdCore: number;
  readonly fwdMlp: number;
}

/** ReferenceFlops per reference plans and machine (they read only the plans, dtype and kernels): exact reuse. */
const referenceFlopsMemo = new WeakMap<LayerPricing['ref'], WeakMap<Machine, ReferenceFlops>>();

function referenceFlops(ref: LayerPricing['ref'], machine: Machine): ReferenceFlops {
  let byMachine = referenceFlopsMemo.get(ref);
  if (!byMachine) referenceFlopsMemo.set(ref, (byMachine = new WeakMap()));
  let x = byMachine.get(machine);
  if (!x) {
    const flops = (p: LayerPlan): number => modelGemmFlops(p, machine.dtype, machine.kernels ?? defaultKernelOptions);
    x = {
      full: flops(ref.full),
      block: flops(ref.block),
      fwdLayer: gemmFlops(ref.block, (o) => o.phase === 'forward'),
      fwdCore: gemmFlops(ref.block, (o) => o.phase === 'forward' && isCoreAttention(o)),
      fwdMlp: gemmFlops(ref.block, (o) => o.phase === 'forward' && (o.weight === 'wfc1' || o.weight === 'wdown')),
    };
    byMachine.set(machine, x);
  }
  return x;
}

/** A step's GEMM FLOPs, all GPUs (stepFlops). */
export interface StepFlops {
  /** The model's once (TP = 1 shapes, full sequence, forward + backward) per step. */
  readonly model: number;
  /** Model FLOPs plus the recomputed forwards (what the GPUs execute). */
  readonly executed: number;
}

/**
 * A step's FLOPs from the reference plans: per micro-batch F = F_full + (L − 1)·F_block (model
 * FLOPs of the transformed op list, priced-ops.ts: GPT has no gate GEMMs), the recomputed
 * Σ_ic r_ic·F_fwdLayer + q_ic·F_fwdCore + u_ic·F_fwdMlp (--recompute-modules mlp; the norms have no
 * GEMM), times DP replicas and m micro-batches.
 */
export function stepFlops(
  ref: LayerPricing['ref'],
  machine: Machine,
  layers: number,
  rec: readonly (readonly Pick<ChunkRecompute, 'recomputedLayers' | 'recomputedCoreAttention' | 'recomputedMlp'>[])[],
  replicas: number,
  m: number,
): StepFlops {
  const { full: fullFlops, block: blockFlops, fwdLayer, fwdCore, fwdMlp } = referenceFlops(ref, machine);
  const perMicroBatch = fullFlops + (layers - 1) * blockFlops;
  const redoFlops = rec
    .flat()
    .reduce(
      (a, r) =>
        a + r.recomputedLayers * fwdLayer + r.recomputedCoreAttention * fwdCore + (r.recomputedMlp ?? 0) * fwdMlp,
      0,
    );
  return { model: replicas * m * perMicroBatch, executed: replicas * m * (perMicroBatch + redoFlops) };
}
