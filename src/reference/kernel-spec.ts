import { formatShape, numel } from '../core/shape.ts';
import type { UniformValues, WgslField } from '../core/wgsl-layout.ts';

// The pure half of a kernel's descriptor: what the plan (FLOPs, Megatron module), the CPU backend
// (twin) and the GPU backend (shader file, entry point, uniform values, grid) need to know of a
// kernel, without WebGPU. The GPU half (src/kernels/dispatch-kernel.ts, gpu-kernels.ts) adds the
// WGSL source and the pipeline; it derives the uniform buffer's layout from the WGSL it compiles.

/** A WGSL file under shaders/ and the uniform `struct Params` its entry points share. */
export interface ShaderSpec {
  /** File stem: "rmsnorm" is shaders/rmsnorm.wgsl. */
  readonly file: string;
  /** Shared snippets (file stems under shaders/) prepended at module creation; WGSL has no #include. */
  readonly include?: readonly string[];
  /** `struct Params`'s members as the WGSL declares them, padding included (tests/unit/reference/kernel-params.test.ts ties them to the file). */
  readonly params: readonly WgslField[];
}

/** FLOPs of one dispatch: `perElement` times the element count of the output, or of input `over` (an index among the inputs the plan records). */
export interface KernelCost {
  /** Arithmetic per element (estimates: exp, sigmoid, sin/cos count as ~4). */
  readonly perElement: number;
  /** Index of the input whose elements are counted; default the output. */
  readonly over?: number;
  /** Where the FLOPs per element depend on the shapes (a GEMM's 2K): it, from the recorded inputs' shapes, in place of `perElement`. */
  perElementOf?(inShapes: readonly (readonly number[])[]): number;
}

/** A storage binding (1, 2, … after the uniform at 0) as the WGSL declares it. */
export interface KernelBinding {
  readonly name: string;
  readonly access: 'read' | 'write' | 'read_write';
}

/** The sizes a grid kernel is dispatched over, from its first binding's shape [..., cols]. */
export interface GridDims {
  readonly shape: readonly number[];
  /** numel(shape). */
  readonly n: number;
  /** The last dim (1 for a scalar shape). */
  readonly cols: number;
  /** n / cols (0 when cols = 0). */
  readonly rows: number;
}

/** GridDims of the first binding, and every binding's shape (binding order). */
export interface KernelDims extends GridDims {
  readonly shapes: readonly (readonly number[])[];
}

/** What the plan records of a kernel when it is not "every binding read in, the first written out". */
export interface PlannedIo<A> {
  /** The bindings listed as inputs (default: those it reads); FLOPs `over` index this list. */
  readonly reads?: readonly number[];
  /** The output shape recorded (default: the first written binding's). */
  outShape?(dims: KernelDims, args: A): readonly number[];
}

/**
 * One compute kernel (one WGSL entry point) other than GEMM: `Backend.kernel(op, spec, tensors,
 * args)` runs it with `tensors` in binding order and `args` its non-tensor arguments. The CPU runs
 * `twin`; the plan records its cost; the GPU dispatches it from the descriptor (GridKernelSpec) or,
 * for a kernel with its own grid, through the dispatch registered under its name
 * (src/kernels/gpu-kernels.ts). Several written bindings are several outputs.
 */
export interface KernelSpec<N extends string = string, A = object> {
  readonly name: N;
  readonly shader: ShaderSpec;
  readonly entryPoint: string;
  /** The Megatron-LM module it implements (the plan's `megatron` field). */
  readonly megatron: string;
  readonly cost: KernelCost;
  /** 'wgrad' for kernels that compute a weight gradient (always that role, whatever the pass). */
  readonly role?: 'wgrad';
  /** Storage bindings 1, 2, … in order. */
  readonly bindings: readonly [KernelBinding, ...KernelBinding[]];
  /** The CPU twin in float64: one array per written binding, in binding order, from every binding's data (read_write ones as they stand). */
  twin(data: readonly ArrayLike<number>[], dims: KernelDims, args: A): readonly ArrayLike<number>[];
  readonly planned?: PlannedIo<A>;
}

/**
 * A kernel the GPU dispatches from its descriptor alone: `elements` — one invocation per element
 * of the first binding, all bindings of its shape (grid1d, WG = 64); `rows` — one workgroup per
 * row of [rows, cols] (rowGrid, WG = rowLanes(cols), the row read as wid.x + wid.y · nwg.x).
 */
export interface GridKernelSpec<N extends string = string, A = object> extends KernelSpec<N, A> {
  readonly grid: 'elements' | 'rows';
  /** The shape binding k must have (default: the first binding's); a mismatch is an error naming both. */
  shapeOf?(k: number, dims: GridDims): readonly number[];
  /** The values of `struct Params`' members (padding omitted). */
  params(dims: GridDims, args: A): UniformValues;
}

/** Whether the GPU dispatches `spec` from its descriptor (else by the dispatch registered under its name). */
export const isGridKernel = <N extends string, A>(spec: KernelSpec<N, A>): spec is GridKernelSpec<N, A> =>
  'grid' in spec;

/** Grid sizes of a tensor of `shape` viewed as [rows, cols]. */
export function gridDims(shape: readonly number[]): GridDims {
  const n = numel(shape);
  const cols = shape.length === 0 ? 1 : shape[shape.length - 1];
  return { shape, n, cols, rows: cols === 0 ? 0 : n / cols };
}

/** The bindings a kernel writes (write or read_write), as indices. */
export const writtenBindings = (spec: Pick<KernelSpec, 'bindings'>): number[] =>
  spec.bindings.flatMap((b, k) => (b.access === 'read' ? [] : [k]));

/** The bindings a kernel reads (read or read_write), as indices. */
export const readBindings = (spec: Pick<KernelSpec, 'bindings'>): number[] =>
  spec.bindings.flatMap((b, k) => (b.access === 'write' ? [] : [k]));

/**
 * Throws unless `shapes` (binding order, tensors named `names`) are one per binding of `spec` and,
 * for a grid kernel, each the shape it expects of that binding (a kernel with its own grid checks
 * its shapes in its GPU dispatch). Returns the dims its params and twin take.
 */
export function checkKernelShapes(
  spec: Pick<KernelSpec, 'name' | 'bindings'> & Partial<Pick<GridKernelSpec, 'grid' | 'shapeOf'>>,
  names: readonly string[],
  shapes: readonly (readonly number[])[],
): KernelDims {
  if (shapes.length !== spec.bindings.length)
    throw new Error(
      `${spec.name}: got ${shapes.length} tensors; it takes ${spec.bindings.length} (${spec.bindings.map((b) => b.name).join(', ')}).`,
    );
  const dims = gridDims(shapes[0]);
  if (spec.grid !== undefined)
    shapes.forEach((s, k) => {
      const want = spec.shapeOf ? spec.shapeOf(k, dims) : dims.shape;
      if (s.length !== want.length || s.some((v, i) => v !== want[i]))
        throw new Error(
          `${spec.name}: tensor "${names[k]}" has shape ${formatShape(s)} but ${formatShape(want)} is required (its ${spec.bindings[k].name}, for "${names[0]}" of shape ${formatShape(dims.shape)}).`,
        );
    });
  return { ...dims, shapes };
}
