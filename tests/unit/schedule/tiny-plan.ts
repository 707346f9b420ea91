// Hand-made plans for the schedule tests: a list of op names, the kind read from the name
// ("*.reduce" is an all-reduce of 1 MB, "*.gemm"/"*grad" a GEMM, the rest a kernel). This little
// naming language is the fixture's only: it writes the typed fields the scheduler reads
// ("*.dgrad.reduce" is async, "*.wgrad" is a weight gradient that may run under it).
import { configFromPreset } from '../../../src/parallel/config.ts';
import type { LayerPlan, PlannedOp } from '../../../src/parallel/plan-types.ts';

const MB = 1 << 20;

/** A plan of `names` in order for t ranks (every op on every rank). */
export function tinyPlan(t: number, names: readonly string[]): LayerPlan {
  const ops: PlannedOp[] = names.map((name, index) => {
    const phase = name.includes('grad') || name.endsWith('.backward') ? 'backward' : 'forward';
    const wgrad = name.endsWith('.wgrad');
    const typed = {
      role: wgrad ? 'wgrad' : phase === 'forward' ? 'forward' : 'dgrad',
      split: 'replicated',
      megatron: 'test',
      overlap: { async: name.endsWith('.dgrad.reduce'), underAsync: wgrad },
    } as const;
    if (name.endsWith('.reduce')) {
      return {
        index,
        phase,
        name,
        ...typed,
        overlap: { ...typed.overlap, underAsync: false },
        kind: 'collective',
        inShapes: [[4, 1, 16]],
        outShape: [4, 1, 16],
        flops: 0,
        collective: {
          op: 'allReduce',
          reduce: 'sum',
          inShape: [4, 1, 16],
          outShape: [4, 1, 16],
          groupSize: t,
          payloadBytes: MB,
          ringBytesSent: (2 * (t - 1) * MB) / t,
          mapping: 'test',
        },
      };
    }
    const gemm = name.includes('grad') || name.endsWith('.gemm');
    return gemm
      ? {
          index,
          phase,
          name,
          ...typed,
          kind: 'gemm',
          kernel: 'gemm',
          inShapes: [
            [4, 8],
            [8, 2],
          ],
          outShape: [4, 2],
          flops: 128,
          gemm: { site: { product: 'q', computes: 'C' }, M: 4, N: 2, K: 8, batch: 1, flops: 128 },
        }
      : {
          index,
          phase,
          name,
          ...typed,
          kind: 'kernel',
          kernel: 'add',
          inShapes: [[4, 1, 16]],
          outShape: [4, 1, 16],
          flops: 64,
        };
  });
  const ranks = Array.from({ length: t }, (_, rank) => ({
    rank,
    heads: [0, 0] as const,
    kvGroups: [],
    qkvCols: [0, 0] as const,
    ffn: [0, 0] as const,
    vocab: [0, 0] as const,
    tokens: [0, 0] as const,
  }));
  return { config: configFromPreset('classroom', { tp: t }), paddedVocab: 0, ranks, ops };
}

/** Durations [rank][opIndex] ms from per-rank rows (compute and comm given in one row by op index). */
export function durations(
  plan: LayerPlan,
  rows: readonly (readonly number[])[],
): { computeMs: number[][]; commMs: number[][] } {
  const pick = (coll: boolean) =>
    rows.map((row) => row.map((ms, i) => ((plan.ops[i]!.kind === 'collective') === coll ? ms : 0)));
  return { computeMs: pick(false), commMs: pick(true) };
}
