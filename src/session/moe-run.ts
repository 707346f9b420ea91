import type { TraceEvent } from '../core/trace-event.ts';
import { groupKinds, type MeshCoords } from '../mesh/rank-layout.ts';
import type { MoeEpResult } from '../parallel/moe-ep.ts';
import {
  moeLayoutErrors,
  moeMeshDegrees,
  moeTrainingRefusal,
  moeWorld,
  type MegatronRefusal,
  type MoeLayout,
} from '../parallel/moe-layout.ts';
import {
  moeHolding,
  moeOracle,
  moeProblem,
  moeWant,
  rankRows,
  type MoeHolding,
  type MoeOracleReport,
} from '../parallel/moe-oracle.ts';
import { moeConfigErrors, type MoeConfig } from '../reference/moe/config.ts';
import type { PoolMesh, RankPool } from '../ranks/pool.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';
import { createLayerPool } from './pools.ts';

/** What an MoE run takes: the block's config (the router skew in it), hidden size h, tokens per rank, the seed of weights and tokens, the layout. */
export interface MoeRunArgs {
  readonly config: MoeConfig;
  readonly h: number;
  /** Tokens each rank routes (its sequence shard). */
  readonly tokens: number;
  readonly seed: number;
  readonly layout: MoeLayout;
  /**
   * Run TP > 1 without SP anyway, as the M036 demonstration (every TP rank routes the same tokens;
   * Megatron refuses it in training: MoeRun.refusal). Default false: such a layout is refused.
   */
  readonly demonstration?: boolean;
}

/** One rank's part of the run. */
export interface MoeRankReport {
  /** Global rank. */
  readonly rank: number;
  readonly coords: MeshCoords;
  /** Picks of this rank's tokens per expert after capacity [E]. */
  readonly tokensPerExpert: readonly number[];
  /** Picks of this rank's tokens dropped by capacity. */
  readonly dropped: number;
  /** Global index of the rank's first local expert. */
  readonly firstExpert: number;
  /** Rows each local expert processed (its ETP shard's), from every rank of the tp_ep group [E/ep]. */
  readonly expertRows: readonly number[];
  /** The block of logical tokens the rank routes: its own under SP, its TP group's without. */
  readonly tokenBlock: number;
  /** The lowest rank routing the same logical tokens when that is not this rank (without SP: a duplicate), else null. */
  readonly duplicateOf: number | null;
  /** Bytes this rank's forward dispatch sent to each rank of its group (its all-to-all or all-gather; own share included). */
  readonly dispatchBytes: number;
}

/** What an MoE run measured and checked. */
export interface MoeRun {
  readonly layout: MoeLayout;
  /** Per global rank. */
  readonly ranks: readonly MoeRankReport[];
  /** Tokens per expert summed over the ranks, after capacity [E]. */
  readonly expertLoad: readonly number[];
  /** Picks dropped by capacity over all ranks. */
  readonly dropped: number;
  /** The group's aux and z losses (rank 0's; every rank has them). */
  readonly aux: number;
  readonly z: number;
  /** The rank whose local experts processed the most rows, and how many. */
  readonly straggler: { readonly rank: number; readonly rows: number };
  /** Copies of each logical token routed: tp without SP (M036), else 1. */
  readonly copies: number;
  /** Why Megatron refuses this layout in training (TP > 1 without SP), or null. */
  readonly refusal: MegatronRefusal | null;
  /** The ranks against one device (src/parallel/moe-oracle.ts); without SP the experts' gradients are `copies` times one device's. */
  readonly oracle: MoeOracleReport;
  /** Every rank's trace events: the all-to-alls with bytes per peer (`comm.peers`), the expert GEMMs with their rows (`experts`). */
  readonly trace: TraceEvent[];
}

/**
 * Tolerance of the ranks' float32 block against the float64 oracle: float32 through three
 * GEMM-like stages over O(1) values (tests/gpu/kernels/moe/moe-block.test.ts), 1e-4 absolute.
 */
export const moeRankTolerance = 1e-4;

/**
 * Bound on the ranks' logit error: the router GEMM in float32, error ≤ γ_h·Σ|x_i w_i| ≤ h·2^-24·h·0.5
 * (|x| < 1, |w| < 0.5: 7.6e-6 at h 16), at least 1e-5; the oracle's routing margin must exceed it.
 */
export function moeLogitError(h: number): number {
  return Math.max(1e-5, h * h * 0.5 * 2 ** -24);
}

/** The pool's mesh for a layout (createLayerPool(moeWorld(l), transport, timeout, moePoolMesh(l))). */
export function moePoolMesh(l: MoeLayout): PoolMesh {
  // every kind, the expert ones too: the block asks for ep, etp and edp even where they are one rank
  return { degrees: moeMeshDegrees(l), groups: groupKinds };
}

/** Every reason `a` cannot run, one message each (the config's and the layout's); empty when it runs. */
export function moeRunErrors(a: MoeRunArgs): string[] {
  const errors = moeConfigErrors(a.config);
  if (!Number.isInteger(a.h) || a.h < 1) errors.push(`h is ${a.h}; write a whole number ≥ 1.`);
  if (!Number.isInteger(a.tokens) || a.tokens < 1)
    errors.push(`tokens per rank is ${a.tokens}; write a whole number ≥ 1.`);
  return [...errors, ...moeLayoutErrors(a.config, a.layout, { demonstration: a.demonstration ?? false })];
}

/**
 * Runs the MoE block forward and backward on a pool laid out for `a.layout` (moePoolMesh): every
 * rank routes `tokens` rows of the batch (moeProblem: block b is rows b·T…; rank q holds block q
 * under SP, its TP group's block without), the layout's dispatcher moves them over the expert
 * mesh, each rank's expert shard runs on its GPU; then checks every rank against the
 * single-device block (moeOracle) and reads the trace.
 */
export async function runMoe(pool: RankPool<LayerWorkerPrograms>, a: MoeRunArgs): Promise<MoeRun> {
  const errors = moeRunErrors(a);
  if (errors.length > 0) throw new Error(`MoE run: ${errors.join(' ')}`);
  const l = a.layout;
  const N = moeWorld(l);
  const deg = pool.mesh.spec.degrees;
  if (pool.size !== N || deg.tp !== l.tp || deg.ep !== l.ep || deg.etp !== l.etp)
    throw new Error(
      `MoE run: the pool is ${pool.size} ranks, tp ${deg.tp} × dp ${deg.dp}, ep ${deg.ep}, etp ${deg.etp}; the layout needs ${N} ranks laid out as moePoolMesh gives (tp ${l.tp}, ep ${l.ep}, etp ${l.etp}).`,
    );
  const { h, tokens: T } = a;
  const coords = Array.from({ length: N }, (_, q) => pool.mesh.coords(q));
  const holding = moeHolding(
    l,
    coords.map((x) => x.dp),
  );
  const copies = holding.copies;
  const p = moeProblem(a.config, h, T, N / copies, a.seed);
  await pool.traces();
  const results: MoeEpResult[] = await pool.run('moeEp', (q) => ({
    config: a.config,
    h,
    seed: a.seed,
    x: Float32Array.from(rankRows(p.x, holding.holder[q]!, T, h)),
    dy: Float32Array.from(rankRows(p.dy, holding.holder[q]!, T, h)),
    dispatcher: l.dispatcher,
    sp: l.sp,
  }));
  const trace = await pool.traces();
  const oracle = moeOracle(p, moeWant(p), results, moeRankTolerance, moeLogitError(h), holding);
  return moeRunReport(l, a.config, coords, holding, results, oracle, trace);
}

/**
 * What a run of the block on the ranks measured (`results` rank q's at q, `coords` its mesh
 * coordinates, `trace` every rank's events): per rank its tokens per expert, drops, experts and
 * rows, token block, duplicate and dispatch bytes; the load per expert, the drops, the losses, the
 * busiest rank; with the oracle's report.
 */
export function moeRunReport(
  l: MoeLayout,
  c: MoeConfig,
  coords: readonly MeshCoords[],
  holding: MoeHolding,
  results: readonly MoeEpResult[],
  oracle: MoeOracleReport,
  trace: TraceEvent[],
): MoeRun {
  const E = c.numMoeExperts;
  const sent = (q: number) =>
    trace
      .filter((e) => e.rank === q && e.comm?.tensor === 'moe.dispatch')
      .reduce((n, e) => n + (e.comm?.peers ? e.comm.peers.sentBytes.reduce((a, b) => a + b, 0) : e.bytes), 0);
  const ranks = results.map((r, q) => ({
    rank: q,
    coords: coords[q]!,
    tokensPerExpert: r.tokensPerExpert,
    dropped: r.dropped,
    firstExpert: r.firstExpert,
    expertRows: r.expertRows,
    tokenBlock: holding.holder[q]!,
    duplicateOf: ((d) => (d === q ? null : d))(holding.holder.indexOf(holding.holder[q]!)),
    dispatchBytes: sent(q),
  }));
  const expertLoad = Array.from({ length: E }, (_, e) => ranks.reduce((n, r) => n + r.tokensPerExpert[e]!, 0));
  const rows = ranks.map((r) => r.expertRows.reduce((n, v) => n + v, 0));
  const top = rows.indexOf(Math.max(...rows));
  return {
    layout: l,
    ranks,
    expertLoad,
    dropped: ranks.reduce((n, r) => n + r.dropped, 0),
    aux: results[0]!.aux,
    z: results[0]!.z,
    straggler: { rank: top, rows: rows[top]! },
    copies: holding.copies,
    refusal: moeTrainingRefusal(l),
    oracle,
    trace,
  };
}

/** One rank in the sweep's report. */
export interface MoeSweepRank extends MoeRankReport {
  /** From the rank's first event's start to its last event's end, ms: the median over the repeats. */
  readonly stepMs: number;
  /** Bytes the rank's all-to-alls sent to each rank of their group, by tensor (moe.dispatch, moe.combine, …; the own share included). */
  readonly allToAll: Readonly<Record<string, readonly number[]>>;
}

/** What `npm run sweep -- --experts …` prints: the run without its trace, per rank its step and traffic. */
export interface MoeSweepReport {
  readonly adapter: string;
  readonly args: MoeRunArgs;
  readonly world: number;
  readonly ranks: readonly MoeSweepRank[];
  readonly expertLoad: readonly number[];
  readonly dropped: number;
  readonly aux: number;
  readonly z: number;
  readonly straggler: MoeRun['straggler'];
  readonly copies: number;
  readonly refusal: MegatronRefusal | null;
  readonly oracle: MoeOracleReport;
}

/** A rank's span on a trace: its first event's start to its last event's end, ms (0 without events). */
function stepSpan(trace: readonly TraceEvent[], rank: number): number {
  const mine = trace.filter((e) => e.rank === rank);
  return mine.length ? Math.max(...mine.map((e) => e.t1)) - Math.min(...mine.map((e) => e.t0)) : 0;
}

/**
 * The sweep's report of a run (the last of `traces.length` repeats of the same run): per rank its
 * median span over the repeats' traces and its all-to-all bytes per peer.
 */
export function moeSweepReport(
  run: MoeRun,
  args: MoeRunArgs,
  adapter: string,
  traces: readonly (readonly TraceEvent[])[] = [run.trace],
): MoeSweepReport {
  const median = (v: number[]): number => v.sort((a, b) => a - b)[v.length >> 1]!;
  const ranks = run.ranks.map((r) => {
    const allToAll: Record<string, readonly number[]> = {};
    for (const e of run.trace)
      if (e.rank === r.rank && e.comm?.peers && e.comm.tensor) allToAll[e.comm.tensor] = e.comm.peers.sentBytes;
    return { ...r, stepMs: median(traces.map((t) => stepSpan(t, r.rank))), allToAll };
  });
  const { layout: _l, trace: _t, ranks: _r, ...rest } = run;
  return { adapter, args, world: run.ranks.length, ranks, ...rest };
}

/** A pool of moeWorld(l) rank workers laid out for `l` (moePoolMesh), `body` run on it, the pool disposed afterwards. */
export async function withMoePool<T>(
  l: MoeLayout,
  body: (pool: RankPool<LayerWorkerPrograms>) => Promise<T>,
): Promise<T> {
  const pool = await createLayerPool(moeWorld(l), 'auto', 30_000, moePoolMesh(l));
  try {
    return await body(pool);
  } finally {
    await pool.dispose();
  }
}

/**
 * A sweep's runs: a first that compiles the pipelines, then `repeats` more whose step is their median —
 * the last run, and the traces to take the step from (the repeats', or the first's alone).
 */
export async function repeatedRuns<R extends { readonly trace: TraceEvent[] }>(
  run: () => Promise<R>,
  repeats: number,
): Promise<{ readonly run: R; readonly traces: TraceEvent[][] }> {
  let last = await run();
  const traces: TraceEvent[][] = [];
  for (let i = 0; i < repeats; i++) traces.push((last = await run()).trace);
  return { run: last, traces: repeats ? traces : [last.trace] };
}

/**
 * The sweep's entry in the browser (scripts/bench/sweep-moe.ts): a pool laid out for the args,
 * one run and `repeats` more (the step their median), the report; the pool is disposed afterwards.
 */
export async function runMoeSweep(
  a: MoeRunArgs & { readonly repeats?: number; readonly onProgress?: (line: string) => void },
): Promise<MoeSweepReport> {
  const say = a.onProgress ?? (() => {});
  const N = moeWorld(a.layout);
  say(`starting ${N} rank worker${N > 1 ? 's' : ''}…`);
  return withMoePool(a.layout, async (pool) => {
    const repeats = a.repeats ?? 0;
    say(`running the MoE block forward and backward${repeats ? `, then ${repeats} more times` : ''}…`);
    const { run, traces } = await repeatedRuns(() => runMoe(pool, a), repeats);
    return moeSweepReport(
      run,
      {
        config: a.config,
        h: a.h,
        tokens: a.tokens,
        seed: a.seed,
        layout: a.layout,
        demonstration: a.demonstration ?? false,
      },
      pool.adapters[0] ?? 'unknown adapter',
      traces,
    );
  });
}
