import type { Collectives } from '../comm/collectives.ts';
import { numel } from '../core/shape.ts';
import {
  bucketShard,
  flattenParams,
  gradBufferLayout,
  unflattenParams,
  type GradBufferLayout,
} from '../mesh/grad-buckets.ts';
import type { AdamHyper } from '../reference/adam.ts';
import { copyColsKernel } from '../reference/copy-cols.ts';
import { scaleKernel } from '../reference/scale.ts';
import { opSpec, type Backend } from './backend.ts';
import type { DpSyncMode } from './dp-options.ts';
import type { OracleEntry, OracleReport } from './oracle.ts';
import type { PipelineModel } from './pipeline-model.ts';
import {
  adamInPlace,
  comparePipeline,
  gatherPipeline,
  pipelineReference,
  readStageOutput,
  stageWeightArrays,
  stepStage,
  type PipelineLogical,
  type PipelineTraining,
  type StageArrays,
  type StageOptimizer,
  type StageOutput,
} from './pipeline-oracle.ts';
import type { StageStepResult } from './pipeline-step.ts';
import type { ShardData } from './step-data.ts';
import { registrationOrder, type WeightName } from './weight-names.ts';

type Grads = Partial<Record<WeightName, Float32Array>>;

/** One parameter of a stage on one TP rank: block `block`'s weight `name`, or the head's (emb, wout) when `block` is absent. */
export interface StageParam {
  readonly block?: number;
  readonly name: WeightName;
}

/** A stage's gradient buffer on one TP rank: the layout over its parameters, and which parameter each layout name is. */
export interface StageGradBuffer {
  readonly layout: GradBufferLayout;
  readonly params: ReadonlyMap<string, StageParam>;
}

/** How a stage's replica reaches the other replicas of its stage and TP rank: its DP group. */
export interface StageDp<T> {
  readonly comm: Collectives<T, unknown>;
  /** The replica's DP rank q (its micro-batches are q·m … q·m + m − 1 of the global batch). */
  readonly rank: number;
  readonly size: number;
  readonly mode: DpSyncMode;
}

const paramKey = (p: StageParam): string => (p.block === undefined ? p.name : `block ${p.block}.${p.name}`);

/** The collective names of the syncs (equal on every rank of the DP group: part of the fingerprint). */
export const stageGradSyncName = 'dp.grads.0';
export const stageParamSyncName = 'dp.params.0';

/**
 * The stage's parameters on this TP rank laid out as Megatron's gradient buffer for d replicas
 * (mesh/grad-buckets.ts: registration order — the embedding, each block's in the layer's order,
 * the output layer —, placed reversed, one bucket: the sync runs after the pipeline's last
 * backward, as Megatron's finalize_model_grads does without overlap_grad_reduce), padded for the
 * distributed optimizer's shards.
 */
export function stageGradBuffer(arrays: StageArrays, d: number, mode: DpSyncMode): StageGradBuffer {
  const params: [StageParam, ShardData][] = [];
  const head = (name: WeightName) => {
    const w = arrays.head[name];
    if (w) params.push([{ name }, w]);
  };
  head('emb');
  for (const [block, shards] of arrays.blocks)
    for (const name of registrationOrder) {
      const w = shards[name];
      if (w) params.push([{ block, name }, w]);
    }
  head('wout');
  const layout = gradBufferLayout(
    params.map(([p, w]) => ({ name: paramKey(p), numel: numel(w.shape) })),
    undefined,
    d,
    mode === 'distributed-optimizer',
  );
  return { layout, params: new Map(params.map(([p]) => [paramKey(p), p])) };
}

/** The gradients (or weights) of a stage as the flat buffer's values, by layout name. */
function byKey(buf: StageGradBuffer, blocks: readonly [number, Grads][], head: Grads): Record<string, Float32Array> {
  const out: Record<string, Float32Array> = {};
  for (const [key, p] of buf.params) {
    const g = p.block === undefined ? head[p.name] : blocks.find(([l]) => l === p.block)?.[1][p.name];
    if (!g) throw new Error(`stage gradient buffer: no ${key}.`);
    out[key] = g;
  }
  return out;
}

/** A flat buffer's values back to a stage's gradients: [block, its gradients] and the head's. */
export function stageGradsOf(buf: StageGradBuffer, flat: Float32Array): Pick<StageOutput, 'blockGrads' | 'headGrads'> {
  const values = unflattenParams(buf.layout, flat);
  const blocks = new Map<number, Grads>();
  const headGrads: Grads = {};
  for (const [key, p] of buf.params) {
    if (p.block === undefined) headGrads[p.name] = values[key]!;
    else {
      let g = blocks.get(p.block);
      if (!g) blocks.set(p.block, (g = {}));
      g[p.name] = values[key]!;
    }
  }
  return { blockGrads: [...blocks], headGrads };
}

/**
 * Copies every gradient of the stage's step into its place of the (zeroed) buffer, scales it by 1/d
 * (Megatron's gradient_scaling_factor) and sums it over the DP group: all-reduced, or with the
 * distributed optimizer reduce-scattered so that replica q keeps shard q. Returns what this rank
 * holds after the sync: the whole averaged buffer, or its shard.
 */
async function syncGrads<T>(be: Backend<T>, dp: StageDp<T>, buf: StageGradBuffer, r: StageStepResult<T>): Promise<T> {
  const { layout } = buf;
  const grad = be.tensor(stageGradSyncName, [layout.numel]);
  for (const range of layout.params) {
    const p = buf.params.get(range.name)!;
    const g = p.block === undefined ? r.headGrads[p.name] : r.blockGrads.get(p.block)?.[p.name];
    if (g === undefined) throw new Error(`pipeline × DP: the stage's step made no gradient for ${range.name}.`);
    const n = range.end - range.start;
    be.kernel(
      opSpec(`dp.grads.copy.${range.name}`, 'replicated', { role: 'wgrad', weight: p.name }),
      copyColsKernel,
      [g, grad],
      { rows: 1, n, from: { w: n, c0: 0 }, to: { w: layout.numel, c0: range.start } },
    );
  }
  be.kernel(opSpec('dp.grads.scale', 'replicated', { role: 'wgrad' }), scaleKernel, [grad], { factor: 1 / dp.size });
  await be.flush();
  const synced =
    dp.mode === 'distributed-optimizer'
      ? await dp.comm.reduceScatter(grad, 0, 'sum', stageGradSyncName)
      : await dp.comm.allReduce(grad, 'sum', stageGradSyncName);
  if (synced !== grad) be.release(grad);
  return synced;
}

/** What a stage's step with DP leaves on a rank: the outputs, with the gradients the optimizer used. */
export interface StageDpOutput extends StageOutput {
  /** With the distributed optimizer: this rank's shard of the averaged gradient buffer, elements [start, start + data.length). */
  readonly gradShard?: { readonly start: number; readonly data: Float32Array };
  /** With the distributed optimizer and Adam: what each shard of the last step went through, sampled (the classroom's ZeRO-1 steps). */
  readonly zero?: ZeroShardSample;
  /** The first step's micro-batch 0 messages as this rank received them (the classroom's pipeline steps). */
  readonly boundaries?: readonly BoundarySample[];
}

/** How many elements a sample keeps. */
export const sampleElems = 8;

/** A received boundary tensor: its wire name ("act.k.j" / "grad.k.j"), shape, and its first sampleElems values. */
export interface BoundarySample {
  readonly tensor: string;
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

/** Where shard q's sample sits: its first element inside a parameter (a shard may open on padding), and that parameter's layout name. */
export interface ShardSampleAt {
  readonly at: number;
  readonly param: string;
}

/**
 * One rank's distributed-optimizer step on its stage's flat buffer of `numel` elements (d shards of
 * `end − start`): `local[q]` this replica's own gradient (before the 1/d scale) at shard q's sample,
 * for every q — the reduce-scatter's inputs —, and at this rank's shard's sample the averaged
 * gradient it received, its float32 weight before and after Adam and Adam's moments after.
 */
export interface ZeroShardSample {
  readonly numel: number;
  readonly start: number;
  readonly end: number;
  readonly samples: readonly ShardSampleAt[];
  readonly local: readonly Float32Array[];
  readonly grad: Float32Array;
  readonly paramBefore: Float32Array;
  readonly paramAfter: Float32Array;
  readonly m: Float32Array;
  readonly v: Float32Array;
}

/** Shard q's sample position in a distributed-optimizer layout (pure: the same on every rank). */
export function shardSampleAt(layout: GradBufferLayout, q: number): ShardSampleAt {
  const { start, end } = bucketShard(layout, 0, q);
  const r = [...layout.params].sort((a, b) => a.start - b.start).find((x) => x.end > start && x.start < end);
  if (!r) throw new Error(`grad buffer: shard ${q} [${start}, ${end}) holds only padding.`);
  return { at: Math.max(start, r.start), param: r.name };
}

/**
 * Ends one stage's step on one TP rank: reads its outputs back; with `dp`, first synchronises its
 * gradients over the replicas (syncGrads) — the outputs then carry the averaged gradients, or with
 * the distributed optimizer only the rank's shard of them (`gradShard`) —; with `adam`, steps the
 * optimizer in `arrays` (float64 main parameters in `optimizer`): every parameter (no DP, or
 * all-reduce: each replica alike), or the shard, whose updated values are then all-gathered over
 * the DP group into every replica's weights (Megatron's start_param_sync).
 */
export async function endStageStep<T>(
  be: Backend<T>,
  r: StageStepResult<T>,
  s: {
    readonly tpRank: number;
    readonly stage: number;
    readonly arrays: StageArrays;
    readonly optimizer: StageOptimizer;
    readonly adam?: AdamHyper;
    readonly dp?: StageDp<T>;
  },
): Promise<StageDpOutput> {
  const read = (t: T) => be.read(t);
  const out = await readStageOutput(read, s.tpRank, s.stage, r);
  if (!s.dp) {
    if (s.adam) stepStage(s.arrays, out, s.optimizer, s.adam);
    return out;
  }
  const buf = stageGradBuffer(s.arrays, s.dp.size, s.dp.mode);
  const synced = await syncGrads(be, s.dp, buf, r);
  const flat = await be.read(synced);
  be.release(synced);
  if (s.dp.mode === 'all-reduce') {
    const grads = stageGradsOf(buf, flat);
    if (s.adam) stepStage(s.arrays, grads, s.optimizer, s.adam);
    return { ...out, ...grads };
  }
  const shard = bucketShard(buf.layout, 0, s.dp.rank);
  const gradShard = { start: shard.start, data: flat };
  const synced0 = { ...out, blockGrads: [], headGrads: {}, gradShard };
  if (!s.adam) return synced0;
  const weights = flattenParams(buf.layout, byKey(buf, weightsOf(s.arrays), headWeightsOf(s.arrays)));
  const mine = weights.slice(shard.start, shard.end);
  const before = mine.slice();
  adamInPlace(s.optimizer, 'dp.shard', mine, flat, s.adam);
  const zero = zeroSample(buf, out, shard, flat, before, mine, s.optimizer.get('dp.shard')!, s.dp.rank);
  const x = be.tensor(stageParamSyncName, [mine.length], mine);
  await be.flush();
  const gathered = await s.dp.comm.allGather(x, 0, stageParamSyncName);
  const all = await be.read(gathered);
  be.release(x);
  be.release(gathered);
  const updated = stageGradsOf(buf, all);
  for (const [l, shards] of s.arrays.blocks)
    for (const [name, w] of Object.entries(shards) as [WeightName, ShardData][])
      w.data.set(updated.blockGrads.find(([i]) => i === l)![1][name]!);
  for (const [name, w] of Object.entries(s.arrays.head) as [WeightName, ShardData][])
    w.data.set(updated.headGrads[name]!);
  return { ...synced0, zero };
}

/** The sampled record of one distributed-optimizer step (ZeroShardSample): `local` from the rank's unsynced gradients. */
function zeroSample(
  buf: StageGradBuffer,
  out: StageOutput,
  shard: { start: number; end: number },
  grad: Float32Array,
  before: Float32Array,
  after: Float32Array,
  moments: { readonly m: Float64Array; readonly v: Float64Array },
  q: number,
): ZeroShardSample {
  const { layout } = buf;
  const local = flattenParams(layout, byKey(buf, out.blockGrads, out.headGrads));
  const samples = Array.from({ length: layout.dp }, (_, r) => shardSampleAt(layout, r));
  const cut = (a: ArrayLike<number>, from: number) =>
    Float32Array.from({ length: sampleElems }, (_, i) => a[from + i] ?? 0);
  const o = samples[q]!.at - shard.start;
  return {
    numel: layout.numel,
    ...shard,
    samples,
    local: samples.map((x) => cut(local, x.at)),
    grad: cut(grad, o),
    paramBefore: cut(before, o),
    paramAfter: cut(after, o),
    m: cut(moments.m, o),
    v: cut(moments.v, o),
  };
}

const weightsOf = (a: StageArrays): [number, Grads][] =>
  a.blocks.map(([l, shards]) => [l, Object.fromEntries(Object.entries(shards).map(([n, w]) => [n, w.data]))]);

const headWeightsOf = (a: StageArrays): Grads =>
  Object.fromEntries(Object.entries(a.head).map(([n, w]) => [n, w.data]));

/**
 * Each replica's outputs in the logical layout (gatherPipeline); with the distributed optimizer
 * every rank holds only its shard of the averaged gradients, so a stage's and TP rank's buffer is
 * first put together from the shards of its d replicas (each replica then reports the whole).
 * `replicas[q]`: replica q's t·p ranks.
 */
export function gatherReplicas(
  model: PipelineModel,
  mode: DpSyncMode,
  replicas: readonly (readonly StageDpOutput[])[],
): PipelineLogical[] {
  const d = replicas.length;
  const whole = (o: StageDpOutput): StageOutput => {
    if (mode !== 'distributed-optimizer') return o;
    const buf = stageGradBuffer(stageWeightArrays(model, o.stage, o.tpRank), d, mode);
    const flat = new Float32Array(buf.layout.numel);
    for (const [q, outs] of replicas.entries()) {
      const peer = outs.find((x) => x.stage === o.stage && x.tpRank === o.tpRank)?.gradShard;
      if (!peer)
        throw new Error(`pipeline × DP: replica ${q} has no gradient shard of stage ${o.stage}, TP rank ${o.tpRank}.`);
      flat.set(peer.data, peer.start);
    }
    return { ...o, ...stageGradsOf(buf, flat) };
  };
  return replicas.map((outs) => gatherPipeline(model, outs.map(whole)));
}

/**
 * The oracle of a pipeline with d replicas: every replica's micro-batch losses against the
 * one-device run's micro-batches q·m … q·m + m − 1 of the global batch, its averaged gradients and
 * (with Adam) its weights against the one device's over all m·d micro-batches (`ref`:
 * pipelineReference(model, training, m·d, 1/d)), tolerance pipelineTolerance with m·d micro-batches.
 * Entries are named "replica q: …".
 */
export function comparePipelineReplicas(
  model: PipelineModel,
  ref: PipelineLogical,
  got: readonly PipelineLogical[],
  training: PipelineTraining,
): OracleReport {
  const { m } = model;
  const d = got.length;
  const entries: OracleEntry[] = got.flatMap((g, q) =>
    comparePipeline(model, { ...ref, losses: ref.losses.slice(q * m, (q + 1) * m) }, g, training, m * d).entries.map(
      (e) => ({ ...e, tensor: `replica ${q}: ${e.tensor}` }),
    ),
  );
  const worst = entries.reduce((w, e) => (e.maxAbs / e.tol > w.maxAbs / w.tol ? e : w));
  return { entries, worst, pass: entries.every((e) => e.pass) };
}

/** Runs the one-device reference of the global batch and compares every replica with it (comparePipelineReplicas). */
export async function pipelineReplicasOracle(
  model: PipelineModel,
  training: PipelineTraining,
  mode: DpSyncMode,
  replicas: readonly (readonly StageDpOutput[])[],
): Promise<OracleReport> {
  const d = replicas.length;
  const ref = await pipelineReference(model, training, model.m * d, 1 / d);
  return comparePipelineReplicas(model, ref, gatherReplicas(model, mode, replicas), training);
}
