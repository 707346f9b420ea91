import { median } from '../core/stats.ts';
import { adapterName, requestKernelDevice } from '../kernels/adapter.ts';
import { KernelContext } from '../kernels/context.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { moeGroupedGemm } from '../kernels/moe/grouped-gemm.ts';
import { createTensor, type GpuTensor } from '../kernels/tensor.ts';
import { denseProblem } from '../reference/gemm.ts';
import { randomArray } from '../reference/random.ts';

/** One case: rows per expert (the routed token counts), K and Nc of every expert's weight. */
export interface GroupedGemmBenchCase {
  readonly name: string;
  readonly counts: readonly number[];
  readonly K: number;
  readonly Nc: number;
}

/** Per case: median GFLOP/s of one grouped dispatch and of E separate GEMM dispatches (same 4×4 rb4 tiling), and their ratio. */
export interface GroupedGemmBenchRow extends GroupedGemmBenchCase {
  readonly groupedGflops: number;
  readonly separateGflops: number;
  /** groupedGflops / separateGflops. */
  readonly ratio: number;
  readonly rounds: number;
}

export interface GroupedGemmBenchReport {
  readonly adapter: string;
  readonly note: string;
  readonly rows: GroupedGemmBenchRow[];
}

/**
 * Token counts of a skewed router: expert e gets a share ∝ 2^(−e·skew), rounded so they sum to N
 * (the largest-remainder rule); skew 0 is balanced.
 */
export function skewedCounts(N: number, E: number, skew: number): number[] {
  const w = Array.from({ length: E }, (_, e) => 2 ** (-e * skew));
  const total = w.reduce((a, b) => a + b, 0);
  const exact = w.map((x) => (N * x) / total);
  const counts = exact.map(Math.floor);
  const order = exact.map((x, e) => [x - Math.floor(x), e] as const).sort((a, b) => b[0] - a[0]);
  const short = N - counts.reduce((a, b) => a + b, 0);
  for (let i = 0; i < short; i++) counts[order[i][1]]++;
  return counts;
}

/** The default cases: an MoE fc1 (K = h = 256, Nc = 2f = 512) over 1024 routed rows, balanced and skewed, and 64 small experts. */
export function groupedGemmBenchCases(): GroupedGemmBenchCase[] {
  return [
    { name: 'E 8 balanced', counts: skewedCounts(1024, 8, 0), K: 256, Nc: 512 },
    { name: 'E 8 skewed (2^-e/2)', counts: skewedCounts(1024, 8, 0.5), K: 256, Nc: 512 },
    { name: 'E 64 fine-grained', counts: skewedCounts(1024, 64, 0.05), K: 256, Nc: 64 },
  ];
}

/**
 * Times one moeGroupedGemm dispatch against E gemmStrided dispatches (variant rb4, the grouped
 * kernel's tiling; one per expert with a non-empty row block) on the same A [N, K], B [E, K, Nc]
 * and counts: wall time of `reps` back-to-back repetitions then a flush, the two alternating
 * round by round; median over `rounds` rounds, after one warm-up of each.
 */
export async function runGroupedGemmBench(
  opts: { rounds?: number; cases?: GroupedGemmBenchCase[]; gpu?: GPU; onProgress?: (line: string) => void } = {},
): Promise<GroupedGemmBenchReport> {
  const rounds = opts.rounds ?? 7;
  const say = opts.onProgress ?? (() => {});
  const { adapter, device } = await requestKernelDevice('bench:grouped-gemm', opts.gpu);
  const ctx = new KernelContext(device);
  const rows: GroupedGemmBenchRow[] = [];
  for (const c of opts.cases ?? groupedGemmBenchCases()) {
    const E = c.counts.length;
    const offsets = [0];
    for (const n of c.counts) offsets.push(offsets[offsets.length - 1] + n);
    const N = offsets[E];
    const a = createTensor(device, 'A', [N, c.K], randomArray(N * c.K, 1));
    const b = createTensor(device, 'B', [E, c.K, c.Nc], randomArray(E * c.K * c.Nc, 2));
    const off = createTensor(device, 'offsets', [E + 1], Float32Array.from(offsets));
    const out = createTensor(device, 'C', [N, c.Nc]);
    const grouped = (): void => moeGroupedGemm(ctx, a, b, off, out);
    const separate = (): void => {
      for (let e = 0; e < E; e++) {
        const rowsE = offsets[e + 1] - offsets[e];
        if (rowsE === 0) continue;
        const p = {
          ...denseProblem(rowsE, c.Nc, c.K),
          offA: offsets[e] * c.K,
          offB: e * c.K * c.Nc,
          offC: offsets[e] * c.Nc,
        };
        gemmStrided(ctx, p, a, b, out, undefined, 'rb4');
      }
    };
    const timeOf = async (run: () => void, reps: number): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < reps; i++) run();
      await ctx.flush();
      return (performance.now() - t0) / reps;
    };
    const warm = Math.max(await timeOf(grouped, 1), await timeOf(separate, 1));
    const reps = Math.max(1, Math.ceil(50 / Math.max(warm, 1e-3)));
    const g: number[] = [];
    const s: number[] = [];
    for (let r = 0; r < rounds; r++) {
      say(`${c.name}: round ${r + 1} of ${rounds} (${reps} repetitions each)…`);
      g.push(await timeOf(grouped, reps));
      s.push(await timeOf(separate, reps));
    }
    for (const t of [a, b, off, out] as GpuTensor[]) t.buffer.destroy();
    const flops = 2 * N * c.K * c.Nc;
    const groupedGflops = flops / median(g) / 1e6;
    const separateGflops = flops / median(s) / 1e6;
    rows.push({ ...c, groupedGflops, separateGflops, ratio: groupedGflops / separateGflops, rounds });
  }
  device.destroy();
  return {
    adapter: adapterName(adapter),
    note:
      adapter.info.architecture === 'swiftshader'
        ? 'SwiftShader runs WebGPU on the CPU: these figures say nothing about a GPU; compare the ratio measured in one run.'
        : 'Figures from this adapter only; compare the ratio measured in one run.',
    rows,
  };
}
