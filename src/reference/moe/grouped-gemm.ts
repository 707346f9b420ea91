import { denseProblem, gemmRef } from '../gemm.ts';
import type { KernelSpec, ShaderSpec } from '../kernel-spec.ts';

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

/** shaders/moe-grouped-gemm.wgsl: Params { N, K, Nc, E, sBk, sBn, bsB } padded to 32 bytes. */
export const moeGroupedGemmShader: ShaderSpec = {
  file: 'moe-grouped-gemm',
  include: ['rb4-tile'],
  params: [
    { name: 'N', type: 'u32' },
    { name: 'K', type: 'u32' },
    { name: 'Nc', type: 'u32' },
    { name: 'E', type: 'u32' },
    { name: 'sBk', type: 'u32' },
    { name: 'sBn', type: 'u32' },
    { name: 'bsB', type: 'u32' },
    { name: '_pad0', type: 'u32' },
  ],
};

/** moeGroupedGemm's argument: whether B_e is stored [Nc, K] and read transposed (the dgrad: dA = dC · B_eᵀ). */
export interface GroupedGemmArgs {
  readonly transB: boolean;
}

const megatron = 'TEGroupedMLP (grouped GEMM of linear_fc1 / linear_fc2)';

/** Per-expert offsets [E + 1] as numbers, checked: integers, 0 first, non-decreasing, N last. */
export function checkOffsets(op: string, offsets: ArrayLike<number>, N: number): void {
  const E = offsets.length - 1;
  const ok =
    E >= 1 &&
    offsets[0] === 0 &&
    offsets[E] === N &&
    Array.from(offsets).every((o, e) => Number.isInteger(o) && (e === 0 || o >= offsets[e - 1]));
  if (!ok)
    throw new Error(
      `${op}: offsets [${Array.from(offsets).join(', ')}] must be E + 1 ≥ 2 non-decreasing integers from 0 to the ${N} rows.`,
    );
}

/** Grouped GEMM: A [N, K], B [E, K, Nc] (transB: [E, Nc, K]), offsets [E + 1] → C [N, Nc]. */
export const moeGroupedGemmKernel: KernelSpec<'moeGroupedGemm', GroupedGemmArgs> = {
  name: 'moeGroupedGemm',
  shader: moeGroupedGemmShader,
  entryPoint: 'grouped_gemm',
  megatron,
  // 2K FLOPs per element of C (K = A's columns)
  cost: { perElement: 2, perElementOf: ([a]) => 2 * a[1] },
  bindings: [
    { name: 'A', access: 'read' },
    { name: 'B', access: 'read' },
    { name: 'offsets', access: 'read' },
    { name: 'C', access: 'write' },
  ],
  twin: ([a, b, offsets], { shapes }, { transB }) => {
    checkOffsets('moeGroupedGemm', offsets, shapes[0][0]);
    return [groupedGemmRef(a, b, offsets, shapes[0][1], shapes[3][1], transB)];
  },
};

/** Grouped weight gradient: A [N, K], G [N, Nc], offsets [E + 1] → dB [E, K, Nc]. */
export const moeGroupedGemmWgradKernel: KernelSpec<'moeGroupedGemmWgrad'> = {
  name: 'moeGroupedGemmWgrad',
  shader: moeGroupedGemmShader,
  entryPoint: 'grouped_gemm_wgrad',
  megatron,
  role: 'wgrad',
  // 2·Nc FLOPs per element of A [N, K]: 2·N·K·Nc in all, whatever the split over experts
  cost: { perElement: 2, over: 0, perElementOf: ([, g]) => 2 * g[1] },
  bindings: [
    { name: 'A', access: 'read' },
    { name: 'G', access: 'read' },
    { name: 'offsets', access: 'read' },
    { name: 'dB', access: 'write' },
  ],
  twin: ([a, g, offsets], { shapes }) => {
    checkOffsets('moeGroupedGemmWgrad', offsets, shapes[0][0]);
    return [groupedGemmWgradRef(a, g, offsets, shapes[0][1], shapes[1][1])];
  },
};
