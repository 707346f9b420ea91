import type { KernelContext } from './context.ts';
import { gemmVariants, supportedGemmVariants, type GemmVariant } from './gemm-variants.ts';
import { adapterKey, defaultGemmVariant, gemmChoices, gemmShapeClass } from './gemm-choice.ts';
import { gemmStrided } from './gemm.ts';
import { pickGemmVariant, timeCandidates } from './gemm-pick.ts';
import { createTensor, readTensor } from './tensor.ts';
import { denseProblem, gemmFlops, gemmRef, type GemmProblem } from '../reference/gemm.ts';
import { randomArray } from '../reference/random.ts';
import { compareArrays, float32Tolerance } from '../reference/compare.ts';

/** What tuning measured for one shape class: GFLOP/s per candidate timed, the tie and the winner. */
export interface GemmTuning {
  readonly shapeClass: string;
  readonly proxy: { M: number; N: number; K: number };
  readonly gflops: Partial<Record<GemmVariant, number>>;
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
        if (await verifyVariant(ctx, v)) return timeVariant(ctx, v, denseProblem(1, 1, 1), 8, 6);
      return 0;
    })();
    floors.set(key, f);
  }
  return f;
}

/** Shrinks the largest dims of `p` until one run is ≤ `flops`: a short timing stands for the shape. */
function proxyOf(p: GemmProblem, flops: number): { M: number; N: number; K: number } {
  const d = { M: p.M, N: p.N, K: p.K };
  while (2 * d.M * d.N * d.K > flops) {
    const k = (['M', 'N', 'K'] as const).reduce((x, y) => (d[y] > d[x] ? y : x));
    d[k] = Math.ceil(d[k] / 2);
  }
  return d;
}

/** Wall time of `reps` back-to-back dispatches of `variant` on a dense problem, in ms per run: the best of `trials`. */
async function timeVariant(
  ctx: KernelContext,
  variant: GemmVariant,
  p: GemmProblem,
  reps: number,
  trials = 2,
): Promise<number> {
  const M = p.M,
    N = p.N,
    K = p.K;
  const a = createTensor(ctx.device, 'A', [M * K]),
    b = createTensor(ctx.device, 'B', [K * N]),
    c = createTensor(ctx.device, 'C', [M * N]);
  gemmStrided(ctx, p, a, b, c, undefined, variant); // compile + warm
  await ctx.flush();
  let best = Infinity;
  for (let trial = 0; trial < trials; trial++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) gemmStrided(ctx, p, a, b, c, undefined, variant);
    await ctx.flush();
    best = Math.min(best, (performance.now() - t0) / reps);
  }
  for (const t of [a, b, c]) t.buffer.destroy();
  return best;
}

/**
 * Tunes the shape classes of `problems` not tuned yet on this adapter: the verified variants are
 * timed, cheapest to compile first, on a proxy of the problem (its largest dims halved until one
 * run is ≤ 32 MFLOP; the naive kernel only where the proxy is tiny), and the fastest becomes the
 * class's choice — where several tie (launch-bound, see pickGemmVariant), the one cheapest to compile. When the first
 * one timed is launch-bound it wins whatever the others would measure, and they are not compiled.
 */
export async function tuneGemm(ctx: KernelContext, problems: readonly GemmProblem[]): Promise<GemmTuning[]> {
  if (problems.every((p) => gemmChoices.has(`${adapterKey(ctx.device)}|${gemmShapeClass(p)}`))) return [];
  const supported = supportedGemmVariants(ctx.device);
  const dispatchMs = await dispatchFloor(ctx, supported);
  const out: GemmTuning[] = [];
  const seen = new Set<string>();
  for (const p of problems) {
    const shapeClass = gemmShapeClass(p);
    const key = `${adapterKey(ctx.device)}|${shapeClass}`;
    if (seen.has(key) || gemmChoices.has(key)) continue;
    seen.add(key);
    const proxy = proxyOf(p, 2 ** 25);
    const dense = denseProblem(proxy.M, proxy.N, proxy.K, { transA: p.sAk !== 1, transB: p.sBn !== 1 });
    const flops = gemmFlops(dense);
    const reps = Math.max(1, Math.min(8, Math.round(2 ** 24 / flops)));
    const { msPerRun, launchBound } = await timeCandidates(
      supported,
      async (v) => {
        if (v === 'naive' && flops > 2 ** 21) return undefined;
        return (await verifyVariant(ctx, v)) ? timeVariant(ctx, v, dense, reps) : undefined;
      },
      dispatchMs,
    );
    const gflops = Object.fromEntries(Object.entries(msPerRun).map(([v, ms]) => [v, flops / ms / 1e6])) as Partial<
      Record<GemmVariant, number>
    >;
    const { chosen, tied } = pickGemmVariant(msPerRun, supported, dispatchMs) ?? {
      chosen: defaultGemmVariant(),
      tied: [],
    };
    gemmChoices.set(key, chosen);
    out.push({ shapeClass, proxy, gflops, tied, chosen, launchBound, dispatchMs });
  }
  return out;
}

/** Every variant's description, for benchmark output and the UI. */
export function describeGemmVariant(v: GemmVariant): string {
  return `${v} (${gemmVariants[v].summary})`;
}
