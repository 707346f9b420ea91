import type { HostTensor } from '../comm/host-tensor.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { compareArrays } from '../reference/compare.ts';
import { adamRef, type AdamHyper } from '../reference/adam.ts';
import { CpuBackend } from './backend-cpu.ts';
import { gatherGrads } from './gather.ts';
import {
  blockBackward,
  blockForward,
  embedBackward,
  embedForward,
  lossBackward,
  lossForward,
  type BlockSaved,
} from './layer.ts';
import { LayerComm } from './layer-comm.ts';
import { oracleTolerance, referenceConfig, type OracleEntry, type OracleReport } from './oracle.ts';
import { rankOwnership } from './ownership.ts';
import {
  blockConfig,
  blockWeightNames,
  chunkBlocks,
  headWeightNames,
  microBatchInputs,
  type PipelineModel,
} from './pipeline-model.ts';
import type { PassSpan, StageStepResult } from './pipeline-step.ts';
import { rankWeightArrays, uploadWeights, type ShardData } from './step-data.ts';
import type { WeightName } from './weight-names.ts';
import type { WeightSet } from './weights.ts';

type Grads = Partial<Record<WeightName, Float32Array>>;

/** One rank's pipeline step read back to host arrays (what a rank worker returns). */
export interface StageOutput {
  /** The rank's TP rank and stage. */
  readonly tpRank: number;
  readonly stage: number;
  /** Per micro-batch loss [s, b] (the last stage; empty elsewhere). */
  readonly losses: Float32Array[];
  /** [global block index, its gradient shards]. */
  readonly blockGrads: [number, Grads][];
  readonly headGrads: Grads;
  readonly spans: PassSpan[];
  /** The most bytes of GPU buffers the rank held at once during the step (weights, gradients, activations, workspace), when measured. */
  readonly peakBytes?: number;
  /** With an optimizer: the rank's weight shards after the last step's update. */
  readonly weights?: StageArrays;
}

/** The model's results in logical (TP = 1) layout: each micro-batch's loss, every parameter's accumulated gradient. */
export interface PipelineLogical {
  readonly losses: Float32Array[];
  readonly blockGrads: Grads[];
  readonly headGrads: Grads;
  /** With an optimizer: every parameter after the last step's update. */
  readonly weights?: { readonly blocks: Grads[]; readonly head: Grads };
}

/**
 * How many steps a run takes and, with `adam`, the optimizer step after each (the next step runs on
 * the updated weights); without it every step starts from the seeded weights.
 */
export interface PipelineTraining {
  readonly steps: number;
  readonly adam?: AdamHyper;
}

/** A TP rank's weight shards of one stage: its blocks' (by global index) and the head's it holds. */
export interface StageArrays {
  readonly blocks: [number, Partial<Record<WeightName, ShardData>>][];
  readonly head: Partial<Record<WeightName, ShardData>>;
}

/** One shard's Adam state: its float64 main parameters and moments, the steps taken. */
interface ShardAdam {
  readonly p: Float64Array;
  readonly m: Float64Array;
  readonly v: Float64Array;
  step: number;
}

/** The optimizer state of a stage's shards, by "block.name" (block −1: the head). */
export type StageOptimizer = Map<string, ShardAdam>;

/**
 * One Adam step of the parameters `w` (float32, updated in place) with gradient `g`: the float64
 * main parameters and moments kept in `state` under `key`, made from `w` at the first step.
 */
export function adamInPlace(
  state: StageOptimizer,
  key: string,
  w: Float32Array,
  g: ArrayLike<number>,
  adam: AdamHyper,
): void {
  let st = state.get(key);
  const n = w.length;
  if (!st) state.set(key, (st = { p: Float64Array.from(w), m: new Float64Array(n), v: new Float64Array(n), step: 0 }));
  adamRef(st.p, g, st.m, st.v, adam, ++st.step);
  w.set(st.p);
}

/**
 * One Adam step (reference/adam.ts adamRef, element-wise: a TP rank stepping its shard with its
 * shard's gradient steps its part of the logical parameter as one device would) of every shard in
 * `arrays`, in place (rounded to float32 from the float64 main parameters) with the gradients `out`.
 */
export function stepStage(
  arrays: StageArrays,
  out: Pick<StageOutput, 'blockGrads' | 'headGrads'>,
  state: StageOptimizer,
  adam: AdamHyper,
): void {
  const step = (l: number, shards: Partial<Record<WeightName, ShardData>>, grads: Grads | undefined) => {
    for (const [name, w] of Object.entries(shards) as [WeightName, ShardData][]) {
      const g = grads?.[name];
      if (!g) throw new Error(`the optimizer step found no gradient for ${l < 0 ? name : `block ${l}'s ${name}`}.`);
      adamInPlace(state, `${l}.${name}`, w.data, g, adam);
    }
  };
  for (const [l, shards] of arrays.blocks) step(l, shards, out.blockGrads.find(([i]) => i === l)?.[1]);
  step(-1, arrays.head, out.headGrads);
}

async function readSet<T>(read: (t: T) => Promise<Float32Array>, w: WeightSet<T>): Promise<Grads> {
  const out: Grads = {};
  for (const [name, g] of Object.entries(w) as [WeightName, T][]) out[name] = await read(g);
  return out;
}

/** Reads a stage's step result back to host arrays. */
export async function readStageOutput<T>(
  read: (t: T) => Promise<Float32Array>,
  tpRank: number,
  stage: number,
  r: StageStepResult<T>,
): Promise<StageOutput> {
  const losses: Float32Array[] = [];
  for (const l of r.losses) if (l !== undefined) losses.push(await read(l));
  const blockGrads: [number, Grads][] = [];
  for (const [l, g] of r.blockGrads) blockGrads.push([l, await readSet(read, g)]);
  return { tpRank, stage, losses, blockGrads, headGrads: await readSet(read, r.headGrads), spans: r.spans };
}

/** Every rank's outputs back to the logical layout (TP shards placed, blocks from the stage holding them). */
export function gatherPipeline(model: PipelineModel, outs: readonly StageOutput[]): PipelineLogical {
  const owners = rankOwnership(model.layer);
  const blocks = chunkBlocks(model);
  const blockGrads: Grads[] = [];
  for (const [stage, chunks] of blocks.entries())
    for (const l of chunks.flat()) {
      const shards = outs
        .filter((o) => o.stage === stage)
        .map((o) => ({ rank: o.tpRank, grads: o.blockGrads.find(([i]) => i === l)?.[1] ?? {} }));
      blockGrads[l] = gatherGrads(blockConfig(model, l), owners, blockWeightNames, shards);
    }
  const head = (name: WeightName, stage: number): Grads =>
    gatherGrads(
      model.layer,
      owners,
      [name],
      outs.filter((o) => o.stage === stage).map((o) => ({ rank: o.tpRank, grads: o.headGrads })),
    );
  const lastStage = outs.find((o) => o.stage === model.p - 1 && o.tpRank === 0);
  const withWeights = outs.every((o) => o.weights);
  const data = (a: Partial<Record<WeightName, ShardData>>): Grads =>
    Object.fromEntries(Object.entries(a).map(([n, x]) => [n, x.data]));
  const weights = withWeights
    ? gatherPipeline(
        model,
        outs.map((o) => ({
          ...o,
          weights: undefined,
          blockGrads: o.weights!.blocks.map(([l, a]): [number, Grads] => [l, data(a)]),
          headGrads: data(o.weights!.head),
        })),
      )
    : undefined;
  return {
    losses: lastStage?.losses ?? [],
    blockGrads,
    headGrads: { ...head('emb', 0), ...head('wout', model.p - 1) },
    ...(weights && { weights: { blocks: weights.blockGrads, head: weights.headGrads } }),
  };
}

/** A TP rank's weight shards for one stage: its blocks' and the head's it holds (emb on stage 0, wout on the last). */
export function stageWeightArrays(model: PipelineModel, stage: number, tpRank: number): StageArrays {
  const own = rankOwnership(model.layer)[tpRank]!;
  const pick = (all: Partial<Record<WeightName, ShardData>>, names: readonly WeightName[]) =>
    Object.fromEntries(names.filter((n) => all[n]).map((n) => [n, all[n]!])) as Partial<Record<WeightName, ShardData>>;
  const held = chunkBlocks(model)[stage]!.flat();
  const blocks = held.map((l): [number, Partial<Record<WeightName, ShardData>>] => [
    l,
    pick(rankWeightArrays(blockConfig(model, l), own), blockWeightNames),
  ]);
  const heads = headWeightNames.filter((n) => (n === 'emb' ? stage === 0 : stage === model.p - 1));
  return { blocks, head: heads.length ? pick(rankWeightArrays(model.layer, own), heads) : {} };
}

/**
 * The oracle's side: the same L blocks on one device (TP = 1, the CPU twins in float64 rounded to
 * float32 per op), micro-batch after micro-batch, each forward then backward, the gradients summed on
 * the host in float64 — no schedule, no stage, no point-to-point. Data parallel's oracle runs the
 * global batch, m·d micro-batches, with `gradScale` 1/d: the replicas' sums averaged over d.
 */
export async function pipelineReference(
  model: PipelineModel,
  training: PipelineTraining = { steps: 1 },
  microBatches = model.m,
  gradScale = 1,
): Promise<PipelineLogical> {
  const c = referenceConfig(model.layer);
  const own = rankOwnership(c)[0]!;
  const be = new CpuBackend();
  const lc = new LayerComm(createInProcessGroup(1)[0]!, (t: HostTensor) => t.shape);
  const upload = (arrays: Partial<Record<WeightName, ShardData>>) =>
    uploadWeights(arrays, (n, shape, data) => be.tensor(n, shape, data));
  const configs = Array.from({ length: model.layers }, (_, l) => referenceConfig(blockConfig(model, l)));
  const pick = (all: Partial<Record<WeightName, ShardData>>, names: readonly WeightName[]) =>
    Object.fromEntries(names.map((n) => [n, all[n]!])) as Partial<Record<WeightName, ShardData>>;
  const arrays: StageArrays = {
    blocks: configs.map((bc, l) => [l, pick(rankWeightArrays(bc, own), blockWeightNames)]),
    head: pick(rankWeightArrays(c, own), headWeightNames),
  };
  const optimizer: StageOptimizer = new Map();
  const f32 = (r: Record<string, Float64Array>): Grads =>
    Object.fromEntries(Object.entries(r).map(([n, a]) => [n, Float32Array.from(a, (x) => x * gradScale)]));
  let last: PipelineLogical | undefined;
  for (let step = 0; step < training.steps; step++) {
    const head = upload(arrays.head);
    const weights = arrays.blocks.map(([, a]) => upload(a));
    const sums = configs.map((): Record<string, Float64Array> => ({}));
    const headSums: Record<string, Float64Array> = {};
    const add = async (into: Record<string, Float64Array>, g: WeightSet<HostTensor>) => {
      for (const [name, t] of Object.entries(g) as [WeightName, HostTensor][]) {
        const x = await be.read(t);
        const s = (into[name] ??= new Float64Array(x.length));
        for (let i = 0; i < x.length; i++) s[i]! += x[i]!;
      }
    };
    const losses: Float32Array[] = [];
    for (let j = 0; j < microBatches; j++) {
      const data = microBatchInputs(model, j);
      const ids = be.tensor('ids', [c.s, c.b], data.ids!);
      let x = await embedForward(be, lc, c, own, head, ids);
      const saved: BlockSaved<HostTensor>[] = [];
      for (const [l, bc] of configs.entries()) {
        const r = await blockForward(be, lc, bc, own, weights[l]!, x);
        saved.push(r.saved);
        x = r.y;
      }
      const targets = be.tensor('targets', [c.s, c.b], data.targets!);
      const lf = await lossForward(be, lc, c, own, head, x, targets);
      losses.push(await be.read(lf.loss));
      const headGrads: WeightSet<HostTensor> = {};
      let dy = await lossBackward(be, lc, c, own, head, lf.saved, headGrads);
      for (let l = configs.length - 1; l >= 0; l--) {
        const g: WeightSet<HostTensor> = {};
        dy = (await blockBackward(be, lc, configs[l]!, weights[l]!, saved[l]!, dy, g)).dx;
        await add(sums[l]!, g);
      }
      await embedBackward(be, lc, c, own, head, ids, dy, headGrads);
      await add(headSums, headGrads);
    }
    last = { losses, blockGrads: sums.map(f32), headGrads: f32(headSums) };
    if (training.adam)
      stepStage(
        arrays,
        { blockGrads: last.blockGrads.map((g, l): [number, Grads] => [l, g]), headGrads: last.headGrads },
        optimizer,
        training.adam,
      );
  }
  if (!last) throw new Error('pipelineReference: steps must be ≥ 1.');
  const data = (a: Partial<Record<WeightName, ShardData>>): Grads =>
    Object.fromEntries(Object.entries(a).map(([n, x]) => [n, x.data]));
  return training.adam
    ? { ...last, weights: { blocks: arrays.blocks.map(([, a]) => data(a)), head: data(arrays.head) } }
    : last;
}

/**
 * Tolerance of one pipelined tensor against the one-device run: the layer oracle's bound
 * (oracleTolerance: 16·ε·(K + 1)·max|ref|, K the layer's longest reduction) per block the error
 * passes through — L blocks chained forward and backward, to first order their rounding adds —
 * plus one per micro-batch summed (each float32 addition of the running sum rounds by ≤ ε·|sum|,
 * far below the bound): (L + m)·oracleTolerance; with d replicas the m·d micro-batches of the global
 * batch, (L + m·d)·oracleTolerance (the DP sum's d float32 additions are d more of them). A micro-batch lost or counted twice, a gradient sent
 * to the wrong stage or chunk, or a W run on the wrong micro-batch errs by O(max|ref| / m), far above.
 */
export function pipelineTolerance(model: PipelineModel, refMax: number, microBatches = model.m): number {
  return (model.layers + microBatches) * oracleTolerance(model.layer, refMax);
}

/**
 * Tolerance of a parameter after `training`'s Adam steps. The update u = m̂/(√v̂ + ε) moves by at most
 * |δg|/ε per unit change δg of the gradients behind it to first order (∂u/∂m̂ = 1/(√v̂ + ε) ≤ 1/ε, and
 * the √v̂ term by no more, |m̂| ≤ √v̂ up to the bias corrections), so each step adds lr·2·gradTol/ε,
 * gradTol the gradient's tolerance; plus the float32 rounding of each update, 4·ε₃₂·max|w| a step.
 * The test picks ε so that this stays far below what a wrong gradient moves a weight (lr per step).
 */
export function weightTolerance(training: PipelineTraining, gradTol: number, weightMax: number): number {
  const adam = training.adam;
  if (!adam) return 0;
  return training.steps * ((adam.lr * 2 * gradTol) / adam.eps + 4 * 2 ** -23 * weightMax);
}

/** Compares a pipelined run with the one-device reference: every micro-batch's loss and every parameter's gradient (and weights after the optimizer's steps). */
export function comparePipeline(
  model: PipelineModel,
  ref: PipelineLogical,
  got: PipelineLogical,
  training: PipelineTraining = { steps: 1 },
  microBatches = model.m,
): OracleReport {
  const pairs: [string, Float32Array | undefined, Float32Array | undefined][] = [
    ...ref.losses.map((r, j): [string, Float32Array, Float32Array | undefined] => [`loss[${j}]`, r, got.losses[j]]),
    ...ref.blockGrads.flatMap((g, l) =>
      blockWeightNames.map((n): [string, Float32Array | undefined, Float32Array | undefined] => [
        `block ${l} d${n}`,
        g[n],
        got.blockGrads[l]?.[n],
      ]),
    ),
    ...headWeightNames.map((n): [string, Float32Array | undefined, Float32Array | undefined] => [
      `d${n}`,
      ref.headGrads[n],
      got.headGrads[n],
    ]),
  ];
  if (got.losses.length !== ref.losses.length)
    throw new Error(`oracle: the run has ${got.losses.length} micro-batch losses, the reference ${ref.losses.length}.`);
  const maxOf = (a: Float32Array) => a.reduce((mx, x) => Math.max(mx, Math.abs(x)), 0);
  const entry = (
    tensor: string,
    r: Float32Array | undefined,
    g: Float32Array | undefined,
    tolOf: (refMax: number) => number,
  ): OracleEntry => {
    if (!r || !g) throw new Error(`oracle: ${tensor} is missing from the ${r ? 'run' : 'reference'}.`);
    const s = compareArrays(g, r);
    const refMax = maxOf(r);
    const tol = tolOf(refMax);
    const maxAbs = s.nonFinite ? Infinity : s.maxAbs;
    return { tensor, maxAbs, maxRel: s.maxRel, refMax, tol, pass: s.nonFinite === 0 && s.maxAbs <= tol };
  };
  const entries: OracleEntry[] = pairs.map(([tensor, r, g]) =>
    entry(tensor, r, g, (m) => pipelineTolerance(model, m, microBatches)),
  );
  if (training.adam) {
    if (!ref.weights || !got.weights) throw new Error('oracle: the weights after the optimizer steps are missing.');
    const weight = (
      tensor: string,
      r: Float32Array | undefined,
      g: Float32Array | undefined,
      grad: Float32Array | undefined,
    ) =>
      entries.push(
        entry(tensor, r, g, (m) =>
          weightTolerance(training, pipelineTolerance(model, grad ? maxOf(grad) : 0, microBatches), m),
        ),
      );
    ref.weights.blocks.forEach((w, l) =>
      blockWeightNames.forEach((n) =>
        weight(`block ${l} ${n}`, w[n], got.weights!.blocks[l]?.[n], ref.blockGrads[l]?.[n]),
      ),
    );
    headWeightNames.forEach((n) => weight(n, ref.weights!.head[n], got.weights!.head[n], ref.headGrads[n]));
  }
  const worst = entries.reduce((w, e) => (e.maxAbs / e.tol > w.maxAbs / w.tol ? e : w));
  return { entries, worst, pass: entries.every((e) => e.pass) };
}
