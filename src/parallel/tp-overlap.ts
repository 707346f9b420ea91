import { agRecvChunk, agSendChunk, rsRecvChunk, rsSendChunk } from '../comm/ring-schedule.ts';
import type { LayerConfig } from './config.ts';
import { quoted } from '../core/quote.ts';

/**
 * Chunked tensor-parallel communication overlap (Megatron's `--tp-comm-overlap`; the "collective
 * matmul" decomposition of Wang et al., ASPLOS 2023, and Transformer Engine's userbuffers ring
 * exchange): the collective at a ColumnParallelLinear's input or a RowParallelLinear's output is
 * cut into c chunks along the sequence, and the GEMM runs chunk by chunk in ring order.
 *
 * Without SP chunk j of c is token rows [j·s/c, (j+1)·s/c) of the full [s, b, ·] tensor, and chunk
 * j's rows of the row-parallel output are all-reduced (c divides s).
 *
 * Under SP (t ranks, sl = s/t tokens each) the ring moves pieces: the full tensor is P = t·m pieces
 * of s/P tokens, rank q's shard holding pieces q·m … q·m + m − 1, and the collective runs in m
 * rounds, round i moving pieces {q·m + i : q < t} (piece i of every shard) in t − 1 ring steps.
 * Ring position n = i·t + k is the piece a rank takes at step k of round i: for an all-gather
 * its own piece first (it holds it: no wait), then those of r − 1, r − 2, … as the ring brings
 * them; for a reduce-scatter the partial that travels farthest first (block r − 1), its own block
 * last. A GEMM chunk is g consecutive ring positions (spChunking):
 * - c = t·m (m dividing sl): m rounds, g = 1, one piece per chunk;
 * - c dividing t (c < t): one round of whole shards (m = 1), g = t/c shards per chunk: rank r's
 *   first all-gather chunk is its own shard with r − 1, …, r − g + 1; its last reduce-scatter
 *   chunk ends with its own block.
 */

/**
 * Which chunk of how many an op belongs to (absent on an op that is not chunked). A GEMM chunk's
 * index is its position in the rank's ring order (under SP: ⌊n/g⌋ for ring position n; the first
 * all-gather chunk holds the rank's own piece), the same on every rank, so every rank runs the
 * same plan; `ringChunk` gives the piece of rows at each position. A chunked collective's index is
 * its round i of m (without SP: its chunk j of c). `part`: under SP with c < t a chunk's g shards
 * are g GEMM dispatches, one per shard (they are evenly spaced in memory only when the group does
 * not wrap past rank 0, and every rank must issue the same ops); part j of g.
 */
export interface TpChunk {
  readonly index: number;
  readonly of: number;
  readonly part?: { readonly index: number; readonly of: number };
}

/** The page and CLI setting: off, or c chunks. */
export type TpOverlap = { readonly mode: 'off' } | { readonly mode: 'chunks'; readonly chunks: number };

/** An op's label with its chunk: "mlp.up[2/4]", with a part "mlp.up[1/2]#2" (labels are for people; the chunk field is for code). */
export const chunkLabel = (label: string, chunk?: TpChunk): string =>
  chunk ? `${label}[${chunk.index + 1}/${chunk.of}]${chunk.part ? `#${chunk.part.index + 1}` : ''}` : label;

/** The chunk count of a configuration: 1 when chunked overlap is off. */
export const tpOverlapChunks = (c: Pick<LayerConfig, 'tpOverlapChunks'>): number => c.tpOverlapChunks ?? 1;

/** The setting as the page's hash writes it: "off" or "chunks:c". */
export function formatTpOverlap(o: TpOverlap): string {
  return o.mode === 'off' ? 'off' : `chunks:${o.chunks}`;
}

/** Parses "off" or "chunks:c" (c ≥ 2), or throws saying what to write. */
export function parseTpOverlap(text: string): TpOverlap {
  const t = text.trim().toLowerCase();
  if (t === 'off' || t === '' || t === '0' || t === '1') return { mode: 'off' };
  const m = /^chunks:(\d+)$/.exec(t);
  const c = m ? Number(m[1]) : NaN;
  if (!(Number.isSafeInteger(c) && c >= 2))
    throw new Error(`tpoverlap must be "off" or "chunks:c" with a whole c ≥ 2 (e.g. chunks:4), got ${quoted(text)}.`);
  return { mode: 'chunks', chunks: c };
}

/** The chunk count a setting gives (1 = off). */
export const chunksOf = (o: TpOverlap): number => (o.mode === 'off' ? 1 : o.chunks);

/** The setting a chunk count stands for. */
export const tpOverlapOf = (chunks: number): TpOverlap => (chunks > 1 ? { mode: 'chunks', chunks } : { mode: 'off' });

/**
 * Token rows of a [rows, ·] matrix as t equal blocks: block i is rows [at + i·stride, at + i·stride + rows).
 * A strided GEMM takes it as a batch (batch = blocks, batch stride = stride·width).
 */
export interface RowBlocks {
  readonly blocks: number;
  readonly rows: number;
  readonly at: number;
  readonly stride: number;
}

/** All m rows as one block. */
export const allRows = (m: number): RowBlocks => ({ blocks: 1, rows: m, at: 0, stride: 0 });

/** Chunk j of c in the full [s, b, ·] tensor: one block of (s/c)·b rows at j·(s/c)·b (s tokens, b rows per token). */
export function chunkRowsInFull(d: { readonly s: number; readonly b: number }, j: number, c: number): RowBlocks {
  const rows = (d.s / c) * d.b;
  return { blocks: 1, rows, at: j * rows, stride: 0 };
}

/**
 * Under SP, what round i of m moves: piece i (p = sl/m tokens) of every rank's [sl, b, ·] shard,
 * the t blocks of p·b rows at r·sl·b + i·p·b in the full tensor (chunks {r·m + i : r < t}).
 */
export function roundRowsInFull(
  d: { readonly s: number; readonly b: number; readonly t: number },
  i: number,
  m: number,
): RowBlocks {
  const sl = d.s / d.t;
  const p = sl / m;
  return { blocks: d.t, rows: p * d.b, at: i * p * d.b, stride: sl * d.b };
}

/** The same rows packed contiguously in a tensor of their own ([t·p, b, ·] for a round under SP, [s/c, b, ·] for a chunk). */
export function chunkRowsPacked(rows: RowBlocks): RowBlocks {
  return { ...rows, at: 0, stride: rows.blocks > 1 ? rows.rows : 0 };
}

/**
 * How c chunks cut the ring under SP at t ranks: `rounds` m (pieces per shard, one collective each),
 * `group` g (ring positions per GEMM chunk), `pieces` P = t·m. c = t·m → (m, 1); c dividing t →
 * (1, t/c). Throws for any other c.
 */
export function spChunking(
  t: number,
  c: number,
): { readonly rounds: number; readonly group: number; readonly pieces: number } {
  if (c >= t && c % t === 0) return { rounds: c / t, group: 1, pieces: c };
  if (c >= 1 && c < t && t % c === 0) return { rounds: 1, group: t / c, pieces: t };
  throw new Error(
    `under SP c must divide t or be a multiple of it (a chunk is a group of t/c shards, or a piece of one), got c = ${c}, t = ${t}.`,
  );
}

/**
 * Under SP, the piece rank `rank` multiplies at ring position n (round i = ⌊n/t⌋, step k = n mod t)
 * of a `gather-gemm` or `gemm-reduce-scatter` pattern with c chunks (spChunking), and the rank whose
 * shard holds it (its block in the round's gathered or reduce-scattered tensor). `chunk` is the
 * piece's index of P = t·m (rows [chunk·s/P, (chunk+1)·s/P)).
 */
export function ringChunk(
  pattern: Exclude<ChunkPattern, 'gemm-all-reduce'>,
  t: number,
  c: number,
  rank: number,
  n: number,
): { readonly chunk: number; readonly block: number } {
  const m = spChunking(t, c).rounds;
  const i = Math.floor(n / t);
  const k = n % t;
  // All-gather: step k multiplies what the ring step sends (own at k = 0). Reduce-scatter: the
  // partial it sends at step k (rsSendChunk), its own block at the last step.
  const block = pattern === 'gather-gemm' ? agSendChunk(rank, k, t) : rsSendChunk(rank, k, t);
  return { chunk: block * m + i, block };
}

/** One piece of a chunk: rows of ring block `block` of chunk `chunk` (an all-reduce's ring moves a chunk in t blocks). */
export interface ChunkPiece {
  readonly block: number;
  readonly chunk: number;
}

/** One ring step of a chunk's all-reduce on one rank: the piece it sends to rank r + 1 and the one it receives from rank r − 1. */
export interface RingTransfer {
  readonly send: ChunkPiece;
  readonly recv: ChunkPiece;
}

/**
 * One stage of a rank's chunk schedule. Under SP (ring exchange, one stage per ring position):
 * `multiply`, the pieces whose GEMM chunk starts in this stage (one piece when c ≥ t, g = t/c whole
 * shards in ring order when c < t), and `send` / `recv`, the piece sent to rank r + 1 and received
 * from r − 1 in the same stage (absent at a round's last step). Without SP: `multiply` (chunk j
 * alone) and `allReduce`, the chunk whose all-reduce moves, with its ring steps.
 */
export interface ChunkStage {
  readonly multiply?: readonly number[];
  readonly send?: number;
  readonly recv?: number;
  readonly allReduce?: { readonly chunk: number; readonly steps: readonly RingTransfer[] };
}

/**
 * Which chunked pattern: `gather-gemm` (ColumnParallelLinear under SP: the forward input, the
 * backward all-gather of the upstream gradient and the re-gather for the wgrad: all-gather, GEMM on
 * each chunk), `gemm-reduce-scatter` (RowParallelLinear output under SP, and the column-parallel
 * dgrad: GEMM on each chunk, reduce-scatter), `gemm-all-reduce` (RowParallelLinear output without SP).
 */
export type ChunkPattern = 'gather-gemm' | 'gemm-reduce-scatter' | 'gemm-all-reduce';

/** Ring all-reduce of chunk `chunk` on rank `rank`: a reduce-scatter of its t blocks, then an all-gather of the reduced blocks. */
function allReduceSteps(rank: number, t: number, chunk: number): RingTransfer[] {
  const steps: RingTransfer[] = [];
  const piece = (block: number): ChunkPiece => ({ block, chunk });
  for (let k = 0; k < t - 1; k++)
    steps.push({ send: piece(rsSendChunk(rank, k, t)), recv: piece(rsRecvChunk(rank, k, t)) });
  for (let k = 0; k < t - 1; k++)
    steps.push({ send: piece(agSendChunk(rank, k, t)), recv: piece(agRecvChunk(rank, k, t)) });
  return steps;
}

/**
 * Rank `rank`'s chunk schedule.
 *
 * Under SP (spChunking: m rounds, g positions per chunk): m rounds of t stages, stage (i, k) at
 * position i·t + k. `gather-gemm` (collective matmul's all-gather + GEMM): the rank sends piece
 * (r − k)·m + i to r + 1 and receives (r − k − 1)·m + i from r − 1 — its own at k = 0, then each
 * as the ring brings it; a GEMM chunk starts at the stage where its last piece is held (k ≡ g − 1
 * mod g: at once when g = 1). `gemm-reduce-scatter` (GEMM + reduce-scatter): the rank sends the
 * partial of piece (r − k − 1)·m + i (added to the partial received at the step before) to r + 1,
 * receiving the running sum of (r − k − 2)·m + i; a GEMM chunk starts at the stage that sends its
 * first partial (k ≡ 0 mod g), its last chunk ends with the rank's own block, to which it adds the
 * sum received at k = t − 2: its reduced piece.
 *
 * Without SP (`gemm-all-reduce`, c chunks of rows): c + 1 stages, stage i runs the GEMM of chunk i
 * (i < c) while chunk i − 1 is all-reduced (i ≥ 1).
 */
export function chunkSchedule(pattern: ChunkPattern, t: number, c: number, rank: number): ChunkStage[] {
  if (!(Number.isInteger(t) && t >= 2)) throw new Error(`chunkSchedule: t must be a whole number ≥ 2, got ${t}.`);
  if (!(Number.isInteger(c) && c >= 1)) throw new Error(`chunkSchedule: c must be a whole number ≥ 1, got ${c}.`);
  if (!(Number.isInteger(rank) && rank >= 0 && rank < t))
    throw new Error(`chunkSchedule: rank ${rank} is not in a group of ${t}.`);
  if (pattern === 'gemm-all-reduce') {
    const stages: ChunkStage[] = [];
    for (let i = 0; i <= c; i++)
      stages.push({
        ...(i < c && { multiply: [i] }),
        ...(i >= 1 && { allReduce: { chunk: i - 1, steps: allReduceSteps(rank, t, i - 1) } }),
      });
    return stages;
  }
  let cut: ReturnType<typeof spChunking>;
  try {
    cut = spChunking(t, c);
  } catch (e) {
    throw new Error(`chunkSchedule: ${(e as Error).message}`, { cause: e });
  }
  const { rounds: m, group: g, pieces } = cut;
  const gather = pattern === 'gather-gemm';
  const piece = (n: number): number => ringChunk(pattern, t, c, rank, n).chunk;
  const stages: ChunkStage[] = [];
  for (let n = 0; n < pieces; n++) {
    const i = Math.floor(n / t);
    const k = n % t;
    // The chunk's first ring position: all-gather, the chunk ending here; reduce-scatter, the one starting here.
    const first = gather ? n - g + 1 : n;
    const starts = gather ? k % g === g - 1 : k % g === 0;
    const multiply = starts ? Array.from({ length: g }, (_, j) => piece(first + j)) : undefined;
    const recv = (gather ? agRecvChunk(rank, k, t) : rsRecvChunk(rank, k, t)) * m + i;
    stages.push({ ...(multiply && { multiply }), ...(k < t - 1 && { send: piece(n), recv }) });
  }
  return stages;
}

/**
 * Why c chunks cannot run on a configuration, or undefined when they can. Under SP c divides t (a
 * chunk is t/c whole shards) or c = t·m with m dividing each rank's s/t tokens (a chunk is a piece
 * of a shard); without SP c divides s. At t = 1 there is nothing to overlap and the chunks are ignored (tpOverlapNote says so).
 */
export function tpOverlapProblem(c: Pick<LayerConfig, 's' | 'tp' | 'sp' | 'tpOverlapChunks'>): string | undefined {
  const k = tpOverlapChunks(c);
  if (k === 1) return undefined;
  if (!(Number.isSafeInteger(k) && k >= 2)) return `tpoverlap chunks must be a whole number ≥ 2, got ${k}.`;
  if (c.tp < 2) return undefined;
  const legal = legalTpOverlapChunks(c);
  const ok = legal.includes(k);
  if (ok) return undefined;
  const counts = `legal chunk counts are ${legal.length ? legal.join(', ') : 'none'}, or set tpoverlap=off.`;
  return c.sp
    ? `tpoverlap=chunks:${k} must divide t = ${c.tp} or be t times a divisor of each rank's s/t = ${c.s}/${c.tp} tokens (under SP a chunk is t/c whole shards, or an equal piece of one, taken in ring order): ${counts}`
    : `tpoverlap=chunks:${k} must divide the s = ${c.s} tokens (chunks cut the sequence): ${counts}`;
}

/**
 * The chunk counts ≥ 2 a configuration at t ≥ 2 can run, ascending: under SP the divisors of t
 * below t and t·m with m dividing s/t (none when t does not divide s); the divisors of s without.
 */
export function legalTpOverlapChunks(c: Pick<LayerConfig, 's' | 'tp' | 'sp'>): number[] {
  const legal: number[] = [];
  if (c.sp) {
    const sl = c.s / c.tp;
    if (Number.isInteger(sl)) {
      for (let d = 2; d < c.tp; d++) if (c.tp % d === 0) legal.push(d);
      for (let m = 1; m <= sl; m++) if (sl % m === 0 && c.tp * m >= 2) legal.push(c.tp * m);
    }
  } else for (let d = 2; d <= c.s; d++) if (c.s % d === 0) legal.push(d);
  return legal;
}

/** A note when chunks are set where they do nothing (t = 1: no TP communication to overlap). */
export function tpOverlapNote(c: Pick<LayerConfig, 'tp' | 'tpOverlapChunks'>): string | undefined {
  const k = tpOverlapChunks(c);
  return k > 1 && c.tp < 2
    ? `tpoverlap=chunks:${k} does nothing at t = 1: there is no TP communication to overlap.`
    : undefined;
}
