// GEMM efficiency from a sweep (pure; the GEMM view and `npm run sweep` print it): local shapes, GFLOP/s and step speed-up vs t.
import type { LayerConfig } from '../parallel/config.ts';
import type { GemmSite, OpPhase, OpSplit } from '../parallel/plan-types.ts';
import { validateConfig } from '../parallel/validate.ts';
import type { SweepDegree, SweepGemm, SweepTimeline } from './sweep-degree.ts';

/** The degrees the view compares. */
export const gemmViewDegrees = [1, 2, 4, 8] as const;

/** Degrees of `gemmViewDegrees` that are legal for `base`, and for the others every reason. */
export function gemmDegrees(
  base: LayerConfig,
  degrees: readonly number[] = gemmViewDegrees,
): { run: number[]; skipped: { t: number; reasons: string[] }[] } {
  const run: number[] = [];
  const skipped: { t: number; reasons: string[] }[] = [];
  for (const t of degrees) {
    const v = validateConfig({ ...base, tp: t });
    if (v.ok) run.push(t);
    else skipped.push({ t, reasons: v.errors.map((e) => e.message) });
  }
  return { run, skipped };
}

/** One GEMM at one degree, with its efficiency relative to TP = 1. */
export interface GemmAtDegree extends SweepGemm {
  readonly t: number;
  /** GFLOP/s at t over GFLOP/s at t = 1 (1 = the local GEMM runs as efficiently as the full one). */
  readonly efficiency: number;
  /** Per-rank time at t over the ideal (time at t = 1)/t: 1 = perfect scaling, 2 = half the ideal speed-up. */
  readonly timeOverIdeal: number;
}

/** One GEMM of the layer across the degrees. */
export interface GemmRow {
  /** The label at the lowest degree, for people. */
  readonly name: string;
  /** Which GEMM of the layer the row is: the degrees' GEMMs are matched by it, never by label. */
  readonly site: GemmSite;
  readonly phase: OpPhase;
  /**
   * How Megatron splits it across t ranks (the plan's op.split): `column` = ColumnParallelLinear
   * (N = n/t: qkv, mlp.gate/up, logits), `row` = RowParallelLinear (K = k/t: attn.proj, mlp.down),
   * `heads` = per-head attention products (batch = heads/t); a linear's dgrad and wgrad keep its split.
   */
  readonly split: OpSplit;
  readonly byDegree: readonly GemmAtDegree[];
}

/** One degree's step: measured compute, modeled communication, and the speed-up over t = 1. */
export interface StepAtDegree {
  readonly t: number;
  /** Which timeline of the sweep (e.g. 'modeled (pcie-gen3)', overlap on/off). */
  readonly comm: string;
  readonly stepMs: number;
  /** The slowest rank's compute (ms, measured on this machine, each rank alone). */
  readonly computeMs: number;
  /** The slowest rank's communication (ms) and its exposed part (not hidden by compute). */
  readonly commMs: number;
  readonly exposedMs: number;
  /** exposedMs / stepMs: the share of the step that is communication waiting. */
  readonly commShare: number;
  /** step(t = 1) / step(t) with compute + comm, and with the scheduled compute alone (same timelines); the ideal is t. */
  readonly speedup: number;
  readonly computeSpeedup: number;
}

/** The whole view's table. */
export interface GemmEfficiency {
  readonly gemms: readonly GemmRow[];
  readonly steps: readonly StepAtDegree[];
}

const maxOf = (xs: readonly number[]): number => xs.reduce((m, v) => Math.max(m, v), 0);

/** The timeline a degree is judged by: modeled with the given overlap when the sweep had a net, else measured. */
export function pickTimeline(d: SweepDegree, overlap: boolean): SweepTimeline | undefined {
  return (
    d.timelines.find((tl) => tl.comm.startsWith('modeled') && tl.overlap === overlap) ??
    d.timelines.find((tl) => tl.comm.startsWith('measured'))
  );
}

/**
 * Per GEMM (in the layer's order at the lowest degree, matched across degrees by its site; GEMMs of
 * one site, e.g. one per batch row, are summed) its local M, N, K, FLOPs, time and GFLOP/s at each
 * degree with the efficiency against the lowest degree it runs at (t = 1 when run; a site that only
 * exists at higher degrees, such as the fused linear_qkv GEMM when groups < t, against its own
 * lowest); per degree the step time, its communication share and speed-up.
 */
export function gemmEfficiency(report: { readonly degrees: readonly SweepDegree[] }, overlap: boolean): GemmEfficiency {
  const degrees = [...report.degrees].sort((a, b) => a.config.tp - b.config.tp);
  if (degrees.length === 0) return { gemms: [], steps: [] };
  const merged = degrees.map((d) => mergeBySite(d.gemms));
  // Every site of any degree, in the lowest degree's order, then those that first appear higher up
  // (with groups < t linear_qkv runs as one GEMM, site qkv, instead of the q, k and v GEMMs).
  const first = new Map<string, { g0: SweepGemm; t0: number }>();
  merged.forEach((m, i) => {
    for (const [key, g] of m) if (!first.has(key)) first.set(key, { g0: g, t0: degrees[i].config.tp });
  });
  const gemms: GemmRow[] = [...first].map(([key, { g0, t0 }]) => ({
    name: g0.name,
    site: g0.site,
    phase: g0.phase,
    split: g0.split,
    byDegree: degrees.flatMap((d, i) => {
      const g = merged[i].get(key);
      if (!g) return [];
      const t = d.config.tp;
      return [
        {
          ...g,
          t,
          efficiency: g0.gflops > 0 ? g.gflops / g0.gflops : NaN,
          timeOverIdeal: g0.ms > 0 ? (g.ms * t) / (g0.ms * t0) : NaN,
        },
      ];
    }),
  }));
  const base = pickTimeline(degrees[0], overlap);
  const firstCompute = base ? maxOf(base.computeMs) : NaN;
  const steps = degrees.flatMap((d): StepAtDegree[] => {
    const tl = pickTimeline(d, overlap);
    if (!tl || !base) return [];
    const computeMs = maxOf(tl.computeMs);
    return [
      {
        t: d.config.tp,
        comm: tl.comm,
        stepMs: tl.stepMs,
        computeMs,
        commMs: maxOf(tl.commMs),
        exposedMs: maxOf(tl.exposedMs),
        commShare: tl.stepMs > 0 ? maxOf(tl.exposedMs) / tl.stepMs : 0,
        speedup: base.stepMs / tl.stepMs,
        computeSpeedup: firstCompute > 0 && computeMs > 0 ? firstCompute / computeMs : NaN,
      },
    ];
  });
  return { gemms, steps };
}

/** GEMMs of one site (e.g. attention per batch row) as one: FLOPs and time summed, shape and label of the first. */
function mergeBySite(gs: readonly SweepGemm[]): Map<string, SweepGemm> {
  const m = new Map<string, SweepGemm>();
  for (const g of gs) {
    const key = `${g.site.product} ${g.site.computes}`;
    const prev = m.get(key);
    if (!prev) m.set(key, g);
    else {
      const flops = prev.flops + g.flops,
        ms = prev.ms + g.ms;
      m.set(key, { ...prev, flops, ms, gflops: ms > 0 ? flops / ms / 1e6 : 0 });
    }
  }
  return m;
}
