import { denseProblem, gemmRef } from '../gemm.ts';

// The experts' GEMMs over uneven row counts (Megatron-Core's TEGroupedMLP / GroupedGEMM): expert e
// owns rows [offsets[e], offsets[e + 1]) of the permuted activations, and one weight B_e.
//   forward / dgrad: C[n, :] = A[n, :] · op(B_e)   A [N, K], B [E, K, Nc] (transB: [E, Nc, K]) → C [N, Nc]
//   wgrad:           dB_e = A_eᵀ · G_e              A [N, K], G [N, Nc] → dB [E, K, Nc] (0 for an expert with no rows)

/** C = A · op(B_e) row block by row block (see the header); float64 accumulation. */
export function groupedGemmRef(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: ArrayLike<number>,
  K: number,
  Nc: number,
  transB = false,
): Float64Array {
  const E = offsets.length - 1;
  const c = new Float64Array(offsets[E] * Nc);
  for (let e = 0; e < E; e++) {
    const rows = offsets[e + 1] - offsets[e];
    if (rows === 0) continue;
    const p = {
      ...denseProblem(rows, Nc, K, { transB }),
      offA: offsets[e] * K,
      offB: e * K * Nc,
      offC: offsets[e] * Nc,
    };
    gemmRef(p, a, b, c);
  }
  return c;
}

/** dB_e = A_eᵀ · G_e for every expert: A [N, K], G [N, Nc] → dB [E, K, Nc]. */
export function groupedGemmWgradRef(
  a: ArrayLike<number>,
  g: ArrayLike<number>,
  offsets: ArrayLike<number>,
  K: number,
  Nc: number,
): Float64Array {
  const E = offsets.length - 1;
  const db = new Float64Array(E * K * Nc);
  for (let e = 0; e < E; e++) {
    const rows = offsets[e + 1] - offsets[e];
    if (rows === 0) continue;
    const p = {
      ...denseProblem(K, Nc, rows, { transA: true }),
      offA: offsets[e] * K,
      offB: offsets[e] * Nc,
      offC: e * K * Nc,
    };
    gemmRef(p, a, g, db);
  }
  return db;
}
