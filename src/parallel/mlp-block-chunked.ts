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
  spChunking,
  type RowBlocks,
  type TpChunk,
} from './tp-overlap.ts';
import { addInPlaceKernel } from '../reference/add.ts';
import { copyColsKernel } from '../reference/copy-cols.ts';
import { swigluBackwardKernel, swigluKernel } from '../reference/swiglu.ts';

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
 * round is t − 1 ring exchanges (Collectives.ringExchange: [p, b, ·] to rank r + 1, the same from
 * r − 1); the rank multiplies its own piece before waiting for anything, then at ring step k the
 * piece exchange k delivered (block r − k), while exchange k + 1 passes that piece on: a GEMM chunk
 * waits for its own ring step, not for the round. GEMM + reduce-scatter: the round is t − 1
 * exchanges of running partials: it computes the partials of blocks r − 1, r − 2, …, its own last,
 * sends the first to r + 1 once its GEMM ends, and at step k adds the sum received from r − 1 into
 * partial k and sends that on; its own partial plus the last sum received is its reduced piece.
 * With c dividing t (c < t) there is one round of whole shards and a chunk is g = t/c ring
 * positions, dispatched as g GEMMs of one shard each (tag `part`): the group's shards are evenly
 * spaced only when it does not wrap past rank 0, and every rank must issue the same ops.
 *
 * GEMMs are row-separable, so a chunked forward or dgrad output sums the same products in the same
 * order as the whole GEMM; the exchanges of running partials sum rank r's piece in the ring order
 * of the shared-memory ring's reduce-scatter, ((p_{r+1} + p_{r+2}) + …) + p_r. What changes the
 * summation order: the wgrad summed dispatch by dispatch (s·b rows in groups of one piece) and,
 * without SP, the all-reduce of rows [j·s/c, (j+1)·s/c) whose ring blocks differ from the whole
 * tensor's; both stay within oracleTolerance's bound for a reduction of length s·b (resp. t),
 * which does not depend on the order.
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
  if (toChunk) be.kernel(op, copyColsKernel, [full, chunk], { rows: rows.blocks, n, from: fullBlock, to: chunkBlock });
  else be.kernel(op, copyColsKernel, [chunk, full], { rows: rows.blocks, n, from: chunkBlock, to: fullBlock });
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

/**
 * A chunked all-gather in flight as ring exchanges: `pieces[i][k]` is what the rank multiplies at
 * ring step k of round i: its own piece at k = 0 (held: no wait), then the piece exchange k
 * delivers from rank r − 1 (block r − k of the round).
 */
interface RingRounds<T> {
  readonly pieces: Promise<T>[][];
}

/**
 * All-gathers `shard` [sl, b, w] as t − 1 ring exchanges per round, all issued at once on the comm
 * stream (which runs them one after another): exchange k of round i sends what the rank received at
 * step k − 1 (its own piece at k = 1) to rank r + 1 and receives [p, b, w] from r − 1, so a GEMM
 * chunk waits for its own ring step only. `m` names the Megatron mapping the exchanges implement
 * (its forward all-gather, or its backward with `backward`).
 */
function exchangeRounds<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  label: string,
  m: MappingPair,
  backward: boolean,
  shard: T,
  w: number,
  role?: OpRole,
): RingRounds<T> {
  const t = g.D.t;
  const own = range(roundsOf(g)).map((i) => ownPiece(be, `${label}.piece`, g, shard, w, i));
  lc.launch();
  const pieces = own.map((x, i) => {
    const held: Promise<T>[] = [Promise.resolve(x)];
    for (let k = 1; k < t; k++) {
      const tag = ringStep(g, 'gather-gemm', i * t + k).tag;
      const op = opSpec(chunkLabel(label, tag), 'sequence', { chunk: tag, ...(role !== undefined && { role }) });
      const why = `${m.name}${backward ? ' (backward)' : ''}, ring step ${k} of ${t - 1}: send to rank r + 1, receive from r − 1 — ${m.summary}`;
      const sent = held[k - 1]!;
      held.push(lc.stream.issue(async () => lc.exchange(op, why, await sent)));
    }
    return held;
  });
  return { pieces };
}

/**
 * All-gather + GEMM in ring order: at each ring step k of each round, `gemm(step, x, xRows)` on the
 * piece step k holds (the rank's own at k = 0, before anything is awaited; at k ≥ 1 once exchange k
 * has delivered it), then `after(step, x)` (assembles it into a whole tensor); a round's pieces are
 * freed once its last GEMM is queued.
 */
async function multiplyRing<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  rounds: RingRounds<T>,
  shard: T,
  gemm: (step: ReturnType<typeof ringStep>, x: T, xRows: RowBlocks) => void,
  after?: (step: ReturnType<typeof ringStep>, x: T) => void,
): Promise<void> {
  const t = g.D.t;
  for (const i of range(roundsOf(g))) {
    const held: T[] = [];
    for (let k = 0; k < t; k++) {
      const step = ringStep(g, 'gather-gemm', i * t + k);
      const x = await rounds.pieces[i]![k]!;
      held.push(x);
      gemm(step, x, oneBlock(step.full.rows, 0));
      after?.(step, x);
      lc.launch();
    }
    release(be, shard, ...held);
  }
}

/** Frees tensors once their ops are queued (a collective may return its input: freed once), never `keep`. */
function release<T>(be: Backend<T>, keep: T, ...ts: T[]): void {
  for (const t of new Set(ts)) if (t !== keep) be.release(t);
}

/**
 * Forward with c chunks (c ≥ 2): under SP the input all-gathered by ring exchanges, gate and up
 * multiplying the rank's own piece first and each other piece as its ring step delivers it;
 * SwiGLU; down's GEMM chunk by chunk, the partial that travels farthest first and the rank's own
 * last, each partial sent on (with the running sum added) as soon as its GEMM is queued (without
 * SP: c chunks of rows, each all-reduced). Same result as mlpBlockForward.
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
    const rounds = exchangeRounds(be, lc, g, labels.gather, enter, false, x, h);
    await multiplyRing(
      be,
      lc,
      g,
      rounds,
      x,
      (step, xi, xRows) => {
        linearForwardRows(be, mlpGate, xi, xRows, w.wfc1, gate, step.full, h, gateCols(D), step.tag);
        linearForwardRows(be, mlpUp, xi, xRows, w.wfc1, up, step.full, h, upCols(D), step.tag);
      },
      kept && ((step, xi) => copyChunk(be, 'mlp.in.assemble', 'sequence', step.full, h, kept, xi, false, step.tag)),
    );
  } else {
    linearForward(be, mlpGate, x, w.wfc1, gate, m, h, gateCols(D));
    linearForward(be, mlpUp, x, w.wfc1, up, m, h, upCols(D));
  }
  const act = be.tensor('mlp.act', [s, b, f]);
  be.kernel(opSpec('mlp.swiglu', 'column'), swigluKernel, [gate, up, act], {});
  const out = be.tensor('mlp.out', [sl, b, h]);
  const downCols: WeightCols = { w: h, c0: 0, n: h };
  const down = (step: GemmChunk, y: T): void =>
    linearForwardRows(be, mlpDown, act, step.full, w.wdown, y, step.packed, f, downCols, step.tag);
  if (sp) await reduceRing(be, lc, g, mlpDown, labels.reduce, 'row', leave, false, h, down).finish(out);
  else
    await collectChunks(
      be,
      lc,
      g,
      labels.reduce,
      h,
      reduceChunks(be, lc, g, mlpDown, labels.reduce, leave, h, down),
      out,
    );
  return { out, saved: { shard: x, ...(input !== undefined && { input }), mlp: { gate, up, act } } };
}

/** Outputs of a GEMM whose all-reduces are in flight (without SP): their tensors and reduced results, per chunk. */
interface ReducingChunks<T> {
  readonly parts: T[];
  readonly reduced: Promise<T>[];
}

/** A GEMM chunk as `reduceChunks` and `reduceRing` hand it out: its tag, its rows in the full tensor and in the output it writes. */
type GemmChunk = Pick<ReturnType<typeof ringStep>, 'tag' | 'full' | 'packed'>;

/**
 * Without SP, a GEMM whose [s, b, n] output is all-reduced chunk by chunk: `gemm(chunk, y)` writes
 * chunk j's rows into a [s/c, b, n] tensor y, all-reduced (the forward of `m`) as soon as it is queued.
 */
function reduceChunks<T>(
  be: Backend<T>,
  lc: LayerComm<T>,
  g: Geometry,
  l: LinearSpec,
  label: string,
  m: MappingPair,
  n: number,
  gemm: (chunk: GemmChunk, y: T) => void,
): ReducingChunks<T> {
  const { b, s } = g.D;
  const reduced: Promise<T>[] = [];
  const parts: T[] = [];
  for (const j of range(g.c)) {
    const tag = chunkOf(j, g.c);
    const full = chunkRowsInFull(g.D, j, g.c);
    const y = be.tensor(`${l.label}.chunk`, [s / g.c, b, n]);
    gemm({ tag, full, packed: chunkRowsPacked(full) }, y);
    parts.push(y);
    const op = opSpec(chunkLabel(label, tag), 'row', { chunk: tag });
    reduced.push(lc.stream.issue(() => lc.forward(op, m, y)));
    lc.launch();
  }
  return { parts, reduced };
}

/** Copies the all-reduced chunks into `out` [s, b, n] (chunk j's rows) as they arrive (without SP). */
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
    const rj = await chunks.reduced[j]!;
    copyChunk(be, `${label}.assemble`, 'replicated', chunkRowsInFull(g.D, j, g.c), n, out, rj, false, chunkOf(j, g.c));
    lc.launch();
    release(be, out, rj, chunks.parts[j]!);
  }
}

/**
 * Under SP, a GEMM + reduce-scatter as ring exchanges of running partials (the reduce-scatter
 * side of chunkSchedule): per round i, the t GEMM chunks, partials [p, b, n] of blocks r − 1,
 * r − 2, …, the rank's own last, are queued at once and the first is sent to rank r + 1 on the comm
 * stream; `finish(out)` then, at ring step k = 1 … t − 1, adds the running sum received from
 * r − 1 (block r − k − 1's, the block of partial k) into partial k (addInPlace) and sends that on,
 * until partial t − 1, the rank's own block, holds the reduced piece, copied into piece i of
 * `out` [sl, b, n]. `m` names the Megatron mapping (its forward reduce-scatter, or its backward
 * with `backward`). Every compute op is queued in this one flow, in the same order on every rank.
 */
function reduceRing<T>(
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
): { finish: (out: T) => Promise<void> } {
  const { b, t } = g.D;
  const rounds = roundsOf(g);
  const p = g.D.sl / rounds;
  const send = (k: number, tag: TpChunk, y: T): Promise<T> => {
    const op = opSpec(chunkLabel(label, tag), split, { chunk: tag });
    const why = `${m.name}${backward ? ' (backward)' : ''}, ring step ${k + 1} of ${t - 1}: running partial to rank r + 1, from r − 1 — ${m.summary}`;
    return lc.stream.issue(() => lc.exchange(op, why, y));
  };
  const chains = range(rounds).map((i) => {
    const steps = range(t).map((k) => ringStep(g, 'gemm-reduce-scatter', i * t + k));
    const partials = steps.map((step) => {
      const y = be.tensor(`${l.label}.partial`, [p, b, n]);
      gemm({ tag: step.tag, full: step.full, packed: oneBlock(step.full.rows, 0) }, y);
      return y;
    });
    lc.launch();
    return { steps, partials, first: send(0, steps[0]!.tag, partials[0]!) };
  });
  return {
    finish: async (out) => {
      for (const i of range(rounds)) {
        const { steps, partials, first } = chains[i]!;
        let sending = first;
        const got: T[] = [];
        for (let k = 1; k < t; k++) {
          const sum = await sending;
          got.push(sum);
          const tag = steps[k]!.tag;
          be.kernel(
            opSpec(chunkLabel(`${label}.add`, tag), split, { chunk: tag }),
            addInPlaceKernel,
            [partials[k]!, sum],
            {},
          );
          lc.launch();
          if (k < t - 1) sending = send(k, tag, partials[k]!);
        }
        const rows = oneBlock(p * b, i * p * b);
        copyChunk(be, `${label}.assemble`, 'sequence', rows, n, out, partials[t - 1]!, false, chunkOf(i, rounds));
        lc.launch();
        release(be, out, ...partials, ...got);
      }
    },
  };
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
  const { enter, leave } = tensorParallelRegion(true);
  const downCols: WeightCols = { w: h, c0: 0, n: h };

  // g backward: dY [sl, b, h] all-gathered in rounds; down's dgrad per chunk in ring order.
  const dOut = be.tensor('d.mlp.out', [s, b, h]);
  const dact = be.tensor('d.mlp.act', [s, b, f]);
  const dyRounds = exchangeRounds(be, lc, g, labels.reduceBackward, leave, true, dy, h);
  await multiplyRing(
    be,
    lc,
    g,
    dyRounds,
    dy,
    (step, dyi, rows) =>
      linearDgradRows(be, mlpDown, dyi, rows, w.wdown, dact, step.full, f, downCols, false, false, step.tag),
    (step, dyi) => copyChunk(be, 'd.mlp.out.assemble', 'sequence', step.full, h, dOut, dyi, false, step.tag),
  );
  linearWgrad(be, mlpDown, saved.mlp.act, dOut, dw.wdown, m, f, downCols);
  const dgate = be.tensor('d.mlp.gate', [s, b, f]);
  const dup = be.tensor('d.mlp.up', [s, b, f]);
  be.kernel(
    opSpec('mlp.swiglu.backward', 'column'),
    swigluBackwardKernel,
    [saved.mlp.gate, saved.mlp.up, dact, dgate, dup],
    {},
  );
  be.release(dact);

  // The input's re-gather in rounds (or the kept input), issued before the dgrad chunks.
  const again =
    saved.input === undefined && labels.regather !== undefined
      ? exchangeRounds(be, lc, g, labels.regather, enter, false, saved.shard, h, 'forward')
      : undefined;
  if (!again && saved.input === undefined)
    throw new Error('mlpBlockBackwardChunked: the MLP input was neither kept nor re-gathered.');

  // gate and up's dgrad per chunk in reduce-scatter ring order, each round reduce-scattered once queued.
  const dx = be.tensor('d.mlp.in.shard', [sl, b, h]);
  const dxRing = reduceRing(be, lc, g, mlpGate, labels.dgradReduce, 'column', enter, true, h, (step, dxi) => {
    linearDgradRows(be, mlpGate, dgate, step.full, w.wfc1, dxi, step.packed, h, gateCols(D), false, false, step.tag);
    linearDgradRows(be, mlpUp, dup, step.full, w.wfc1, dxi, step.packed, h, upCols(D), true, false, step.tag);
  });

  // gate and up's wgrad per chunk in ring order: dW += Xⱼᵀ·dGⱼ over chunk j's rows.
  if (again)
    await multiplyRing(be, lc, g, again, saved.shard, (step, xi, xRows) => {
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
  await dxRing.finish(dx);
  return { dOut, dx };
}
