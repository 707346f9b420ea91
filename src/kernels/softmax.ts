import code from '../../shaders/softmax.wgsl?raw';
import { uniformThen, type KernelContext } from './context.ts';
import { expectShape } from './limits.ts';
import { formatShape, numel } from '../core/shape.ts';
import { checkInteger, packParams, rowGrid, rowLanes } from './rowwise.ts';
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

/** Rows and columns of a softmax input [..., n, cols]; a 1-D [cols] is one row of one matrix. */
function softmaxDims(op: string, t: GpuTensor): { rows: number; cols: number; n: number } {
  if (t.shape.length < 1)
    throw new Error(`${op}: tensor "${t.name}" has shape ${formatShape(t.shape)}; softmax needs at least 1 dimension.`);
  const cols = t.shape[t.shape.length - 1];
  const n = t.shape.length >= 2 ? t.shape[t.shape.length - 2] : 1;
  return { rows: cols === 0 ? 0 : numel(t.shape) / cols, cols, n };
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
  const { rows, cols, n } = softmaxDims('softmax', x);
  const wg = rowGrid(ctx.device.limits, 'softmax', x.name, x.shape, rows);
  const params = ctx.uniform(
    packParams([
      ['u32', rows],
      ['u32', cols],
      ['u32', n],
      ['u32', causal ? 1 : 0],
      ['i32', rowOffset],
      ['f32', scale],
    ]),
  );
  ctx.dispatch(
    'softmax',
    ctx.pipeline('softmax', code, 'softmax', { WG: rowLanes(cols) }),
    uniformThen(params, [x.buffer, y.buffer]),
    wg,
  );
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
  const { rows, cols, n } = softmaxDims('softmaxBackward', y);
  const wg = rowGrid(ctx.device.limits, 'softmaxBackward', y.name, y.shape, rows);
  const params = ctx.uniform(
    packParams([
      ['u32', rows],
      ['u32', cols],
      ['u32', n],
      ['u32', 0],
      ['i32', 0],
      ['f32', scale],
    ]),
  );
  ctx.dispatch(
    'softmax_backward',
    ctx.pipeline('softmax', code, 'softmax_backward', { WG: rowLanes(cols) }),
    uniformThen(params, [y.buffer, dy.buffer, dx.buffer]),
    wg,
  );
}
