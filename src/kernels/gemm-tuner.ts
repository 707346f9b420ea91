import type { KernelContext } from './context.ts';
import { gemmVariants, supportedGemmVariants, type GemmVariant } from './gemm-variants.ts';
import { adapterKey, defaultGemmVariant, gemmChoices, gemmShapeClass, importGemmChoices } from './gemm-choice.ts';
import { gemmStrided } from './gemm.ts';
import { storedChoicesFor, toStoredChoices, type GemmChoiceStore } from './gemm-cache.ts';
import { pickGemmVariant, timeCandidates, type CandidateTimes, type TimingPlan } from './gemm-pick.ts';
import { createTensor, readTensor } from './tensor.ts';
import { denseProblem, gemmFlops, gemmRef, type GemmProblem } from '../reference/gemm.ts';
import { randomArray } from '../reference/random.ts';
import { compareArrays, float32Tolerance } from '../reference/compare.ts';

/** What tuning measured for one shape class: GFLOP/s per candidate timed, the tie and the winner. */
export interface GemmTuning {
  readonly shapeClass: string;
  /** The dims timed: the class's first problem itself, or (above maxFullFlops) that problem shrunk to it. */
  readonly timedDims: { M: number; N: number; K: number };
  /** True when the problem was timed at its full size. */
  readonly fullSize: boolean;
  /** Best GFLOP/s of each candidate timed. */
  readonly gflops: Partial<Record<GemmVariant, number>>;
  /** Every trial, ms per run. */
  readonly samples: Partial<Record<GemmVariant, number[]>>;
  /** Extra rounds of the best two because they were within the noise, and that noise (relative). */
  readonly repeats: number;
  readonly noise: number;
  /** Variants whose time per run is within the tie window of the fastest (the winner is among them). */
  readonly tied: GemmVariant[];
  readonly chosen: GemmVariant;
  /** The cheapest variant to compile already ran within two dispatch floors, so no other was compiled or timed. */
  readonly launchBound: boolean;
  /** This adapter's dispatch floor (see dispatchFloor), ms. */
  readonly dispatchMs: number;
}

// Per adapter and variant: whether it computes the right result there.
const verified = new Map<string, Promise<boolean>>();
// Per adapter: the wall time of one back-to-back dispatch of a 1×1×1 GEMM, ms.
const floors = new Map<string, Promise<number>>();

/**
 * Runs `name` once on a small odd-sized problem (not a multiple of any tile, both operands
 * transposed) against the CPU twin; a variant that is wrong on this adapter (e.g. a subgroup
 * layout it does not have) is never timed or chosen. Cached per adapter; a variant is compiled
 * only when tuning first reaches it.
 */
function verifyVariant(ctx: KernelContext, name: GemmVariant): Promise<boolean> {
  const key = `${adapterKey(ctx.device)}|${name}`;
  let v = verified.get(key);
  if (!v) {
    v = (async () => {
      const [M, N, K] = [37, 70, 21];
      const p = denseProblem(M, N, K, { transA: true, transB: true, bias: true });
      const a = randomArray(M * K, 11),
        b = randomArray(K * N, 12),
        bias = randomArray(N, 13);
      const want = gemmRef(p, a, b, new Float32Array(M * N), bias);
      const ta = createTensor(ctx.device, 'A', [K, M], a),
        tb = createTensor(ctx.device, 'B', [N, K], b);
      const tc = createTensor(ctx.device, 'C', [M, N]),
        tbias = createTensor(ctx.device, 'bias', [N], bias);
      ctx.device.pushErrorScope('validation');
      gemmStrided(ctx, p, ta, tb, tc, tbias, name);
      await ctx.flush();
      const err = await ctx.device.popErrorScope();
      const got = await readTensor(ctx.device, tc);
      for (const t of [ta, tb, tc, tbias]) t.buffer.destroy();
      const s = compareArrays(got, want);
      const ok = !err && s.nonFinite === 0 && s.maxAbs <= float32Tolerance(K, 1);
      if (!ok)
        console.warn(
          `gemm variant ${name} is not used on this adapter: ${err ? err.message : `max abs error ${s.maxAbs}`}`,
        );
      return ok;
    })();
    verified.set(key, v);
  }
  return v;
}

/**
 * Per-run wall time of a 1×1×1 GEMM dispatched back to back with the cheapest verified variant:
 * what any GEMM costs at least, the floor every timing on this adapter stands on. The best of six
 * trials, so that one busy moment does not raise it (a high floor would call real work launch-bound).
 * Cached per adapter.
 */
function dispatchFloor(ctx: KernelContext, candidates: readonly GemmVariant[]): Promise<number> {
  const key = adapterKey(ctx.device);
  let f = floors.get(key);
  if (!f) {
    f = (async () => {
      for (const v of candidates)
        if (await verifyVariant(ctx, v)) {
          const timer = trialTimer(ctx, denseProblem(1, 1, 1), 8);
          let best = Infinity;
          for (let k = 0; k < 6; k++) best = Math.min(best, await timer.time(v));
          timer.dispose();
          return best;
        }
      return 0;
    })();
    floors.set(key, f);
  }
  return f;
}

/**
 * The stored decisions [shapeClass, variant] this device may use: the variant is supported here
 * and passes verifyVariant (once per adapter and variant: one small GEMM against the CPU twin), the
 * check a freshly tuned variant gets before it is timed. A decision that fails is dropped, so its
 * class is tuned again (a store written on another browser or driver, or with other features).
 */
async function usableChoices(
  ctx: KernelContext,
  stored: readonly [string, GemmVariant][],
  supported: readonly GemmVariant[],
): Promise<[string, GemmVariant][]> {
  const ok = new Map<GemmVariant, boolean>();
  for (const [, v] of stored) if (!ok.has(v)) ok.set(v, supported.includes(v) && (await verifyVariant(ctx, v)));
  return stored.filter(([, v]) => ok.get(v));
}

/** Shrinks the largest dims of `p` until one run is ≤ `flops` (only problems above maxFullFlops). */
function shrunkDims(p: GemmProblem, flops: number): { M: number; N: number; K: number } {
  const d = { M: p.M, N: p.N, K: p.K };
  while (2 * d.M * d.N * d.K > flops) {
    const k = (['M', 'N', 'K'] as const).reduce((x, y) => (d[y] > d[x] ? y : x));
    d[k] = Math.ceil(d[k] / 2);
  }
  return d;
}

/**
 * Trials of variants on one dense problem, sharing its operands: a variant's first trial is
 * preceded by an untimed run (compile, caches); a trial is the wall time of `reps` back-to-back
 * dispatches (enough to span ≈ 128 MFLOP, at most 8), in ms per run. On SwiftShader (≈ 3 GFLOP/s
 * on 2 cores) a trial of square 256 then spans 4 dispatches, ≈ 45 ms: a single 12 ms dispatch there
 * can run 30% under its usual time (a fresh bench:gemm chose quad16 from one 12.9 ms trial, while
 * its median over 18 runs was 18 ms and staged32's 14), and the best trial counts.
 */
function trialTimer(
  ctx: KernelContext,
  p: GemmProblem,
  reps = Math.max(1, Math.min(8, Math.round(2 ** 27 / gemmFlops(p)))),
): { time: (v: GemmVariant) => Promise<number>; dispose: () => void } {
  const a = createTensor(ctx.device, 'A', [p.M * p.K]),
    b = createTensor(ctx.device, 'B', [p.K * p.N]),
    c = createTensor(ctx.device, 'C', [p.M * p.N]);
  const warm = new Set<GemmVariant>();
  return {
    async time(v) {
      if (!warm.has(v)) {
        gemmStrided(ctx, p, a, b, c, undefined, v);
        await ctx.flush();
        warm.add(v);
      }
      const t0 = performance.now();
      for (let i = 0; i < reps; i++) gemmStrided(ctx, p, a, b, c, undefined, v);
      await ctx.flush();
      return (performance.now() - t0) / reps;
    },
    dispose: () => [a, b, c].forEach((t) => t.buffer.destroy()),
  };
}

/** Above this many FLOPs a problem is timed shrunk (its largest dims halved down to it). */
export const maxFullFlops = 2 ** 33;

/** Options of tuneGemm. */
export interface TuneOptions {
  /** Decisions kept across page loads or runs: classes found there are not timed; new ones are added. */
  readonly store?: GemmChoiceStore;
  readonly plan?: TimingPlan;
}

/**
 * Tunes the shape classes of `problems` not decided yet on this adapter (in this realm, or in
 * `store` for the current kernels, each stored decision verified here before use): the verified variants are timed, cheapest to compile first, on
 * the class's first problem at its full size (the tiling that wins a shrunken copy of the problem
 * can lose 15–25% at full size), dense and unbatched, with the operands' transposes. Each gets two trials
 * and the best two are re-timed while within the measured noise (see timeCandidates); the fastest
 * wins — where several tie (launch-bound, see pickGemmVariant), the one cheapest to compile. When
 * the first one timed is launch-bound it wins whatever the others would measure, and they are not
 * compiled. The naive kernel is timed only on problems of ≤ 2 MFLOP.
 */
export async function tuneGemm(
  ctx: KernelContext,
  problems: readonly GemmProblem[],
  opts: TuneOptions = {},
): Promise<GemmTuning[]> {
  const adapter = adapterKey(ctx.device);
  const decided = (p: GemmProblem): boolean => gemmChoices.has(`${adapter}|${gemmShapeClass(p)}`);
  if (problems.every(decided)) return [];
  const supported = supportedGemmVariants(ctx.device);
  if (opts.store) {
    const wanted = new Set(problems.filter((p) => !decided(p)).map(gemmShapeClass));
    const stored = storedChoicesFor(await opts.store.load(), adapter).filter(([cls]) => wanted.has(cls));
    importGemmChoices(ctx.device, await usableChoices(ctx, stored, supported));
  }
  if (problems.every(decided)) return [];
  const dispatchMs = await dispatchFloor(ctx, supported);
  const out: GemmTuning[] = [];
  for (const p of problems) {
    if (decided(p)) continue;
    const shapeClass = gemmShapeClass(p);
    const fullSize = gemmFlops(p) / p.batch <= maxFullFlops;
    const timedDims = fullSize ? { M: p.M, N: p.N, K: p.K } : shrunkDims(p, maxFullFlops);
    const dense = denseProblem(timedDims.M, timedDims.N, timedDims.K, { transA: p.sAk !== 1, transB: p.sBn !== 1 });
    const flops = gemmFlops(dense);
    const timer = trialTimer(ctx, dense);
    let times: CandidateTimes;
    try {
      times = await timeCandidates(
        supported,
        async (v) => {
          if (v === 'naive' && flops > 2 ** 21) return undefined;
          return (await verifyVariant(ctx, v)) ? timer.time(v) : undefined;
        },
        dispatchMs,
        opts.plan,
      );
    } finally {
      timer.dispose();
    }
    const { msPerRun, samples, launchBound, repeats, noise } = times;
    const gflops = Object.fromEntries(Object.entries(msPerRun).map(([v, ms]) => [v, flops / ms / 1e6])) as Partial<
      Record<GemmVariant, number>
    >;
    const { chosen, tied } = pickGemmVariant(msPerRun, supported, dispatchMs) ?? {
      chosen: defaultGemmVariant(),
      tied: [],
    };
    gemmChoices.set(`${adapter}|${shapeClass}`, chosen);
    out.push({
      shapeClass,
      timedDims,
      fullSize,
      gflops,
      samples,
      repeats,
      noise,
      tied,
      chosen,
      launchBound,
      dispatchMs,
    });
  }
  await opts.store?.save(
    toStoredChoices(
      adapter,
      out.map((t) => [t.shapeClass, t.chosen]),
    ),
  );
  return out;
}

/** The variants this device supports that compute the right result on it (verifyVariant), cheapest compile first. */
export async function verifiedGemmVariants(ctx: KernelContext): Promise<GemmVariant[]> {
  const out: GemmVariant[] = [];
  for (const v of supportedGemmVariants(ctx.device)) if (await verifyVariant(ctx, v)) out.push(v);
  return out;
}

/** Every variant's description, for benchmark output and the UI. */
export function describeGemmVariant(v: GemmVariant): string {
  return `${v} (${gemmVariants[v].summary})`;
}
