import { stageMemoryCheck, type StageMemoryCheck } from '../accounting/pipeline-stage-memory.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { MeshCoords } from '../mesh/rank-layout.ts';
import type { OracleReport } from '../parallel/oracle.ts';
import { formulaBubble, formulaBubbleText, measuredBubble, type MeasuredBubble } from '../parallel/pipeline-bubble.ts';
import { assertPipelineModel, type PipelineModel } from '../parallel/pipeline-model.ts';
import {
  comparePipeline,
  gatherPipeline,
  pipelineReference,
  type PipelineTraining,
  type StageOutput,
} from '../parallel/pipeline-oracle.ts';
import type { DpSyncMode } from '../parallel/dp-options.ts';
import { pipelineReplicasOracle, type StageDpOutput } from '../parallel/pipeline-dp.ts';
import { simulatePipeline } from '../projection/pipeline/pipeline-schedule.ts';
import type { RankPool } from '../ranks/pool.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';

/** What a pipeline run takes: the model (its layer's t the mesh's tp, its p the mesh's pp) and the steps. */
export interface PipelineRunArgs {
  readonly model: PipelineModel;
  /** `steps` steps, Adam after each with `adam`; the last is measured and returned (the first compiles the pipelines). */
  readonly training: PipelineTraining;
  /**
   * How the mesh's d replicas synchronise their gradients (needed when the mesh's dp > 1; allowed at
   * d = 1): all-reduce, or the distributed optimizer (parallel/pipeline-dp.ts). Replica q runs
   * micro-batches q·m … q·m + m − 1 of the global batch of m·d.
   */
  readonly dp?: DpSyncMode;
}

/** The bubble the projection gives the same layout. */
export interface ProjectedBubble {
  /**
   * The projection's simulation (projection/pipeline/pipeline-schedule.ts simulatePipeline) of the
   * same p, v, m with each stage's and chunk's measured mean F and B times and no p2p time: what the
   * order alone leaves idle. Only for the schedules it simulates, 1F1B and interleaved.
   */
  readonly simulated?: { readonly idleShare: readonly number[]; readonly bubbleShare: number; readonly spanMs: number };
  /** The schedule's textbook share with equal stages (pipeline-bubble.ts formulaBubble), and its formula. */
  readonly formulaShare: number;
  readonly formula: string;
}

/** One stage's live-memory peak: the most GPU buffer bytes any of its TP ranks held at once in the step. */
export interface StageMemoryPeak {
  readonly stage: number;
  readonly peakBytes: number;
  /** Its ranks' own peaks, by global rank. */
  readonly ranks: readonly { readonly rank: number; readonly peakBytes: number }[];
}

/** What a pipeline run measured and checked. */
export interface PipelineRunResult {
  readonly model: PipelineModel;
  /** d, and the sync (absent: no data parallel). */
  readonly replicas: number;
  readonly dp?: DpSyncMode;
  /** Per global rank: its coordinates and its step's outputs (losses, gradient shards, pass spans, weights after Adam). */
  readonly places: readonly MeshCoords[];
  readonly outputs: readonly StageDpOutput[];
  /**
   * Loss, every gradient and (with Adam) every weight against one device on the same micro-batches
   * (with d replicas: each replica's against the global batch's, entries "replica q: …").
   */
  readonly oracle: OracleReport;
  readonly measured: MeasuredBubble;
  readonly projected: ProjectedBubble;
  readonly memory: readonly StageMemoryPeak[];
  /** Per global rank: its live memory by class after each pass against the accounting (accounting/pipeline-stage-memory.ts). */
  readonly memoryClasses: readonly StageMemoryCheck[];
  /**
   * The ranks' trace events of the measured step: the TP collectives, every p2p send and receive
   * (TraceEvent.p2p, both ends) and every pass's span (TraceEvent.pipelinePass).
   */
  readonly trace: TraceEvent[];
}

/** Mean duration of the passes `pass` of chunk `chunk` on stage `stage`, over its TP ranks and micro-batches, ms. */
function meanPassMs(outs: readonly StageOutput[], stage: number, chunk: number, pass: 'F' | 'B'): number {
  const xs = outs
    .filter((o) => o.stage === stage)
    .flatMap((o) => o.spans.filter((s) => s.pass === pass && s.chunk === chunk));
  return xs.length ? xs.reduce((a, s) => a + s.t1 - s.t0, 0) / xs.length : 0;
}

/** The projection's bubble of the layout the ranks ran, from their measured pass times. */
export function projectedBubble(model: PipelineModel, outs: readonly StageOutput[]): ProjectedBubble {
  const { p, v, m, schedule } = model;
  const simulates = schedule === '1f1b' || schedule === 'interleaved';
  const sim = simulates
    ? simulatePipeline({
        p,
        v,
        m,
        forwardMs: (i, c) => meanPassMs(outs, i, c, 'F'),
        backwardMs: (i, c) => meanPassMs(outs, i, c, 'B'),
        p2pMs: 0,
      })
    : undefined;
  return {
    ...(sim && { simulated: { idleShare: sim.idleShare, bubbleShare: sim.bubbleShare, spanMs: sim.spanMs } }),
    formulaShare: formulaBubble(schedule, p, v, m),
    formula: formulaBubbleText[schedule],
  };
}

/** Each stage's live-memory peak over its ranks. */
export function stageMemoryPeaks(p: number, outs: readonly StageOutput[]): StageMemoryPeak[] {
  return Array.from({ length: p }, (_, stage) => {
    const ranks = outs.flatMap((o, rank) => (o.stage === stage ? [{ rank, peakBytes: o.peakBytes ?? 0 }] : []));
    return { stage, peakBytes: Math.max(0, ...ranks.map((r) => r.peakBytes)), ranks };
  });
}

/**
 * Runs a pipeline model on a mesh pool of tp × pp (× dp) ranks (src/ranks/pipeline-programs.ts; each rank
 * a worker with its own GPUDevice, activations and gradients moved stage to stage on GPU tensors),
 * checks the last step against one device (pipelineReference on the CPU twins, comparePipeline:
 * tolerance pipelineTolerance / weightTolerance; with d replicas pipelineReplicasOracle over the
 * global batch) and measures its bubble beside the projection's. The measured bubble and the
 * memory peaks are over every replica's ranks (a stage's idle share: the mean over its ranks).
 */
export async function runPipeline(pool: RankPool<LayerWorkerPrograms>, a: PipelineRunArgs): Promise<PipelineRunResult> {
  const { model, training } = a;
  assertPipelineModel(model);
  const deg = pool.mesh.spec.degrees;
  if (deg.tp !== model.layer.tp || deg.pp !== model.p || deg.cp !== 1 || (deg.dp > 1 && !a.dp))
    throw new Error(
      `runPipeline: the pool's mesh is tp ${deg.tp} × cp ${deg.cp} × dp ${deg.dp} × pp ${deg.pp}; this model needs tp = t = ${model.layer.tp}, pp = p = ${model.p}, cp 1${a.dp ? '' : ', and dp 1 unless a DP sync is given'}.`,
    );
  const places = Array.from({ length: pool.size }, (_, r) => pool.mesh.coords(r));
  await pool.traces(); // drop what earlier runs left
  const outputs = await pool.run('pipelineStep', {
    model,
    steps: training.steps,
    ...(training.adam && { adam: training.adam }),
    ...(a.dp && { dp: a.dp }),
  });
  const trace = await pool.traces();
  const replicas = Array.from({ length: deg.dp }, (_, q) => outputs.filter((_, r) => places[r]!.dp === q));
  const oracle = a.dp
    ? await pipelineReplicasOracle(model, training, a.dp, replicas)
    : comparePipeline(model, await pipelineReference(model, training), gatherPipeline(model, outputs), training);
  return {
    model,
    replicas: deg.dp,
    ...(a.dp && { dp: a.dp }),
    places,
    outputs,
    oracle,
    measured: measuredBubble(
      model.p,
      outputs.map((o, r) => ({
        stage: o.stage,
        spans: o.spans,
        waits: trace.filter((e) => e.rank === r && e.p2p?.kind === 'recv'),
      })),
    ),
    projected: projectedBubble(model, outputs),
    memory: stageMemoryPeaks(model.p, outputs),
    memoryClasses: outputs.map((o) => stageMemoryCheck(model, o.stage, o.tpRank, o.spans)),
    trace,
  };
}
