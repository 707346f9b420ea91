import { formatShape } from '../core/shape.ts';
import { softmaxBackwardKernel, softmaxKernel } from '../reference/softmax.ts';
import type { KernelContext } from './context.ts';
import { dispatchKernel } from './dispatch-kernel.ts';
import { expectShape } from './limits.ts';
import { checkInteger } from './rowwise.ts';
import type { GpuTensor } from './tensor.ts';

/** Options of the forward softmax. */
export interface SoftmaxOptions {
  /** Multiplies x before the max-subtracted exp (attention: 1/√headDim); default 1. */
  readonly scale?: number;
  /** Causal mask: column j is masked for global row i when j > i; default false. */
  readonly causal?: boolean;
  /**
   * Global index r0 of this tensor's first score-matrix row (a rank holding rows [r0, r0+n));
   * local row i is global row r0 + i. Default 0; may be negative (rows before key 0).
   */
  readonly rowOffset?: number;
}

/** Throws unless t has a last dim to normalise over. */
function expectRows(op: string, t: GpuTensor): void {
  if (t.shape.length < 1)
    throw new Error(`${op}: tensor "${t.name}" has shape ${formatShape(t.shape)}; softmax needs at least 1 dimension.`);
}

/**
 * y = softmax(scale · x) over the last dim, max-subtracted: [..., n, cols] → [..., n, cols]
 * (attention scores [batch·heads, sq, sk]). With `causal`, column j of local row i is masked when
 * j > rowOffset + i. A fully masked row (rowOffset + i < 0) gives all zeros.
 */
export function softmax(ctx: KernelContext, x: GpuTensor, y: GpuTensor, options: SoftmaxOptions = {}): void {
  const { scale = 1, causal = false, rowOffset = 0 } = options;
  expectShape('softmax', y.name, y.shape, x.shape, `same shape as "${x.name}"`);
  checkInteger('softmax', 'rowOffset', rowOffset, -(2 ** 31), 2 ** 31 - 1);
  expectRows('softmax', x);
  dispatchKernel(ctx, softmaxKernel, [x, y], { scale, causal, rowOffset });
}

/**
 * dx = scale · y ⊙ (dy − rowsum(dy ⊙ y)), the backward of y = softmax(scale · x); y, dy, dx are
 * [..., n, cols]. Masked entries have y = 0, so they get dx = 0 without the mask being passed.
 */
export function softmaxBackward(
  ctx: KernelContext,
  y: GpuTensor,
  dy: GpuTensor,
  dx: GpuTensor,
  options: { readonly scale?: number } = {},
): void {
  const { scale = 1 } = options;
  expectShape('softmaxBackward', dy.name, dy.shape, y.shape, `same shape as "${y.name}"`);
  expectShape('softmaxBackward', dx.name, dx.shape, y.shape, `same shape as "${y.name}"`);
  expectRows('softmaxBackward', y);
  dispatchKernel(ctx, softmaxBackwardKernel, [y, dy, dx], { scale });
}
