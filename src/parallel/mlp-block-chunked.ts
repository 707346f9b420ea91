import { numel } from '../core/shape.ts';
import { opSpec, type Backend } from './backend.ts';
import type { LocalDims } from './dims.ts';
import type { LayerComm } from './layer-comm.ts';
import {
  linearDgradRows,
  linearForward,
  linearForwardRows,
  linearWgrad,
  type LinearSpec,
  type WeightCols,
} from './linear.ts';
import { tensorParallelRegion, type MappingPair } from './mappings.ts';
import { gateCols, mlpDown, mlpGate, mlpUp, upCols } from './mlp.ts';
import type { MlpBlockLabels, MlpBlockSaved } from './mlp-block.ts';
import type { OpRole, OpSplit } from './plan-types.ts';
import { chunkLabel, chunkRowsInFull, chunkRowsPacked, type RowBlocks, type TpChunk } from './tp-overlap.ts';

/**
 * The MLP block of mlp-block.ts with chunked TP communication overlap (tp-overlap.ts): its
 * column/row pair cuts each collective into c chunks along the sequence and runs the GEMM chunks
 * while the other chunks move round the ring (Megatron's --tp-comm-overlap). Every rank issues
 * the same ops in the same order; the collectives go through the layer's CommStream, one after
 * another, while `lc.launch()` starts each GEMM chunk as soon as it is queued.
 *
 * Chunk j under SP is piece j (p = sl/c tokens) of every rank's [sl, b, ·] shard (chunkRowsInFull):
 * a gathered chunk is [t·p, b, ·] with rank r's piece as block r. GEMMs are row-separable, so a
 * chunked forward or dgrad output sums the same products in the same order as the whole GEMM;
 * the reduce-scatter of chunk j reduces rank r's piece in the same ring order as the whole
 * reduce-scatter reduces it. What changes the summation order: the wgrad summed chunk by chunk
 * (s·b rows in c groups) and, without SP, the all-reduce of rows [j·s/c, (j+1)·s/c) whose ring
 * blocks differ from the whole tensor's; both stay within oracleTolerance's bound for a
 * reduction of length s·b (resp. t), which does not depend on the order.
 */

interface Geometry {
  readonly D: LocalDims;
  readonly c: number;
  readonly sp: boolean;
}

const chunkOf = (index: number, of: number): TpChunk => ({ index, of });
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Rows of chunk j in the full [s, b, ·] tensor and in its packed chunk tensor. */
function rowsOf(g: Geometry, j: number): { full: RowBlocks; packed: RowBlocks } {
  const full = chunkRowsInFull({ s: g.D.s, b: g.D.b, t: g.D.t, sp: g.sp }, j, g.c);
  return { full, packed: chunkRowsPacked(full) };
}

/**
 * Copies chunk j between a full [s, b, w] tensor and its packed chunk [blocks·rows, w] — one
 * column-block copy over the blocks viewed as [blocks, ·] matrices. `toChunk`: full → chunk.
 */
function copyChunk<T>(
  be: Backend<T>,
  label: string,
  split: OpSplit,
  rows: RowBlocks,
  w: number,
  full: T,
  chunk: T,
  toChunk: boolean,
  tag: TpChunk,
): void {
  const n = rows.rows * w;
  // The full tensor as a [blocks, ·] matrix: one row per block (block i starts i·stride rows on).
  const fullBlock = { w: numel(be.shapeOf(full)) / rows.blocks, c0: rows.at * w };
  const chunkBlock = { w: n, c0: 0 };
  const op = opSpec(chunkLabel(label, tag), split, { chunk: tag });
  if (toChunk) be.copyCols(op, full, chunk, rows.blocks, n, fullBlock, chunkBlock);
  else be.copyCols(op, chunk, full, rows.blocks, n, chunkBlock, fullBlock);
}

/** This rank's piece j [p, b, w] of its [sl, b, w] shard, copied into a tensor of its own (what the chunk's all-gather sends). */
function packPiece<T>(be: Backend<T>, label: string, g: Geometry, shard: T, w: number, j: number): T {
  const p = g.D.sl / g.c;
  const piece = be.tensor(label, [p, g.D.b, w]);
  copyChunk(
    be,
    label,
    'sequence',
    { blocks: 1, rows: p * g.D.b, at: j * p * g.D.b, stride: 0 },
    w,
    shard,
    piece,
    true,
    chunkOf(j, g.c),
  );
  return piece;
}

/**
 * All-gathers `shard` [sl, b, w] chunk by chunk through the comm stream: every piece is packed,
 * then chunk j's all-gather (the forward half of `m`, or its backward with `backward`) is issued;
 * returns each chunk's gathered [t·p, b, w] as it arrives.
 */
function gatherChunks<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  label: string,
  m: MappingPair,
  backward: boolean,
  shard: T,
  w: number,
  role?: OpRole,
): { gathered: Promise<T>[]; pieces: T[] } {
  const pieces = range(g.c).map((j) => packPiece(be, `${label}.piece`, g, shard, w, j));
  lc.launch();
  const gathered = pieces.map((x, j) => {
    const op = opSpec(chunkLabel(label, chunkOf(j, g.c)), 'sequence', {
      chunk: chunkOf(j, g.c),
      ...(role !== undefined && { role }),
    });
    return lc.stream.issue(() => (backward ? lc.backward(op, m, x) : lc.forward(op, m, x)));
  });
  return { gathered, pieces };
}

/** Frees a chunk's tensors once its ops are queued (a collective may return its input: freed once). */
function releaseAll<T>(be: Backend<T>, ...ts: T[]): void {
  for (const t of new Set(ts)) be.release(t);
}

/**
 * Forward with c chunks (c ≥ 2): under SP the input all-gather in c chunks, each GEMM chunk of gate
 * and up dispatched as its chunk arrives; SwiGLU; down's GEMM in c chunks, each reduce-scattered
 * (without SP: all-reduced) as soon as it is queued. Same result as mlpBlockForward.
 */
export async function mlpBlockForwardChunked<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  sp: boolean,
  c: number,
  x: T,
  w: { readonly wfc1: T; readonly wdown: T },
  labels: MlpBlockLabels,
): Promise<{ out: T; saved: MlpBlockSaved<T> }> {
  const g: Geometry = { D, c, sp };
  const { s, b, h, f, sl } = D;
  const m = s * b;
  const { enter, leave } = tensorParallelRegion(sp);
  const gate = be.tensor('mlp.gate', [s, b, f]);
  const up = be.tensor('mlp.up', [s, b, f]);
  let input: T | undefined = x;
  if (sp) {
    const keep = labels.regather === undefined;
    input = keep ? be.tensor('mlp.in', [s, b, h]) : undefined;
    const { gathered, pieces } = gatherChunks(be, lc, g, labels.gather, enter, false, x, h);
    for (const j of range(c)) {
      const xj = await gathered[j];
      const rows = rowsOf(g, j);
      const tag = chunkOf(j, c);
      linearForwardRows(be, mlpGate, xj, rows.packed, w.wfc1, gate, rows.full, h, gateCols(D), tag);
      linearForwardRows(be, mlpUp, xj, rows.packed, w.wfc1, up, rows.full, h, upCols(D), tag);
      if (input) copyChunk(be, 'mlp.in.assemble', 'sequence', rows.full, h, input, xj, false, tag);
      lc.launch();
      releaseAll(be, xj, pieces[j]);
    }
  } else {
    linearForward(be, mlpGate, x, w.wfc1, gate, m, h, gateCols(D));
    linearForward(be, mlpUp, x, w.wfc1, up, m, h, upCols(D));
  }
  const act = be.tensor('mlp.act', [s, b, f]);
  be.swiglu(opSpec('mlp.swiglu', 'column'), gate, up, act);
  const out = be.tensor('mlp.out', [sl, b, h]);
  const chunks = reduceChunks(be, lc, g, mlpDown, labels.reduce, 'row', leave, false, h, (j, rows, yj) =>
    linearForwardRows(be, mlpDown, act, rows.full, w.wdown, yj, rows.packed, f, { w: h, c0: 0, n: h }, chunkOf(j, c)),
  );
  await collectChunks(be, lc, g, labels.reduce, h, chunks, out);
  return { out, saved: { shard: x, ...(input !== undefined && { input }), mlp: { gate, up, act } } };
}

/** Chunks of a GEMM output whose reductions are in flight: their packed tensors and reduced results. */
interface ReducingChunks<T> {
  readonly parts: T[];
  readonly reduced: Promise<T>[];
}

/**
 * A GEMM whose [s, b, n] output is reduced over the group, in c chunks: `gemm(j, rows, yj)` writes
 * chunk j's rows into a packed chunk tensor yj, whose reduction (the forward of `m`, or its
 * backward with `backward`: reduce-scatter under SP, all-reduce without) is issued at once on the
 * comm stream while the next GEMM chunk is queued.
 */
function reduceChunks<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  l: LinearSpec,
  label: string,
  split: OpSplit,
  m: MappingPair,
  backward: boolean,
  n: number,
  gemm: (j: number, rows: { full: RowBlocks; packed: RowBlocks }, yj: T) => void,
): ReducingChunks<T> {
  const { b, t, s } = g.D;
  const reduced: Promise<T>[] = [];
  const parts: T[] = [];
  for (const j of range(g.c)) {
    const rows = rowsOf(g, j);
    const yj = be.tensor(`${l.label}.chunk`, g.sp ? [(rows.full.rows * t) / b, b, n] : [s / g.c, b, n]);
    gemm(j, rows, yj);
    parts.push(yj);
    const tag = chunkOf(j, g.c);
    const op = opSpec(chunkLabel(label, tag), split, { chunk: tag });
    reduced.push(lc.stream.issue(() => (backward ? lc.backward(op, m, yj) : lc.forward(op, m, yj))));
    lc.launch();
  }
  return { parts, reduced };
}

/** Copies the reduced chunks into `out` ([sl, b, n] under SP: rank r keeps its piece j of each; [s, b, n] without) as they arrive. */
async function collectChunks<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  label: string,
  n: number,
  chunks: ReducingChunks<T>,
  out: T,
): Promise<void> {
  for (const j of range(g.c)) {
    const rj = await chunks.reduced[j];
    const full = rowsOf(g, j).full;
    const mine: RowBlocks = g.sp ? { blocks: 1, rows: full.rows, at: full.at, stride: 0 } : full;
    copyChunk(be, `${label}.assemble`, g.sp ? 'sequence' : 'replicated', mine, n, out, rj, false, chunkOf(j, g.c));
    lc.launch();
    releaseAll(be, rj, chunks.parts[j]);
  }
}

/**
 * Backward under SP with c chunks: g's backward all-gathers dY in chunks, down's dgrad chunk by
 * chunk as they arrive (its wgrad on the assembled dY); SwiGLU backward; the re-gather of the
 * input in chunks, gate and up's dgrad chunk by chunk each reduce-scattered at once, their wgrad
 * summed chunk by chunk on the re-gathered input chunks. Same results as mlpBlockBackward (SP).
 */
export async function mlpBlockBackwardChunked<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  D: LocalDims,
  c: number,
  dy: T,
  saved: MlpBlockSaved<T>,
  w: { readonly wfc1: T; readonly wdown: T },
  dw: { readonly wfc1: T; readonly wdown: T },
  labels: MlpBlockLabels,
): Promise<{ dOut: T; dx: T }> {
  const g: Geometry = { D, c, sp: true };
  const { s, b, h, f, sl } = D;
  const m = s * b;
  const { enter, leave } = tensorParallelRegion(true);
  const downCols: WeightCols = { w: h, c0: 0, n: h };

  // g backward: dY [sl, b, h] all-gathered chunk by chunk; down's dgrad per chunk.
  const dOut = be.tensor('d.mlp.out', [s, b, h]);
  const dact = be.tensor('d.mlp.act', [s, b, f]);
  const dyChunks = gatherChunks(be, lc, g, labels.reduceBackward, leave, true, dy, h);
  for (const j of range(c)) {
    const dj = await dyChunks.gathered[j];
    const rows = rowsOf(g, j);
    const tag = chunkOf(j, c);
    linearDgradRows(be, mlpDown, dj, rows.packed, w.wdown, dact, rows.full, f, downCols, false, false, tag);
    copyChunk(be, 'd.mlp.out.assemble', 'sequence', rows.full, h, dOut, dj, false, tag);
    lc.launch();
    releaseAll(be, dj, dyChunks.pieces[j]);
  }
  linearWgrad(be, mlpDown, saved.mlp.act, dOut, dw.wdown, m, f, downCols);
  const dgate = be.tensor('d.mlp.gate', [s, b, f]);
  const dup = be.tensor('d.mlp.up', [s, b, f]);
  be.swigluBackward(opSpec('mlp.swiglu.backward', 'column'), saved.mlp.gate, saved.mlp.up, dact, dgate, dup);
  be.release(dact);

  // The input's re-gather in chunks (or the kept input), issued before the dgrad chunks.
  const again =
    saved.input === undefined && labels.regather !== undefined
      ? gatherChunks(be, lc, g, labels.regather, enter, false, saved.shard, h, 'forward')
      : undefined;
  if (!again && saved.input === undefined)
    throw new Error('mlpBlockBackwardChunked: the MLP input was neither kept nor re-gathered.');

  // gate and up's dgrad per chunk, each chunk reduce-scattered as soon as it is queued.
  const dx = be.tensor('d.mlp.in.shard', [sl, b, h]);
  const dxChunks = reduceChunks(be, lc, g, mlpGate, labels.dgradReduce, 'column', enter, true, h, (j, rows, dxj) => {
    const tag = chunkOf(j, c);
    linearDgradRows(be, mlpGate, dgate, rows.full, w.wfc1, dxj, rows.packed, h, gateCols(D), false, false, tag);
    linearDgradRows(be, mlpUp, dup, rows.full, w.wfc1, dxj, rows.packed, h, upCols(D), true, false, tag);
  });

  // gate and up's wgrad on the input chunks: dW += Xⱼᵀ·dGⱼ over the packed rows of chunk j.
  if (again) {
    for (const j of range(c)) {
      const xj = await again.gathered[j];
      const rows = rowsOf(g, j);
      const tag = chunkOf(j, c);
      const mj = rows.full.blocks * rows.full.rows;
      const dgj = be.tensor('d.mlp.gate.chunk', [mj, f]);
      const duj = be.tensor('d.mlp.up.chunk', [mj, f]);
      copyChunk(be, 'd.mlp.gate.pack', 'column', rows.full, f, dgate, dgj, true, tag);
      copyChunk(be, 'd.mlp.up.pack', 'column', rows.full, f, dup, duj, true, tag);
      linearWgrad(be, mlpGate, xj, dgj, dw.wfc1, mj, h, gateCols(D), j > 0, tag);
      linearWgrad(be, mlpUp, xj, duj, dw.wfc1, mj, h, upCols(D), j > 0, tag);
      lc.launch();
      releaseAll(be, xj, again.pieces[j], dgj, duj);
    }
  }
  if (!again) {
    linearWgrad(be, mlpGate, saved.input!, dgate, dw.wfc1, m, h, gateCols(D));
    linearWgrad(be, mlpUp, saved.input!, dup, dw.wfc1, m, h, upCols(D));
  }
  be.release(dgate);
  be.release(dup);
  await collectChunks(be, lc, g, labels.dgradReduce, h, dxChunks, dx);
  return { dOut, dx };
}
