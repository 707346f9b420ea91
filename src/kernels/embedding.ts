import { formatShape, numel } from '../core/shape.ts';
import { embeddingBackwardKernel, embeddingKernel, type EmbeddingBackwardArgs } from '../reference/embedding.ts';
import { uniformThen, type KernelContext } from './context.ts';
import type { VocabShardOptions } from './cross-entropy.ts';
import { kernelPipeline, kernelUniform } from './dispatch-kernel.ts';
import { grid1d } from './grid.ts';
import { expectShape } from './limits.ts';
import { checkInteger } from './rowwise.ts';
import type { GpuTensor } from './tensor.ts';

// Vocab-parallel embedding (Megatron VocabParallelEmbedding): each rank holds table rows
// [vocabStart, vocabStart + vLocal) of the padded vocabulary. Forward: every rank looks up the ids
// in its range and writes 0 for the rest; the layer's all-reduce SUM over the TP group completes
// the lookup, since exactly one rank owns each valid id. Backward: each rank's dtable gets the dy
// rows of its own ids only, so no communication is needed.
//
// Ids are global token ids as float32 (exact below 2^24). An id counts only when it is an integer
// in this rank's range; negative, fractional, NaN and ±Inf ids and ids ≥ the padded vocabulary lie
// in no rank's range: the forward gives zeros for them on every rank and the backward ignores them.

/** Options of embeddingBackward: this rank's vocab range and whether dtable is added to (default false). */
export type EmbeddingBackwardOptions = Partial<EmbeddingBackwardArgs>;

/** vLocal and h of a table [vLocal, h], checked to be 2-D. */
function tableDims(op: string, table: GpuTensor): { vl: number; h: number } {
  if (table.shape.length !== 2) {
    throw new Error(
      `${op}: tensor "${table.name}" has shape ${formatShape(table.shape)}; the embedding table must be [vLocal, h].`,
    );
  }
  return { vl: table.shape[0], h: table.shape[1] };
}

/**
 * out[t, :] = table[ids[t] − vocabStart, :] for ids in [vocabStart, vocabStart + vLocal), else 0:
 * ids [...] (float32 global ids), table [vLocal, h] → out [..., h] (to be all-reduced with SUM).
 */
export function embedding(
  ctx: KernelContext,
  ids: GpuTensor,
  table: GpuTensor,
  out: GpuTensor,
  options: VocabShardOptions = {},
): void {
  const { vocabStart = 0 } = options;
  const { vl, h } = tableDims('embedding', table);
  expectShape(
    'embedding',
    out.name,
    out.shape,
    [...ids.shape, h],
    `one row of "${table.name}" per id of "${ids.name}"`,
  );
  checkInteger('embedding', 'vocabStart', vocabStart, 0, 2 ** 24 - vl);
  const tokens = numel(ids.shape);
  const wg = grid1d(ctx.device.limits, 'embedding', out.name, out.shape, tokens * h);
  const params = { tokens, h, v0: vocabStart, vl, accumulate: 0 };
  ctx.dispatch(
    embeddingKernel.entryPoint,
    kernelPipeline(ctx, embeddingKernel),
    uniformThen(kernelUniform(ctx, embeddingKernel, params), [ids.buffer, table.buffer, out.buffer]),
    wg,
  );
}

/**
 * dtable[v, :] (+)= Σ_{t : ids[t] = vocabStart + v} dy[t, :]: ids [...], dy [..., h] → dtable
 * [vLocal, h]; ids outside this rank's range add nothing. One invocation per element of dtable
 * (vLocal · h, folded past maxComputeWorkgroupsPerDimension) loops over all tokens in order.
 */
export function embeddingBackward(
  ctx: KernelContext,
  ids: GpuTensor,
  dy: GpuTensor,
  dtable: GpuTensor,
  options: EmbeddingBackwardOptions = {},
): void {
  const { vocabStart = 0, accumulate = false } = options;
  const { vl, h } = tableDims('embeddingBackward', dtable);
  expectShape(
    'embeddingBackward',
    dy.name,
    dy.shape,
    [...ids.shape, h],
    `one gradient row of width h = ${h} per id of "${ids.name}"`,
  );
  checkInteger('embeddingBackward', 'vocabStart', vocabStart, 0, 2 ** 24 - vl);
  const tokens = numel(ids.shape);
  const wg = grid1d(ctx.device.limits, 'embeddingBackward', dtable.name, dtable.shape, vl * h);
  const params = { tokens, h, v0: vocabStart, vl, accumulate: accumulate ? 1 : 0 };
  ctx.dispatch(
    embeddingBackwardKernel.entryPoint,
    kernelPipeline(ctx, embeddingBackwardKernel),
    uniformThen(kernelUniform(ctx, embeddingBackwardKernel, params), [ids.buffer, dy.buffer, dtable.buffer]),
    wg,
  );
}
