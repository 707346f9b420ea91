import { opSpec } from '../parallel/backend.ts';
import { importGemmChoices } from '../kernels/gemm-choice.ts';
import type { GpuTensor } from '../kernels/tensor.ts';
import type { ClassroomMatrix, ClassroomRankData } from '../parallel/classroom.ts';
import { randomArray } from '../reference/random.ts';
import { attentionForward } from '../parallel/attention.ts';
import { GpuBackend } from './backend-gpu.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { localDims } from '../parallel/dims.ts';
import { LayerComm } from '../parallel/layer-comm.ts';
import { mlpBlockBackward, mlpBlockForward, type MlpBlockLabels } from '../parallel/mlp-block.ts';
import { rankOwnership } from '../parallel/ownership.ts';
import { gatheredQkv, gathersQkv } from '../parallel/qkv-layout.ts';
import { rankWeightArrays } from '../parallel/step-data.ts';
import type { WeightName } from '../parallel/weight-names.ts';
import { tensorSeed } from '../parallel/weights.ts';
import type { RankContext } from './context.ts';
import { DetachedCollectives } from './detached-collectives.ts';
import { kernelContext, type GemmChoices } from './layer-programs.ts';
import { adoptInto, resultTensors } from './result-tensors.ts';

/** The classroom's logical input X and upstream gradient dZ [s·b, h], from the config's seed. */
export function classroomInputs(c: LayerConfig): { x: Float32Array; dz: Float32Array } {
  const n = c.s * c.b * c.h;
  return {
    x: randomArray(n, tensorSeed(c.seed, 'classroom.x')),
    dz: randomArray(n, tensorSeed(c.seed, 'classroom.dz')),
  };
}

/** Columns [c0, c0 + n) of a row-major [rows, w] array, as [rows, n]. */
function columns(a: Float32Array, rows: number, w: number, c0: number, n: number): ClassroomMatrix {
  const out = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) out.set(a.subarray(r * w + c0, r * w + c0 + n), r * n);
  return { shape: [rows, n], data: out };
}

/** The classroom MLP block's collectives; it keeps the all-gathered input (no re-gather label) to show it and feed attention. */
const mlpLabels: MlpBlockLabels = {
  gather: 'classroom.mlp.in',
  reduce: 'classroom.mlp.out',
  reduceBackward: 'classroom.mlp.out.grad',
  dgradReduce: 'classroom.mlp.in.grad',
};

/**
 * The classroom MLP on this rank's GPU with the group's real collectives (or, with `solo`, on
 * this rank alone as TP=1): the layer's tensor-parallel MLP block (src/parallel/mlp-block.ts),
 * reading the partial sums before each reduction. Forward: X → f (identity; with SP
 * gather_from_sequence_parallel_region, an all-gather) → gate/up ColumnParallelLinear → SwiGLU
 * (local) → down RowParallelLinear → g (reduce_from_tensor_model_parallel_region, an all-reduce;
 * with SP reduce_scatter_to_sequence_parallel_region). Backward runs the conjugates: g's backward
 * is the identity (SP: all-gather), f's backward all-reduces dX (SP: reduce-scatter). Then
 * attention on the same input: this rank's heads and g.
 */
export async function classroomStep(
  ctx: RankContext,
  a: { config: LayerConfig; choices?: GemmChoices; solo?: boolean },
): Promise<ClassroomRankData> {
  const c = a.config;
  if (a.choices) importGemmChoices(ctx.device, a.choices);
  const rank = a.solo ? 0 : ctx.rank;
  if (!a.solo && ctx.gpuComm.size !== c.tp)
    throw new Error(`classroomStep: the group has ${ctx.gpuComm.size} ranks but the config asks for t = ${c.tp}.`);
  // Each named collective writes into the tensor it returned the step before (ResultTensors).
  const results = a.solo ? undefined : resultTensors(ctx.device, 'classroom');
  const comm = results ? results.around(ctx.gpuComm) : new DetachedCollectives(ctx.device, 0, 1);
  const k = kernelContext(ctx.device);
  const be = new GpuBackend(k, results?.backendOptions());
  const lc = new LayerComm(
    comm,
    (t: GpuTensor) => t.shape,
    () => k.flush(),
    adoptInto(be, results),
  );
  const D = localDims(c);
  const { b, h, f } = D;
  const own = rankOwnership(c)[rank];
  const shards = rankWeightArrays(c, own);
  const read = async (t: GpuTensor): Promise<ClassroomMatrix> => {
    const data = await be.read(t);
    return { shape: [data.length / t.shape[t.shape.length - 1], t.shape[t.shape.length - 1]], data };
  };
  try {
    const inputs = classroomInputs(c);
    const [t0, t1] = own.tokens;
    const rows = (arr: Float32Array) => arr.slice(t0 * b * h, t1 * b * h);
    const sl = t1 - t0;
    const x = be.tensor('classroom.x', [sl, b, h], rows(inputs.x));
    const dz = be.tensor('classroom.dz', [sl, b, h], rows(inputs.dz));
    const upload = (name: WeightName) => {
      const w = shards[name];
      if (!w) throw new Error(`classroomStep: no shard of ${name}`);
      return be.tensor(name, w.shape, w.data);
    };
    const wfc1 = upload('wfc1'),
      wdown = upload('wdown'),
      wqkv = upload('wqkv'),
      wo = upload('wo');
    const sp = c.sp && c.tp > 1;
    const mlpW = { wfc1, wdown };
    const fwd = await mlpBlockForward(be, lc, D, sp, x, mlpW, mlpLabels, read);
    const { input: xFull } = fwd.saved;
    if (!xFull || !fwd.partial) throw new Error('classroomStep: the MLP block kept no input or no partial sums.');
    // Attention on the same input: this rank's heads, then g.
    // With groups < t linear_qkv's activations are all-gathered along the last dim first (Megatron-Core).
    const gathered = gathersQkv(c) ? gatheredQkv(c, rank) : undefined;
    const { out: attnPartial } = await attentionForward(be, lc, D, gathered, xFull, wqkv, wo, c.ropeBase);
    const attnPartialData = await read(attnPartial);
    const attn = await lc.allReduce(
      opSpec('classroom.attn.out', 'row'),
      'reduceFromTensorParallelRegion — forward: all-reduce · backward: identity (g)',
      attnPartial,
    );
    lc.phase = 'backward';
    be.phase = 'backward';
    const dw = { wfc1: be.tensor('dwfc1', [h, 2 * f]), wdown: be.tensor('dwdown', [f, h]) };
    const bwd = await mlpBlockBackward(be, lc, D, sp, dz, fwd.saved, mlpW, dw, mlpLabels, read);
    if (!bwd.partial) throw new Error('classroomStep: the MLP block showed no partial dX.');
    const saved = fwd.saved.mlp;
    // Every read in flight at once (each is a round trip through the browser's GPU process).
    const [w1, xM, xFullM, yGate, yUp, act, w2, z, dzM, dzFull, dx, attnM] = await Promise.all([
      be.read(wfc1),
      read(x),
      read(xFull),
      read(saved.gate),
      read(saved.up),
      read(saved.act),
      read(wdown),
      read(fwd.out),
      read(dz),
      read(bwd.dOut),
      read(bwd.dx),
      read(attn),
    ]);
    return {
      rank,
      tp: c.tp,
      sp: c.sp,
      x: xM,
      xFull: xFullM,
      w1Gate: columns(w1, h, 2 * f, 0, f),
      w1Up: columns(w1, h, 2 * f, f, f),
      yGate,
      yUp,
      act,
      w2,
      zPartial: fwd.partial,
      z,
      dz: dzM,
      dzFull,
      dxPartial: bwd.partial,
      dx,
      attnPartial: attnPartialData,
      attn: attnM,
      collectives: lc.log,
    };
  } finally {
    be.releaseAll();
    results?.endStep();
  }
}

/** The classroom's programs, served by src/ranks/layer.worker.ts. */
export const classroomPrograms = { classroomStep };
