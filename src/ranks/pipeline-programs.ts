import { sharedNow } from '../core/clock.ts';
import { numel } from '../core/shape.ts';
import type { DpSyncInfo, TraceEvent } from '../core/trace-event.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import type { GpuTensor } from '../kernels/tensor.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { assertPipelineModel, type PipelineModel } from '../parallel/pipeline-model.ts';
import type { DpSyncMode } from '../parallel/dp-options.ts';
import {
  endStageStep,
  stageGradBuffer,
  stageGradSyncName,
  stageParamSyncName,
  type StageDp,
  type StageDpOutput,
  type StageGradBuffer,
  sampleElems,
  type BoundarySample,
} from '../parallel/pipeline-dp.ts';
import { stageWeightArrays, type StageOptimizer } from '../parallel/pipeline-oracle.ts';
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
 * With `dp` the mesh's d replicas of the pipeline run micro-batches q·m … q·m + m − 1 each and
 * synchronise their gradients over their DP group on GPU tensors before the optimizer
 * (parallel/pipeline-dp.ts endStageStep: all-reduce, or the distributed optimizer's reduce-scatter,
 * sharded Adam and all-gather); the syncs' collectives carry `dpSync` on the trace.
 */
export async function pipelineStepProgram(
  ctx: RankContext,
  a: { model: PipelineModel; choices?: GemmChoices; steps?: number; adam?: AdamHyper; dp?: DpSyncMode },
): Promise<StageDpOutput> {
  const { model } = a;
  assertPipelineModel(model);
  if (ctx.size !== model.layer.tp || ctx.mesh.spec.degrees.pp !== model.p || (!a.dp && ctx.mesh.spec.degrees.dp > 1))
    throw new Error(
      `rank ${ctx.mesh.rank}: the model wants t = ${model.layer.tp}, p = ${model.p}${a.dp ? '' : ', no data parallel'}; this mesh has tp ${ctx.size}, pp ${ctx.mesh.spec.degrees.pp}, dp ${ctx.mesh.spec.degrees.dp}.`,
    );
  importGemmChoices(ctx.device, a.choices ?? []);
  const stage = ctx.mesh.coords.pp;
  const k = kernelContext(ctx.device);
  const own = rankOwnership(model.layer)[ctx.rank]!;
  const arrays = stageWeightArrays(model, stage, ctx.rank);
  const optimizer: StageOptimizer = new Map();
  const dpGroup = a.dp ? ctx.mesh.group('dp') : undefined;
  const dp: StageDp<GpuTensor> | undefined =
    a.dp && dpGroup
      ? { comm: dpGroup.gpuComm, rank: ctx.mesh.coords.dp, size: dpGroup.gpuComm.size, mode: a.dp }
      : undefined;
  let out: StageDpOutput | undefined;
  const boundaries: BoundarySample[] = [];
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
      // The first step reads back its micro-batch 0 messages (the classroom's boundary tensors); the measured last step reads none.
      const observe: StageObserver<GpuTensor> = lastStep
        ? traceObserver(ctx, pp.view?.members ?? [], stage, () => be.liveBytes)
        : {
            received: async (tensor, t) => {
              if (tensor.endsWith('.0'))
                boundaries.push({ tensor, shape: t.shape, values: (await be.read(t)).slice(0, sampleElems) });
            },
          };
      const r = await pipelineStageStep(be, lc, link, model, stage, own, weights, sharedNow, {
        observe,
        ...(dp && { firstMicroBatch: dp.rank * model.m }),
      });
      if (lastStep) for (const s of r.spans) ctx.trace.record(passEvent(ctx.mesh.rank, stage, s));
      const traceFrom = ctx.trace.peek().length;
      const ended = await endStageStep(be, r, {
        tpRank: ctx.rank,
        stage,
        arrays,
        optimizer,
        ...(a.adam && { adam: a.adam }),
        ...(dp && { dp }),
      });
      if (dp) tagDpSyncs(ctx, traceFrom, stageGradBuffer(arrays, dp.size, dp.mode), i + 1);
      out = { ...ended, peakBytes: be.peakBytes, ...(boundaries.length && { boundaries }) };
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

/** Marks the DP syncs recorded since `from` (their collectives' tensor names) as the timeline's DP sync blocks. */
function tagDpSyncs(ctx: RankContext, from: number, buf: StageGradBuffer, step: number): void {
  const b = buf.layout.buckets[0]!;
  const info = (sync: DpSyncInfo['sync']): DpSyncInfo => ({
    sync,
    bucket: 0,
    buckets: 1,
    params: b.params,
    numel: b.end - b.start,
    overlapped: false,
    gradsToCome: 0,
    step,
  });
  const distributed = buf.layout.distributedOptimizer;
  const tags = new Map<string, DpSyncInfo>([
    [stageGradSyncName, info(distributed ? 'grad-reduce-scatter' : 'grad-all-reduce')],
    [stageParamSyncName, info('param-all-gather')],
  ]);
  ctx.trace.annotate(from, (e) => {
    const t = e.stream === 'comm' && e.comm?.tensor !== undefined ? tags.get(e.comm.tensor) : undefined;
    return t ? { ...e, dpSync: t } : e;
  });
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
