import type { GridDims, GridKernelSpec, ShaderSpec } from './kernel-spec.ts';

/** CPU twin of add: out = a + b, elementwise (float64 sum, rounded once to float32). */
export function addRef(a: Float32Array, b: Float32Array): Float32Array {
  if (a.length !== b.length) throw new Error(`addRef: lengths ${a.length} and ${b.length} differ.`);
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

/** shaders/add.wgsl: Params { n } padded to 16 bytes. */
export const addShader: ShaderSpec = {
  file: 'add',
  params: [
    { name: 'n', type: 'u32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
    { name: '_pad2', type: 'u32' },
  ],
};

const elementCount = ({ n }: GridDims) => ({ n });

/** out = a + b (the residual connection). */
export const addKernel: GridKernelSpec<'add'> = {
  name: 'add',
  shader: addShader,
  entryPoint: 'add',
  megatron: 'residual connection',
  cost: { perElement: 1 },
  grid: 'elements',
  bindings: [
    { name: 'a', access: 'read' },
    { name: 'b', access: 'read' },
    { name: 'out', access: 'write' },
  ],
  params: elementCount,
  twin: ([a, b]) => [Float64Array.from(a, (v, i) => v + b[i])],
};

/** acc += b (gradient accumulation). */
export const addInPlaceKernel: GridKernelSpec<'addInPlace'> = {
  name: 'addInPlace',
  shader: addShader,
  entryPoint: 'add_inplace',
  megatron: 'residual connection',
  cost: { perElement: 1 },
  grid: 'elements',
  bindings: [
    { name: 'acc', access: 'read_write' },
    { name: 'b', access: 'read' },
  ],
  params: elementCount,
  twin: ([acc, b]) => [Float64Array.from(acc, (v, i) => v + b[i])],
};
