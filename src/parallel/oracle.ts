import { compareArrays } from '../reference/compare.ts';
import type { LayerConfig } from './config.ts';
import type { LogicalOutput } from './gather.ts';
import { paddedVocab } from './ownership.ts';

/** One compared tensor: worst errors against the reference and the tolerance it must meet. */
export interface OracleEntry {
  readonly tensor: string;
  readonly maxAbs: number;
  readonly maxRel: number;
  readonly refMax: number;
  readonly tol: number;
  readonly pass: boolean;
}

/** The oracle's verdict on a run: every tensor, the worst one, pass/fail. */
export interface OracleReport {
  readonly entries: OracleEntry[];
  readonly worst: OracleEntry;
  readonly pass: boolean;
}

/**
 * The TP=1 configuration that holds the same logical model as `c`: one rank, no SP, the
 * vocabulary padded as TP=t pads it (the padding rows are part of the model).
 */
export function referenceConfig(c: LayerConfig): LayerConfig {
  return { ...c, tp: 1, sp: false, vocab: paddedVocab(c), skipSpNormGradAllReduce: false, tpOverlapChunks: 1 };
}

/**
 * Tolerance of one tensor. TP=t and TP=1 sum the same float32 products in other orders (shards,
 * ring reductions), so they differ by rounding: ≤ 4·ε·(K + 1) relative to the tensor's largest
 * value per reduction of length K (see float32Tolerance), and a step chains a handful of them; we
 * allow 16·ε·(K + 1)·max|ref| with K the layer's longest reduction (h, ffn, s·b or V). A wrong
 * shard, mask or missing collective errs by O(max|ref|), far above.
 */
export function oracleTolerance(c: LayerConfig, refMax: number): number {
  const K = Math.max(c.h, c.ffn, c.s * c.b, paddedVocab(c));
  return 16 * 2 ** -23 * (K + 1) * Math.max(refMax, 1e-6);
}

/** Compares a run's logical results with the reference's, tensor by tensor. */
export function compareWithReference(c: LayerConfig, ref: LogicalOutput, got: LogicalOutput): OracleReport {
  const pairs: [string, Float32Array | undefined, Float32Array | undefined][] = [
    ['y', ref.y, got.y],
    ['loss', ref.loss, got.loss],
    ['dx', ref.dx, got.dx],
    ...Object.entries(ref.grads).map(([n, r]): [string, Float32Array | undefined, Float32Array | undefined] => [
      `d${n}`,
      r,
      got.grads[n as keyof typeof got.grads],
    ]),
  ];
  const entries: OracleEntry[] = [];
  for (const [tensor, r, g] of pairs) {
    if (!r && !g) continue;
    if (!r || !g) throw new Error(`oracle: ${tensor} is missing from the ${r ? 'run' : 'reference'}.`);
    const s = compareArrays(g, r);
    const refMax = r.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const tol = oracleTolerance(c, refMax);
    entries.push({
      tensor,
      maxAbs: s.nonFinite ? Infinity : s.maxAbs,
      maxRel: s.maxRel,
      refMax,
      tol,
      pass: s.nonFinite === 0 && s.maxAbs <= tol,
    });
  }
  const worst = entries.reduce((w, e) => (e.maxAbs / e.tol > w.maxAbs / w.tol ? e : w));
  return { entries, worst, pass: entries.every((e) => e.pass) };
}
