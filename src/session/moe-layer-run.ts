import type { LayerConfig } from '../parallel/config.ts';
import { moeLayerErrors } from '../parallel/moe-layer.ts';
import {
  moeLayerOracle,
  moeLayerProblem,
  moeLayerWant,
  rankData,
  rankShard,
  type MoeLayerOracleReport,
} from '../parallel/moe-layer-oracle.ts';
import { moeLayoutErrors, moeWorld, type MoeLayout } from '../parallel/moe-layout.ts';
import { moeHolding, type MoeProblem } from '../parallel/moe-oracle.ts';
import { moeModelOracle, moeModelWant, type MoeModelOracleReport } from '../parallel/moe-model-oracle.ts';
import { validateConfig } from '../parallel/validate.ts';
import { moeConfigErrors, type MoeConfig } from '../reference/moe/config.ts';
import type { RankPool } from '../ranks/pool.ts';
import type { NamedCollective } from '../parallel/layer-comm.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';
import {
  moeLogitError,
  moeRankTolerance,
  moeRunReport,
  moeSweepReport,
  repeatedRuns,
  withMoePool,
  type MoeRun,
  type MoeSweepReport,
} from './moe-run.ts';
import type { TraceEvent } from '../core/trace-event.ts';

/** What an MoE layer run takes: the layer's config (with a vocabulary: embedding, output layer and loss around it; its seed seeds every tensor), the block's config, the layout. */
export interface MoeLayerRunArgs {
  readonly layer: LayerConfig;
  readonly config: MoeConfig;
  readonly layout: MoeLayout;
}

/**
 * What an MoE layer run measured and checked: the block's fields as runMoe gives them (tokens per
 * expert per rank, drops, straggler, aux and z, the trace with the all-to-alls' bytes per peer and
 * the expert GEMMs' rows, `oracle` the block's part of the check), the attention collectives and
 * the attention passes (compute events `attention`, `attention.backward`) on the same trace.
 */
export interface MoeLayerRun extends MoeRun {
  readonly layer: LayerConfig;
  /** The whole layer against one device: y, dx, the block's input, the attention half's gradients, and the block (`moe`, the same as `oracle`). */
  readonly layerOracle: MoeLayerOracleReport;
  /** Per rank, its attention group's collectives as the layer named them, in issue order. */
  readonly named: readonly (readonly NamedCollective[])[];
  /** With a vocabulary: the mean cross entropy over every DP replica's tokens (the aux and z losses are `aux` and `z`). */
  readonly loss?: number;
  /**
   * The block's problem on the ranks' own tokens, as the checks read it (moeLayerWant's `block`):
   * the ln2 outputs of every rank in rank order, the block's output gradient, its weights. The
   * classroom's MoE steps read it (src/ui/classroom/moe-steps.ts), so the layer's float64 oracle runs once.
   */
  readonly block: MoeProblem;
}

/** Every reason `a` cannot run, one message each; empty when it runs. */
export function moeLayerRunErrors(a: MoeLayerRunArgs): string[] {
  const c = a.layer;
  const layout = moeLayoutErrors(a.config, a.layout);
  // TP without SP: the layout's refusal (Megatron's, cited) says it once for both
  const layer = moeLayerErrors(c, c.h).filter((m) => !(m.startsWith(`tp ${c.tp} without`) && !a.layout.sp));
  const errors = [...validateConfig(c).errors.map((e) => e.message), ...moeConfigErrors(a.config), ...layout, ...layer];
  // SP matters at tp > 1 only
  const sp = (x: { tp: number; sp: boolean }) => (x.tp > 1 && x.sp ? ' with SP' : '');
  if (c.tp !== a.layout.tp || sp(c) !== sp(a.layout))
    errors.push(`the layer has tp ${c.tp}${sp(c)}, the layout tp ${a.layout.tp}${sp(a.layout)}; give both the same.`);
  return errors;
}

/**
 * Runs the transformer layer with the MoE block forward and backward on a pool laid out for
 * `a.layout` (moePoolMesh): DP replica d of the attention mesh runs its own micro-batch (rank at
 * tp j, dp d holds its SP shard; moe-layer-oracle.ts moeLayerProblem), then checks every rank
 * against one device (moeLayerOracle; tolerance moeRankTolerance relative to max(1, max|oracle|),
 * the routing's logit bound moeLogitError widened by the rank's MoE input error) and reads the trace.
 */
export async function runMoeLayer(pool: RankPool<LayerWorkerPrograms>, a: MoeLayerRunArgs): Promise<MoeLayerRun> {
  const errors = moeLayerRunErrors(a);
  if (errors.length > 0) throw new Error(`MoE layer run: ${errors.join(' ')}`);
  const l = a.layout;
  const c = a.layer;
  const N = moeWorld(l);
  const deg = pool.mesh.spec.degrees;
  if (pool.size !== N || deg.tp !== l.tp || deg.ep !== l.ep || deg.etp !== l.etp)
    throw new Error(
      `MoE layer run: the pool is ${pool.size} ranks, tp ${deg.tp} × dp ${deg.dp}, ep ${deg.ep}, etp ${deg.etp}; the layout needs ${N} ranks laid out as moePoolMesh gives (tp ${l.tp}, ep ${l.ep}, etp ${l.etp}).`,
    );
  const coords = Array.from({ length: N }, (_, q) => pool.mesh.coords(q));
  const p = moeLayerProblem(c, a.config, l);
  await pool.traces();
  const replies = await pool.run('moeLayer', (q) => ({
    layer: c,
    config: a.config,
    data: rankData(p, coords[q]!),
    dispatcher: l.dispatcher,
  }));
  const trace = await pool.traces();
  const want = await moeLayerWant(p, coords);
  const layerOracle = moeLayerOracle(p, want, replies, coords, moeRankTolerance, moeLogitError(c.h));
  const holding = moeHolding(
    l,
    coords.map((x) => x.dp),
  );
  const moe = moeRunReport(
    l,
    a.config,
    coords,
    holding,
    replies.map((r) => r.moe),
    layerOracle.moe,
    trace,
  );
  // with a vocabulary: the mean cross entropy over every replica's tokens (TP rank 0 of each)
  const ce = replies.filter((_, q) => coords[q]!.tp === 0).flatMap((r) => (r.loss ? Array.from(r.loss) : []));
  return {
    ...moe,
    layer: c,
    layerOracle,
    named: replies.map((r) => r.named),
    block: want.block,
    ...(ce.length > 0 && { loss: ce.reduce((a, v) => a + v, 0) / ce.length }),
  };
}

/** What `npm run sweep -- --experts … --layer` prints: the block's sweep report, the layer and its oracle. */
export interface MoeLayerSweepReport extends MoeSweepReport {
  readonly layer: LayerConfig;
  readonly layerOracle: MoeLayerOracleReport;
  /** With a vocabulary, the mean cross entropy (MoeLayerRun.loss). */
  readonly loss?: number;
}

/**
 * The sweep's entry for the whole layer (scripts/bench/sweep-moe.ts --layer): a pool laid out for
 * the layout, one run and `repeats` more (the step their median), the report; the pool is disposed
 * afterwards.
 */
export async function runMoeLayerSweep(
  a: MoeLayerRunArgs & { readonly repeats?: number; readonly onProgress?: (line: string) => void },
): Promise<MoeLayerSweepReport> {
  const say = a.onProgress ?? (() => {});
  const N = moeWorld(a.layout);
  say(`starting ${N} rank worker${N > 1 ? 's' : ''}…`);
  return withMoePool(a.layout, async (pool) => {
    const repeats = a.repeats ?? 0;
    const args = { layer: a.layer, config: a.config, layout: a.layout };
    say(`running the MoE layer forward and backward${repeats ? `, then ${repeats} more times` : ''}…`);
    const { run, traces } = await repeatedRuns(() => runMoeLayer(pool, args), repeats);
    const c = a.layer;
    const block = { config: a.config, h: c.h, tokens: (c.s / c.tp) * c.b, seed: c.seed, layout: a.layout };
    const report = moeSweepReport(run, block, pool.adapters[0] ?? 'unknown adapter', traces);
    return { ...report, layer: c, layerOracle: run.layerOracle, ...(run.loss !== undefined && { loss: run.loss }) };
  });
}

/** What an L-layer run takes: the one-layer run's, L and the per-layer pattern (moe-layer-freq.ts moeLayerPattern). */
export interface MoeModelRunArgs extends MoeLayerRunArgs {
  readonly pattern: readonly boolean[];
}

/** One MoE layer's part of an L-layer run: the block's figures (runMoe's, without the trace). */
export type MoeModelLayerReport = Omit<MoeRun, 'trace'>;

/** What an L-layer run measured and checked. */
export interface MoeModelRun {
  readonly layer: LayerConfig;
  readonly pattern: readonly boolean[];
  /** y, dx, every layer's gradients and every MoE layer's block against one device over L layers. */
  readonly oracle: MoeModelOracleReport;
  /** Per layer: the block's figures for an MoE layer, null for a dense one. */
  readonly layers: readonly (MoeModelLayerReport | null)[];
  /** Every rank's events: per layer its attention (dense: its collectives only), the MoE layers' all-to-alls and expert GEMMs. */
  readonly trace: TraceEvent[];
}

/**
 * Runs L layers (pattern[ℓ]: MoE or dense) forward and backward on a pool laid out for the
 * layout, as runMoeLayer one; checks them against one device over L layers (moeModelOracle).
 */
export async function runMoeModel(pool: RankPool<LayerWorkerPrograms>, a: MoeModelRunArgs): Promise<MoeModelRun> {
  const errors = moeLayerRunErrors(a);
  if (a.pattern.length < 1) errors.push('the model has no layer; give --layers ≥ 1.');
  if (errors.length > 0) throw new Error(`MoE model run: ${errors.join(' ')}`);
  const l = a.layout;
  const c = a.layer;
  const N = moeWorld(l);
  if (pool.size !== N) throw new Error(`MoE model run: the pool has ${pool.size} ranks, the layout needs ${N}.`);
  const coords = Array.from({ length: N }, (_, q) => pool.mesh.coords(q));
  const p = moeLayerProblem(c, a.config, l);
  await pool.traces();
  const results = await pool.run('moeModel', (q) => ({
    layer: c,
    config: a.config,
    pattern: a.pattern,
    x: Float32Array.from(rankShard(c, p.x[coords[q]!.dp]!, coords[q]!.tp)),
    dy: Float32Array.from(rankShard(c, p.dy[coords[q]!.dp]!, coords[q]!.tp)),
    dispatcher: l.dispatcher,
  }));
  const trace = await pool.traces();
  const problem = { c, mc: a.config, layout: l, pattern: a.pattern, x: p.x, dy: p.dy };
  const want = await moeModelWant(problem, coords);
  const oracle = moeModelOracle(problem, want, results, coords, moeRankTolerance, moeLogitError(c.h));
  const holding = moeHolding(
    l,
    coords.map((x) => x.dp),
  );
  // the m-th MoE layer's forward dispatch is each rank's m-th 'moe.dispatch' event
  const dispatches = trace.filter((e) => e.comm?.tensor === 'moe.dispatch');
  let m = 0;
  const layers = a.pattern.map((moe, i) => {
    const block = oracle.moe[i];
    if (!moe || !block) return null;
    const own = coords.flatMap((_, q) => dispatches.filter((e) => e.rank === q).slice(m, m + 1));
    m++;
    const { trace: _t, ...r } = moeRunReport(
      l,
      a.config,
      coords,
      holding,
      results.map((x) => x.layers[i]!.moe!),
      block,
      own,
    );
    return r;
  });
  return { layer: c, pattern: a.pattern, oracle, layers, trace };
}

/** What `npm run sweep -- --experts … --layer --layers L --moe-layer-freq F` prints: the run without its trace. */
export type MoeModelSweepReport = Omit<MoeModelRun, 'trace'> & { readonly adapter: string };

/** The sweep's entry for L layers: a pool laid out for the layout, one run, its report; the pool disposed afterwards. */
export async function runMoeModelSweep(
  a: MoeModelRunArgs & { readonly onProgress?: (line: string) => void },
): Promise<MoeModelSweepReport> {
  const say = a.onProgress ?? (() => {});
  const N = moeWorld(a.layout);
  say(`starting ${N} rank worker${N > 1 ? 's' : ''}…`);
  return withMoePool(a.layout, async (pool) => {
    say(
      `running ${a.pattern.length} layers (${a.pattern.map((m) => (m ? 'MoE' : 'dense')).join(', ')}) forward and backward…`,
    );
    const { trace: _t, ...run } = await runMoeModel(pool, {
      layer: a.layer,
      config: a.config,
      layout: a.layout,
      pattern: a.pattern,
    });
    return { ...run, adapter: pool.adapters[0] ?? 'unknown adapter' };
  });
}
