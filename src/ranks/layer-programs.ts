import { KernelContext } from '../kernels/context.ts';
import { exportGemmChoices, importGemmChoices } from '../kernels/gemm-choice.ts';
import { tuneGemm, type GemmTuning } from '../kernels/gemm-tuner.ts';
import { indexedDbGemmStore } from '../kernels/gemm-store-idb.ts';
import type { GemmVariant } from '../kernels/gemm-variants.ts';
import { GpuTimer, type TimerResult } from '../kernels/gpu-timer.ts';
import { createTensor, type GpuTensor } from '../kernels/tensor.ts';
import { gemmExtents, gemmStrided } from '../kernels/gemm.ts';
import type { GemmProblem } from '../reference/gemm.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { RankOutput } from '../parallel/gather.ts';
import { LayerComm, type NamedCollective } from '../parallel/layer-comm.ts';
import { layerStep, type StepInputs } from '../parallel/layer.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { planValidated } from '../parallel/plan.ts';
import { readRankOutput } from '../parallel/run-in-process.ts';
import { rankWeightArrays, stepInputs, uploadWeights } from '../parallel/step-data.ts';
import type { Collectives } from '../comm/collectives.ts';
import type { RankContext } from './context.ts';
import { DetachedCollectives } from './detached-collectives.ts';
import { RecentMap } from '../core/recent-map.ts';
import { stagingPool } from '../kernels/staging-pool.ts';
import { MemoryRecorder, type StepMemoryRecord } from '../parallel/memory-record.ts';
import { slowdownOf, type RankSlowdown } from '../core/rank-slowdown.ts';
import { slowedBackend } from './slowed-backend.ts';
import { adoptInto, resultTensors, type ResultTensors } from './result-tensors.ts';

/** GEMM choices as they travel between ranks: shape class → variant. */
export type GemmChoices = [string, GemmVariant][];

// One kernel context per device: its pipeline cache outlives single steps.
const contexts = new WeakMap<GPUDevice, KernelContext>();
/** The kernel context of a device (one per device: its pipeline cache outlives single steps). */
export function kernelContext(device: GPUDevice): KernelContext {
  let k = contexts.get(device);
  if (!k) contexts.set(device, (k = new KernelContext(device)));
  return k;
}

// Configurations this worker has run a step of (its pipelines for them are compiled).
const ranConfigs = new Set<string>();

// This worker's weight shards for its last two (config, rank) pairs: deterministic from both, and
// only ever uploaded, so a run's step and timing replays (and a re-run) upload instead of
// regenerating them (gpt2-layer: ≈ 110 ms of generation per step, 28 MB per set).
const shardCache = new RecentMap<string, ReturnType<typeof rankWeightArrays>>(2);
function weightShards(c: LayerConfig, rank: number): ReturnType<typeof rankWeightArrays> {
  const key = JSON.stringify([c, rank]);
  let shards = shardCache.get(key);
  if (!shards) shardCache.set(key, (shards = rankWeightArrays(c, rankOwnership(c)[rank])));
  return shards;
}

/**
 * Runs one step on this rank's GPU with `comm`; frees every tensor it made before returning. With
 * `memory`, every buffer it makes or releases is recorded (MemoryRecorder).
 */
async function gpuStep(
  ctx: RankContext,
  c: LayerConfig,
  rank: number,
  comm: Collectives<GpuTensor>,
  inputs: StepInputs,
  timer?: GpuTimer,
  memory = false,
  slowFactor = 1,
  hold = true,
  results?: ResultTensors,
) {
  ranConfigs.add(JSON.stringify(c));
  const k = kernelContext(ctx.device);
  const dispatched = k.dispatches;
  // Timed: the kernels of each stretch between collectives, one command buffer each, are submitted
  // together once the stretch is encoded (see KernelContext.holdUntilFlush); its buffers live to
  // the step's end.
  const ownBackend = new GpuBackend(k, {
    deferRelease: !!timer,
    ...results?.backendOptions(),
  });
  // With `hold` false a timed step submits its kernels as it queues them (layerStepTimed).
  const be = slowedBackend(ownBackend, slowFactor); // #slow: this rank's kernels dispatched f times
  const own = rankOwnership(c)[rank];
  // Staging: the pool's buffers this step takes, not the idle ones earlier work on this device left
  // (rank 0's TP=1 reference, the read-backs of earlier results), so ranks staging alike draw alike.
  const staging = stagingPool(ctx.device);
  const stagingSince = staging.acquisitionsNow;
  const rec = memory
    ? new MemoryRecorder<GpuTensor>(
        (t) => t.shape,
        (t) => t.name,
        () => staging.heldBytesSince(stagingSince),
      )
    : undefined;
  // Finish the kernels queued so far before each collective, so its read-back phase times the copy
  // alone; a chunk of a chunked collective only submits them (the queue orders its read-back after
  // them), so the GEMM chunks queued since run under it (tp-overlap.ts).
  const lc = new LayerComm(
    rec ? rec.comm(comm) : comm,
    (t: GpuTensor) => t.shape,
    (named) => {
      rec?.collective(named);
      return named.chunk ? k.submit() : k.flush();
    },
    // A result reused from step to step (ResultTensors) is freed by its owner, not at this step's end.
    adoptInto(be, results),
    () => k.submit(),
  );
  try {
    const w = uploadWeights(weightShards(c, rank), (n, shape, data) => be.tensor(n, shape, data));
    rec?.weights(w);
    if (timer) await k.flush(); // the weights' upload is not a kernel's time
    const started = performance.now();
    timer?.start();
    k.holdUntilFlush = !!timer && hold;
    let r;
    try {
      r = await layerStep(rec ? rec.backend(be) : be, lc, c, own, w, inputs);
    } finally {
      k.holdUntilFlush = false;
    }
    const timed = timer ? await timer.stop() : undefined;
    const wallMs = performance.now() - started; // the step's kernels and collectives, all finished
    const output = await readRankOutput(rank, (t: GpuTensor) => be.read(t), r);
    return {
      output,
      named: lc.log,
      timed,
      wallMs,
      memory: rec?.finish(rank, r),
      dispatches: k.dispatches - dispatched,
    };
  } finally {
    ownBackend.releaseAll();
  }
}

/**
 * Tunes the GEMM tilings for every GEMM of the given configs' plans on this rank's adapter (shape
 * classes in `known` are kept); with `persist`, decisions are also read from and added to the
 * origin's IndexedDB, so a later page load on the same adapter and kernels does not re-time them.
 */
export async function layerTune(
  ctx: RankContext,
  a: { configs: LayerConfig[]; known?: GemmChoices; persist?: boolean },
): Promise<{ choices: GemmChoices; tuning: GemmTuning[] }> {
  const k = kernelContext(ctx.device);
  importGemmChoices(ctx.device, a.known ?? []);
  const store = a.persist ? indexedDbGemmStore() : undefined;
  const tuning: GemmTuning[] = [];
  // The caller validated each configuration once per run (runLayer, the page, legalTpDegrees for prewarm).
  for (const c of a.configs) tuning.push(...(await tuneGemm(k, (await planValidated(c)).gemmProblems, { store })));
  return { choices: exportGemmChoices(ctx.device), tuning };
}

/** What a rank returns from a step: its results, the collectives it issued, by name, and its buffers over the step. */
export interface LayerStepReply {
  readonly output: RankOutput;
  readonly named: NamedCollective[];
  readonly memory: StepMemoryRecord;
  /** Kernel dispatches this rank encoded for the step (a slowed rank's are f× the others'). */
  readonly dispatches: number;
}

/**
 * One training step of `config` on every rank of the pool (real collectives), or with `solo`
 * on this rank alone as a one-rank group (the TP=1 reference). `slow` (#slow=r:f): rank r
 * dispatches each of its kernels f times (slowed-backend.ts); `slowlink` (#slowlink=r:f): rank r
 * moves each chunk it puts on the ring f times (BaseCollectives.linkFactor). Both ignored with `solo`.
 */
export async function layerStepProgram(
  ctx: RankContext,
  a: {
    config: LayerConfig;
    inputs: StepInputs;
    choices: GemmChoices;
    solo?: boolean;
    slow?: RankSlowdown | null;
    slowlink?: RankSlowdown | null;
  },
): Promise<LayerStepReply> {
  importGemmChoices(ctx.device, a.choices);
  // Each named collective writes into the tensor it returned the step before (ResultTensors).
  const results = a.solo ? undefined : resultTensors(ctx.device, 'layer');
  const comm = results ? results.around(ctx.gpuComm) : new DetachedCollectives(ctx.device, 0, 1);
  const factor = a.solo ? 1 : slowdownOf(a.slow, ctx.rank);
  ctx.link.linkFactor = a.solo ? 1 : slowdownOf(a.slowlink, ctx.rank);
  try {
    const { output, named, memory, dispatches } = await gpuStep(
      ctx,
      a.config,
      a.solo ? 0 : ctx.rank,
      comm,
      a.inputs,
      undefined,
      true,
      factor,
      true,
      results,
    );
    return { output, named, memory: memory!, dispatches };
  } finally {
    ctx.link.linkFactor = 1;
    results?.endStep();
  }
}

/** Per compute op of the plan (in order), this rank's kernel time in ms, measured alone. */
export interface ComputeTiming {
  readonly rank: number;
  readonly ops: { readonly name: string; readonly ms: number }[];
  readonly quantized: boolean;
  readonly method: 'timestamp-query' | 'wall-clock';
}

/**
 * Times this rank's kernels with the other ranks idle (as if it had its own GPU): the step is
 * replayed twice with collectives that move nothing, every dispatch timed by timestamp queries and
 * each op's shorter time kept (or, without them or when they are quantized, the whole step by the
 * wall clock, split by FLOPs; `quantized` then says why).
 */
export async function layerTiming(
  ctx: RankContext,
  a: { config: LayerConfig; choices: GemmChoices; slow?: RankSlowdown | null },
): Promise<ComputeTiming> {
  const factor = slowdownOf(a.slow, ctx.rank);
  importGemmChoices(ctx.device, a.choices);
  const comm = new DetachedCollectives(ctx.device, ctx.rank, a.config.tp);
  const inputs = stepInputs(a.config);
  const k = kernelContext(ctx.device);
  // Without usable timestamp queries (none, or quantized to 100 µs as a user's Chrome may do),
  // each GEMM of the plan is timed alone by the wall clock over back-to-back dispatches, and the
  // rest of the step's wall time is split over the other ops in proportion to their FLOPs.
  const byWallClock = async (): Promise<ComputeTiming> => {
    const { plan, gemmProblems } = await planValidated(a.config); // validated by the run that sent it
    await gpuStep(ctx, a.config, ctx.rank, comm, inputs, undefined, false, factor); // warm
    const t0 = performance.now();
    await gpuStep(ctx, a.config, ctx.rank, comm, inputs, undefined, false, factor);
    const total = performance.now() - t0;
    const compute = plan.ops.filter((o) => o.kind !== 'collective');
    const gemmMs = (await timeGemmsAlone(k, gemmProblems)).map((ms) => ms * factor); // f dispatches each
    let g = 0;
    const ms = compute.map((o) => (o.kind === 'gemm' ? gemmMs[g++] : NaN));
    const rest = Math.max(0, total - ms.filter((v) => !Number.isNaN(v)).reduce((s, v) => s + v, 0));
    const otherFlops = compute.reduce((s, o, i) => s + (Number.isNaN(ms[i]) ? Math.max(o.flops, 1) : 0), 0);
    return {
      rank: ctx.rank,
      ops: compute.map((o, i) => ({
        name: o.name,
        ms: Number.isNaN(ms[i]) ? (rest * Math.max(o.flops, 1)) / otherFlops : ms[i],
      })),
      quantized: false,
      method: 'wall-clock',
    };
  };
  if (!GpuTimer.available(ctx.device)) return byWallClock();
  const timer = new GpuTimer(k, 2048);
  try {
    // Warm-up (pipelines compiled, caches filled), unless this worker already ran this config.
    const key = JSON.stringify(a.config);
    if (!ranConfigs.has(key)) await gpuStep(ctx, a.config, ctx.rank, comm, inputs, undefined, false, factor);
    // Two timed steps, each op's shorter time kept: what lengthens an op now and then (another
    // process on a shared machine: one classroom run showed qkv.v at 5× its twin) only ever adds time.
    const runs: TimerResult[] = [];
    for (let i = 0; i < 2; i++) {
      const { timed } = await gpuStep(ctx, a.config, ctx.rank, comm, inputs, timer, false, factor);
      if (timed!.quantized) return { ...(await byWallClock()), quantized: true };
      runs.push(timed!);
    }
    const ops = runs[0].times.map((t, i) => ({
      name: t.op,
      ms: Math.min(...runs.map((r) => r.times[i]?.ns ?? t.ns)) / 1e6,
    }));
    return { rank: ctx.rank, ops, quantized: false, method: 'timestamp-query' };
  } finally {
    timer.destroy();
  }
}

/** Whether a timed step's collectives move data on the ring (`overlapped`) or nothing (`alone`). */
export type TransferMode = 'alone' | 'overlapped';

/**
 * One rank's step timed with its collectives `mode`: each compute op's kernel time (plan order)
 * and the step's wall time, ms; or, where this adapter cannot time kernels finely, why not.
 */
export type TransferTiming =
  | {
      readonly rank: number;
      readonly mode: TransferMode;
      readonly ops: { readonly name: string; readonly ms: number }[];
      /** This rank's wall time from the step's first kernel to its last kernel's and collective's end, ms. */
      readonly wallMs: number;
    }
  | { readonly rank: number; readonly mode: TransferMode; readonly skipped: string };

/**
 * One step of `config` on every rank at once, every dispatch timed by timestamp queries, with the
 * collectives either real (`overlapped`: the ring transfers run while the kernels queued under
 * them run, on this machine's shared cores) or moving nothing (`alone`: DetachedCollectives, same
 * kernels and shapes, no transfer in flight). Kernels are submitted as the step queues them (a
 * held stretch could not run under a chunk's transfer), one command buffer per pass so passes do
 * not run concurrently. Without `timestamp-query`, or with it quantized (100 µs steps cannot tell a
 * kernel's slowdown), it says so instead.
 */
export async function layerStepTimed(
  ctx: RankContext,
  a: { config: LayerConfig; inputs: StepInputs; choices: GemmChoices; mode: TransferMode },
): Promise<TransferTiming> {
  if (!GpuTimer.available(ctx.device))
    return { rank: ctx.rank, mode: a.mode, skipped: 'this adapter has no timestamp queries' };
  importGemmChoices(ctx.device, a.choices);
  const comm = a.mode === 'alone' ? new DetachedCollectives(ctx.device, ctx.rank, a.config.tp) : ctx.gpuComm;
  const k = kernelContext(ctx.device);
  const timer = new GpuTimer(k, 2048);
  k.passPerCommandBuffer = true;
  try {
    const { timed, wallMs } = await gpuStep(ctx, a.config, ctx.rank, comm, a.inputs, timer, false, 1, false);
    if (timed!.quantized)
      return {
        rank: ctx.rank,
        mode: a.mode,
        skipped: 'timestamp queries are quantized to 100 µs here (WebGPU developer features off)',
      };
    return { rank: ctx.rank, mode: a.mode, ops: timed!.times.map((t) => ({ name: t.op, ms: t.ns / 1e6 })), wallMs };
  } finally {
    k.passPerCommandBuffer = false;
    timer.destroy();
  }
}

/** Wall time (ms) of each GEMM problem run alone: back-to-back dispatches spanning ≥ 20 ms, per dispatch. */
async function timeGemmsAlone(k: KernelContext, problems: readonly GemmProblem[]): Promise<number[]> {
  const cache = new Map<string, number>();
  const out: number[] = [];
  for (const p of problems) {
    const key = JSON.stringify(p);
    let ms = cache.get(key);
    if (ms === undefined) {
      const reach = gemmExtents(p);
      const a = createTensor(k.device, 'A', [reach.a]),
        b = createTensor(k.device, 'B', [reach.b]),
        c = createTensor(k.device, 'C', [reach.c]);
      let t = performance.now();
      gemmStrided(k, p, a, b, c);
      await k.flush();
      const once = performance.now() - t;
      const reps = Math.max(1, Math.min(200, Math.ceil(20 / Math.max(once, 0.01))));
      t = performance.now();
      for (let i = 0; i < reps; i++) gemmStrided(k, p, a, b, c);
      await k.flush();
      ms = (performance.now() - t) / reps;
      for (const x of [a, b, c]) x.buffer.destroy();
      cache.set(key, ms);
    }
    out.push(ms);
  }
  return out;
}

/** The layer's programs, served by src/ranks/layer.worker.ts. */
export const layerPrograms = { layerTune, layerStep: layerStepProgram, layerTiming, layerStepTimed };
