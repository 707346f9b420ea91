import type { HostTensor } from '../comm/host-tensor.ts';
import { createInProcessGroup } from '../comm/in-process.ts';
import { compareArrays } from '../reference/compare.ts';
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
}

/** The model's results in logical (TP = 1) layout: each micro-batch's loss, every parameter's accumulated gradient. */
export interface PipelineLogical {
  readonly losses: Float32Array[];
  readonly blockGrads: Grads[];
  readonly headGrads: Grads;
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
  return {
    losses: lastStage?.losses ?? [],
    blockGrads,
    headGrads: { ...head('emb', 0), ...head('wout', model.p - 1) },
  };
}

/** A TP rank's weight shards for one stage: its blocks' and the head's it holds (emb on stage 0, wout on the last). */
export function stageWeightArrays(
  model: PipelineModel,
  stage: number,
  tpRank: number,
): { blocks: [number, Partial<Record<WeightName, ShardData>>][]; head: Partial<Record<WeightName, ShardData>> } {
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
 * the host in float64 — no schedule, no stage, no point-to-point.
 */
export async function pipelineReference(model: PipelineModel, microBatches = model.m): Promise<PipelineLogical> {
  const c = referenceConfig(model.layer);
  const own = rankOwnership(c)[0]!;
  const be = new CpuBackend();
  const lc = new LayerComm(createInProcessGroup(1)[0]!, (t: HostTensor) => t.shape);
  const upload = (arrays: Partial<Record<WeightName, ShardData>>) =>
    uploadWeights(arrays, (n, shape, data) => be.tensor(n, shape, data));
  const head = upload(rankWeightArrays(c, own));
  const configs = Array.from({ length: model.layers }, (_, l) => referenceConfig(blockConfig(model, l)));
  const weights = configs.map((bc) => upload(rankWeightArrays(bc, own)));
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
  const f32 = (r: Record<string, Float64Array>): Grads =>
    Object.fromEntries(Object.entries(r).map(([n, a]) => [n, Float32Array.from(a)]));
  return { losses, blockGrads: sums.map(f32), headGrads: f32(headSums) };
}

/**
 * Tolerance of one pipelined tensor against the one-device run: the layer oracle's bound
 * (oracleTolerance: 16·ε·(K + 1)·max|ref|, K the layer's longest reduction) per block the error
 * passes through — L blocks chained forward and backward, to first order their rounding adds —
 * plus one per micro-batch summed (each float32 addition of the running sum rounds by ≤ ε·|sum|,
 * far below the bound): (L + m)·oracleTolerance. A micro-batch lost or counted twice, a gradient sent
 * to the wrong stage or chunk, or a W run on the wrong micro-batch errs by O(max|ref| / m), far above.
 */
export function pipelineTolerance(model: PipelineModel, refMax: number): number {
  return (model.layers + model.m) * oracleTolerance(model.layer, refMax);
}

/** Compares a pipelined run with the one-device reference: every micro-batch's loss and every parameter's gradient. */
export function comparePipeline(model: PipelineModel, ref: PipelineLogical, got: PipelineLogical): OracleReport {
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
  const entries: OracleEntry[] = pairs.map(([tensor, r, g]) => {
    if (!r || !g) throw new Error(`oracle: ${tensor} is missing from the ${r ? 'run' : 'reference'}.`);
    const s = compareArrays(g, r);
    const refMax = r.reduce((mx, x) => Math.max(mx, Math.abs(x)), 0);
    const tol = pipelineTolerance(model, refMax);
    const maxAbs = s.nonFinite ? Infinity : s.maxAbs;
    return { tensor, maxAbs, maxRel: s.maxRel, refMax, tol, pass: s.nonFinite === 0 && s.maxAbs <= tol };
  });
  const worst = entries.reduce((w, e) => (e.maxAbs / e.tol > w.maxAbs / w.tol ? e : w));
  return { entries, worst, pass: entries.every((e) => e.pass) };
}
