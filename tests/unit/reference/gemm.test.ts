import { describe, expect, test } from 'vitest';
import { denseProblem, gemmFlops, gemmRef } from '../../../src/reference/gemm.ts';
import { randomArray } from '../../../src/reference/random.ts';
import { expectNear, finiteDiffVjp } from '../finite-diff.ts';

// Linear layer Y[M,N] = X[M,K]·W[K,N] + b. Its backward uses the transposed GEMM forms:
// dX = dY·Wᵀ (transB), dW = Xᵀ·dY (transA), db = column sums of dY.
describe('gemm twin', () => {
  const [M, N, K] = [5, 7, 3];
  const x = randomArray(M * K, 1),
    w = randomArray(K * N, 2),
    bias = randomArray(N, 3),
    dy = randomArray(M * N, 4);
  const forward = (xv: ArrayLike<number>, wv: ArrayLike<number>, bv: ArrayLike<number>) =>
    gemmRef(denseProblem(M, N, K, { bias: true }), xv, wv, new Float64Array(M * N), bv);

  // Central differences of a bilinear function are exact up to rounding: tolerance 1e-8.
  test('dX = dY·Wᵀ (transposed B) equals the finite-difference gradient', () => {
    const dx = gemmRef(denseProblem(M, K, N, { transB: true }), dy, w, new Float64Array(M * K));
    expectNear(
      'dX',
      dx,
      finiteDiffVjp((xv) => forward(xv, w, bias), x, dy),
      1e-8,
    );
  });

  test('dW = Xᵀ·dY (transposed A) equals the finite-difference gradient', () => {
    const dw = gemmRef(denseProblem(K, N, M, { transA: true }), x, dy, new Float64Array(K * N));
    expectNear(
      'dW',
      dw,
      finiteDiffVjp((wv) => forward(x, wv, bias), w, dy),
      1e-8,
    );
  });

  test('db = column sums of dY equals the finite-difference gradient', () => {
    const db = new Float64Array(N);
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) db[n] += dy[m * N + n];
    expectNear(
      'db',
      db,
      finiteDiffVjp((bv) => forward(x, w, bv), bias, dy),
      1e-8,
    );
  });

  test('accumulate adds to C instead of overwriting it', () => {
    const once = gemmRef(denseProblem(M, N, K), x, w, new Float64Array(M * N));
    const twice = gemmRef(denseProblem(M, N, K, { accumulate: true }), x, w, once.slice());
    expectNear(
      '2·A·B',
      twice,
      once.map((v) => 2 * v),
      1e-12,
    );
  });

  test('FLOPs are 2·M·N·K per batch', () => {
    expect(gemmFlops({ M: 512, N: 1024, K: 4096, batch: 3 })).toBe(3 * 2 * 512 * 1024 * 4096);
  });
});
