import {
  ceGradKernel,
  ceLocalMaxKernel,
  ceLocalSumExpKernel,
  ceLossKernel,
  ceTargetLogitKernel,
} from '../reference/cross-entropy.ts';
import { opSpec, type Backend } from './backend.ts';
import type { LocalDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import { linearDgrad, linearForward, linearWgrad, type LinearSpec } from './linear.ts';

/** The output layer: a ColumnParallelLinear over the (padded) vocabulary. */
export const outputLinear: LinearSpec = {
  label: 'logits',
  product: 'logits',
  weight: 'wout',
  split: 'column',
  megatron: 'ColumnParallelLinear (output_layer)',
};

/**
 * Vocab-parallel cross entropy (Megatron's vocab_parallel_cross_entropy) on this rank's logits
 * [s·b, vl] for vocabulary rows [v0, v0 + vl): all-reduce MAX of the row max, then SUM of the
 * target logit (0 on ranks not holding the target), then SUM of Σ exp(x − m), Megatron's order;
 * loss = log S + m − z per token. Returns per-token loss [s, b] and what the backward needs.
 */
export async function vocabParallelLoss<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  logits: T,
  targets: T,
  v0: number,
): Promise<{ loss: T; max: T; sum: T }> {
  const rows = [D.s, D.b];
  const localMax = be.tensor('loss.max', rows);
  be.kernel(opSpec('loss.max', 'vocab'), ceLocalMaxKernel, [logits, localMax], {});
  const max = await lc.allReduce(
    opSpec('loss.max.reduce', 'vocab'),
    'vocab-parallel cross entropy: all-reduce MAX of the logits max',
    localMax,
    'max',
  );
  // Both local terms first, then the two SUMs in Megatron's order: the predicted (target) logit,
  // then Σ exp (tensor_parallel/cross_entropy.py:139-152 at core_v0.19.0). Megatron reduces the
  // max-shifted logit z − m; the playground reduces z and subtracts m in ceLoss (same loss).
  const localTarget = be.tensor('loss.target', rows);
  be.kernel(opSpec('loss.target', 'vocab'), ceTargetLogitKernel, [logits, targets, localTarget], { vocabStart: v0 });
  const localSum = be.tensor('loss.sumexp', rows);
  be.kernel(opSpec('loss.sumexp', 'vocab'), ceLocalSumExpKernel, [logits, max, localSum], {});
  const target = await lc.allReduce(
    opSpec('loss.target.reduce', 'vocab'),
    'vocab-parallel cross entropy: all-reduce SUM of the target logit',
    localTarget,
  );
  const sum = await lc.allReduce(
    opSpec('loss.sumexp.reduce', 'vocab'),
    'vocab-parallel cross entropy: all-reduce SUM of Σ exp(x − max)',
    localSum,
  );
  const loss = be.tensor('loss', rows);
  be.kernel(opSpec('loss', 'vocab'), ceLossKernel, [max, sum, target, loss], {});
  // The local terms once reduced, and the target logit once read (max and sum go to the backward).
  for (const t of new Set([localMax, localSum, localTarget, target])) if (t !== max && t !== sum) be.release(t);
  return { loss, max, sum };
}

/** Output layer forward (ColumnParallelLinear over the vocabulary): y [s, b, h] → logits [s, b, vl]. */
export function outputLayer<T>(be: Backend<T>, D: LocalDims, y: T, wout: T): T {
  const logits = be.tensor('logits', [D.s, D.b, D.vl]);
  linearForward(be, outputLinear, y, wout, logits, D.s * D.b, D.h, { w: D.vl, c0: 0, n: D.vl });
  return logits;
}

/**
 * Backward of mean loss through the output layer: dlogits = (softmax − onehot)/(s·b) locally,
 * then this rank's partial dY [s, b, h] = dlogits·woutᵀ; `wgrad(y)` adds yᵀ·dlogits into dwout.
 */
export function outputLayerBackward<T>(
  be: Backend<T>,
  D: LocalDims,
  logits: T,
  targets: T,
  max: T,
  sum: T,
  wout: T,
  dwout: T,
  v0: number,
  beforeDgrad?: () => void,
): { dy: T; wgrad: (y: T) => void } {
  const m = D.s * D.b;
  const dlogits = be.tensor('d.logits', [D.s, D.b, D.vl]);
  be.kernel(opSpec('loss.backward', 'vocab'), ceGradKernel, [logits, targets, max, sum, dlogits], {
    vocabStart: v0,
    scale: 1 / m,
  });
  const dy = be.tensor('d.logits.in', [D.s, D.b, D.h]);
  beforeDgrad?.();
  linearDgrad(
    be,
    outputLinear,
    dlogits,
    wout,
    dy,
    m,
    D.h,
    { w: D.vl, c0: 0, n: D.vl },
    false,
    beforeDgrad !== undefined,
  );
  const wgrad = (y: T): void => {
    linearWgrad(be, outputLinear, y, dlogits, dwout, m, D.h, { w: D.vl, c0: 0, n: D.vl });
    be.release(dlogits);
  };
  return { dy, wgrad };
}
