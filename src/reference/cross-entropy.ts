import type { VocabShardArgs } from './embedding.ts';
import type { KernelBinding, KernelSpec, ShaderSpec } from './kernel-spec.ts';

// CPU twins (float64) of the vocab-parallel cross-entropy pieces on logits rows of vl columns
// holding vocabulary ids [v0, v0 + vl), and of the whole unsharded loss.

/** Per-row max of logits rows of `vl`: [rows · vl] → [rows]. */
export function ceLocalMaxRef(logits: ArrayLike<number>, vl: number): Float64Array {
  const rows = logits.length / vl;
  const out = new Float64Array(rows).fill(-Infinity);
  for (let r = 0; r < rows; r++) for (let j = 0; j < vl; j++) out[r] = Math.max(out[r], logits[r * vl + j]);
  return out;
}

/** Per-row Σ_j exp(logits[r, j] − m[r]) for a given (global) max m: [rows · vl], [rows] → [rows]. */
export function ceLocalSumExpRef(logits: ArrayLike<number>, vl: number, m: ArrayLike<number>): Float64Array {
  const out = new Float64Array(m.length);
  for (let r = 0; r < m.length; r++) for (let j = 0; j < vl; j++) out[r] += Math.exp(logits[r * vl + j] - m[r]);
  return out;
}

/** Per-row logit of target id t[r] when v0 ≤ t[r] < v0 + vl, else 0: [rows · vl], [rows] → [rows]. */
export function ceTargetLogitRef(
  logits: ArrayLike<number>,
  vl: number,
  targets: ArrayLike<number>,
  v0: number,
): Float64Array {
  const out = new Float64Array(targets.length);
  for (let r = 0; r < targets.length; r++) {
    const j = targets[r] - v0;
    if (j >= 0 && j < vl) out[r] = logits[r * vl + j];
  }
  return out;
}

/** scale · (exp(logits − m) / S − onehot(t − v0)) given global max m and sum S: → [rows · vl]. */
export function ceGradRef(
  logits: ArrayLike<number>,
  vl: number,
  targets: ArrayLike<number>,
  v0: number,
  m: ArrayLike<number>,
  s: ArrayLike<number>,
  scale = 1,
): Float64Array {
  const out = new Float64Array(logits.length);
  for (let r = 0; r < targets.length; r++) {
    for (let j = 0; j < vl; j++) {
      const hit = targets[r] - v0 === j ? 1 : 0;
      out[r * vl + j] = scale * (Math.exp(logits[r * vl + j] - m[r]) / s[r] - hit);
    }
  }
  return out;
}

/** Per-row loss = log S + m − z from global max m, sum S, target logit z. */
export function ceLossRef(m: ArrayLike<number>, s: ArrayLike<number>, z: ArrayLike<number>): Float64Array {
  return Float64Array.from(m, (mi, r) => Math.log(s[r]) + mi - z[r]);
}

/**
 * The whole unsharded loss, written directly (not from the pieces): logits [rows, vocab], targets
 * [rows] → per-row loss = logsumexp(x) − x[t] and grad = scale · (softmax(x) − onehot(t)), the
 * gradient of scale · Σ_rows loss.
 */
export function crossEntropyRef(
  logits: ArrayLike<number>,
  vocab: number,
  targets: ArrayLike<number>,
  scale = 1,
): { loss: Float64Array; grad: Float64Array } {
  const rows = targets.length;
  const loss = new Float64Array(rows);
  const grad = new Float64Array(rows * vocab);
  for (let r = 0; r < rows; r++) {
    const row = Array.from({ length: vocab }, (_, j) => logits[r * vocab + j]);
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
    loss[r] = lse - row[targets[r]];
    row.forEach((v, j) => (grad[r * vocab + j] = scale * (Math.exp(v - lse) - (j === targets[r] ? 1 : 0))));
  }
  return { loss, grad };
}

/** shaders/cross-entropy.wgsl (with the shared row reduction): Params { rows, vl, v0, scale } (16 bytes). */
export const crossEntropyShader: ShaderSpec = {
  file: 'cross-entropy',
  include: ['row-reduce'],
  params: [
    { name: 'rows', type: 'u32' },
    { name: 'vl', type: 'u32' },
    { name: 'v0', type: 'u32' },
    { name: 'scale', type: 'f32' },
  ],
};

type Piece<N extends string, A> = Omit<KernelSpec<N, A>, 'shader' | 'megatron'>;

/** One piece of Megatron's vocab_parallel_cross_entropy on logits [..., vLocal] and per-row tensors [...] (its own grid). */
const piece = <N extends string, A = object>(p: Piece<N, A>): KernelSpec<N, A> => ({
  ...p,
  shader: crossEntropyShader,
  megatron: 'vocab_parallel_cross_entropy',
});

const read = (name: string): KernelBinding => ({ name, access: 'read' });
const write = (name: string): KernelBinding => ({ name, access: 'write' });

/** Per-row max of the local logits (one compare per logit). */
export const ceLocalMaxKernel = piece({
  name: 'ceLocalMax',
  entryPoint: 'ce_local_max',
  cost: { perElement: 1, over: 0 },
  bindings: [read('logits'), write('localMax')],
  twin: ([logits], d) => [ceLocalMaxRef(logits, d.cols)],
});

/** Per-row Σ exp(x − m) over the local logits, m the global max. */
export const ceLocalSumExpKernel = piece({
  name: 'ceLocalSumExp',
  entryPoint: 'ce_local_sum',
  cost: { perElement: 5, over: 0 },
  bindings: [read('logits'), read('globalMax'), write('localSum')],
  twin: ([logits, m], d) => [ceLocalSumExpRef(logits, d.cols, m)],
});

/** Per-row target logit when the target is local (targets: global ids as float32). */
export const ceTargetLogitKernel = piece<'ceTargetLogit', VocabShardArgs>({
  name: 'ceTargetLogit',
  entryPoint: 'ce_target_logit',
  cost: { perElement: 0 },
  bindings: [read('logits'), read('targets'), write('targetLogit')],
  twin: ([logits, targets], d, { vocabStart }) => [ceTargetLogitRef(logits, d.cols, targets, vocabStart)],
});

/** scale · (softmax − onehot) on the local logits, from the global max and Σexp. */
export const ceGradKernel = piece<'ceGrad', VocabShardArgs & { readonly scale: number }>({
  name: 'ceGrad',
  entryPoint: 'ce_grad',
  cost: { perElement: 6 },
  bindings: [read('logits'), read('targets'), read('globalMax'), read('globalSum'), write('dlogits')],
  twin: ([logits, targets, m, sum], d, { vocabStart, scale }) => [
    ceGradRef(logits, d.cols, targets, vocabStart, m, sum, scale),
  ],
});

/** Per-row loss log S + m − z. */
export const ceLossKernel = piece({
  name: 'ceLoss',
  entryPoint: 'ce_loss',
  cost: { perElement: 5 },
  bindings: [read('globalMax'), read('globalSum'), read('targetLogit'), write('loss')],
  twin: ([m, sum, z]) => [ceLossRef(m, sum, z)],
});
