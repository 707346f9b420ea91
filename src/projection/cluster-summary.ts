import type { BudgetRow } from './cluster-projection.ts';

/** One row of the fixed-budget table as the page and `npm run project` print it. */
export type BudgetLine =
  | {
      readonly tp: number;
      readonly ok: true;
      readonly dp: number;
      /** Micro-batches per replica per step. */
      readonly microBatches: number;
      readonly stepMs: number;
      readonly tokensPerS: number;
      readonly tflopsPerGpu: number;
      readonly mfu: number;
      /** Exposed communication per rank (TP exposed + DP all-reduce + finalize), ms and share of the step. */
      readonly exposedMs: number;
      readonly exposedShare: number;
      readonly memoryGiB: number;
      readonly capacityGiB: number;
      readonly oom: boolean;
      /** With SP: relative change against the same t without SP (tokens/s, memory). */
      readonly vsNoSp?: { readonly throughput: number; readonly memory: number };
    }
  | { readonly tp: number; readonly ok: false; readonly reason: string };

const GiB = 2 ** 30;

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
      microBatches: s.microBatches,
      stepMs: s.stepMs,
      tokensPerS: s.tokensPerS,
      tflopsPerGpu: s.tflopsPerGpu,
      mfu: s.mfu,
      exposedMs: s.exposedMs,
      exposedShare: s.exposedShare,
      memoryGiB: s.memory.totalBytes / GiB,
      capacityGiB: s.memory.capacityBytes / GiB,
      oom: s.memory.oom,
      ...(vsNoSp && { vsNoSp }),
    };
  });
}
