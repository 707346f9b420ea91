import type { KernelSpec, ShaderSpec } from './kernel-spec.ts';

// CPU twins (float64) of the vocab-parallel embedding on a table of vl rows holding vocabulary ids
// [v0, v0 + vl), rows of width h. An id is local when it is an integer in [v0, v0 + vl); all other
// ids (other ranks', ≥ the padded vocabulary, negative, fractional, NaN, ±Inf) look up zeros and
// receive no gradient.

/** Row of the table [vl, h] holding global id `id`, or −1 when id is not an integer in [v0, v0 + vl). */
export function localVocabRow(id: number, v0: number, vl: number): number {
  return Number.isInteger(id) && id >= v0 && id < v0 + vl ? id - v0 + 0 : -1; // + 0 turns −0 into 0
}

/** out[t, :] = table[ids[t] − v0, :] for local ids, else 0: ids [tokens], table [vl · h] → [tokens · h]. */
export function embeddingRef(ids: ArrayLike<number>, table: ArrayLike<number>, h: number, v0 = 0): Float64Array {
  const vl = h === 0 ? 0 : table.length / h;
  const out = new Float64Array(ids.length * h);
  for (let t = 0; t < ids.length; t++) {
    const v = localVocabRow(ids[t], v0, vl);
    if (v >= 0) for (let j = 0; j < h; j++) out[t * h + j] = table[v * h + j];
  }
  return out;
}

/**
 * dtable[v, :] = prev[v, :] + Σ_{t : ids[t] = v0 + v} dy[t, :]: ids [tokens], dy [tokens · h] →
 * [vl · h]; `prev` (the accumulated gradient, [vl · h]) defaults to zeros.
 */
export function embeddingBackwardRef(
  ids: ArrayLike<number>,
  dy: ArrayLike<number>,
  vl: number,
  h: number,
  v0 = 0,
  prev?: ArrayLike<number>,
): Float64Array {
  const out = prev ? Float64Array.from(prev) : new Float64Array(vl * h);
  for (let t = 0; t < ids.length; t++) {
    const v = localVocabRow(ids[t], v0, vl);
    if (v >= 0) for (let j = 0; j < h; j++) out[v * h + j] += dy[t * h + j];
  }
  return out;
}

/** shaders/embedding.wgsl: Params { tokens, h, v0, vl, accumulate } padded to 32 bytes. */
export const embeddingShader: ShaderSpec = {
  file: 'embedding',
  params: [
    { name: 'tokens', type: 'u32' },
    { name: 'h', type: 'u32' },
    { name: 'v0', type: 'u32' },
    { name: 'vl', type: 'u32' },
    { name: 'accumulate', type: 'u32' },
    { name: '_pad0', type: 'u32' },
    { name: '_pad1', type: 'u32' },
    { name: '_pad2', type: 'u32' },
  ],
};

/** This rank's vocabulary range starts at global id `vocabStart` (rank · vLocal for an even split). */
export interface VocabShardArgs {
  readonly vocabStart: number;
}

/** embeddingBackward's arguments: the vocabulary range, and whether dtable is added to (default false). */
export interface EmbeddingBackwardArgs extends VocabShardArgs {
  readonly accumulate?: boolean;
}

const last = (shape: readonly number[]): number => shape[shape.length - 1];

/** out[t] = table[id_t − v0] for this rank's ids, else 0 (VocabParallelEmbedding's forward); ids [...], table [vLocal, h], out [..., h]. */
export const embeddingKernel: KernelSpec<'embedding', VocabShardArgs> = {
  name: 'embedding',
  shader: embeddingShader,
  entryPoint: 'embedding',
  megatron: 'VocabParallelEmbedding',
  cost: { perElement: 0 },
  bindings: [
    { name: 'ids', access: 'read' },
    { name: 'table', access: 'read' },
    { name: 'out', access: 'write' },
  ],
  twin: ([ids, table], d, { vocabStart }) => [embeddingRef(ids, table, last(d.shapes[1]), vocabStart)],
};

/** dtable[v] (+)= Σ_{t: id_t = v0 + v} dy[t]: one add per element of dy; ids [...], dy [..., h], dtable [vLocal, h]. */
export const embeddingBackwardKernel: KernelSpec<'embeddingBackward', EmbeddingBackwardArgs> = {
  name: 'embeddingBackward',
  shader: embeddingShader,
  entryPoint: 'embedding_dw',
  megatron: 'VocabParallelEmbedding',
  cost: { perElement: 1, over: 1 },
  role: 'wgrad',
  bindings: [
    { name: 'ids', access: 'read' },
    { name: 'dy', access: 'read' },
    { name: 'dtable', access: 'read_write' },
  ],
  twin: ([ids, dy, dtable], d, { vocabStart, accumulate = false }) => {
    const [vl, h] = d.shapes[2];
    return [embeddingBackwardRef(ids, dy, vl, h, vocabStart, accumulate ? dtable : undefined)];
  },
  planned: { reads: [0, 1] },
};
