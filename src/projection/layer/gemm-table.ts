import type { GemmPrecision, GpuSpec } from '../../hardware/gpus.ts';
import { gemmTime, type GemmShape, type GemmTime } from '../../hardware/kernel-time.ts';

/** One row of the GEMM model's table: a named shape and what the model gives for it. */
export interface GemmTableRow {
  readonly label: string;
  readonly shape: GemmShape;
  readonly time: GemmTime;
  /** Achieved TFLOP/s: 2·M·N·K·batch / time. */
  readonly tflops: number;
}

/**
 * Representative GEMMs (`npm run project -- --gemm-table`): squares of 8192 down to 1024, and
 * the MLP of a Llama-3-8B-sized layer (h 4096, FFN 14336, 4096 tokens: s 4096 × b 1) sharded
 * over t = 1, 2, 4, 8 — fc1 column-parallel [4096, 4096]·[4096, 14336/t], fc2 row-parallel
 * [4096, 14336/t]·[14336/t, 4096] — the shapes strong scaling makes smaller.
 */
export function gemmTable(gpu: GpuSpec, precision: GemmPrecision): GemmTableRow[] {
  const shapes: [string, GemmShape][] = [8192, 4096, 2048, 1024].map((n) => [
    `square ${n}`,
    { M: n, N: n, K: n, batch: 1 },
  ]);
  for (const t of [1, 2, 4, 8]) {
    shapes.push([`MLP fc1, t = ${t}`, { M: 4096, N: 14336 / t, K: 4096, batch: 1 }]);
    shapes.push([`MLP fc2, t = ${t}`, { M: 4096, N: 4096, K: 14336 / t, batch: 1 }]);
  }
  return shapes.map(([label, shape]) => {
    const time = gemmTime(shape, gpu, precision);
    const flops = 2 * shape.M * shape.N * shape.K * shape.batch;
    return { label, shape, time, tflops: flops / (time.us * 1e-6) / 1e12 };
  });
}
