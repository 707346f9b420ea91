import { numel } from '../core/shape.ts';
import type { TraceEvent } from '../core/trace-event.ts';
import type { DpSyncMode } from '../parallel/dp-options.ts';
import { chunkBlocks, type PipelineModel } from '../parallel/pipeline-model.ts';
import { stageWeightArrays, type PipelineTraining } from '../parallel/pipeline-oracle.ts';
import type { PipelineSettings } from '../parallel/pipeline-settings.ts';
import { runPipeline, type PipelineRunResult } from './pipeline-run.ts';
import { createLayerPool } from './pools.ts';
import { isCpuAdapter } from '../kernels/adapter.ts';

/** One rank of the measured step. */
export interface PipelineSweepRank {
  readonly rank: number;
  readonly tp: number;
  readonly stage: number;
  readonly replica: number;
  /** Σ of its passes' time, ms, and the share of the step it did not spend in a pass. */
  readonly busyMs: number;
  readonly idleShare: number;
  /** Most GPU buffer bytes it held at once. */
  readonly peakBytes: number;
  /** Bytes it sent to its neighbouring stages. */
  readonly p2pSentBytes: number;
}

/** One stage: its blocks, its parameters (the logical model's, TP = 1), its bubble measured and projected, its memory peak. */
export interface PipelineSweepStage {
  readonly stage: number;
  readonly blocks: number;
  readonly params: number;
  /** Mean over its ranks of 1 − busy/step. */
  readonly measuredIdleShare: number;
  /** The projection's simulation on the measured pass times (1F1B and interleaved). */
  readonly simulatedIdleShare?: number;
  readonly peakBytes: number;
}

/** A step of the same model on its TP group alone (t ranks, p 1, d 1, the global batch's m·d micro-batches): throughput's yardstick; one worker at t = 1. */
export interface PipelineSweepBaseline {
  readonly stepMs: number;
  readonly tokensPerSecond: number;
  /** The mesh's tokens per second over this one's. */
  readonly speedup: number;
  readonly oraclePass: boolean;
}

/** What `npm run sweep -- --pp …` prints (its `--json`). */
export interface PipelineSweepReport {
  readonly adapter: string;
  readonly note: string;
  readonly mesh: {
    readonly tp: number;
    readonly pp: number;
    readonly dp: number;
    readonly vpp: number;
    readonly microBatches: number;
    readonly layers: number;
    readonly schedule: PipelineModel['schedule'];
    readonly sync?: DpSyncMode;
    readonly ranks: number;
    readonly globalBatch: number;
  };
  /** The measured step: from its first pass's start on any rank to its last event's end (DP syncs included), ms. */
  readonly stepMs: number;
  readonly tokensPerSecond: number;
  /** The passes' span (first pass start → last pass end), ms, and the busiest stage's idle share of it. */
  readonly passSpanMs: number;
  readonly bubbleShare: number;
  readonly projected: {
    readonly formula: string;
    readonly formulaShare: number;
    readonly simulatedBubbleShare?: number;
  };
  readonly stages: PipelineSweepStage[];
  readonly ranks: PipelineSweepRank[];
  /** The end stages' parameters over a middle stage's (p ≥ 3), or over the mean of the others (p = 2); seed 001 §1.4's excess. */
  readonly endStageExcess?: number;
  readonly p2p: { readonly messages: number; readonly bytes: number };
  readonly oracle: {
    readonly pass: boolean;
    readonly tensors: number;
    readonly worst: { readonly tensor: string; readonly maxAbs: number; readonly tol: number };
  };
  readonly baseline?: PipelineSweepBaseline;
}

/** Arguments from the CLI (settings already checked there by pipelineSettings). */
export interface PipelineSweepArgs {
  readonly settings: PipelineSettings;
  /** Steps run; the last is measured (default 2: the first compiles the pipelines). */
  readonly steps?: number;
  /** Also run the model on its TP group alone (one worker at t = 1) for the throughput ratio. */
  readonly baseline?: boolean;
  readonly onProgress?: (line: string) => void;
}

// Megatron's β1 and β2; lr 1e-2 and ε 1e-2 as the pipeline's oracle tests (weightTolerance).
const adam = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-2 };

/**
 * The measured step, ms: from its first pass's start on any rank to its last event's end (the DP
 * syncs after the last backward included); a receive posted earlier, while its sender still
 * uploads its weights, is the workers' start-up skew and not counted. 0 without passes.
 */
function traceSpanMs(trace: readonly TraceEvent[]): number {
  const passes = trace.filter((e) => e.pipelinePass);
  if (!passes.length) return 0;
  return Math.max(...trace.map((e) => e.t1)) - Math.min(...passes.map((e) => e.t0));
}

/** Stage i's parameters in the logical (TP = 1) model: its blocks' and the embedding / output layer it holds. */
function stageParams(model: PipelineModel, stage: number): number {
  const a = stageWeightArrays({ ...model, layer: { ...model.layer, tp: 1, sp: false } }, stage, 0);
  const sum = (w: Record<string, { shape: readonly number[] } | undefined>) =>
    Object.values(w).reduce((n, x) => n + (x ? numel(x.shape) : 0), 0);
  return a.blocks.reduce((n, [, w]) => n + sum(w), 0) + sum(a.head);
}

/** seed 001 §1.4's "end stages hold 2.76× the parameters": the larger end stage over a middle one (p ≥ 3) or over the other end (p = 2). */
function endExcess(params: readonly number[]): number | undefined {
  const p = params.length;
  if (p < 2) return undefined;
  const ends = Math.max(params[0]!, params[p - 1]!);
  const middle = p >= 3 ? params[1]! : Math.min(params[0]!, params[p - 1]!);
  return middle > 0 ? ends / middle : undefined;
}

/** The report of one run (what the CLI prints). */
export function pipelineSweepReport(
  adapter: string,
  s: PipelineSettings,
  run: PipelineRunResult,
  baseline?: PipelineSweepBaseline,
): PipelineSweepReport {
  const { model } = s;
  const stepMs = traceSpanMs(run.trace);
  const tokens = s.globalBatch * model.layer.s;
  const span = run.measured.spanMs;
  const blocks = chunkBlocks(model);
  const params = blocks.map((_, i) => stageParams(model, i));
  const p2p = run.trace.filter((e) => e.p2p?.kind === 'send');
  return {
    adapter,
    note: isCpuAdapter(adapter)
      ? "SwiftShader runs WebGPU on the CPU: every rank's kernels share this machine's cores, so times say nothing about a GPU and a pipeline's stages do not run side by side as they would on p GPUs; compare ratios measured in one run."
      : 'All ranks share this one adapter; compare ratios measured in one run.',
    mesh: {
      tp: model.layer.tp,
      pp: model.p,
      dp: s.dp,
      vpp: model.v,
      microBatches: model.m,
      layers: model.layers,
      schedule: model.schedule,
      ...(run.dp && { sync: run.dp }),
      ranks: run.places.length,
      globalBatch: s.globalBatch,
    },
    stepMs,
    tokensPerSecond: stepMs > 0 ? tokens / (stepMs / 1000) : 0,
    passSpanMs: span,
    bubbleShare: run.measured.bubbleShare,
    projected: {
      formula: run.projected.formula,
      formulaShare: run.projected.formulaShare,
      ...(run.projected.simulated && { simulatedBubbleShare: run.projected.simulated.bubbleShare }),
    },
    stages: blocks.map((chunks, i) => ({
      stage: i,
      blocks: chunks.flat().length,
      params: params[i]!,
      measuredIdleShare: run.measured.idleShare[i]!,
      ...(run.projected.simulated && { simulatedIdleShare: run.projected.simulated.idleShare[i]! }),
      peakBytes: run.memory[i]!.peakBytes,
    })),
    ranks: run.outputs.map((o, r) => {
      const busyMs = o.spans.reduce((a, x) => a + x.t1 - x.t0, 0);
      return {
        rank: r,
        tp: run.places[r]!.tp,
        stage: o.stage,
        replica: run.places[r]!.dp,
        busyMs,
        idleShare: span > 0 ? 1 - busyMs / span : 0,
        peakBytes: o.peakBytes ?? 0,
        p2pSentBytes: p2p.filter((e) => e.rank === r).reduce((a, e) => a + e.bytes, 0),
      };
    }),
    ...((): { endStageExcess?: number } => {
      const x = endExcess(params);
      return x === undefined ? {} : { endStageExcess: x };
    })(),
    p2p: { messages: p2p.length, bytes: p2p.reduce((a, e) => a + e.bytes, 0) },
    oracle: {
      pass: run.oracle.pass,
      tensors: run.oracle.entries.length,
      worst: { tensor: run.oracle.worst.tensor, maxAbs: run.oracle.worst.maxAbs, tol: run.oracle.worst.tol },
    },
    ...(baseline && { baseline }),
  };
}

/**
 * Runs the settings' pipeline on a mesh of t·p·d rank workers (runPipeline: `steps` steps with Adam,
 * the last measured and checked against one device) and, with `baseline`, the same L blocks on t
 * workers alone (p 1, d 1) over the same global batch, for the throughput ratio.
 */
export async function runPipelineSweep(args: PipelineSweepArgs): Promise<PipelineSweepReport> {
  const say = args.onProgress ?? (() => {});
  const s = args.settings;
  const { model } = s;
  const training: PipelineTraining = { steps: Math.max(1, args.steps ?? 2), adam };
  const n = model.layer.tp * model.p * s.dp;
  say(`starting ${n} rank workers (tp ${model.layer.tp} × pp ${model.p} × dp ${s.dp})…`);
  const pool = await createLayerPool(n, 'auto', 300_000, { degrees: { tp: model.layer.tp, pp: model.p, dp: s.dp } });
  let run: PipelineRunResult;
  let adapter: string;
  try {
    adapter = pool.adapters[0] ?? 'unknown adapter';
    say(`running ${training.steps} steps of ${model.schedule}, m ${model.m}, L ${model.layers}…`);
    run = await runPipeline(pool, { model, training, ...(s.dp > 1 && { dp: s.sync }) });
  } finally {
    await pool.dispose();
  }
  let baseline: PipelineSweepBaseline | undefined;
  if (args.baseline) {
    say(`running the same model on tp ${model.layer.tp} alone…`);
    const one: PipelineModel = {
      ...model,
      p: 1,
      v: 1,
      m: model.m * s.dp,
      schedule: '1f1b',
    };
    const solo = await createLayerPool(model.layer.tp, 'auto', 300_000, { degrees: { tp: model.layer.tp } });
    try {
      const r = await runPipeline(solo, { model: one, training });
      const stepMs = traceSpanMs(r.trace);
      const tokensPerSecond = stepMs > 0 ? (s.globalBatch * model.layer.s) / (stepMs / 1000) : 0;
      const mesh = traceSpanMs(run.trace);
      const meshTps = mesh > 0 ? (s.globalBatch * model.layer.s) / (mesh / 1000) : 0;
      baseline = {
        stepMs,
        tokensPerSecond,
        speedup: tokensPerSecond > 0 ? meshTps / tokensPerSecond : 0,
        oraclePass: r.oracle.pass,
      };
    } finally {
      await solo.dispose();
    }
  }
  return pipelineSweepReport(adapter, s, run, baseline);
}
