/**
 * Strided, batched GEMM problem: for every batch z < batch,
 *   C_z[m, n] = Σ_k A_z(m, k) · B_z(k, n) (+ bias[n]) (+ C_z[m, n] when accumulate)
 * with A_z(m, k) = A[offA + z·bsA + m·sAm + k·sAk], B_z(k, n) = B[offB + ⌊z/divB⌋·bsB + k·sBk + n·sBn],
 * C_z[m, n] = C[offC + z·bsC + m·sCm + n]. Transposes are strides: op(A) = Aᵀ swaps sAm and sAk.
 * divB > 1 lets several batches share one B (grouped-query attention: heads/groups query heads
 * per KV head).
 */
export interface GemmProblem {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly batch: number;
  readonly offA: number;
  readonly sAm: number;
  readonly sAk: number;
  readonly bsA: number;
  readonly offB: number;
  readonly sBk: number;
  readonly sBn: number;
  readonly bsB: number;
  readonly divB: number;
  readonly offC: number;
  readonly sCm: number;
  readonly bsC: number;
  readonly bias: boolean;
  readonly accumulate: boolean;
}

/** The dense problem C[M,N] = op(A)·op(B): A is [M,K] ([K,M] when transA), B is [K,N] ([N,K] when transB). */
export function denseProblem(
  M: number,
  N: number,
  K: number,
  opts: { transA?: boolean; transB?: boolean; bias?: boolean; accumulate?: boolean } = {},
): GemmProblem {
  const { transA = false, transB = false } = opts;
  return {
    M,
    N,
    K,
    batch: 1,
    offA: 0,
    sAm: transA ? 1 : K,
    sAk: transA ? M : 1,
    bsA: 0,
    offB: 0,
    sBk: transB ? 1 : N,
    sBn: transB ? K : 1,
    bsB: 0,
    divB: 1,
    offC: 0,
    sCm: N,
    bsC: 0,
    bias: opts.bias ?? false,
    accumulate: opts.accumulate ?? false,
  };
}

/** CPU twin of every GEMM kernel (float64 accumulation); writes into `c` (float32 or float64) and returns it. */
export function gemmRef<T extends Float32Array | Float64Array>(
  p: GemmProblem,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  c: T,
  bias?: ArrayLike<number>,
): T {
  for (let z = 0; z < p.batch; z++) {
    const oa = p.offA + z * p.bsA;
    const ob = p.offB + Math.floor(z / p.divB) * p.bsB;
    const oc = p.offC + z * p.bsC;
    for (let m = 0; m < p.M; m++) {
      for (let n = 0; n < p.N; n++) {
        let s = 0;
        for (let k = 0; k < p.K; k++) s += a[oa + m * p.sAm + k * p.sAk] * b[ob + k * p.sBk + n * p.sBn];
        if (p.bias && bias) s += bias[n];
        const i = oc + m * p.sCm + n;
        c[i] = p.accumulate ? c[i] + s : s;
      }
    }
  }
  return c;
}

/** Useful FLOPs of a problem: 2·M·N·K per batch (the convention of the cost model). */
export function gemmFlops(p: Pick<GemmProblem, 'M' | 'N' | 'K' | 'batch'>): number {
  return 2 * p.M * p.N * p.K * p.batch;
}
