import type { LogicalOutput } from '../parallel/gather.ts';
import { accountPlan, type PlanAccounting } from '../accounting/accounting.ts';
import { assertWithinBudget, budgetRun, type MemoryBudget } from '../accounting/budget.ts';
import { modeledComputeMs, swiftshaderLike } from '../accounting/compute-model.ts';
import { interconnectPresets, type Interconnect } from '../hardware/interconnect.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { OracleReport } from '../parallel/oracle.ts';
import { makePlan } from '../parallel/plan.ts';
import { validateConfig } from '../parallel/validate.ts';
import type { LayerPlan } from '../parallel/plan-types.ts';
import type { StepMemoryRecord } from '../parallel/memory-record.ts';
import { replayStepMemory } from '../parallel/memory-replay.ts';
import {
  layerRunCache,
  runLayer,
  type LayerRun,
  type LayerRunCache,
  type LayerWorkerPrograms,
  type PoolLender,
} from './layer-run.ts';
import { LayerPoolKeeper } from './pools.ts';
import type { RankPool } from '../ranks/pool.ts';
import { runTimeline, timingRanksFor } from './run-timeline.ts';
import type { RankSlowdown } from '../core/rank-slowdown.ts';
import { stepInputs } from '../parallel/step-data.ts';
import { modeledCommMs, withSlowLink, withSlowRank } from '../schedule/durations.ts';
import { scheduleStep, type Timeline } from '../schedule/schedule.ts';
import { projectedCommSource, projectLayer, type Machine } from '../projection/layer/projected-layer.ts';

/** What the page asks for: a configuration, where communication times come from, overlap. */
export interface RunRequest {
  readonly config: LayerConfig;
  /** 'measured': the in-browser transport of this run; else the alpha-beta model of this link. */
  readonly comm: 'measured' | Interconnect;
  readonly overlap: boolean;
  /**
   * A real cluster to project the timeline onto (compute on its GPU, communication on its links);
   * the rank workers still run the layer here for the oracle and the shapes.
   */
  readonly projection?: Machine;
  /**
   * The plan of `config` when the caller has validated it and checked it against the budget
   * already (the page does, once per run): the run then neither validates nor plans again.
   */
  readonly plan?: LayerPlan;
  /**
   * #slow=r:f: rank r's compute f× slower — on the ranks here by f dispatches of each kernel
   * (measured), in a projected or modeled timeline by f× its compute times.
   */
  readonly slow?: RankSlowdown | null;
  /** #slowlink=r:f: the hop out of rank r f× slower — here by f copies of each chunk it sends, modeled as every collective f×. */
  readonly slowlink?: RankSlowdown | null;
  /**
   * The projection of this request (its `projection` and `plan`) when the caller has drawn it
   * already: the run takes its accounting, timeline and captions instead of computing them again.
   */
  readonly projected?: PlaygroundResult;
}

/** A request onto a real cluster. */
export type ProjectedRequest = RunRequest & { readonly projection: Machine };

/** What a request onto a real cluster gives from its plan alone: projectedResult (a caller may wrap it to count its calls). */
export type Projector = (req: ProjectedRequest, plan: LayerPlan) => PlaygroundResult;

/**
 * What the plan and the projection give alone, before (and without) any rank worker: the real
 * cluster's timeline, the shapes and the memory; no oracle, no output. The page draws it at once.
 */
export function projectedResult(req: ProjectedRequest, plan: LayerPlan): PlaygroundResult {
  const m = req.projection;
  const gpu = m.system.gpu;
  return {
    config: req.config,
    plan,
    accounting: accountPlan(plan, req.comm === 'measured' ? undefined : req.comm),
    timeline: projectLayer(plan, m, req.overlap, req.slow, req.slowlink),
    computeSource: `projected on ${gpu.label} in ${m.dtype} (GEMMs tile- and wave-quantized over ${gpu.sms} SMs, other kernels HBM-bound, plus a launch each)${slowNote(req.slow, 'modeled')}; the WebGPU run itself is fp32 on this browser's adapter and gives the oracle and the shapes`,
    commSource: `${projectedCommSource(m, req.config.tp)}${slowLinkNote(req.slowlink, 'modeled')}`,
  };
}

/** The caption's words for a slowed rank: its compute is measured with f dispatches per kernel, or modeled as f×. */
function slowNote(slow: RankSlowdown | null | undefined, how: 'measured' | 'modeled'): string {
  if (!slow || slow.factor === 1) return '';
  return how === 'measured'
    ? `, except rank ${slow.rank}, slowed by #slow: each of its kernels dispatched ${slow.factor} times, timed alone`
    : `, rank ${slow.rank}'s compute × ${slow.factor} (#slow)`;
}

/** The caption's words for a slowed link: measured with f copies of each chunk rank r sends, or modeled as every collective f×. */
function slowLinkNote(slowlink: RankSlowdown | null | undefined, how: 'measured' | 'modeled'): string {
  if (!slowlink || slowlink.factor === 1) return '';
  return how === 'measured'
    ? `, the hop out of rank ${slowlink.rank} slowed by #slowlink: each chunk it sends moved ${slowlink.factor} times`
    : `, every collective × ${slowlink.factor} (#slowlink: the ring moves at the pace of the hop out of rank ${slowlink.rank})`;
}

/** What the page shows for one run. */
export interface PlaygroundResult {
  readonly config: LayerConfig;
  readonly plan: LayerPlan;
  readonly accounting: PlanAccounting;
  readonly timeline: Timeline;
  /** Where the compute and comm times come from, in words (always shown on the page). */
  readonly computeSource: string;
  readonly commSource: string;
  /** Absent without WebGPU (nothing ran). */
  readonly oracle?: OracleReport;
  readonly cpuOracle?: OracleReport;
  /** Why the CPU twins did not run, when they did not. */
  readonly cpuSkipped?: string;
  readonly loss?: number;
  /** The step's output, loss and gradients in logical layout (absent without WebGPU). */
  readonly output?: LogicalOutput;
  readonly transport?: string;
  readonly adapter?: string;
  /** Per rank, the buffers of the step: recorded on the ranks, or replayed on shapes without WebGPU. */
  readonly memory?: readonly StepMemoryRecord[];
  /** True when `memory` is the shapes replay of the plan (memory-replay.ts), not the ranks' record. */
  readonly memoryReplayed?: boolean;
}

/**
 * Runs the layer for the page: keeps one pool of rank workers, re-formed for each degree (workers
 * already started keep their devices and compiled pipelines, so a change of t starts only the
 * ranks never started before), the tuned GEMM choices and the TP=1 references between runs, times
 * rank 0's kernels alone (every rank runs the same shapes), and schedules the step with measured
 * kernels and measured or modeled communication. Without WebGPU it schedules the plan from the cost model.
 */
export class PlaygroundRunner implements PoolLender {
  private readonly pools = new LayerPoolKeeper();
  private readonly cache: LayerRunCache = layerRunCache();
  /** The pool's lock: runs, lent pools and warm-ups take their turn here (the page's coalescing queue is session/run-latest.ts). */
  private queue: Promise<unknown> = Promise.resolve();
  private generation = 0;
  /** Per pool, how many of its ranks have run a layer step (devices up and the step's pipelines compiled). */
  private readonly stepped = new WeakMap<RankPool<LayerWorkerPrograms>, number>();

  /** Set when navigator.gpu exists but gives no adapter: runs are then modeled, as without WebGPU. */
  modelOnly = false;

  /** Memory and buffer limits every run is checked against before a worker allocates (src/accounting/budget.ts). */
  budget: MemoryBudget | undefined;

  constructor(
    private readonly onProgress: (line: string) => void = () => {},
    /** The projection onto a real cluster, computed once per run (a request's `projected`, else here). */
    readonly project: Projector = projectedResult,
  ) {}

  /** True when this browser can run the ranks (navigator.gpu exists). */
  static hasWebGpu(): boolean {
    return typeof navigator !== 'undefined' && 'gpu' in navigator && !!navigator.gpu;
  }

  /**
   * Runs one request; requests are serialized (a new one waits for the running one). `signal`
   * stops it at its next phase (runLayer's phases) with the signal's reason; one aborted before
   * its turn does not start.
   */
  run(req: RunRequest, signal?: AbortSignal): Promise<PlaygroundResult> {
    return this.enqueue(() => this.runNow(req, signal));
  }

  /**
   * Lends the pool, re-formed for degree t, to `fn` (another view's programs, e.g. the classroom's),
   * in the same queue as runs: the view gets warm workers and never races a run.
   */
  withPool<R>(t: number, fn: (pool: RankPool<LayerWorkerPrograms>) => Promise<R>): Promise<R> {
    return this.enqueue(async () => fn(await this.poolOf(t)));
  }

  private enqueue<R>(job: () => Promise<R>): Promise<R> {
    this.generation++; // stops a warm-up between two degrees
    const next = this.queue.then(job);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async runNow(req: RunRequest, signal?: AbortSignal): Promise<PlaygroundResult> {
    signal?.throwIfAborted();
    const c = req.config;
    if (!req.plan && this.budget) assertWithinBudget(c, this.budget);
    const plan = req.plan ?? (await makePlan(c)).plan; // makePlan validates before any work
    const m = req.projection;
    const projected = m && (req.projected ?? this.project({ ...req, projection: m }, plan));
    return this.runHere(req, plan, projected, signal);
  }

  /** The run of `plan` here; on a real cluster (`projected`) its timeline, accounting and captions are the projection's. */
  private async runHere(
    req: RunRequest,
    plan: LayerPlan,
    projected: PlaygroundResult | undefined,
    signal?: AbortSignal,
  ): Promise<PlaygroundResult> {
    const c = req.config;
    const link = req.comm === 'measured' ? undefined : req.comm;
    const accounting = projected?.accounting ?? accountPlan(plan, link);
    const onCluster = projected && {
      timeline: projected.timeline,
      computeSource: projected.computeSource,
      commSource: projected.commSource,
    };
    if (this.modelOnly || !PlaygroundRunner.hasWebGpu()) {
      const modeledLink = link ?? interconnectPresets['pcie-gen3'];
      const memory = await Promise.all(Array.from({ length: c.tp }, (_, r) => replayStepMemory(c, r)));
      return {
        config: c,
        plan,
        accounting,
        ...(onCluster ?? {
          timeline: scheduleStep(
            plan,
            withSlowLink(
              withSlowRank({ computeMs: modeledComputeMs(plan), commMs: modeledCommMs(plan, modeledLink) }, req.slow),
              req.slowlink,
            ),
            { overlap: req.overlap },
          ),
          computeSource: `modeled (no WebGPU here: ${swiftshaderLike.name})${slowNote(req.slow, 'modeled')}`,
          commSource: `modeled (${modeledLink.label}, alpha-beta ring)${slowLinkNote(req.slowlink, 'modeled')}`,
        }),
        memory,
        memoryReplayed: true,
      };
    }
    const pool = await this.poolOf(c.tp);
    signal?.throwIfAborted();
    let run: LayerRun;
    try {
      run = await runLayer(pool, c, {
        plan,
        timing: !onCluster, // a real cluster's timeline prices the kernels on its GPU: none timed here
        timingRanks: timingRanksFor(req.slow, c.tp),
        slow: req.slow ?? null,
        slowlink: req.slowlink ?? null,
        // This browser as the cluster, with something overlapped: every kernel also timed with the
        // ring moving and with nothing moving, 2 pairs alternated (runTimeline draws the slowdown);
        // not under #slow, whose straggler's kernels are timed with its f dispatches.
        transferPairs:
          !link && (req.overlap || (c.tpOverlapChunks ?? 1) > 1) && !(req.slow && req.slow.factor > 1) ? 2 : 0,
        cache: this.cache,
        persistTuning: true,
        onProgress: this.onProgress,
        signal,
      });
    } catch (e) {
      // A failed run breaks the pool: release its workers' devices and memory now, not at the next run.
      if (pool.failure && this.pools.current === pool) await this.dispose();
      throw e;
    }
    this.noteStepped(pool, c.tp);
    const t0 = run.computeTimes[0];
    return {
      config: c,
      plan,
      accounting,
      ...(onCluster ?? {
        timeline: runTimeline(run, link ?? 'measured', req.overlap),
        computeSource: run.transferTimes
          ? `measured on this machine's GPU (${pool.adapters[0] ?? 'WebGPU'}): every rank's kernels timed in the step, all ranks at once, with nothing moving and, for the kernels under a ring transfer, with the ring moving (${run.transferTimes.pairs} pairs alternated; the striped end of a block is what the transfer added)`
          : `measured on this machine's GPU (${pool.adapters[0] ?? 'WebGPU'}): rank 0's kernels timed alone (${t0?.method ?? 'no timing'}), as if each rank had its own GPU; every rank runs the same shapes${slowNote(req.slow, 'measured')}${run.transferSkipped ? `; kernels under a transfer not timed: ${run.transferSkipped}` : ''}`,
        commSource: link
          ? `modeled (${link.label}, alpha-beta ring)${slowLinkNote(req.slowlink, 'modeled')}`
          : `measured: this browser's ${pool.transport} transport between the rank workers${slowLinkNote(req.slowlink, 'measured')}`,
      }),
      oracle: run.oracle,
      cpuOracle: run.cpuOracle,
      cpuSkipped: run.cpuSkipped,
      loss: run.loss,
      output: run.output,
      memory: run.memory,
      transport: pool.transport,
      adapter: pool.adapters[0],
    };
  }

  private poolOf(t: number): Promise<RankPool<LayerWorkerPrograms>> {
    return this.pools.of(t, this.onProgress);
  }

  /**
   * While the page is idle, grows the pool to the largest legal degree of `degrees` beyond the
   * ranks that have run a step and runs one step there, so the new workers have devices and
   * compiled pipelines: a later change to any degree up to it is then a re-run. Goes through the
   * same queue as runs. A run asked for while the new workers start takes the step's place: its own
   * step compiles their pipelines, instead of waiting for a whole warm-up step first
   * (docs/benchmarks.md, bench:ui); a later warm-up then steps the ranks that run did not use.
   */
  prewarm(config: LayerConfig, degrees: readonly number[]): void {
    if (this.modelOnly || !PlaygroundRunner.hasWebGpu()) return;
    const gen = this.generation;
    this.queue = this.queue
      .then(async () => {
        const legal: number[] = [];
        for (const t of degrees) {
          const ct = { ...config, tp: t };
          // an illegal degree, or one over the budget, is not warmed
          if (validateConfig(ct).ok && (!this.budget || budgetRun(ct, this.budget).ok)) legal.push(t);
        }
        const t = Math.max(0, ...legal);
        if (gen !== this.generation || t <= this.steppedRanks()) return;
        const c = { ...config, tp: t };
        const pool = await this.poolOf(t);
        if (gen !== this.generation) return;
        this.onProgress(`warming t = ${t}: one step on ${t} ranks…`);
        await pool.run('layerStep', { config: c, inputs: stepInputs(c), choices: this.cache.choices ?? [] });
        await pool.traces();
        this.noteStepped(pool, t);
      })
      .catch(async () => {
        if (this.pools.current?.failure) await this.dispose(); // release a broken pool's memory at once
      });
  }

  /** Rank workers started (devices up): every degree up to this runs on workers already there. */
  warmRanks(): number {
    const p = this.pools.current;
    return p && !p.failure ? p.capacity : 0;
  }

  /** Ranks of the current pool that have run a layer step: every degree up to this is a re-run. */
  steppedRanks(): number {
    const p = this.pools.current;
    return p && !p.failure ? (this.stepped.get(p) ?? 0) : 0;
  }

  private noteStepped(pool: RankPool<LayerWorkerPrograms>, t: number): void {
    this.stepped.set(pool, Math.max(t, this.stepped.get(pool) ?? 0));
  }

  /** Resolves when queued runs and warm-ups have finished. */
  async idle(): Promise<void> {
    await this.queue;
  }

  /** Terminates every rank worker. */
  async dispose(): Promise<void> {
    await this.pools.dispose();
  }
}
