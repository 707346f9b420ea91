import { adamStep } from '../kernels/adam.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import { readTensor, type GpuTensor } from '../kernels/tensor.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../parallel/layer.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { rankWeightArrays, uploadWeights } from '../parallel/step-data.ts';
import { weightsOf, type WeightSet } from '../parallel/weights.ts';
import { adamHyper } from '../reference/adam.ts';
import type { Collectives } from '../comm/collectives.ts';
import type { RankContext } from './context.ts';
import { DetachedCollectives } from './detached-collectives.ts';
import { kernelContext, type GemmChoices } from './layer-programs.ts';
import { adoptInto, ResultTensors } from './result-tensors.ts';

/** A training run held by one rank between steps: its weight shards and Adam moments on its GPU. */
interface TrainSession {
  readonly config: LayerConfig;
  readonly rank: number;
  readonly comm: Collectives<GpuTensor>;
  readonly store: GpuBackend;
  readonly w: WeightSet<GpuTensor>;
  readonly m: WeightSet<GpuTensor>;
  readonly v: WeightSet<GpuTensor>;
  /** The run's collective results, each step writing into the previous step's (absent solo). */
  readonly results?: ResultTensors;
  step: number;
}

// This worker's training runs by id (rank 0 may hold the TP=t run and the TP=1 one side by side).
const sessions = new Map<string, TrainSession>();

/**
 * Starts training run `id` on this rank: uploads its shards of the config's seeded weights and
 * zero Adam moments; with `solo`, this rank alone as TP=1 (a one-rank group).
 */
export function trainStart(
  ctx: RankContext,
  a: { id: string; config: LayerConfig; solo?: boolean; choices?: GemmChoices },
): { rank: number } {
  trainEnd(ctx, { id: a.id });
  if (a.choices) importGemmChoices(ctx.device, a.choices);
  const c = a.config;
  if (!a.solo && ctx.gpuComm.size !== c.tp)
    throw new Error(`trainStart: the group has ${ctx.gpuComm.size} ranks but the config asks for t = ${c.tp}.`);
  const results = a.solo ? undefined : new ResultTensors();
  const comm = results ? results.around(ctx.gpuComm) : new DetachedCollectives(ctx.device, 0, 1);
  const rank = a.solo ? 0 : ctx.rank;
  const store = new GpuBackend(kernelContext(ctx.device));
  const shards = rankWeightArrays(c, rankOwnership(c)[rank]);
  const w = uploadWeights(shards, (n, shape, data) => store.tensor(n, shape, data));
  const zeros = (p: string) => uploadWeights(shards, (n, shape) => store.tensor(`${p}.${n}`, shape));
  sessions.set(a.id, {
    config: c,
    rank,
    comm,
    store,
    w,
    m: zeros('adam.m'),
    v: zeros('adam.v'),
    ...(results && { results }),
    step: 0,
  });
  return { rank };
}

/** What one training step reports: the mean loss and this rank's replicated RMSNorm gains after the update. */
export interface TrainStepReply {
  readonly loss: number;
  readonly g1: Float32Array;
  readonly g2: Float32Array;
}

/**
 * One training step of run `id`: the layer's forward and backward on `inputs` (real collectives;
 * gradients of this rank's shards), then Adam (lr, β1 0.9, β2 0.999, ε 1e-8) on every shard.
 */
export async function trainStep(
  ctx: RankContext,
  a: { id: string; inputs: StepInputs; lr: number },
): Promise<TrainStepReply> {
  const run = sessions.get(a.id);
  if (!run) throw new Error(`trainStep: no training run "${a.id}" on rank ${ctx.rank}; call trainStart first.`);
  const c = run.config;
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k, run.results?.backendOptions());
  const lc = new LayerComm(
    run.comm,
    (t: GpuTensor) => t.shape,
    () => k.flush(),
    adoptInto(be, run.results),
  );
  try {
    const r = await layerStep(be, lc, c, rankOwnership(c)[run.rank], run.w, a.inputs);
    run.step++;
    const h = adamHyper(a.lr);
    for (const n of weightsOf(c)) adamStep(k, run.w[n]!, r.grads[n]!, run.m[n]!, run.v[n]!, h, run.step);
    const loss = await be.read(r.loss!);
    await k.flush();
    return {
      loss: loss.reduce((s, x) => s + x, 0) / loss.length,
      g1: await readTensor(ctx.device, run.w.g1!),
      g2: await readTensor(ctx.device, run.w.g2!),
    };
  } finally {
    be.releaseAll();
    run.results?.endStep();
  }
}

/** Ends training run `id` on this rank and frees its tensors (nothing when there is none). */
export function trainEnd(_ctx: RankContext, a: { id: string }): void {
  const run = sessions.get(a.id);
  run?.store.releaseAll();
  run?.results?.dispose();
  sessions.delete(a.id);
}

/** The training demo's programs, served by src/ranks/layer.worker.ts. */
export const classroomTrainPrograms = { trainStart, trainStep, trainEnd };
