import { formatShape, numel } from '../core/shape.ts';
import {
  ceGradKernel,
  ceLocalMaxKernel,
  ceLocalSumExpKernel,
  ceLossKernel,
  ceTargetLogitKernel,
} from '../reference/cross-entropy.ts';
import type { VocabShardArgs } from '../reference/embedding.ts';
import type { KernelSpec } from '../reference/kernel-spec.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { kernelPipeline, kernelUniform } from './dispatch-kernel.ts';
import { grid1d } from './grid.ts';
import { expectShape } from './limits.ts';
import { checkInteger, rowGrid, rowLanes } from './rowwise.ts';
import type { GpuTensor } from './tensor.ts';

// Vocab-parallel cross entropy (Megatron vocab_parallel_cross_entropy): each rank holds logits
// [..., vLocal] for vocabulary ids [vocabStart, vocabStart + vLocal). Per row:
//   m = all-reduce MAX of crossEntropyLocalMax
//   S = all-reduce SUM of crossEntropyLocalSumExp(m)
//   z = all-reduce SUM of crossEntropyTargetLogit
//   loss = log S + m − z (crossEntropyLoss); dlogits = crossEntropyGrad(m, S), local to the rank.

/** Where this rank's slice of the vocabulary starts (default 0). */
export type VocabShardOptions = Partial<VocabShardArgs>;

function rowDims(op: string, logits: GpuTensor): { rows: number; vl: number; rowShape: number[] } {
  if (logits.shape.length < 1)
    throw new Error(
      `${op}: tensor "${logits.name}" has shape ${formatShape(logits.shape)}; logits need at least 1 dimension [..., vLocal].`,
    );
  const vl = logits.shape[logits.shape.length - 1];
  return { rows: vl === 0 ? 0 : numel(logits.shape) / vl, vl, rowShape: logits.shape.slice(0, -1) };
}

function expectPerRow(op: string, logits: GpuTensor, rowShape: number[], ...perRow: GpuTensor[]): void {
  for (const t of perRow) expectShape(op, t.name, t.shape, rowShape, `one value per row of "${logits.name}"`);
}

/** Encodes one cross-entropy piece: its Params { rows, vl, v0, scale }, the buffers of bindings 1…, its workgroups. */
function run(
  ctx: KernelContext,
  spec: KernelSpec,
  params: { rows: number; vl: number; v0: number; scale?: number },
  buffers: readonly GPUBuffer[],
  wg: [number, number, number],
  constants: Record<string, number> = {},
): void {
  ctx.dispatch(
    spec.entryPoint,
    kernelPipeline(ctx, spec, constants),
    uniformThen(kernelUniform(ctx, spec, { scale: 1, ...params }), buffers),
    wg,
  );
}

/** Per-row max of this rank's logits: [..., vLocal] → [...] (to be all-reduced with MAX). */
export function crossEntropyLocalMax(ctx: KernelContext, logits: GpuTensor, localMax: GpuTensor): void {
  const { rows, vl, rowShape } = rowDims('crossEntropyLocalMax', logits);
  expectPerRow('crossEntropyLocalMax', logits, rowShape, localMax);
  const wg = rowGrid(ctx.device.limits, 'crossEntropyLocalMax', logits.name, logits.shape, rows);
  run(ctx, ceLocalMaxKernel, { rows, vl, v0: 0 }, [logits.buffer, localMax.buffer], wg, { WG: rowLanes(vl) });
}

/**
 * Per-row Σ_j exp(logits[r, j] − globalMax[r]) over this rank's columns: [..., vLocal], [...] → [...]
 * (to be all-reduced with SUM).
 */
export function crossEntropyLocalSumExp(
  ctx: KernelContext,
  logits: GpuTensor,
  globalMax: GpuTensor,
  localSum: GpuTensor,
): void {
  const { rows, vl, rowShape } = rowDims('crossEntropyLocalSumExp', logits);
  expectPerRow('crossEntropyLocalSumExp', logits, rowShape, globalMax, localSum);
  const wg = rowGrid(ctx.device.limits, 'crossEntropyLocalSumExp', logits.name, logits.shape, rows);
  run(ctx, ceLocalSumExpKernel, { rows, vl, v0: 0 }, [logits.buffer, globalMax.buffer, localSum.buffer], wg, {
    WG: rowLanes(vl),
  });
}

/**
 * Per-row logit of the target id when it lies in this rank's range, else 0: logits [..., vLocal],
 * targets [...] (global ids as float32, exact below 2^24) → [...] (to be all-reduced with SUM).
 */
export function crossEntropyTargetLogit(
  ctx: KernelContext,
  logits: GpuTensor,
  targets: GpuTensor,
  targetLogit: GpuTensor,
  options: VocabShardOptions = {},
): void {
  const { vocabStart = 0 } = options;
  const { rows, vl, rowShape } = rowDims('crossEntropyTargetLogit', logits);
  expectPerRow('crossEntropyTargetLogit', logits, rowShape, targets, targetLogit);
  checkInteger('crossEntropyTargetLogit', 'vocabStart', vocabStart, 0, 2 ** 24);
  const wg = grid1d(ctx.device.limits, 'crossEntropyTargetLogit', targets.name, targets.shape, rows);
  run(ctx, ceTargetLogitKernel, { rows, vl, v0: vocabStart }, [logits.buffer, targets.buffer, targetLogit.buffer], wg);
}

/**
 * This rank's gradient of scale · Σ_rows loss: dlogits = scale · (exp(logits − m) / S − onehot(target)),
 * logits [..., vLocal] with global max m, global sum S and targets [...] → dlogits [..., vLocal].
 * scale is the upstream gradient of each row's loss (1/rows for a mean); default 1.
 */
export function crossEntropyGrad(
  ctx: KernelContext,
  logits: GpuTensor,
  targets: GpuTensor,
  globalMax: GpuTensor,
  globalSumExp: GpuTensor,
  dLogits: GpuTensor,
  options: VocabShardOptions & { readonly scale?: number } = {},
): void {
  const { vocabStart = 0, scale = 1 } = options;
  const { rows, vl, rowShape } = rowDims('crossEntropyGrad', logits);
  expectPerRow('crossEntropyGrad', logits, rowShape, targets, globalMax, globalSumExp);
  expectShape('crossEntropyGrad', dLogits.name, dLogits.shape, logits.shape, `same shape as "${logits.name}"`);
  checkInteger('crossEntropyGrad', 'vocabStart', vocabStart, 0, 2 ** 24);
  const wg = grid1d(ctx.device.limits, 'crossEntropyGrad', logits.name, logits.shape, rows * vl);
  run(
    ctx,
    ceGradKernel,
    { rows, vl, v0: vocabStart, scale },
    [logits.buffer, targets.buffer, globalMax.buffer, globalSumExp.buffer, dLogits.buffer],
    wg,
  );
}

/** Per-row loss = log S + m − z from the all-reduced max m, sum S and target logit z: [...] ×3 → [...]. */
export function crossEntropyLoss(
  ctx: KernelContext,
  globalMax: GpuTensor,
  globalSumExp: GpuTensor,
  targetLogit: GpuTensor,
  loss: GpuTensor,
): void {
  for (const t of [globalSumExp, targetLogit, loss])
    expectShape('crossEntropyLoss', t.name, t.shape, globalMax.shape, `same shape as "${globalMax.name}"`);
  const rows = numel(globalMax.shape);
  const wg = grid1d(ctx.device.limits, 'crossEntropyLoss', globalMax.name, globalMax.shape, rows);
  run(
    ctx,
    ceLossKernel,
    { rows, vl: 0, v0: 0 },
    [globalMax.buffer, globalSumExp.buffer, targetLogit.buffer, loss.buffer],
    wg,
  );
}
