import { sharedNow } from '../core/clock.ts';
import { numel } from '../core/shape.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import type { GpuTensor } from '../kernels/tensor.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { assertPipelineModel, type PipelineModel } from '../parallel/pipeline-model.ts';
import {
  readStageOutput,
  stageWeightArrays,
  stepStage,
  type StageOptimizer,
  type StageOutput,
} from '../parallel/pipeline-oracle.ts';
import type { AdamHyper } from '../reference/adam.ts';
import { pipelineStageStep, type PassSpan, type StageObserver } from '../parallel/pipeline-step.ts';
import { uploadWeights } from '../parallel/step-data.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { RankContext } from './context.ts';
import { kernelContext, type GemmChoices } from './layer-programs.ts';

/**
 * One step of a pipeline model on every rank of a mesh (tp = the layer's t, pp = p): this worker
 * runs stage ctx.mesh.coords.pp on TP rank ctx.rank, its blocks' kernels on its GPUDevice, the TP
 * collectives over its TP group and the activations and gradients over its PP group on GPU tensors
 * (mesh group 'pp', gpuComm: read back, moved, uploaded). With `steps` > 1 the step runs that many
 * times and the last is returned: its losses, gradients and each pass's span on the shared clock
 * (core/clock.ts sharedNow, ms). Without `adam` every step starts from the seeded weights (a repeat:
 * the first compiles the pipelines); with it each step is followed by Adam on this rank's shards
 * (host, fp32), the next step runs on the updated weights, and the shards after the last are returned.
 */
export async function pipelineStepProgram(
  ctx: RankContext,
  a: { model: PipelineModel; choices?: GemmChoices; steps?: number; adam?: AdamHyper },
): Promise<StageOutput> {
  const { model } = a;
  assertPipelineModel(model);
  if (ctx.size !== model.layer.tp || ctx.mesh.spec.degrees.pp !== model.p)
    throw new Error(
      `rank ${ctx.mesh.rank}: the model wants t = ${model.layer.tp}, p = ${model.p}; this mesh has tp ${ctx.size}, pp ${ctx.mesh.spec.degrees.pp ?? 1}.`,
    );
  importGemmChoices(ctx.device, a.choices ?? []);
  const stage = ctx.mesh.coords.pp;
  const k = kernelContext(ctx.device);
  const own = rankOwnership(model.layer)[ctx.rank]!;
  const arrays = stageWeightArrays(model, stage, ctx.rank);
  const optimizer: StageOptimizer = new Map();
  let out: StageOutput | undefined;
  const steps = Math.max(1, a.steps ?? 1);
  for (let i = 0; i < steps; i++) {
    const be = new GpuBackend(k);
    try {
      const upload = (x: Parameters<typeof uploadWeights>[0]) =>
        uploadWeights(x, (n, shape, data) => be.tensor(n, shape, data));
      const weights = { blocks: new Map(arrays.blocks.map(([l, x]) => [l, upload(x)])), head: upload(arrays.head) };
      await k.flush(); // the weights' upload is not a pass's time
      const adopt = (t: GpuTensor) => be.adopt(t);
      // As the layer's step (layer-programs.ts gpuStep): the kernels queued so far run before each collective.
      const lc = new LayerComm(
        ctx.gpuComm,
        (t: GpuTensor) => t.shape,
        (named) => (named.chunk ? k.submit() : k.flush()),
        adopt,
        () => k.submit(),
      );
      const pp = ctx.mesh.group('pp');
      const link = { p2p: pp.gpuComm, adopt };
      const lastStep = i === steps - 1;
      if (lastStep) ctx.trace.drain(); // the trace keeps the returned step's events
      const observe = lastStep ? traceObserver(ctx, pp.view?.members ?? [], stage, () => be.liveBytes) : {};
      const r = await pipelineStageStep(be, lc, link, model, stage, own, weights, sharedNow, observe);
      if (lastStep) for (const s of r.spans) ctx.trace.record(passEvent(ctx.mesh.rank, stage, s));
      out = { ...(await readStageOutput((t: GpuTensor) => be.read(t), ctx.rank, stage, r)), peakBytes: be.peakBytes };
      if (a.adam) stepStage(arrays, out, optimizer, a.adam);
    } finally {
      be.releaseAll();
    }
  }
  return a.adam ? { ...out!, weights: arrays } : out!;
}

/**
 * Puts the stage's p2p messages on the rank's trace as typed events (TraceEvent.p2p), the peers
 * named by global rank (`members[s]`: stage s's rank in this PP group), and samples live bytes.
 */
function traceObserver(
  ctx: RankContext,
  members: readonly number[],
  stage: number,
  liveBytes: () => number,
): StageObserver {
  const global = (s: number) => {
    const g = members[s];
    if (g === undefined)
      throw new Error(`rank ${ctx.mesh.rank}: its PP group has no stage ${s} (members ${members.join(', ')}).`);
    return g;
  };
  return {
    liveBytes,
    message: (m) => {
      const [fromStage, toStage] = m.kind === 'send' ? [stage, m.peerStage] : [m.peerStage, stage];
      ctx.trace.record({
        rank: ctx.mesh.rank,
        stream: 'comm',
        op: `p2p.${m.kind}`,
        shape: m.shape,
        bytes: 4 * numel(m.shape),
        t0: m.t0,
        t1: m.t1,
        phases: [],
        p2p: {
          kind: m.kind,
          carries: m.carries,
          from: global(fromStage),
          to: global(toStage),
          fromStage,
          toStage,
          virtualStage: m.virtualStage,
          microBatch: m.microBatch,
          tensor: m.tensor,
        },
      });
    },
  };
}

/** A pass's span as a trace event on the compute stream (TraceEvent.pipelinePass). */
function passEvent(rank: number, stage: number, s: PassSpan): TraceEvent {
  return {
    rank,
    stream: 'compute',
    op: `pipeline.${s.pass}`,
    shape: [],
    bytes: 0,
    t0: s.t0,
    t1: s.t1,
    phases: [],
    pipelinePass: {
      pass: s.pass,
      stage,
      chunk: s.chunk,
      microBatch: s.microBatch,
      ...(s.liveBytes !== undefined && { liveBytes: s.liveBytes }),
    },
  };
}

/** The pipeline's programs, served by src/ranks/layer.worker.ts. */
export const pipelinePrograms = { pipelineStep: pipelineStepProgram };
