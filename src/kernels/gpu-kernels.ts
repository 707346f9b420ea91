import type { kernelSpecs, KernelName } from '../reference/kernel-registry.ts';
import { checkKernelShapes, isGridKernel, type KernelSpec } from '../reference/kernel-spec.ts';
import type { KernelContext } from './context.ts';
import { copyCols } from './copy-cols.ts';
import {
  crossEntropyGrad,
  crossEntropyLocalMax,
  crossEntropyLocalSumExp,
  crossEntropyLoss,
  crossEntropyTargetLogit,
} from './cross-entropy.ts';
import { dispatchKernel } from './dispatch-kernel.ts';
import { embedding, embeddingBackward } from './embedding.ts';
import { moeGroupedGemm, moeGroupedGemmWgrad } from './moe/grouped-gemm.ts';
import { moeCombineProbGrad, moePermute, moeUnpermute } from './moe/permute.ts';
import { moeTopk } from './moe/topk.ts';
import { rmsnormWeightGrad } from './rmsnorm.ts';
import { rope, ropeBackward } from './rope.ts';
import type { GpuTensor } from './tensor.ts';

type Specs = typeof kernelSpecs;

/** The registered kernels whose descriptor gives no grid (no `grid`, no `params`): each has a GPU dispatch of its own. */
export type OwnGridKernelName = {
  [N in KernelName]: Specs[N] extends { readonly grid: string } ? never : N;
}[KernelName];

/** The non-tensor arguments kernel N takes (its descriptor's `A`). */
export type KernelArgs<N extends KernelName> = Specs[N] extends KernelSpec<N, infer A> ? A : never;

/** A kernel's GPU dispatch: `tensors` in its binding order (their count already checked), `args` its non-tensor arguments. */
export type GpuDispatch<A> = (ctx: KernelContext, tensors: readonly GpuTensor[], args: A) => void;

/**
 * The GPU dispatch of every kernel with its own grid, by name: a kernel added to the registry
 * without a `grid` does not type-check until it has its line here. Each wrapper checks its shapes
 * and arguments with messages of its own.
 */
export const gpuDispatch: { readonly [N in OwnGridKernelName]: GpuDispatch<KernelArgs<N>> } = {
  rmsnormWeightGrad: (ctx, [x, rstd, dy, dg], a) => rmsnormWeightGrad(ctx, x, rstd, dy, dg, a),
  rope: (ctx, [x, out], a) => rope(ctx, x, out, a),
  ropeBackward: (ctx, [dy, dx], a) => ropeBackward(ctx, dy, dx, a),
  copyCols: (ctx, [src, dst], { rows, n, from, to }) => copyCols(ctx, src, dst, rows, n, from, to),
  embedding: (ctx, [ids, table, out], a) => embedding(ctx, ids, table, out, a),
  embeddingBackward: (ctx, [ids, dy, dtable], a) => embeddingBackward(ctx, ids, dy, dtable, a),
  ceLocalMax: (ctx, [logits, localMax]) => crossEntropyLocalMax(ctx, logits, localMax),
  ceLocalSumExp: (ctx, [logits, globalMax, localSum]) => crossEntropyLocalSumExp(ctx, logits, globalMax, localSum),
  ceTargetLogit: (ctx, [logits, targets, out], a) => crossEntropyTargetLogit(ctx, logits, targets, out, a),
  ceGrad: (ctx, [logits, targets, m, s, dlogits], a) => crossEntropyGrad(ctx, logits, targets, m, s, dlogits, a),
  ceLoss: (ctx, [m, s, z, loss]) => crossEntropyLoss(ctx, m, s, z, loss),
  moeTopk: (ctx, [scores, indices, values], { k }) => moeTopk(ctx, scores, indices, values, k),
  moePermute: (ctx, [x, rowToken, scale, xp]) => moePermute(ctx, x, rowToken, scale, xp),
  moeUnpermute: (ctx, [yp, pickRow, w, y]) => moeUnpermute(ctx, yp, pickRow, w, y),
  moeCombineProbGrad: (ctx, [dy, yp, pickRow, dw]) => moeCombineProbGrad(ctx, dy, yp, pickRow, dw),
  moeGroupedGemm: (ctx, [a, b, offsets, c], { transB }) => moeGroupedGemm(ctx, a, b, offsets, c, transB),
  moeGroupedGemmWgrad: (ctx, [a, g, offsets, db]) => moeGroupedGemmWgrad(ctx, a, g, offsets, db),
};

/** Runs a registered kernel on the GPU: from its descriptor (dispatchKernel) or by the dispatch registered under its name. */
export function runKernel<A>(
  ctx: KernelContext,
  spec: KernelSpec<KernelName, A>,
  tensors: readonly GpuTensor[],
  args: A,
): void {
  if (isGridKernel(spec)) return dispatchKernel(ctx, spec, tensors, args);
  checkKernelShapes(
    spec,
    tensors.map((t) => t.name),
    tensors.map((t) => t.shape),
  );
  (gpuDispatch[spec.name as OwnGridKernelName] as GpuDispatch<A>)(ctx, tensors, args);
}
