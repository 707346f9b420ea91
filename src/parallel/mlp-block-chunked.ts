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
import {
  chunkLabel,
  chunkRowsInFull,
  chunkRowsPacked,
  ringChunk,
  roundRowsInFull,
  spChunking,
  type RowBlocks,
  type TpChunk,
} from './tp-overlap.ts';

/**
 * The MLP block of mlp-block.ts with chunked TP communication overlap (tp-overlap.ts): its
 * column/row pair runs its GEMMs chunk by chunk in ring order while the collectives move
 * (Megatron's --tp-comm-overlap). Every rank issues the same ops in the same order (the k-th GEMM
 * chunk of a round is the ring's k-th step on every rank; which rows it takes depends on the rank,
 * ringChunk); the collectives go through the layer's CommStream, one after another, while
 * `lc.launch()` starts each GEMM chunk as soon as it is queued.
 *
 * Under SP with c = t·m chunks, round i all-gathers (or reduce-scatters) piece i of every rank's
 * shard, [p, b, ·] ↔ [t·p, b, ·] with rank q's piece as block q (p = sl/m). All-gather + GEMM: the
 * rank multiplies its own chunk before waiting for anything, then the other t − 1 chunks of the
 * round in ring order (r − 1, r − 2, …) once the round's all-gather has arrived. GEMM +
 * reduce-scatter: it computes the partials of blocks r − 1, r − 2, …, its own last, then the
 * round's reduce-scatter. The collectives are whole all-gathers and reduce-scatters of a round (the
 * transport runs their ring steps in the order chunkSchedule lists), so a GEMM chunk waits for its
 * round, not for its own ring step. With c dividing t (c < t) there is one round of whole shards
 * and a chunk is g = t/c ring positions, dispatched as g GEMMs of one shard each (tag `part`): the
 * group's shards are evenly spaced only when it does not wrap past rank 0, and every rank must
 * issue the same ops.
 *
 * GEMMs are row-separable, so a chunked forward or dgrad output sums the same products in the same
 * order as the whole GEMM; a round's reduce-scatter reduces rank r's piece in the same ring order
 * as the whole reduce-scatter. What changes the summation order: the wgrad summed dispatch by
 * dispatch (s·b rows in groups of one piece) and, without SP, the all-reduce of rows [j·s/c, (j+1)·s/c) whose ring
 * blocks differ from the whole tensor's; both stay within oracleTolerance's bound for a
 * reduction of length s·b (resp. t), which does not depend on the order.
 */

interface Geometry {
  readonly D: LocalDims;
  readonly c: number;
  readonly sp: boolean;
  /** This rank's index in the group. */
  readonly rank: number;
}

const chunkOf = (index: number, of: number): TpChunk => ({ index, of });
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
/** Rounds under SP: m pieces of each rank's shard (c/t when c ≥ t, 1 when c divides t). */
const roundsOf = (g: Geometry): number => spChunking(g.D.t, g.c).rounds;
/** One block of `rows` rows at row `at`. */
const oneBlock = (rows: number, at: number): RowBlocks => ({ blocks: 1, rows, at, stride: 0 });

/** Round i's rows in the full [s, b, ·] tensor and in its packed [t·p, b, ·] tensor (SP). */
function roundOf(g: Geometry, i: number): { full: RowBlocks; packed: RowBlocks } {
  const full = roundRowsInFull({ s: g.D.s, b: g.D.b, t: g.D.t }, i, roundsOf(g));
  return { full, packed: chunkRowsPacked(full) };
}

/**
 * The GEMM dispatch at ring position n = i·t + k of `pattern` under SP: its tag (chunk n of c, or
 * with c < t part n mod g of chunk ⌊n/g⌋), its piece's rows in the full [s, b, ·] tensor, and its
 * block's rows in the round's packed tensor.
 */
function ringStep(
  g: Geometry,
  pattern: 'gather-gemm' | 'gemm-reduce-scatter',
  n: number,
): { n: number; tag: TpChunk; full: RowBlocks; packed: RowBlocks; block: number } {
  const { group, pieces } = spChunking(g.D.t, g.c);
  const { chunk, block } = ringChunk(pattern, g.D.t, g.c, g.rank, n);
  const full = chunkRowsInFull(g.D, chunk, pieces);
  const tag: TpChunk =
    group === 1 ? chunkOf(n, g.c) : { ...chunkOf(Math.floor(n / group), g.c), part: chunkOf(n % group, group) };
  return { n, tag, full, packed: oneBlock(full.rows, block * full.rows), block };
}

/**
 * Copies rows between a full [s, b, w] tensor and a packed tensor [blocks·rows, w] — one
 * column-block copy over the blocks viewed as [blocks, ·] matrices. `toChunk`: full → packed.
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

/**
 * This rank's piece i [p, b, w] of its [sl, b, w] shard, what round i's all-gather sends: the shard
 * itself when m = 1, else copied into a tensor of its own.
 */
function ownPiece<T>(be: Backend<T>, label: string, g: Geometry, shard: T, w: number, i: number): T {
  const m = roundsOf(g);
  if (m === 1) return shard;
  const p = g.D.sl / m;
  const piece = be.tensor(label, [p, g.D.b, w]);
  copyChunk(be, label, 'sequence', oneBlock(p * g.D.b, i * p * g.D.b), w, shard, piece, true, chunkOf(i, m));
  return piece;
}

/** A chunked all-gather in flight: each round's own piece (held: no wait) and its gathered [t·p, b, w]. */
interface GatheringRounds<T> {
  readonly pieces: T[];
  readonly gathered: Promise<T>[];
}

/**
 * All-gathers `shard` [sl, b, w] round by round through the comm stream: every own piece is taken,
 * then round i's all-gather (the forward half of `m`, or its backward with `backward`) is issued.
 */
function gatherRounds<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  label: string,
  m: MappingPair,
  backward: boolean,
  shard: T,
  w: number,
  role?: OpRole,
): GatheringRounds<T> {
  const rounds = roundsOf(g);
  const pieces = range(rounds).map((i) => ownPiece(be, `${label}.piece`, g, shard, w, i));
  lc.launch();
  const gathered = pieces.map((x, i) => {
    const op = opSpec(chunkLabel(label, chunkOf(i, rounds)), 'sequence', {
      chunk: chunkOf(i, rounds),
      ...(role !== undefined && { role }),
    });
    return lc.stream.issue(() => (backward ? lc.backward(op, m, x) : lc.forward(op, m, x)));
  });
  return { pieces, gathered };
}

/**
 * All-gather + GEMM in ring order: for each round, `gemm(step, x, xRows)` on the rank's own chunk
 * (its piece: no wait), then, once the round has arrived, on the other t − 1 chunks of the
 * gathered tensor in ring order; `after(i, gathered)` then runs (assembles), and the round's
 * tensors are freed.
 */
async function multiplyGathered<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  rounds: GatheringRounds<T>,
  shard: T,
  gemm: (step: ReturnType<typeof ringStep>, x: T, xRows: RowBlocks) => void,
  after?: (i: number, gathered: T) => void,
): Promise<void> {
  const t = g.D.t;
  for (const i of range(roundsOf(g))) {
    const own = ringStep(g, 'gather-gemm', i * t);
    gemm(own, rounds.pieces[i]!, oneBlock(own.full.rows, 0));
    lc.launch();
    const xi = await rounds.gathered[i]!;
    for (let k = 1; k < t; k++) {
      const step = ringStep(g, 'gather-gemm', i * t + k);
      gemm(step, xi, step.packed);
    }
    after?.(i, xi);
    lc.launch();
    release(be, shard, xi, rounds.pieces[i]!);
  }
}

/** Frees tensors once their ops are queued (a collective may return its input: freed once), never `keep`. */
function release<T>(be: Backend<T>, keep: T, ...ts: T[]): void {
  for (const t of new Set(ts)) if (t !== keep) be.release(t);
}

/**
 * Forward with c chunks (c ≥ 2): under SP the input all-gathered in m = c/t rounds, gate and up
 * multiplying the rank's own chunk first and the others in ring order as their round arrives;
 * SwiGLU; down's GEMM chunk by chunk, the partial that travels farthest first and the rank's own
 * last, each round reduce-scattered as soon as it is queued (without SP: c chunks of rows, each
 * all-reduced). Same result as mlpBlockForward.
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
  const g: Geometry = { D, c, sp, rank: lc.comm.rank };
  const { s, b, h, f, sl } = D;
  const m = s * b;
  const { enter, leave } = tensorParallelRegion(sp);
  const gate = be.tensor('mlp.gate', [s, b, f]);
  const up = be.tensor('mlp.up', [s, b, f]);
  let input: T | undefined = x;
  if (sp) {
    const keep = labels.regather === undefined;
    const kept = keep ? be.tensor('mlp.in', [s, b, h]) : undefined;
    input = kept;
    const rounds = gatherRounds(be, lc, g, labels.gather, enter, false, x, h);
    await multiplyGathered(
      be,
      lc,
      g,
      rounds,
      x,
      (step, xi, xRows) => {
        linearForwardRows(be, mlpGate, xi, xRows, w.wfc1, gate, step.full, h, gateCols(D), step.tag);
        linearForwardRows(be, mlpUp, xi, xRows, w.wfc1, up, step.full, h, upCols(D), step.tag);
      },
      kept &&
        ((i, xi) =>
          copyChunk(
            be,
            'mlp.in.assemble',
            'sequence',
            roundOf(g, i).full,
            h,
            kept,
            xi,
            false,
            chunkOf(i, roundsOf(g)),
          )),
    );
  } else {
    linearForward(be, mlpGate, x, w.wfc1, gate, m, h, gateCols(D));
    linearForward(be, mlpUp, x, w.wfc1, up, m, h, upCols(D));
  }
  const act = be.tensor('mlp.act', [s, b, f]);
  be.swiglu(opSpec('mlp.swiglu', 'column'), gate, up, act);
  const out = be.tensor('mlp.out', [sl, b, h]);
  const downCols: WeightCols = { w: h, c0: 0, n: h };
  const reducing = reduceChunks(be, lc, g, mlpDown, labels.reduce, 'row', leave, false, h, (step, y) =>
    linearForwardRows(be, mlpDown, act, step.full, w.wdown, y, step.packed, f, downCols, step.tag),
  );
  await collectChunks(be, lc, g, labels.reduce, h, reducing, out);
  return { out, saved: { shard: x, ...(input !== undefined && { input }), mlp: { gate, up, act } } };
}

/** Outputs of a GEMM whose reductions are in flight: their packed tensors and reduced results (per round under SP, per chunk without). */
interface ReducingChunks<T> {
  readonly parts: T[];
  readonly reduced: Promise<T>[];
}

/** A GEMM chunk as `reduceChunks` hands it out: its tag, its rows in the full tensor and in the packed output. */
type GemmChunk = Pick<ReturnType<typeof ringStep>, 'tag' | 'full' | 'packed'>;

/**
 * A GEMM whose [s, b, n] output is reduced over the group, chunk by chunk: `gemm(chunk, y)` writes
 * the chunk's rows into a packed tensor y. Under SP, round i's t chunks go into one [t·p, b, n] in
 * reduce-scatter ring order (the partial of block r − 1 first, the rank's own last), then the
 * round's reduce-scatter (the forward of `m`, or its backward with `backward`) is issued on the comm
 * stream; without SP each chunk [s/c, b, n] is all-reduced as soon as it is queued.
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
  gemm: (chunk: GemmChunk, y: T) => void,
): ReducingChunks<T> {
  const { b, t, s } = g.D;
  const reduced: Promise<T>[] = [];
  const parts: T[] = [];
  const issue = (y: T, tag: TpChunk): void => {
    parts.push(y);
    const op = opSpec(chunkLabel(label, tag), split, { chunk: tag });
    reduced.push(lc.stream.issue(() => (backward ? lc.backward(op, m, y) : lc.forward(op, m, y))));
    lc.launch();
  };
  if (g.sp) {
    const rounds = roundsOf(g);
    for (const i of range(rounds)) {
      const y = be.tensor(`${l.label}.chunk`, [(t * g.D.sl) / rounds, b, n]);
      for (let k = 0; k < t; k++) gemm(ringStep(g, 'gemm-reduce-scatter', i * t + k), y);
      issue(y, chunkOf(i, rounds));
    }
  } else {
    for (const j of range(g.c)) {
      const full = chunkRowsInFull(g.D, j, g.c);
      const y = be.tensor(`${l.label}.chunk`, [s / g.c, b, n]);
      gemm({ tag: chunkOf(j, g.c), full, packed: chunkRowsPacked(full) }, y);
      issue(y, chunkOf(j, g.c));
    }
  }
  return { parts, reduced };
}

/**
 * Copies the reduced results into `out` as they arrive: under SP round i's [p, b, n] is piece i of
 * the rank's [sl, b, n]; without SP chunk j's rows of [s, b, n].
 */
async function collectChunks<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  label: string,
  n: number,
  chunks: ReducingChunks<T>,
  out: T,
): Promise<void> {
  const of = chunks.reduced.length;
  for (const j of range(of)) {
    const rj = await chunks.reduced[j]!;
    const rows = g.sp ? oneBlock((g.D.sl / of) * g.D.b, (j * g.D.sl * g.D.b) / of) : chunkRowsInFull(g.D, j, g.c);
    copyChunk(be, `${label}.assemble`, g.sp ? 'sequence' : 'replicated', rows, n, out, rj, false, chunkOf(j, of));
    lc.launch();
    release(be, out, rj, chunks.parts[j]!);
  }
}

/**
 * Backward under SP with c chunks (c = t·m, or c dividing t): g's backward all-gathers dY in rounds, down's dgrad on the
 * rank's own chunk first and the others in ring order (its wgrad on the assembled dY); SwiGLU
 * backward; the input re-gathered in rounds, gate and up's dgrad chunk by chunk in reduce-scatter
 * ring order, each round reduce-scattered at once; their wgrad summed chunk by chunk in ring order
 * (the own chunk from the saved shard, before the re-gather arrives). Same results as
 * mlpBlockBackward (SP).
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
  const g: Geometry = { D, c, sp: true, rank: lc.comm.rank };
  const { s, b, h, f, sl } = D;
  const m = s * b;
  const rounds = roundsOf(g);
  const { enter, leave } = tensorParallelRegion(true);
  const downCols: WeightCols = { w: h, c0: 0, n: h };

  // g backward: dY [sl, b, h] all-gathered in rounds; down's dgrad per chunk in ring order.
  const dOut = be.tensor('d.mlp.out', [s, b, h]);
  const dact = be.tensor('d.mlp.act', [s, b, f]);
  const dyRounds = gatherRounds(be, lc, g, labels.reduceBackward, leave, true, dy, h);
  await multiplyGathered(
    be,
    lc,
    g,
    dyRounds,
    dy,
    (step, dyi, rows) =>
      linearDgradRows(be, mlpDown, dyi, rows, w.wdown, dact, step.full, f, downCols, false, false, step.tag),
    (i, dyi) =>
      copyChunk(be, 'd.mlp.out.assemble', 'sequence', roundOf(g, i).full, h, dOut, dyi, false, chunkOf(i, rounds)),
  );
  linearWgrad(be, mlpDown, saved.mlp.act, dOut, dw.wdown, m, f, downCols);
  const dgate = be.tensor('d.mlp.gate', [s, b, f]);
  const dup = be.tensor('d.mlp.up', [s, b, f]);
  be.swigluBackward(opSpec('mlp.swiglu.backward', 'column'), saved.mlp.gate, saved.mlp.up, dact, dgate, dup);
  be.release(dact);

  // The input's re-gather in rounds (or the kept input), issued before the dgrad chunks.
  const again =
    saved.input === undefined && labels.regather !== undefined
      ? gatherRounds(be, lc, g, labels.regather, enter, false, saved.shard, h, 'forward')
      : undefined;
  if (!again && saved.input === undefined)
    throw new Error('mlpBlockBackwardChunked: the MLP input was neither kept nor re-gathered.');

  // gate and up's dgrad per chunk in reduce-scatter ring order, each round reduce-scattered once queued.
  const dx = be.tensor('d.mlp.in.shard', [sl, b, h]);
  const dxChunks = reduceChunks(be, lc, g, mlpGate, labels.dgradReduce, 'column', enter, true, h, (step, dxi) => {
    linearDgradRows(be, mlpGate, dgate, step.full, w.wfc1, dxi, step.packed, h, gateCols(D), false, false, step.tag);
    linearDgradRows(be, mlpUp, dup, step.full, w.wfc1, dxi, step.packed, h, upCols(D), true, false, step.tag);
  });

  // gate and up's wgrad per chunk in ring order: dW += Xⱼᵀ·dGⱼ over chunk j's rows.
  if (again)
    await multiplyGathered(be, lc, g, again, saved.shard, (step, xi, xRows) => {
      const at = { x: xRows.at, dy: step.full.at };
      const acc = step.n > 0;
      linearWgrad(be, mlpGate, xi, dgate, dw.wfc1, xRows.rows, h, gateCols(D), acc, step.tag, at);
      linearWgrad(be, mlpUp, xi, dup, dw.wfc1, xRows.rows, h, upCols(D), acc, step.tag, at);
    });
  else {
    linearWgrad(be, mlpGate, saved.input!, dgate, dw.wfc1, m, h, gateCols(D));
    linearWgrad(be, mlpUp, saved.input!, dup, dw.wfc1, m, h, upCols(D));
  }
  be.release(dgate);
  be.release(dup);
  await collectChunks(be, lc, g, labels.dgradReduce, h, dxChunks, dx);
  return { dOut, dx };
}
