import { memoryAtPeak, type BudgetRow } from './cluster-projection.ts';
import { type DpCommMs, type ExposedByGroup } from './step-times.ts';
import type { WeightCast } from './quantized-params.ts';
import type { MemoryClass } from '../pipeline/memory-timeline.ts';

/** One row of the fixed-budget table as the page and `npm run project` print it. */
export type BudgetLine =
  | {
      readonly tp: number;
      readonly ok: true;
      readonly dp: number;
      readonly pp: number;
      readonly vpp: number;
      readonly cp: number;
      /** Micro-batches per replica per step. */
      readonly microBatches: number;
      readonly stepMs: number;
      readonly tokensPerS: number;
      readonly tflopsPerGpu: number;
      /** Model FLOPs / (N · peak · step), the peak of the GEMMs' format (fp8 under the fp8 recipe). */
      readonly mfu: number;
      /** Model FLOPs / (N · the training dtype's peak · step) (= mfu without fp8). */
      readonly trainDtypeMfu: number;
      /** Executed FLOPs (with recompute) / (N · peak · step). */
      readonly executedMfu: number;
      /** Idle share of the busiest pipeline stage over the schedule. */
      readonly bubbleShare: number;
      /** Exposed communication per group (TP, CP, PP p2p, DP), ms. */
      readonly exposedByGroup: ExposedByGroup;
      /** The DP collectives per step, hidden or not, and the parameter all-gather's bytes per parameter. */
      readonly dpCommMs: DpCommMs;
      /** Under an fp8 or fp4 recipe: the weights' casts and amax all-reduce per step (quantized-params.ts). */
      readonly weightCast?: WeightCast;
      /**
       * The finalize phase's TP collectives once per step, ms (finalize.ts: the SP norms' and MLA's
       * replicated gradients, finalize_model_grads.py:416-485); the tied-embedding all-reduce apart.
       */
      readonly finalizeMs: number;
      /** The tied embedding's gradient all-reduce between the first and last stage, ms (tied-embedding.ts). */
      readonly embeddingAllReduceMs: number;
      /** Exposed communication per rank (TP exposed + DP all-reduce + finalize), ms and share of the step. */
      readonly exposedMs: number;
      readonly exposedShare: number;
      /** Peak memory of the peak stage over the step's live intervals. */
      readonly memoryGiB: number;
      /** Live GiB per lifetime class at that peak. */
      readonly memoryByClassGiB: Readonly<Record<MemoryClass, number>>;
      /** Parameters of each pipeline stage (its TP shard). */
      readonly stageParams: readonly number[];
      /** Transformer layers of each pipeline stage (all its chunks). */
      readonly stageLayers: readonly number[];
      readonly capacityGiB: number;
      readonly oom: boolean;
      /**
       * With --cuda-graph-impl, per stage (cuda-graph-memory.ts): graphs captured, GiB held for the run,
       * and GiB kept per micro-batch in flight of its first chunk (local's input copy).
       */
      readonly cudaGraphs?: readonly {
        readonly graphs: number;
        readonly residentGiB: number;
        readonly perMicroBatchGiB: number;
      }[];
      /** With SP: relative change against the same t without SP (tokens/s, memory). */
      readonly vsNoSp?: { readonly throughput: number; readonly memory: number };
    }
  | { readonly tp: number; readonly ok: false; readonly reason: string };

const GiB = 2 ** 30;

const byClassGiB = (x: Readonly<Record<MemoryClass, number>>): Record<MemoryClass, number> => ({
  resident: x.resident / GiB,
  perStep: x.perStep / GiB,
  perMicroBatch: x.perMicroBatch / GiB,
  transient: x.transient / GiB,
});

/** The table's rows from projected steps; `baseline` (the same degrees without SP) adds vsNoSp. */
export function budgetLines(rows: readonly BudgetRow[], baseline?: readonly BudgetRow[]): BudgetLine[] {
  return rows.map((r): BudgetLine => {
    if (!r.ok) return r;
    const s = r.step;
    const base = baseline?.find((b) => b.tp === r.tp);
    const vsNoSp =
      base?.ok && s.setup.sp && r.tp > 1
        ? {
            throughput: s.tokensPerS / base.step.tokensPerS - 1,
            memory: s.memory.totalBytes / base.step.memory.totalBytes - 1,
          }
        : undefined;
    return {
      tp: r.tp,
      ok: true,
      dp: s.dp,
      pp: s.degrees.pp,
      vpp: s.degrees.vpp,
      cp: s.degrees.cp,
      microBatches: s.microBatches,
      stepMs: s.stepMs,
      tokensPerS: s.tokensPerS,
      tflopsPerGpu: s.tflopsPerGpu,
      mfu: s.mfu,
      trainDtypeMfu: s.trainDtypeMfu,
      executedMfu: s.executedMfu,
      bubbleShare: s.bubbleShare,
      exposedByGroup: s.exposedByGroup,
      dpCommMs: s.dpCommMs,
      ...(s.weightCast && { weightCast: s.weightCast }),
      finalizeMs: s.finalizeMs,
      embeddingAllReduceMs: s.embeddingAllReduceMs,
      exposedMs: s.exposedMs,
      exposedShare: s.exposedShare,
      memoryGiB: s.memory.totalBytes / GiB,
      memoryByClassGiB: byClassGiB(memoryAtPeak(s)),
      stageParams: s.stageParams,
      stageLayers: s.split.layers.map((row) => row.reduce((a, n) => a + n, 0)),
      capacityGiB: s.memory.capacityBytes / GiB,
      oom: s.memory.oom,
      ...(s.cudaGraphs && {
        cudaGraphs: s.cudaGraphs.map((g) => ({
          graphs: g.graphs,
          residentGiB: g.resident.reduce((a, r) => a + r.bytes, 0) / GiB,
          perMicroBatchGiB: g.keptPerMicroBatch(0) / GiB,
        })),
      }),
      ...(vsNoSp && { vsNoSp }),
    };
  });
}
