// A LayerPlan written out by hand from Megatron's semantics (DESIGN.md), for the accounting tests
// until the plan recorder exists: same ops on every rank, local shapes, collectives with the
// nccl-tests payload convention.
import type { CollectiveOp, ReduceOp } from '../../../src/comm/collectives.ts';
import { numel } from '../../../src/core/shape.ts';
import { gemmFlops } from '../../../src/reference/gemm.ts';
import { ringBytesSent } from '../../../src/comm/ring-bytes.ts';
import { headDim, type LayerConfig } from '../../../src/parallel/config.ts';
import { paddedVocab, rankOwnership } from '../../../src/parallel/ownership.ts';
import type {
  GemmSite,
  KernelName,
  LayerPlan,
  OpPhase,
  PlannedCollectiveOp,
  PlannedGemmOp,
  PlannedKernelOp,
} from '../../../src/parallel/plan-types.ts';

type Filled = 'index' | 'role' | 'split' | 'megatron' | 'overlap';
type Draft = Omit<PlannedGemmOp, Filled> | Omit<PlannedKernelOp, Filled> | Omit<PlannedCollectiveOp, Filled>;

// The accounting reads none of the typed fields beyond kind and phase: neutral values.
const neutral = {
  role: 'forward',
  split: 'replicated',
  megatron: '',
  overlap: { async: false, underAsync: false },
} as const;

/** The hand-written plan of one layer step (forward and backward) for a valid config. */
export function handPlan(c: LayerConfig): LayerPlan {
  const t = c.tp;
  const sp = c.sp && t > 1;
  const { s, b, h } = c;
  const d = headDim(c);
  const nq = c.heads / t;
  const nkv = c.groups >= t ? c.groups / t : 1;
  // linear_qkv's output W = (heads + 2·groups)·d is split evenly: W/t columns per rank. With
  // groups < t (Megatron-Core since core_v0.16) the [s, b, W/t] outputs are all-gathered along the
  // last dim in forward and the gradient reduce-scattered back in backward.
  const W = (c.heads + 2 * c.groups) * d;
  const gathered = c.groups < t;
  const f = c.ffn / t;
  const vp = paddedVocab(c);
  const vl = vp / t;
  const sl = sp ? s / t : s;
  const m = s * b;
  const full = [s, b, h];
  const shard = [sl, b, h];
  const ops: Draft[] = [];

  // The hand plan fuses Q, K and V into one GEMM per pass: its site is q's.
  const gemm = (phase: OpPhase, name: string, site: GemmSite, M: number, N: number, K: number, batch = 1): void => {
    const g = { site, M, N, K, batch, flops: gemmFlops({ M, N, K, batch }) };
    ops.push({
      phase,
      name,
      kind: 'gemm',
      inShapes: [
        [batch, M, K],
        [batch, K, N],
      ],
      outShape: [batch, M, N],
      flops: g.flops,
      gemm: g,
    });
  };
  const kernel = (phase: OpPhase, name: string, k: KernelName, shape: number[], perElement: number): void => {
    ops.push({
      phase,
      name,
      kind: 'kernel',
      kernel: k,
      inShapes: [shape],
      outShape: shape,
      flops: perElement * numel(shape),
    });
  };
  const coll = (
    phase: OpPhase,
    name: string,
    op: CollectiveOp,
    inShape: number[],
    mapping: string,
    reduce?: ReduceOp,
    dim = 0,
  ): void => {
    const outShape = [...inShape];
    const k = dim < 0 ? inShape.length + dim : dim;
    if (op === 'reduceScatter') outShape[k] /= t;
    if (op === 'allGather') outShape[k] *= t;
    const payload = 4 * numel(op === 'allGather' ? outShape : inShape);
    ops.push({
      phase,
      name,
      kind: 'collective',
      inShapes: [inShape],
      outShape,
      flops: 0,
      collective: {
        op,
        ...(reduce ? { reduce } : {}),
        ...(op === 'allReduce' ? {} : { dim }),
        inShape,
        outShape,
        groupSize: t,
        payloadBytes: payload,
        ringBytesSent: ringBytesSent(op, payload, t),
        mapping,
      },
    });
  };
  /** g forward: all-reduce, or reduce-scatter to the SP region. */
  const gForward = (name: string): void =>
    sp
      ? coll('forward', name, 'reduceScatter', full, 'reduceScatterToSequenceParallelRegion')
      : coll('forward', name, 'allReduce', full, 'reduceFromTensorParallelRegion (g)', 'sum');
  /** In front of a column-parallel linear: f (identity) or all-gather from the SP region. */
  const fForward = (name: string): void => {
    if (sp) coll('forward', name, 'allGather', shard, 'gatherFromSequenceParallelRegion');
  };
  /** g backward: identity, or all-gather of the gradient. */
  const gBackward = (name: string): void => {
    if (sp) coll('backward', name, 'allGather', shard, 'reduceScatterToSequenceParallelRegion (backward)');
  };
  /** A column-parallel linear's backward: SP re-gathers the input for wgrad (unless kept whole); dgrad is all-reduced or reduce-scattered. */
  const colBackward = (name: string, regather = true): void => {
    if (sp && regather) coll('backward', `${name}.regather`, 'allGather', shard, 'wgrad input re-gather (SP)');
    if (sp)
      coll('backward', `${name}.dgrad.reduce`, 'reduceScatter', full, 'gatherFromSequenceParallelRegion (backward)');
    else coll('backward', `${name}.dgrad.reduce`, 'allReduce', full, 'copyToTensorParallelRegion (f) backward', 'sum');
  };

  // Forward.
  if (c.vocab > 0) {
    kernel('forward', 'embedding', 'embedding', full, 0);
    gForward('embedding.reduce');
  }
  kernel('forward', 'norm1', 'rmsnorm', shard, 4);
  fForward('qkv.gather');
  // The hand plan keeps linear_qkv as one GEMM (site q) while groups ≥ t; the fused slice is site qkv.
  gemm('forward', 'qkv', { product: gathered ? 'qkv' : 'q', computes: 'C' }, m, W / t, h);
  if (gathered) {
    const qkvSlice = [s, b, W / t];
    coll('forward', 'qkv.gather', 'allGather', qkvSlice, 'allGatherLastDimFromTensorParallelRegion', undefined, -1);
    kernel('forward', 'qkv.split', 'copyCols', [s, b, (nq + 2 * nkv) * d], 0);
  }
  kernel('forward', 'rope', 'rope', [s, b, nq + nkv, d], 3);
  gemm('forward', 'attn.scores', { product: 'scores', computes: 'C' }, s, s, d, b * nq);
  kernel('forward', 'attn.softmax', 'softmax', [b, nq, s, s], 5);
  gemm('forward', 'attn.context', { product: 'context', computes: 'C' }, s, d, s, b * nq);
  gemm('forward', 'proj', { product: 'proj', computes: 'C' }, m, h, nq * d);
  gForward('proj.reduce');
  kernel('forward', 'residual1', 'add', shard, 1);
  kernel('forward', 'norm2', 'rmsnorm', shard, 4);
  fForward('mlp.gather');
  gemm('forward', 'mlp.gate', { product: 'gate', computes: 'C' }, m, f, h);
  gemm('forward', 'mlp.up', { product: 'up', computes: 'C' }, m, f, h);
  kernel('forward', 'mlp.swiglu', 'swiglu', [s, b, f], 5);
  gemm('forward', 'mlp.down', { product: 'down', computes: 'C' }, m, h, f);
  gForward('mlp.reduce');
  kernel('forward', 'residual2', 'add', shard, 1);
  if (c.vocab > 0) {
    fForward('output.gather');
    gemm('forward', 'output', { product: 'logits', computes: 'C' }, m, vl, h);
    coll('forward', 'loss.max', 'allReduce', [s, b], 'vocab-parallel cross entropy: max', 'max');
    coll('forward', 'loss.target', 'allReduce', [s, b], 'vocab-parallel cross entropy: target logit', 'sum');
    coll('forward', 'loss.sumexp', 'allReduce', [s, b], 'vocab-parallel cross entropy: sum exp', 'sum');
  }

  // Backward.
  if (c.vocab > 0) {
    kernel('backward', 'loss.backward', 'ceGrad', [s, b, vl], 3);
    gemm('backward', 'output.dgrad', { product: 'logits', computes: 'dA' }, m, h, vl);
    gemm('backward', 'output.wgrad', { product: 'logits', computes: 'dB' }, h, vl, m);
    colBackward('output', false);
  }
  kernel('backward', 'residual2.backward', 'add', shard, 1);
  gBackward('mlp.reduce.backward');
  gemm('backward', 'mlp.down.dgrad', { product: 'down', computes: 'dA' }, m, f, h);
  gemm('backward', 'mlp.down.wgrad', { product: 'down', computes: 'dB' }, f, h, m);
  kernel('backward', 'mlp.swiglu.backward', 'swiglu', [s, b, f], 8);
  gemm('backward', 'mlp.gate.dgrad', { product: 'gate', computes: 'dA' }, m, h, f);
  gemm('backward', 'mlp.up.dgrad', { product: 'up', computes: 'dA' }, m, h, f);
  gemm('backward', 'mlp.gate.wgrad', { product: 'gate', computes: 'dB' }, h, f, m);
  gemm('backward', 'mlp.up.wgrad', { product: 'up', computes: 'dB' }, h, f, m);
  colBackward('mlp');
  kernel('backward', 'norm2.backward', 'rmsnorm', shard, 8);
  kernel('backward', 'residual1.backward', 'add', shard, 1);
  gBackward('proj.reduce.backward');
  gemm('backward', 'proj.dgrad', { product: 'proj', computes: 'dA' }, m, nq * d, h);
  gemm('backward', 'proj.wgrad', { product: 'proj', computes: 'dB' }, nq * d, h, m);
  gemm('backward', 'attn.context.dgrad.P', { product: 'context', computes: 'dA' }, s, s, d, b * nq);
  gemm('backward', 'attn.context.dgrad.V', { product: 'context', computes: 'dB' }, s, d, s, b * nq);
  kernel('backward', 'attn.softmax.backward', 'softmax', [b, nq, s, s], 4);
  gemm('backward', 'attn.scores.dgrad.Q', { product: 'scores', computes: 'dA' }, s, d, s, b * nq);
  gemm('backward', 'attn.scores.dgrad.K', { product: 'scores', computes: 'dB' }, s, d, s, b * nq);
  kernel('backward', 'rope.backward', 'rope', [s, b, nq + nkv, d], 3);
  if (gathered) {
    kernel('backward', 'qkv.split.backward', 'copyCols', [s, b, (nq + 2 * nkv) * d], 0);
    const full = [s, b, W];
    coll(
      'backward',
      'qkv.gather.backward',
      'reduceScatter',
      full,
      'allGatherLastDimFromTensorParallelRegion (backward)',
      'sum',
      -1,
    );
  }
  gemm('backward', 'qkv.dgrad', { product: gathered ? 'qkv' : 'q', computes: 'dA' }, m, h, W / t);
  gemm('backward', 'qkv.wgrad', { product: gathered ? 'qkv' : 'q', computes: 'dB' }, h, W / t, m);
  colBackward('qkv');
  kernel('backward', 'norm1.backward', 'rmsnorm', shard, 8);
  if (c.vocab > 0) {
    gBackward('embedding.reduce.backward');
    kernel('backward', 'embedding.wgrad', 'embedding', full, 1);
  }
  if (sp) {
    // One coalesced all-reduce of both gains' gradients [dg1 | dg2] after backward.
    coll(
      'finalize',
      'norm.grads.reduce',
      'allReduce',
      [1, 2 * h],
      'finalize_model_grads: SP-replicated norm weights',
      'sum',
    );
  }

  return {
    config: c,
    paddedVocab: vp,
    ranks: rankOwnership(c),
    ops: ops.map((o, index) => ({ ...neutral, ...o, index })),
  };
}
