import { describe, expect, it } from 'vitest';
import { splitLayers } from '../../../../src/mesh/pipeline-split.ts';
import { cpExposedMs, tpExposedMs, type ExposedPieces } from '../../../../src/projection/step/tp-cp-exposure.ts';

/** Exposed ms per pass: layer F 1, B 2; embedding F 10, B 20; output F 100, B 200 (each term its own decade). */
const pieces: ExposedPieces = {
  layer: { forward: { exposedMs: 1 }, backward: { exposedMs: 2 } },
  embedding: { forward: { exposedMs: 10 }, backward: { exposedMs: 20 } },
  output: { forward: { exposedMs: 100 }, backward: { exposedMs: 200 } },
};
const recomputed = (rows: number[][]) => rows.map((row) => row.map((recomputedLayers) => ({ recomputedLayers })));

describe('tpExposedMs: m · max over stages of Σ_c n(E_F + E_B) + r·E_F + embedding + output', () => {
  it('one stage holds every term: 2 · (4·3 + 2·1 + 30 + 300) = 688', () => {
    expect(tpExposedMs(splitLayers(4, 1, 1), recomputed([[2]]), pieces, 2)).toBe(688);
  });

  it("two stages: the busiest stage's, not their sum nor the first's", () => {
    // Stage 0: 3·3 + 1·1 + 30 = 40; stage 1: 3·3 + 0 + 300 = 309; m = 2.
    expect(tpExposedMs(splitLayers(6, 2, 1), recomputed([[1], [0]]), pieces, 2)).toBe(618);
    // Without the output on the last stage, stage 0 (with its recompute) is the busiest: 3 · 40.
    const noOutput = { ...pieces, output: { forward: { exposedMs: 0 }, backward: { exposedMs: 0 } } };
    expect(tpExposedMs(splitLayers(6, 2, 1), recomputed([[1], [0]]), noOutput, 3)).toBe(120);
  });

  it('interleaved: the embedding on stage 0 chunk 0, the output on the last stage chunk v − 1', () => {
    // 8 layers, p 2, v 2: 2 per chunk. Stage 0: 2·(6) + 10+20 = 42; stage 1: 2·6 + 300 = 312.
    expect(
      tpExposedMs(
        splitLayers(8, 2, 2),
        recomputed([
          [0, 0],
          [0, 0],
        ]),
        pieces,
        1,
      ),
    ).toBe(312);
  });
});

describe('cpExposedMs: m · max over stages of Σ_c n·X + r·X_F', () => {
  const ring = { exposedMs: 3, exposedForwardMs: 1 };
  it('every layer exchanges, a recomputed layer exchanges its forward again: 2 · (4·3 + 2·1) = 28', () => {
    expect(cpExposedMs(splitLayers(4, 1, 1), recomputed([[2]]), ring, 2)).toBe(28);
  });
  it("two stages: the busiest stage's (stage 0: 3·3 + 1 = 10, stage 1: 9)", () => {
    expect(cpExposedMs(splitLayers(6, 2, 1), recomputed([[1], [0]]), ring, 1)).toBe(10);
    expect(cpExposedMs(splitLayers(6, 2, 1), recomputed([[0], [2]]), ring, 1)).toBe(11);
  });
});
