import { packUniform, type UniformValues } from '../core/wgsl-layout.ts';
import { checkKernelShapes, type GridKernelSpec, type KernelSpec } from '../reference/kernel-spec.ts';
import { uniformThen, type KernelContext } from './context.ts';
import { grid1d } from './grid.ts';
import { rowGrid, rowLanes } from './rowwise.ts';
import { shaderSource } from './shader-source.ts';
import type { GpuTensor } from './tensor.ts';

/** What the GPU half reads of a descriptor to build its uniform and pipeline. */
type ShaderOf = Pick<KernelSpec, 'name' | 'shader' | 'entryPoint'>;

/** The uniform buffer of `spec`'s shader holding `values`, laid out as its WGSL `struct Params` declares. */
export function kernelUniform(ctx: KernelContext, spec: ShaderOf, values: UniformValues): GPUBuffer {
  return ctx.uniform(packUniform(shaderSource(spec.shader).params, values, spec.name));
}

/** The compute pipeline of `spec`'s entry point (its shader's source with its snippets), specialised by `constants`. */
export function kernelPipeline(
  ctx: KernelContext,
  spec: ShaderOf,
  constants: Record<string, number> = {},
): GPUComputePipeline {
  return ctx.pipeline(spec.shader.file, shaderSource(spec.shader).code, spec.entryPoint, constants);
}

/**
 * Runs a grid kernel from its descriptor: checks the tensors' shapes (binding order), packs its
 * Params from spec.params, and dispatches one invocation per element (`elements`, WG = 64) or one
 * workgroup of rowLanes(cols) lanes per row (`rows`).
 */
export function dispatchKernel<A>(
  ctx: KernelContext,
  spec: GridKernelSpec<string, A>,
  tensors: readonly GpuTensor[],
  args: A,
): void {
  const dims = checkKernelShapes(
    spec,
    tensors.map((t) => t.name),
    tensors.map((t) => t.shape),
  );
  const first = tensors[0];
  const limits = ctx.device.limits;
  const [wg, constants] =
    spec.grid === 'elements'
      ? [grid1d(limits, spec.name, first.name, first.shape, dims.n), {}]
      : [rowGrid(limits, spec.name, first.name, first.shape, dims.rows), { WG: rowLanes(dims.cols) }];
  ctx.dispatch(
    spec.entryPoint,
    kernelPipeline(ctx, spec, constants),
    uniformThen(
      kernelUniform(ctx, spec, spec.params(dims, args)),
      tensors.map((t) => t.buffer),
    ),
    wg,
  );
}
