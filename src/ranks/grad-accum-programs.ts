import { adamStep } from '../kernels/adam.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import { readTensor, type GpuTensor } from '../kernels/tensor.ts';
import { opSpec } from '../parallel/backend.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../parallel/layer.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { rankWeightArrays, uploadWeights } from '../parallel/step-data.ts';
import type { WeightName } from '../parallel/weight-names.ts';
import { weightsOf, type WeightSet } from '../parallel/weights.ts';
import { adamHyper } from '../reference/adam.ts';
import { addInPlaceKernel } from '../reference/add.ts';
import { copyColsKernel } from '../reference/copy-cols.ts';
import { scaleKernel } from '../reference/scale.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { DetachedCollectives } from './detached-collectives.ts';
import { kernelContext, type GemmChoices } from './layer-programs.ts';

/** A one-device training run: the whole layer (TP = 1), its accumulated gradients and Adam's moments. */
interface AccumSession {
  readonly config: LayerConfig;
  readonly store: GpuBackend;
  readonly w: WeightSet<GpuTensor>;
  readonly acc: WeightSet<GpuTensor>;
  readonly m: WeightSet<GpuTensor>;
  readonly v: WeightSet<GpuTensor>;
  step: number;
}

const sessions = new Map<string, AccumSession>();

/** Starts one-device run `id` of `config` (t = 1) on this rank alone: its weights, gradient accumulators and zero moments. */
export function accumStart(ctx: RankContext, a: { id: string; config: LayerConfig; choices?: GemmChoices }): void {
  accumEnd(ctx, { id: a.id });
  if (a.config.tp !== 1) throw new Error(`accumStart: the one-device run takes t = 1, got t = ${a.config.tp}.`);
  if (a.choices) importGemmChoices(ctx.device, a.choices);
  const c = a.config;
  const store = new GpuBackend(kernelContext(ctx.device));
  const shards = rankWeightArrays(c, rankOwnership(c)[0]);
  const zeros = (p: string) => uploadWeights(shards, (n, shape) => store.tensor(`${p}.${n}`, shape));
  sessions.set(a.id, {
    config: c,
    store,
    w: uploadWeights(shards, (n, shape, data) => store.tensor(n, shape, data)),
    acc: zeros('grad.acc'),
    m: zeros('adam.m'),
    v: zeros('adam.v'),
    step: 0,
  });
}

/** One step's reply: the mean loss over the micro-batches; with `read`, the averaged gradients and the weights after the update. */
export interface AccumStepReply {
  readonly loss: number;
  readonly grads?: Partial<Record<WeightName, Float32Array>>;
  readonly weights?: Partial<Record<WeightName, Float32Array>>;
}

/**
 * One optimizer step of run `id` over the global batch `batches` (m micro-batches) on one device:
 * forward and backward of each, its gradients accumulated (Megatron's main_grad accumulation
 * across micro-batches), scaled by 1/m, then Adam (lr, β1 0.9, β2 0.999, ε 1e-8) on every weight.
 * The oracle of data parallel: m = d micro-batches, one per replica.
 */
export async function accumStep(
  ctx: RankContext,
  a: { id: string; batches: readonly StepInputs[]; lr: number; read?: boolean },
): Promise<AccumStepReply> {
  const run = sessions.get(a.id);
  if (!run) throw new Error(`accumStep: no one-device run "${a.id}" on rank ${ctx.mesh.rank}; call accumStart first.`);
  if (a.batches.length < 1) throw new Error('accumStep: give at least one micro-batch.');
  const c = run.config;
  const k = kernelContext(ctx.device);
  const names = weightsOf(c);
  let loss = 0;
  for (const [j, inputs] of a.batches.entries()) {
    const be = new GpuBackend(k);
    const lc = new LayerComm(
      new DetachedCollectives(ctx.device, 0, 1),
      (t: GpuTensor) => t.shape,
      () => k.flush(),
    );
    try {
      const r = await layerStep(be, lc, c, rankOwnership(c)[0], run.w, inputs);
      for (const n of names) {
        const g = r.grads[n]!;
        const acc = run.acc[n]!;
        const len = acc.shape.reduce((x, y) => x * y, 1);
        if (j === 0)
          be.kernel(opSpec(`grad.acc.${n}`, 'replicated', { role: 'wgrad', weight: n }), copyColsKernel, [g, acc], {
            rows: 1,
            n: len,
            from: { w: len, c0: 0 },
            to: { w: len, c0: 0 },
          });
        else
          be.kernel(
            opSpec(`grad.acc.${n}`, 'replicated', { role: 'wgrad', weight: n }),
            addInPlaceKernel,
            [acc, g],
            {},
          );
      }
      const l = await be.read(r.loss!);
      loss += l.reduce((s, x) => s + x, 0) / l.length / a.batches.length;
    } finally {
      be.releaseAll();
    }
  }
  run.step++;
  const be = new GpuBackend(k);
  for (const n of names)
    be.kernel(opSpec(`grad.acc.scale.${n}`, 'replicated', { role: 'wgrad', weight: n }), scaleKernel, [run.acc[n]!], {
      factor: 1 / a.batches.length,
    });
  const h = adamHyper(a.lr);
  for (const n of names) adamStep(k, run.w[n]!, run.acc[n]!, run.m[n]!, run.v[n]!, h, run.step);
  await k.flush();
  if (!a.read) return { loss };
  const grads: Partial<Record<WeightName, Float32Array>> = {};
  const weights: Partial<Record<WeightName, Float32Array>> = {};
  for (const n of names) {
    grads[n] = await readTensor(ctx.device, run.acc[n]!);
    weights[n] = await readTensor(ctx.device, run.w[n]!);
  }
  return { loss, grads, weights };
}

/** Ends one-device run `id` and frees its tensors (nothing when there is none). */
export function accumEnd(_ctx: RankContext, a: { id: string }): void {
  sessions.get(a.id)?.store.releaseAll();
  sessions.delete(a.id);
}

/** The one-device gradient-accumulation run's programs, served by src/ranks/layer.worker.ts. */
export const gradAccumPrograms = { accumStart, accumStep, accumEnd };
