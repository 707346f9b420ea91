import type { TraceEvent } from '../core/trace-event.ts';
import type { GemmTuning } from '../kernels/gemm-tuner.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { gatherLogical, type LogicalOutput } from '../parallel/gather.ts';
import type { NamedCollective } from '../parallel/layer-comm.ts';
import { compareWithReference, referenceConfig, type OracleReport } from '../parallel/oracle.ts';
import { makePlan, planValidated } from '../parallel/plan.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import { runInProcess } from '../parallel/run-in-process.ts';
import { stepInputs } from '../parallel/step-data.ts';
import type { classroomPrograms } from '../ranks/classroom-programs.ts';
import type { classroomTrainPrograms } from '../ranks/classroom-train-programs.ts';
import type { commPrograms } from '../ranks/comm-programs.ts';
import type { dpTrainPrograms } from '../ranks/dp-train-programs.ts';
import type { gradAccumPrograms } from '../ranks/grad-accum-programs.ts';
import type { ComputeTiming, GemmChoices, layerPrograms, TransferMode } from '../ranks/layer-programs.ts';
import type { TransferTimes } from '../schedule/transfer-slowdown.ts';
import type { RankPool } from '../ranks/pool.ts';
import type { pipelinePrograms } from '../ranks/pipeline-programs.ts';
import type { moeEpPrograms } from '../ranks/moe-ep-program.ts';
import type { moeLayerPrograms } from '../ranks/moe-layer-program.ts';
import { RecentMap } from '../core/recent-map.ts';
import { cpuTwinsSkipped } from '../accounting/budget.ts';
import type { StepMemoryRecord } from '../parallel/memory-record.ts';
import { slowdownRankIssue, type RankSlowdown } from '../core/rank-slowdown.ts';

/** Programs the layer's rank workers serve. */
export type LayerWorkerPrograms = typeof commPrograms &
  typeof layerPrograms &
  typeof classroomPrograms &
  typeof classroomTrainPrograms &
  typeof dpTrainPrograms &
  typeof gradAccumPrograms &
  typeof pipelinePrograms &
  typeof moeEpPrograms &
  typeof moeLayerPrograms;

/** Lends a pool of layer rank workers, re-formed for degree t, to `fn` (the page's PlaygroundRunner does). */
export interface PoolLender {
  withPool<R>(t: number, fn: (pool: RankPool<LayerWorkerPrograms>) => Promise<R>): Promise<R>;
}

/** What a caller may keep between runs (the page re-runs on every change). */
export interface LayerRunCache {
  /** GEMM choices tuned on this adapter, by shape class. */
  choices?: GemmChoices;
  /** TP=1 reference outputs by reference configuration, the most recent few (gpt2-layer: ≈ 30 MB each). */
  readonly references: RecentMap<string, LogicalOutput>;
  /** The CPU twins' outputs (float64 inside each op) by reference configuration, the most recent few. */
  readonly cpuReferences: RecentMap<string, LogicalOutput>;
}

/** An empty cache keeping the references of the last `configs` reference configurations. */
export function layerRunCache(configs = 4): LayerRunCache {
  return { references: new RecentMap(configs), cpuReferences: new RecentMap(configs) };
}

/** Options of a run. */
export interface LayerRunOptions {
  /** Time every rank's kernels alone afterwards (default true). */
  readonly timing?: boolean;
  /** Which ranks to time (default all; the page times rank 0 only: every rank runs the same shapes). */
  readonly timingRanks?: readonly number[];
  readonly cache?: LayerRunCache;
  /** Keep GEMM tuning decisions in the origin's IndexedDB across page loads (the page does; tests need not). */
  readonly persistTuning?: boolean;
  /** Also run the CPU twins in this thread and compare (default: unless src/accounting/budget.ts cpuTwinsSkipped says why not). */
  readonly cpuCheck?: boolean;
  readonly onProgress?: (line: string) => void;
  /** makePlan(c).plan when the caller has it already (the page plans first to validate and account): not planned twice. */
  readonly plan?: LayerPlan;
  /** Stops the run at its next phase (tuning, reference, step, each rank's timing, CPU twins) with the signal's reason. */
  readonly signal?: AbortSignal;
  /** #slow=r:f: rank r dispatches each kernel f times, in the step and in its timing (ranks/slowed-backend.ts). */
  readonly slow?: RankSlowdown | null;
  /** #slowlink=r:f: rank r moves each chunk it puts on the ring f times, in the step (comm/base.ts linkFactor). */
  readonly slowlink?: RankSlowdown | null;
  /**
   * Also time every rank's kernels in the step with the ring moving and with nothing moving, this
   * many pairs alternated (0, the default: not at all; see measureTransferTimes). t > 1 only.
   */
  readonly transferPairs?: number;
}

/** Everything one run measured and checked. */
export interface LayerRun {
  readonly config: LayerConfig;
  readonly plan: LayerPlan;
  readonly transport: string;
  /** TP=t against the TP=1 run on the same GPU adapter. */
  readonly oracle: OracleReport;
  /** TP=t against the CPU twins (float64 inside each op), when run. */
  readonly cpuOracle?: OracleReport;
  /** Why the CPU twins did not run (absent when they did). */
  readonly cpuSkipped?: string;
  readonly output: LogicalOutput;
  /** Mean loss over tokens, with a vocabulary. */
  readonly loss?: number;
  /** Measured collectives (every rank), in the order issued, with their layer names. */
  readonly commEvents: (TraceEvent & { readonly name: string })[];
  /** Per rank, each compute op's kernel time measured alone (plan order). */
  readonly computeTimes: ComputeTiming[];
  readonly tuning: GemmTuning[];
  /** Per rank, every buffer its step made or released, by lifetime class (the TP=t step). */
  readonly memory: readonly StepMemoryRecord[];
  /** The slowed rank and its factor, or null. */
  readonly slow: RankSlowdown | null;
  /** Per rank, the kernel dispatches it encoded for the step. */
  readonly dispatches: number[];
  /** Each compute op's time with the ring moving and with nothing moving (with `transferPairs`). */
  readonly transferTimes?: TransferTimes;
  /** Why transferTimes are missing though asked for (the adapter cannot time kernels finely). */
  readonly transferSkipped?: string;
}

/** Pools with a runLayer in flight: a second run on one is refused (its calls would interleave with the first's). */
const busyPools = new WeakSet<RankPool<LayerWorkerPrograms>>();

/**
 * Runs one step of `c` on the pool's ranks and checks it: plan (validates first), GEMM tuning on
 * rank 0 shared with all, the TP=1 reference on rank 0, the TP=t step across all ranks with real
 * collectives, gathered back to logical tensors and compared; then each rank's kernels timed alone.
 */
export async function runLayer(
  pool: RankPool<LayerWorkerPrograms>,
  c: LayerConfig,
  opts: LayerRunOptions = {},
): Promise<LayerRun> {
  if (pool.size !== c.tp)
    throw new Error(`runLayer: the pool has ${pool.size} ranks but the config asks for t = ${c.tp}.`);
  if (busyPools.has(pool))
    throw new Error(
      'runLayer: this pool is still running an earlier layer run; await it (or abort it through its signal) before starting another on the same pool.',
    );
  busyPools.add(pool);
  try {
    return await runLayerOn(pool, c, opts);
  } finally {
    busyPools.delete(pool);
  }
}

async function runLayerOn(
  pool: RankPool<LayerWorkerPrograms>,
  c: LayerConfig,
  opts: LayerRunOptions,
): Promise<LayerRun> {
  const say = (line: string): void => {
    opts.signal?.throwIfAborted();
    opts.onProgress?.(line);
  };
  const plan = opts.plan ?? (await makePlan(c)).plan;
  const ref = referenceConfig(c);
  const inputs = stepInputs(c);
  say('tuning GEMM tilings on rank 0…');
  const [tuned] = await pool.run(
    'layerTune',
    { configs: [c, ref], known: opts.cache?.choices ?? [], persist: opts.persistTuning },
    [0],
  );
  const choices = tuned.choices;
  if (opts.cache) opts.cache.choices = choices;
  const refKey = JSON.stringify(ref);
  let reference = opts.cache?.references.get(refKey);
  if (!reference) {
    say('TP=1 reference on rank 0…');
    const [refReply] = await pool.run('layerStep', { config: ref, inputs, choices, solo: true }, [0]);
    reference = gatherLogical(ref, (await planValidated(ref)).plan.ranks, [refReply.output]); // t = 1 of a valid c
    opts.cache?.references.set(refKey, reference);
  }
  await pool.traces(); // start the trace clean
  say(`TP=${c.tp}${c.sp ? ' + SP' : ''} step on ${c.tp} ranks…`);
  const slow = opts.slow ?? null;
  const slowlink = opts.slowlink ?? null;
  const issue = slowdownRankIssue('slow', slow, c.tp) ?? slowdownRankIssue('slowlink', slowlink, c.tp);
  if (issue) throw new Error(`runLayer: ${issue}`);
  const replies = await pool.run('layerStep', { config: c, inputs, choices, slow, slowlink });
  const output = gatherLogical(
    c,
    plan.ranks,
    replies.map((r) => r.output),
  );
  const oracle = compareWithReference(c, reference, output);
  const events = (await pool.traces()).filter((e) => e.stream === 'comm');
  const commEvents = nameCommEvents(
    events,
    replies.map((r) => r.named),
  );
  const computeTimes: ComputeTiming[] = [];
  if (opts.timing ?? true) {
    for (const r of opts.timingRanks ?? [...Array(c.tp).keys()]) {
      say(`timing rank ${r}'s kernels alone…`);
      computeTimes.push((await pool.run('layerTiming', { config: c, choices, slow }, [r]))[0]);
    }
  }
  let transfer: TransferTimes | string | undefined;
  if ((opts.transferPairs ?? 0) > 0 && c.tp > 1) {
    say(`timing every rank's kernels under transfer and alone (${opts.transferPairs} pairs)…`);
    transfer = await measureTransferTimes(pool, plan, { config: c, inputs, choices }, opts.transferPairs!);
  }
  const flops = plan.ops.reduce((s, o) => s + o.flops, 0);
  let cpuOracle: OracleReport | undefined;
  const cpuSkipped =
    opts.cpuCheck === undefined ? cpuTwinsSkipped(c, flops) : opts.cpuCheck ? undefined : 'CPU twins not asked for.';
  if (!cpuSkipped) {
    let twins = opts.cache?.cpuReferences.get(refKey);
    if (!twins) {
      say('CPU twins…');
      twins = await runInProcess(ref, inputs);
      opts.cache?.cpuReferences.set(refKey, twins);
    }
    cpuOracle = compareWithReference(c, twins, output);
  }
  opts.signal?.throwIfAborted();
  const loss = output.loss && output.loss.reduce((a, v) => a + v, 0) / output.loss.length;
  return {
    config: c,
    plan,
    transport: pool.transport,
    oracle,
    cpuOracle,
    cpuSkipped,
    output,
    loss,
    commEvents,
    computeTimes,
    tuning: tuned.tuning,
    memory: replies.map((r) => r.memory),
    slow,
    dispatches: replies.map((r) => r.dispatches),
    ...(typeof transfer === 'string' && { transferSkipped: transfer }),
    ...(typeof transfer === 'object' && { transferTimes: transfer }),
  };
}

/**
 * Runs the step on every rank at once `pairs` times each way, alternated (alone, overlapped, then
 * overlapped, alone, …) so a drift of this shared machine falls on both ways alike: `overlapped`
 * with the real ring, `alone` with collectives that move nothing (layerStepTimed). Keeps each op's
 * shortest time of each way (what lengthens a kernel now and then only ever adds time) and each
 * way's shortest step wall time (slowest rank). Returns why not where the adapter cannot time
 * kernels finely; throws when a rank's timed ops are not the plan's compute ops.
 */
async function measureTransferTimes(
  pool: RankPool<LayerWorkerPrograms>,
  plan: LayerPlan,
  step: { config: LayerConfig; inputs: ReturnType<typeof stepInputs>; choices: GemmChoices },
  pairs: number,
): Promise<TransferTimes | string> {
  const compute = plan.ops.filter((o) => o.kind !== 'collective');
  const best = {
    alone: plan.ranks.map(() => plan.ops.map(() => Infinity)),
    overlapped: plan.ranks.map(() => plan.ops.map(() => Infinity)),
  };
  const wall = { alone: Infinity, overlapped: Infinity };
  for (let p = 0; p < pairs; p++) {
    const order: TransferMode[] = p % 2 === 0 ? ['alone', 'overlapped'] : ['overlapped', 'alone'];
    for (const mode of order) {
      const replies = await pool.run('layerStepTimed', { ...step, mode });
      await pool.traces(); // the overlapped steps' collectives are not the run's
      for (const r of replies) {
        if ('skipped' in r) return r.skipped;
        if (r.ops.length !== compute.length || r.ops.some((o, i) => o.name !== compute[i]!.name))
          throw new Error(
            `runLayer: rank ${r.rank} timed ${r.ops.length} ops (${mode}), the plan has ${compute.length} compute ops; the timed step must dispatch one op per compute op of the plan.`,
          );
        r.ops.forEach((o, i) => {
          const row = best[mode][r.rank]!;
          row[compute[i]!.index] = Math.min(row[compute[i]!.index]!, o.ms);
        });
      }
      wall[mode] = Math.min(wall[mode], Math.max(...replies.map((r) => ('wallMs' in r ? r.wallMs : 0))));
    }
  }
  const rows = (m: number[][]): number[][] => m.map((row) => row.map((v) => (Number.isFinite(v) ? v : 0)));
  return {
    pairs,
    aloneMs: rows(best.alone),
    overlappedMs: rows(best.overlapped),
    stepWallMs: { aloneMs: wall.alone, overlappedMs: wall.overlapped },
  };
}

/** Names each rank's collective events by the layer's call order (the k-th event is the k-th named call). */
function nameCommEvents(
  events: readonly TraceEvent[],
  named: readonly NamedCollective[][],
): (TraceEvent & { name: string })[] {
  const seen = new Map<number, number>();
  return events.map((e) => {
    const k = seen.get(e.rank) ?? 0;
    seen.set(e.rank, k + 1);
    return { ...e, name: named[e.rank]?.[k]?.name ?? e.op };
  });
}
