import { adapterName, requestKernelDevice } from '../kernels/adapter.ts';
import { KernelContext } from '../kernels/context.ts';
import { gemmStrided } from '../kernels/gemm.ts';
import { chosenGemmVariant } from '../kernels/gemm-choice.ts';
import { describeGemmVariant, tuneGemm, verifiedGemmVariants, type GemmTuning } from '../kernels/gemm-tuner.ts';
import { type GemmVariant } from '../kernels/gemm-variants.ts';
import { gemmKernelHash, type GemmChoiceStore, type StoredGemmChoices } from '../kernels/gemm-cache.ts';
import { GpuTimer } from '../kernels/gpu-timer.ts';
import { createTensor } from '../kernels/tensor.ts';
import { denseProblem, gemmFlops, type GemmProblem } from '../reference/gemm.ts';
import { randomArray } from '../reference/random.ts';
import { median } from '../core/stats.ts';
import type { GemmBenchShape } from './gemm-bench-shapes.ts';
import { maxRuns, minSampledMs } from './gemm-bench-sampling.ts';
import { gemmBenchShapes } from './gemm-bench-shapes.ts';

/** Per shape: the tuned variant and the naive baseline (and with allVariants every variant), median GFLOP/s over the timed runs. */
export interface GemmBenchRow extends GemmBenchShape {
  readonly chosen: GemmVariant;
  /** What tuning measured, when this run tuned the shape's class (absent when it was decided before or stored). */
  readonly tuning: GemmTuning | undefined;
  readonly gflops: number;
  /** The naive kernel and the chosen one's speed-up over it (absent when naive was not timed: see `variants`). */
  readonly naiveGflops?: number;
  readonly speedup?: number;
  /** Per variant timed (the chosen one and naive; with allVariants all), ms of each timed run (`runs` ≤ n ≤ maxRuns of them). */
  readonly runsMs: Partial<Record<GemmVariant, number[]>>;
  /** With allVariants: the fastest variant at full size and the chosen one's margin to it (0.03 = 3% slower). */
  readonly fastest?: GemmVariant;
  readonly margin?: number;
}

/** The whole report, as `--json` prints it. */
export interface GemmBenchReport {
  readonly adapter: string;
  readonly note: string;
  readonly timing: { method: 'timestamp-query' | 'wall-clock'; quantized: boolean };
  /** The runs requested: the least taken per shape and variant (short ones take more, see minSampledMs). */
  readonly runs: number;
  readonly variants: string[];
  readonly rows: GemmBenchRow[];
  /** The tuning decisions this run made, to keep for the next (the CLI's cache file). */
  readonly stored: StoredGemmChoices;
  /** FNV-1a of the GEMM kernels' sources the decisions belong to. */
  readonly kernelHash: string;
}

export interface GemmBenchOptions {
  readonly runs?: number;
  readonly shapes?: GemmBenchShape[];
  /** Time every variant the adapter supports (and that computes right there) at full size, not only the chosen one and naive. */
  readonly allVariants?: boolean;
  /** With allVariants, only these (and always the chosen one): e.g. leave out naive on a busy machine. */
  readonly variants?: readonly GemmVariant[];
  /** Decisions kept from earlier runs (the CLI's cache file); classes found there are not re-tuned. */
  readonly stored?: StoredGemmChoices;
  /** WebGPU entry point (default navigator.gpu; Dawn's in Node). */
  readonly gpu?: GPU;
  readonly onProgress?: (line: string) => void;
}

/**
 * Times `variants` on one problem: a warm-up of each (pipeline compile, caches), then rounds, each
 * timing every variant once in turn, so that a busy spell on a shared machine slows them alike.
 * With timestamp queries a run is one dispatch's GPU time; without, the wall time of enough
 * back-to-back dispatches to span ≥ 50 ms, divided by their number. At least `runs` rounds, and
 * more (at most maxRuns) until every variant's runs span minSampledMs: the median of 5 runs of a
 * 10 ms kernel samples 50 ms of a shared machine whose speed drifts over seconds (square 256 on 2
 * cores swung ±30% between runs), so short kernels take more runs. That makes the median steadier;
 * it estimates the same central time. Returns ms per dispatch, per variant, one entry per round.
 */
async function timeRuns(
  ctx: KernelContext,
  p: GemmProblem,
  variants: readonly GemmVariant[],
  runs: number,
  timer: GpuTimer | undefined,
  quantized: { seen: boolean },
  say: (line: string) => void,
): Promise<Partial<Record<GemmVariant, number[]>>> {
  const a = createTensor(ctx.device, 'A', [p.M, p.K], randomArray(p.M * p.K, 1));
  const b = createTensor(ctx.device, 'B', [p.K, p.N], randomArray(p.K * p.N, 2));
  const c = createTensor(ctx.device, 'C', [p.M, p.N]);
  const warmMs: Partial<Record<GemmVariant, number>> = {};
  const out: Partial<Record<GemmVariant, number[]>> = {};
  for (const v of variants) {
    const t0 = performance.now();
    gemmStrided(ctx, p, a, b, c, undefined, v);
    await ctx.flush();
    warmMs[v] = performance.now() - t0;
    out[v] = [];
  }
  // Per variant, the time its runs have spanned so far, ms.
  const spanned: Partial<Record<GemmVariant, number>> = Object.fromEntries(variants.map((v) => [v, 0]));
  const short = (): boolean => variants.some((v) => spanned[v]! < minSampledMs);
  for (let r = 0; r < runs || (r < maxRuns && short()); r++) {
    say(`${variants.join(', ')}: round ${r + 1} of ${r < runs ? runs : `up to ${maxRuns} (short runs)`}…`);
    for (const v of variants) {
      if (timer) {
        timer.start();
        gemmStrided(ctx, p, a, b, c, undefined, v);
        const res = await timer.stop();
        quantized.seen ||= res.quantized;
        const ms = res.times[0].ns / 1e6;
        out[v]!.push(ms);
        spanned[v]! += ms;
      } else {
        const reps = Math.max(1, Math.ceil(50 / Math.max(warmMs[v]!, 1e-3)));
        const s = performance.now();
        for (let i = 0; i < reps; i++) gemmStrided(ctx, p, a, b, c, undefined, v);
        await ctx.flush();
        const ms = performance.now() - s;
        out[v]!.push(ms / reps);
        spanned[v]! += ms;
      }
    }
  }
  for (const t of [a, b, c]) t.buffer.destroy();
  return out;
}

/**
 * The GEMM benchmark: per shape, tune (first use on this adapter, unless stored), then median
 * GFLOP/s of the chosen variant and of the naive one-invocation-per-output kernel (with
 * allVariants, of every variant, and the chosen one's margin to the fastest), in the same run.
 */
export async function runGemmBench(opts: GemmBenchOptions = {}): Promise<GemmBenchReport> {
  const runs = opts.runs ?? 5;
  const shapes = opts.shapes ?? gemmBenchShapes();
  const say = opts.onProgress ?? (() => {});
  const { adapter, device } = await requestKernelDevice('bench:gemm', opts.gpu);
  const ctx = new KernelContext(device);
  const timer = GpuTimer.available(device) ? new GpuTimer(ctx) : undefined;
  const quantized = { seen: false };
  const rows: GemmBenchRow[] = [];
  const arch = adapter.info.architecture;
  const stored: StoredGemmChoices = {};
  const store: GemmChoiceStore = {
    load: async () => ({ ...opts.stored }),
    save: async (entries) => void Object.assign(stored, entries),
  };
  for (const s of shapes) {
    const p = denseProblem(s.M, s.N, s.K);
    say(`${s.name}: tuning…`);
    const [tuning] = await tuneGemm(ctx, [p], { store });
    if (tuning)
      say(
        `${s.name}: tuned ${tuning.chosen} (${Object.entries(tuning.gflops)
          .map(([v, g]) => `${v} ${g.toFixed(2)}`)
          .join(', ')} GFLOP/s; ${tuning.repeats} repeats, noise ${(100 * tuning.noise).toFixed(1)}%)`,
      );
    const chosen = chosenGemmVariant(device, p);
    const timed = opts.allVariants
      ? (await verifiedGemmVariants(ctx)).filter((v) => v === chosen || !opts.variants || opts.variants.includes(v))
      : [...new Set<GemmVariant>([chosen, 'naive'])];
    const runsMs = await timeRuns(ctx, p, timed, runs, timer, quantized, (l) => say(`${s.name}: ${l}`));
    const flops = gemmFlops(p);
    const gf = (v: GemmVariant): number => flops / median(runsMs[v]!) / 1e6;
    const fastest = timed.reduce((a, b) => (gf(b) > gf(a) ? b : a));
    rows.push({
      ...s,
      chosen,
      tuning,
      gflops: gf(chosen),
      ...(runsMs.naive && { naiveGflops: gf('naive'), speedup: gf(chosen) / gf('naive') }),
      runsMs,
      ...(opts.allVariants && { fastest, margin: gf(fastest) / gf(chosen) - 1 }),
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
    stored,
    kernelHash: gemmKernelHash(),
  };
}
