import { numel } from '../core/shape.ts';
import { randomArray } from '../reference/random.ts';
import { headDim, type LayerConfig } from './config.ts';
import type { LocalDims } from './dims.ts';
import { paddedVocab } from './ownership.ts';
import type { RankOwnership } from './plan-types.ts';
import { gathersQkv, logicalRuns } from './qkv-layout.ts';
import { weightNames, type WeightName } from './weight-names.ts';

/** A set of per-parameter tensors (weights or their gradients); emb and wout only with a vocabulary. */
export type WeightSet<T> = { [K in WeightName]?: T };

/** The parameters of a config (with a vocabulary, emb and wout too). */
export function weightsOf(c: LayerConfig): WeightName[] {
  return weightNames.filter((n) => c.vocab > 0 || (n !== 'emb' && n !== 'wout'));
}

/** Logical (TP=1) shape of a parameter. */
export function logicalShape(c: LayerConfig, name: WeightName): [number, number] | [number] {
  const d = headDim(c);
  const vp = paddedVocab(c);
  switch (name) {
    case 'wqkv':
      return [c.h, (c.heads + 2 * c.groups) * d];
    case 'wo':
      return [c.heads * d, c.h];
    case 'g1':
    case 'g2':
      return [c.h];
    case 'wfc1':
      return [c.h, 2 * c.ffn];
    case 'wdown':
      return [c.ffn, c.h];
    case 'emb':
      return [vp, c.h];
    case 'wout':
      return [c.h, vp];
  }
}

/** A block of a shard: logical rows [r0, r1) × columns [c0, c1) land at local (lr, lc). */
interface Block {
  readonly r0: number;
  readonly r1: number;
  readonly c0: number;
  readonly c1: number;
  readonly lr: number;
  readonly lc: number;
}

/** How rank `own` holds parameter `name`: its local shape and the blocks of the logical tensor it keeps. */
export function shardLayout(
  c: LayerConfig,
  dims: LocalDims,
  own: RankOwnership,
  name: WeightName,
): { shape: number[]; blocks: Block[] } {
  const { h, d, f, vl } = dims;
  const cols = (r1: number, ranges: [number, number][]): Block[] => {
    let lc = 0;
    return ranges.map(([c0, c1]) => {
      const b = { r0: 0, r1, c0, c1, lr: 0, lc };
      lc += c1 - c0;
      return b;
    });
  };
  const rows = (c1: number, r0: number, r1: number): Block[] => [{ r0, r1, c0: 0, c1, lr: 0, lc: 0 }];
  const [h0, h1] = own.heads;
  switch (name) {
    case 'wqkv': {
      // groups < t: the rank's even slice of Megatron's per-group interleaved columns, which may
      // cut across heads and across q/k/v (one block per logical run it touches).
      if (gathersQkv(c))
        return {
          shape: [h, dims.qkvWidth],
          blocks: cols(
            h,
            logicalRuns(c, own.qkvCols).map((r): [number, number] => [r.logical, r.logical + r.n]),
          ),
        };
      // groups ≥ t: [this rank's Q heads | its K groups | its V groups].
      const kv = (base: number) => own.kvGroups.map((g): [number, number] => [base + g * d, base + (g + 1) * d]);
      return {
        shape: [h, dims.qkvWidth],
        blocks: cols(h, [[h0 * d, h1 * d], ...kv(c.heads * d), ...kv((c.heads + c.groups) * d)]),
      };
    }
    case 'wo':
      return { shape: [dims.nq * d, h], blocks: rows(h, h0 * d, h1 * d) };
    case 'g1':
    case 'g2':
      return { shape: [h], blocks: rows(h, 0, 1) };
    case 'wfc1':
      return {
        shape: [h, 2 * f],
        blocks: cols(h, [
          [own.ffn[0], own.ffn[1]],
          [c.ffn + own.ffn[0], c.ffn + own.ffn[1]],
        ]),
      };
    case 'wdown':
      return { shape: [f, h], blocks: rows(h, own.ffn[0], own.ffn[1]) };
    case 'emb':
      return { shape: [vl, h], blocks: rows(h, own.vocab[0], own.vocab[1]) };
    case 'wout':
      return { shape: [h, vl], blocks: cols(h, [[own.vocab[0], own.vocab[1]]]) };
  }
}

/** Row-major width of a 1-D or 2-D shape (a 1-D tensor is one row). */
const width = (shape: readonly number[]): number => shape[shape.length - 1];

/** Copies a rank's blocks out of a logical tensor: the shard the rank holds. */
export function cutShard(
  logical: Float32Array,
  logicalShape: readonly number[],
  layout: { shape: number[]; blocks: Block[] },
): Float32Array {
  const out = new Float32Array(numel(layout.shape));
  const W = width(logicalShape),
    w = width(layout.shape);
  for (const b of layout.blocks) {
    for (let r = b.r0; r < b.r1; r++)
      out.set(logical.subarray(r * W + b.c0, r * W + b.c1), (b.lr + r - b.r0) * w + b.lc);
  }
  return out;
}

/** Writes a rank's shard back into its blocks of a logical tensor (the inverse of cutShard). */
export function placeShard(
  shard: Float32Array,
  logical: Float32Array,
  logicalShape: readonly number[],
  layout: { shape: number[]; blocks: Block[] },
): void {
  const W = width(logicalShape),
    w = width(layout.shape);
  for (const b of layout.blocks) {
    for (let r = b.r0; r < b.r1; r++)
      logical.set(
        shard.subarray((b.lr + r - b.r0) * w + b.lc, (b.lr + r - b.r0) * w + b.lc + (b.c1 - b.c0)),
        r * W + b.c0,
      );
  }
}

/** Seed of one logical tensor: the config's seed mixed with the tensor's name. */
export function tensorSeed(seed: number, name: string): number {
  let x = seed >>> 0;
  for (let i = 0; i < name.length; i++) x = Math.imul(x ^ name.charCodeAt(i), 0x9e3779b1) >>> 0;
  return x;
}

/**
 * The logical value of a parameter, from the config's seed: uniform in ±1/√fan_in for matrices
 * (activations stay O(1)), 1 ± 0.1 for RMSNorm gains (not all ones, so dg is exercised), ±1 for the
 * embedding. Every rank and the TP=1 reference compute the same values.
 */
export function logicalWeight(c: LayerConfig, name: WeightName): Float32Array {
  const shape = logicalShape(c, name);
  const n = numel(shape);
  const seed = tensorSeed(c.seed, name);
  if (name === 'g1' || name === 'g2') return randomArray(n, seed, 0.1).map((v) => 1 + v);
  if (name === 'emb') return randomArray(n, seed, 1);
  return randomArray(n, seed, 1 / Math.sqrt(shape[0]));
}
