import { KernelContext } from '../kernels/context.ts';
import { exportGemmChoices, importGemmChoices } from '../kernels/gemm-choice.ts';
import { tuneGemm, type GemmTuning } from '../kernels/gemm-tuner.ts';
import type { GemmVariant } from '../kernels/gemm-variants.ts';
import { GpuTimer } from '../kernels/gpu-timer.ts';
import type { GpuTensor } from '../kernels/tensor.ts';
import { GpuBackend } from '../parallel/backend-gpu.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { RankOutput } from '../parallel/gather.ts';
import { LayerComm, type NamedCollective } from '../parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../parallel/layer.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { makePlan } from '../parallel/plan.ts';
import { readRankOutput } from '../parallel/run-in-process.ts';
import { rankWeightArrays, stepInputs, uploadWeights } from '../parallel/step-data.ts';
import type { Collectives } from '../comm/collectives.ts';
import type { RankContext } from './context.ts';
import { DetachedCollectives } from './detached-collectives.ts';

/** GEMM choices as they travel between ranks: shape class → variant. */
export type GemmChoices = [string, GemmVariant][];

// One kernel context per device: its pipeline cache outlives single steps.
const contexts = new WeakMap<GPUDevice, KernelContext>();
function kernelContext(device: GPUDevice): KernelContext {
  let k = contexts.get(device);
  if (!k) contexts.set(device, (k = new KernelContext(device)));
  return k;
}

/** Runs one step on this rank's GPU with `comm`; frees every tensor it made before returning. */
async function gpuStep(ctx: RankContext, c: LayerConfig, rank: number, comm: Collectives<GpuTensor>, inputs: StepInputs, timer?: GpuTimer) {
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k);
  const own = rankOwnership(c)[rank];
  // Submit the kernels encoded so far before each collective reads its input back.
  const lc = new LayerComm(comm, (t: GpuTensor) => t.shape, () => k.submit(), (t) => be.adopt(t));
  try {
    const w = uploadWeights(rankWeightArrays(c, own), (n, shape, data) => be.tensor(n, shape, data));
    timer?.start();
    const r = await layerStep(be, lc, c, own, w, inputs);
    const timed = timer ? await timer.stop() : undefined;
    const output = await readRankOutput(rank, (t: GpuTensor) => be.read(t), r);
    return { output, named: lc.log, timed };
  } finally {
    be.releaseAll();
  }
}

/** Tunes the GEMM tilings for every GEMM of the given configs' plans on this rank's adapter. */
export async function layerTune(ctx: RankContext, a: { configs: LayerConfig[] }): Promise<{ choices: GemmChoices; tuning: GemmTuning[] }> {
  const k = kernelContext(ctx.device);
  const tuning: GemmTuning[] = [];
  for (const c of a.configs) tuning.push(...(await tuneGemm(k, (await makePlan(c)).gemmProblems)));
  return { choices: exportGemmChoices(ctx.device), tuning };
}

/** What a rank returns from a step: its results and the collectives it issued, by name. */
export interface LayerStepReply {
  readonly output: RankOutput;
  readonly named: NamedCollective[];
}

/**
 * One training step of `config` on every rank of the pool (real collectives), or with `solo`
 * on this rank alone as a one-rank group (the TP=1 reference).
 */
export async function layerStepProgram(ctx: RankContext, a: { config: LayerConfig; inputs: StepInputs; choices: GemmChoices; solo?: boolean }): Promise<LayerStepReply> {
  importGemmChoices(ctx.device, a.choices);
  const comm = a.solo ? new DetachedCollectives(ctx.device, 0, 1) : ctx.gpuComm;
  const { output, named } = await gpuStep(ctx, a.config, a.solo ? 0 : ctx.rank, comm, a.inputs);
  return { output, named };
}

/** Per compute op of the plan (in order), this rank's kernel time in ms, measured alone. */
export interface ComputeTiming {
  readonly rank: number;
  readonly ops: { readonly name: string; readonly ms: number }[];
  readonly quantized: boolean;
  readonly method: 'timestamp-query' | 'wall-clock';
}

/**
 * Times this rank's kernels with the other ranks idle (as if it had its own GPU): the step is
 * replayed with collectives that move nothing, every dispatch timed by timestamp queries (or, on
 * adapters without them, the whole step by the wall clock, split by the plan's FLOPs).
 */
export async function layerTiming(ctx: RankContext, a: { config: LayerConfig; choices: GemmChoices }): Promise<ComputeTiming> {
  importGemmChoices(ctx.device, a.choices);
  const comm = new DetachedCollectives(ctx.device, ctx.rank, a.config.tp);
  const inputs = stepInputs(a.config);
  const k = kernelContext(ctx.device);
  if (!GpuTimer.available(ctx.device)) {
    const { plan } = await makePlan(a.config);
    await gpuStep(ctx, a.config, ctx.rank, comm, inputs); // warm
    const t0 = performance.now();
    await gpuStep(ctx, a.config, ctx.rank, comm, inputs);
    const total = performance.now() - t0;
    const compute = plan.ops.filter((o) => o.kind !== 'collective');
    const flops = compute.reduce((s, o) => s + Math.max(o.flops, 1), 0);
    return { rank: ctx.rank, ops: compute.map((o) => ({ name: o.name, ms: (total * Math.max(o.flops, 1)) / flops })), quantized: false, method: 'wall-clock' };
  }
  const timer = new GpuTimer(k, 4096);
  try {
    await gpuStep(ctx, a.config, ctx.rank, comm, inputs); // warm: pipelines compiled, caches filled
    const { timed } = await gpuStep(ctx, a.config, ctx.rank, comm, inputs, timer);
    return { rank: ctx.rank, ops: timed!.times.map((t) => ({ name: t.op, ms: t.ns / 1e6 })), quantized: timed!.quantized, method: 'timestamp-query' };
  } finally {
    timer.destroy();
  }
}

/** The layer's programs, served by src/ranks/layer.worker.ts. */
export const layerPrograms = { layerTune, layerStep: layerStepProgram, layerTiming };
