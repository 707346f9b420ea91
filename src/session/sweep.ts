import { accountPlan } from '../accounting/accounting.ts';
import { parseInterconnect } from '../hardware/interconnect.ts';
import { timelineToPerfetto, type PerfettoTrace } from '../export/perfetto.ts';
import { scheduleStep, type Timeline } from '../schedule/schedule.ts';
import { measuredCommMs } from '../schedule/durations.ts';
import {
  kernelSlowdowns,
  medianOverRanks,
  scheduleUnderTransfer,
  slowdownByGroup,
  transferSlowdown,
  type TransferTimes,
} from '../schedule/transfer-slowdown.ts';
import type {
  SweepCollective,
  SweepDegree,
  SweepGemm,
  SweepTimeline,
  SweepTransfer,
} from '../schedule/sweep-degree.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { LayerPlan, PlannedOp } from '../parallel/plan-types.ts';
import { layerRunCache, runLayer, type LayerRun, type LayerWorkerPrograms, type PoolLender } from './layer-run.ts';
import { LayerPoolKeeper } from './pools.ts';
import type { RankPool } from '../ranks/pool.ts';
import { runTimeline } from './run-timeline.ts';
import { layerTensors, layerTensorsMetadata } from '../parallel/layer-tensors.ts';
import { stepInputs } from '../parallel/step-data.ts';
import { encodeSafetensors } from '../core/safetensors.ts';
import { isCpuAdapter } from '../kernels/adapter.ts';

/** The sweep's document (what `--json` prints). */
export interface SweepReport {
  readonly adapter: string;
  readonly note: string;
  readonly net?: string;
  readonly degrees: SweepDegree[];
  /** Perfetto/Chrome trace of every degree's modeled timeline, when asked for. */
  readonly trace?: PerfettoTrace;
}

/** Arguments from the CLI: every config already validated there. */
export interface SweepArgs {
  readonly configs: LayerConfig[];
  readonly net?: string;
  readonly trace?: boolean;
  /** Also return each degree's weights, inputs, outputs and gradients as .safetensors (base64). */
  readonly dump?: boolean;
  readonly onProgress?: (line: string) => void;
  /**
   * Cancels the sweep; runSweep rejects with the signal's reason. Its own pool is disposed at once;
   * a borrowed one is left to its lender and the current run stops at its next phase.
   */
  readonly signal?: AbortSignal;
  /** Also time every kernel with the ring moving and with nothing moving, this many pairs alternated (runLayer transferPairs). */
  readonly transferPairs?: number;
  /** Borrow the ranks from here (the page's runner: warm workers, no run racing the sweep's timings) instead of starting a pool. */
  readonly pools?: PoolLender;
}

/** Mean of a list (0 for none). */
const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

const summarize = (label: string, tl: Timeline): SweepTimeline => ({
  comm: label,
  overlap: tl.overlap,
  stepMs: tl.stepMs,
  computeMs: tl.totals.map((t) => t.computeMs),
  commMs: tl.totals.map((t) => t.commMs),
  exposedMs: tl.totals.map((t) => t.exposedMs),
});

/** The plan's GEMMs as the sweep reports them, `ms(op, i)` the time of compute op i (its index among the plan's compute ops). */
export function sweepGemms(plan: LayerPlan, ms: (op: PlannedOp, computeIndex: number) => number): SweepGemm[] {
  return plan.ops
    .filter((o) => o.kind !== 'collective')
    .flatMap((o, i) => {
      if (o.kind !== 'gemm') return [];
      const t = ms(o, i);
      const { site, M, N, K, batch, flops } = o.gemm;
      return [
        {
          name: o.name,
          site,
          phase: o.phase,
          split: o.split,
          M,
          N,
          K,
          batch,
          flops,
          ms: t,
          gflops: t > 0 ? flops / t / 1e6 : 0,
        },
      ];
    });
}

/** The per-degree report from one run. */
export function summarizeRun(run: LayerRun, net?: string): SweepDegree {
  const link = net ? parseInterconnect(net) : undefined;
  const acc = accountPlan(run.plan, link);
  const gemms = sweepGemms(run.plan, (_, i) => mean(run.computeTimes.map((t) => t.ops[i]?.ms ?? 0)));
  const rank0 = run.commEvents.filter((e) => e.rank === 0);
  const collectives = acc.collectives.map(
    (cc, k): SweepCollective => ({
      name: cc.name,
      phase: cc.phase,
      op: cc.op,
      mapping: cc.mapping,
      payloadBytes: cc.payloadBytes,
      ringBytesSent: cc.ringBytesSent,
      measuredMs: rank0[k] ? rank0[k].t1 - rank0[k].t0 : undefined,
      modeledMs: cc.modeledUs === undefined ? undefined : cc.modeledUs / 1000,
    }),
  );
  return {
    ...(run.transferTimes && { transfer: sweepTransfer(run, run.transferTimes) }),
    ...(run.transferSkipped && { transferSkipped: run.transferSkipped }),
    config: run.config,
    transport: run.transport,
    oracle: { pass: run.oracle.pass, worst: run.oracle.worst, entries: run.oracle.entries },
    cpuOracle: run.cpuOracle && { pass: run.cpuOracle.pass, worst: run.cpuOracle.worst },
    cpuSkipped: run.cpuSkipped,
    loss: run.loss,
    timing: { method: run.computeTimes[0]?.method ?? 'none', quantized: run.computeTimes.some((t) => t.quantized) },
    gemms,
    collectives,
    memory: [...acc.memory],
    computeMs: run.computeTimes.map((t) => t.ops.reduce((s, o) => s + o.ms, 0)),
    timelines:
      run.computeTimes.length === 0
        ? []
        : [
            summarize("measured (this machine's transport)", runTimeline(run, 'measured', false)),
            ...(link
              ? [false, true].map((overlap) => summarize(`modeled (${link.name})`, runTimeline(run, link, overlap)))
              : []),
          ],
  };
}

/** The run's kernels under transfer and alone, as the sweep reports them (see SweepTransfer). */
function sweepTransfer(run: LayerRun, times: TransferTimes): SweepTransfer {
  const commMs = measuredCommMs(run.plan, run.commEvents);
  const same = medianOverRanks(times);
  const slowed = scheduleUnderTransfer(run.plan, same, commMs, { overlap: true });
  const alone = scheduleStep(run.plan, { computeMs: same.aloneMs, commMs }, { overlap: true });
  const rows = kernelSlowdowns(run.plan, times, slowed);
  const kernels = run.plan.ops
    .filter((o) => o.kind !== 'collective')
    .map((o) => {
      const mine = rows.filter((r) => r.opIndex === o.index);
      const t = { aloneMs: mean(mine.map((r) => r.aloneMs)), overlappedMs: mean(mine.map((r) => r.overlappedMs)) };
      return { op: o.name, ...t, underTransfer: mine.some((r) => r.underTransfer), slowdown: transferSlowdown(t) };
    });
  return {
    pairs: times.pairs,
    kernels,
    slowdown: slowdownByGroup(rows),
    stepWallMs: times.stepWallMs,
    scheduledStepMs: { aloneMs: alone.stepMs, overlappedMs: slowed.stepMs },
  };
}

/**
 * Runs every config in order on one pool, re-formed for each degree (ranks started for an earlier
 * degree keep their devices, pipelines and tuned GEMM choices) — its own, or one borrowed from
 * `args.pools` — reporting progress.
 */
export async function runSweep(args: SweepArgs): Promise<SweepReport> {
  const say = args.onProgress ?? (() => {});
  const degrees: SweepDegree[] = [];
  const traces: PerfettoTrace[] = [];
  const cache = layerRunCache();
  let adapter = 'unknown adapter';
  // Its own pool unless one is lent; disposing it rejects what the run waits on, so a cancel takes effect at once.
  const own = args.pools ? undefined : new LayerPoolKeeper();
  const cancel = (): void => void own?.dispose();
  args.signal?.addEventListener('abort', cancel);
  try {
    for (const [i, c] of args.configs.entries()) {
      args.signal?.throwIfAborted();
      const tag = `[${i + 1}/${args.configs.length}] t=${c.tp}`;
      const runOn = (p: RankPool<LayerWorkerPrograms>): Promise<LayerRun> => {
        adapter = p.adapters[0] ?? adapter;
        args.signal?.throwIfAborted();
        return runLayer(p, c, {
          cache,
          signal: args.signal,
          transferPairs: args.transferPairs,
          onProgress: (l) => say(`${tag}: ${l}`),
        });
      };
      let run: LayerRun;
      if (args.pools) {
        say(`${tag}: waiting for the page's rank workers…`);
        run = await args.pools.withPool(c.tp, runOn);
      } else {
        run = await runOn(await own!.of(c.tp, (l) => say(`${tag}${c.sp ? ' SP' : ''}: ${l}`)));
      }
      args.signal?.throwIfAborted();
      const degree = summarizeRun(run, args.net);
      degrees.push(args.dump ? { ...degree, safetensors: safetensorsBase64(run) } : degree);
      if (args.trace) traces.push(degreeTrace(run, args.net, i));
    }
  } catch (e) {
    args.signal?.throwIfAborted();
    throw e;
  } finally {
    args.signal?.removeEventListener('abort', cancel);
    await own?.dispose();
  }
  return {
    adapter,
    note: isCpuAdapter(adapter)
      ? "SwiftShader runs WebGPU on the CPU: times here say nothing about a GPU; compare ratios measured in one run. All ranks share one adapter; each rank's kernels were timed with the others idle."
      : "All ranks share this one adapter; each rank's kernels were timed with the others idle, as if each had its own GPU. Compare ratios measured in one run.",
    net: args.net,
    degrees,
    trace: args.trace ? mergeTraces(traces) : undefined,
  };
}

/** The run's tensors as a .safetensors file in base64 (bytes cannot cross page.evaluate as they are). */
function safetensorsBase64(run: LayerRun): string {
  const c = run.config;
  const bytes = encodeSafetensors(layerTensors(c, stepInputs(c), run.output), layerTensorsMetadata(c));
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** One degree's modeled timeline (measured comm without a net) as Perfetto processes "t=… rank r". */
function degreeTrace(run: LayerRun, net: string | undefined, i: number): PerfettoTrace {
  const tl = runTimeline(run, net ? parseInterconnect(net) : 'measured', false);
  const trace = timelineToPerfetto(tl);
  const label = `t=${run.config.tp}${run.config.sp ? ' SP' : ''}`;
  return {
    ...trace,
    traceEvents: trace.traceEvents.map((e) => ({
      ...e,
      pid: e.pid + 100 * i,
      args: e.name === 'process_name' && e.ph === 'M' ? { name: `${label} ${String(e.args?.name ?? '')}` } : e.args,
    })),
  };
}

/** Concatenates traces (their pids already distinct). */
function mergeTraces(traces: readonly PerfettoTrace[]): PerfettoTrace {
  return { displayTimeUnit: 'ms', traceEvents: traces.flatMap((t) => t.traceEvents) };
}
