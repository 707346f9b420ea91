import type { ChunkRecompute } from '../layer/recompute.ts';
import type { RingAttention } from '../links/context-parallel.ts';
import { holdsEmbedding, holdsOutput, type PipelineSplit } from '../../mesh/pipeline-split.ts';

/** The exposed ms of one micro-batch's pass through each piece (stage-pieces.ts), what TP exposure reads. */
export type ExposedPieces = {
  readonly [K in 'layer' | 'embedding' | 'output']: {
    readonly [P in 'forward' | 'backward']: { readonly exposedMs: number };
  };
};

/** rec[i][c]: the layers of chunk c on stage i whose forward full recompute runs again. */
export type RecomputedLayers = readonly (readonly Pick<ChunkRecompute, 'recomputedLayers'>[])[];

/**
 * TP communication not hidden by compute over a step, the slowest stage's:
 *   m · max_i Σ_c [ n_ic·(E_F + E_B) + r_ic·E_F + [i, c hold the embedding]·(Emb_F + Emb_B)
 *                   + [i, c hold the output]·(Out_F + Out_B) ]
 * with n_ic the layers of chunk c on stage i, r_ic those it recomputes, E the layer's exposed ms
 * per pass, m the micro-batches.
 */
export function tpExposedMs(split: PipelineSplit, rec: RecomputedLayers, pieces: ExposedPieces, m: number): number {
  const stageExposed = split.layers.map((row, i) =>
    row.reduce((a, n, ch) => {
      const r = rec[i]![ch]!;
      return (
        a +
        n * (pieces.layer.forward.exposedMs + pieces.layer.backward.exposedMs) +
        r.recomputedLayers * pieces.layer.forward.exposedMs +
        (holdsEmbedding(i, ch) ? pieces.embedding.forward.exposedMs + pieces.embedding.backward.exposedMs : 0) +
        (holdsOutput(split, i, ch) ? pieces.output.forward.exposedMs + pieces.output.backward.exposedMs : 0)
      );
    }, 0),
  );
  return m * Math.max(...stageExposed);
}

/**
 * CP's ring exchange not hidden by core attention over a step, the slowest stage's: every layer's
 * exchange, plus the forward exchange again where full recompute re-runs a layer:
 *   m · max_i Σ_c [ n_ic·X + r_ic·X_F ]   (X, X_F: ringAttention's exposedMs, exposedForwardMs).
 */
export function cpExposedMs(
  split: PipelineSplit,
  rec: RecomputedLayers,
  ring: Pick<RingAttention, 'exposedMs' | 'exposedForwardMs'>,
  m: number,
): number {
  return (
    m *
    Math.max(
      ...split.layers.map((row, i) =>
        row.reduce((a, n, ch) => a + n * ring.exposedMs + rec[i]![ch]!.recomputedLayers * ring.exposedForwardMs, 0),
      ),
    )
  );
}
