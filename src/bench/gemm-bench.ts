import { adapterName, requestKernelDevice } from '../kernels/adapter.ts';
import { KernelContext } from '../kernels/context.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { chosenGemmVariant } from '../kernels/gemm-choice.ts';
import { describeGemmVariant, tuneGemm, type GemmTuning } from '../kernels/gemm-tuner.ts';
import type { GemmVariant } from '../kernels/gemm-variants.ts';
import { GpuTimer } from '../kernels/gpu-timer.ts';
import { createTensor } from '../kernels/tensor.ts';
import { denseProblem, gemmFlops, type GemmProblem } from '../reference/gemm.ts';
import { randomArray } from '../reference/random.ts';
import { median } from '../core/stats.ts';

/** One benchmarked shape: what it stands for and its dims. */
export interface GemmBenchShape {
  readonly name: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

/** Square GEMMs, then the TP shards of a 1024 → 4096 → 1024 MLP at M = 512 tokens. */
export function gemmBenchShapes(): GemmBenchShape[] {
  const shapes: GemmBenchShape[] = [256, 512, 1024].map((s) => ({ name: `square ${s}`, M: s, N: s, K: s }));
  for (const t of [1, 2, 4, 8]) shapes.push({ name: `column-parallel t=${t}`, M: 512, N: 4096 / t, K: 1024 });
  for (const t of [1, 2, 4, 8]) shapes.push({ name: `row-parallel t=${t}`, M: 512, N: 1024, K: 4096 / t });
  return shapes;
}

/** Per shape: the tuned variant and the naive baseline, median GFLOP/s over the timed runs. */
export interface GemmBenchRow extends GemmBenchShape {
  readonly chosen: GemmVariant;
  readonly tuning: GemmTuning | undefined;
  readonly gflops: number;
  readonly naiveGflops: number;
  readonly speedup: number;
  readonly runsMs: { chosen: number[]; naive: number[] };
}

/** The whole report, as `--json` prints it. */
export interface GemmBenchReport {
  readonly adapter: string;
  readonly note: string;
  readonly timing: { method: 'timestamp-query' | 'wall-clock'; quantized: boolean };
  readonly runs: number;
  readonly variants: string[];
  readonly rows: GemmBenchRow[];
}

export interface GemmBenchOptions {
  readonly runs?: number;
  readonly shapes?: GemmBenchShape[];
  readonly onProgress?: (line: string) => void;
}

/**
 * Times one variant on one problem: a warm-up (pipeline compile, caches), then `runs` timed runs.
 * With timestamp queries a run is one dispatch's GPU time; without, the wall time of enough
 * back-to-back dispatches to span ≥ 50 ms, divided by their number. Returns ms per dispatch.
 */
async function timeRuns(
  ctx: KernelContext,
  p: GemmProblem,
  variant: GemmVariant,
  runs: number,
  timer: GpuTimer | undefined,
  quantized: { seen: boolean },
): Promise<number[]> {
  const a = createTensor(ctx.device, 'A', [p.M, p.K], randomArray(p.M * p.K, 1));
  const b = createTensor(ctx.device, 'B', [p.K, p.N], randomArray(p.K * p.N, 2));
  const c = createTensor(ctx.device, 'C', [p.M, p.N]);
  const t0 = performance.now();
  gemmStrided(ctx, p, a, b, c, undefined, variant);
  await ctx.flush();
  const warmMs = performance.now() - t0;
  const out: number[] = [];
  for (let r = 0; r < runs; r++) {
    if (timer) {
      timer.start();
      gemmStrided(ctx, p, a, b, c, undefined, variant);
      const res = await timer.stop();
      quantized.seen ||= res.quantized;
      out.push(res.times[0].ns / 1e6);
    } else {
      const reps = Math.max(1, Math.ceil(50 / Math.max(warmMs, 1e-3)));
      const s = performance.now();
      for (let i = 0; i < reps; i++) gemmStrided(ctx, p, a, b, c, undefined, variant);
      await ctx.flush();
      out.push((performance.now() - s) / reps);
    }
  }
  for (const t of [a, b, c]) t.buffer.destroy();
  return out;
}

/**
 * The GEMM benchmark: per shape, tune (first use on this adapter), then median GFLOP/s of the
 * chosen variant and of the naive one-invocation-per-output kernel, measured in the same run.
 */
export async function runGemmBench(opts: GemmBenchOptions = {}): Promise<GemmBenchReport> {
  const runs = opts.runs ?? 5;
  const shapes = opts.shapes ?? gemmBenchShapes();
  const say = opts.onProgress ?? (() => {});
  const { adapter, device } = await requestKernelDevice('bench:gemm');
  const ctx = new KernelContext(device);
  const timer = GpuTimer.available(device) ? new GpuTimer(ctx) : undefined;
  const quantized = { seen: false };
  const rows: GemmBenchRow[] = [];
  const arch = adapter.info.architecture;
  for (const s of shapes) {
    const p = denseProblem(s.M, s.N, s.K);
    say(`${s.name}: tuning…`);
    const [tuning] = await tuneGemm(ctx, [p]);
    const chosen = chosenGemmVariant(device, p);
    say(`${s.name}: timing ${chosen}…`);
    const chosenMs = await timeRuns(ctx, p, chosen, runs, timer, quantized);
    say(`${s.name}: timing naive…`);
    const naiveMs = await timeRuns(ctx, p, 'naive', runs, timer, quantized);
    const flops = gemmFlops(p);
    const gflops = flops / median(chosenMs) / 1e6;
    const naiveGflops = flops / median(naiveMs) / 1e6;
    rows.push({
      ...s,
      chosen,
      tuning,
      gflops,
      naiveGflops,
      speedup: gflops / naiveGflops,
      runsMs: { chosen: chosenMs, naive: naiveMs },
    });
  }
  timer?.destroy();
  device.destroy();
  return {
    adapter: adapterName(adapter),
    note:
      arch === 'swiftshader'
        ? 'SwiftShader runs WebGPU on the CPU: these figures say nothing about a GPU; compare ratios measured in one run.'
        : 'Figures from this adapter only; compare ratios measured in one run, not absolute times across machines.',
    timing: { method: timer ? 'timestamp-query' : 'wall-clock', quantized: quantized.seen },
    runs,
    variants: rows
      .map((r) => r.chosen)
      .filter((v, i, all) => all.indexOf(v) === i)
      .map(describeGemmVariant),
    rows,
  };
}
