import { agRecvChunk, agSendChunk, rsRecvChunk, rsSendChunk } from '../comm/ring-schedule.ts';
import type { LayerConfig } from './config.ts';
import { quoted } from '../core/quote.ts';

/**
 * Chunked tensor-parallel communication overlap (Megatron's `--tp-comm-overlap`; the "collective
 * matmul" decomposition of Wang et al., ASPLOS 2023): the collective at a ColumnParallelLinear's
 * input or a RowParallelLinear's output is cut into c chunks along the sequence, and each GEMM
 * chunk runs while the next chunk moves round the ring.
 *
 * Under SP with t ranks holding sl = s/t tokens each, chunk j of c is piece j (p = sl/c tokens)
 * of every rank's shard: the t blocks of rows [r·sl + j·p, r·sl + (j+1)·p), r < t. All-gathering
 * it takes the pieces in ring order (rank r sends its own piece first, then forwards what it
 * received from r − 1); reduce-scattering it leaves rank r the sum of its own piece j. Without SP,
 * chunk j is rows [j·s/c, (j+1)·s/c) of the row-parallel output, all-reduced.
 */

/** Which chunk of how many an op belongs to (absent on an op that is not chunked). */
export interface TpChunk {
  readonly index: number;
  readonly of: number;
}

/** The page and CLI setting: off, or c chunks. */
export type TpOverlap = { readonly mode: 'off' } | { readonly mode: 'chunks'; readonly chunks: number };

/** An op's label with its chunk: "mlp.up[2/4]" (labels are for people; the chunk field is for code). */
export const chunkLabel = (label: string, chunk?: TpChunk): string =>
  chunk ? `${label}[${chunk.index + 1}/${chunk.of}]` : label;

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

/**
 * Where chunk j of c lies in the full [s, b, ·] tensor (token rows, b rows per position). Under SP
 * (sl = s/t): t blocks of p·b rows, p = sl/c, block r at r·sl·b + j·p·b. Without SP: one block of
 * (s/c)·b rows at j·(s/c)·b.
 */
export function chunkRowsInFull(
  d: { readonly s: number; readonly b: number; readonly t: number; readonly sp: boolean },
  j: number,
  c: number,
): RowBlocks {
  if (!d.sp) return { blocks: 1, rows: (d.s / c) * d.b, at: (j * d.s * d.b) / c, stride: 0 };
  const sl = d.s / d.t;
  const p = sl / c;
  return { blocks: d.t, rows: p * d.b, at: j * p * d.b, stride: sl * d.b };
}

/** The same rows packed contiguously in the chunk's own tensor ([t·p, b, ·] under SP, [s/c, b, ·] without). */
export function chunkRowsPacked(rows: RowBlocks): RowBlocks {
  return { ...rows, at: 0, stride: rows.blocks > 1 ? rows.rows : 0 };
}

/** One piece of a chunk: rows of rank `block`'s part of chunk `chunk` (all-gather: its shard; reduce-scatter and all-reduce: its ring block). */
export interface ChunkPiece {
  readonly block: number;
  readonly chunk: number;
}

/** One ring step of a chunk's collective on one rank: the piece it sends to rank r + 1 and the one it receives from rank r − 1. */
export interface RingTransfer {
  readonly send: ChunkPiece;
  readonly recv: ChunkPiece;
}

/**
 * One stage of a rank's chunk schedule: the chunk whose collective moves (its ring steps) and the
 * chunk whose GEMM runs at the same time. Absent: nothing of that kind in this stage.
 */
export interface ChunkStage {
  readonly comm?: { readonly chunk: number; readonly steps: readonly RingTransfer[] };
  readonly multiply?: number;
}

/**
 * Which chunked pattern: `gather-gemm` (ColumnParallelLinear under SP: all-gather chunk j, then
 * its GEMM chunk; forward input, the backward all-gather of the upstream gradient and the
 * re-gather for the wgrad), `gemm-reduce-scatter` (RowParallelLinear output under SP, and the
 * column-parallel dgrad), `gemm-all-reduce` (RowParallelLinear output without SP).
 */
export type ChunkPattern = 'gather-gemm' | 'gemm-reduce-scatter' | 'gemm-all-reduce';

function ringSteps(pattern: ChunkPattern, rank: number, t: number, chunk: number): RingTransfer[] {
  const steps: RingTransfer[] = [];
  const piece = (block: number): ChunkPiece => ({ block, chunk });
  const rs = (): void => {
    for (let k = 0; k < t - 1; k++)
      steps.push({ send: piece(rsSendChunk(rank, k, t)), recv: piece(rsRecvChunk(rank, k, t)) });
  };
  const ag = (): void => {
    for (let k = 0; k < t - 1; k++)
      steps.push({ send: piece(agSendChunk(rank, k, t)), recv: piece(agRecvChunk(rank, k, t)) });
  };
  if (pattern === 'gather-gemm') ag();
  else if (pattern === 'gemm-reduce-scatter') rs();
  else {
    // Ring all-reduce: a reduce-scatter (after which rank r holds block r reduced), then an all-gather of the reduced blocks.
    rs();
    ag();
  }
  return steps;
}

/**
 * Rank `rank`'s chunk schedule over c + 1 stages. gather-gemm: stage i moves chunk i (i < c) while
 * the GEMM of chunk i − 1 runs (i ≥ 1) — each GEMM chunk is dispatched as its input chunk
 * arrives. gemm-reduce-scatter and gemm-all-reduce: stage i runs the GEMM of chunk i (i < c) while
 * chunk i − 1 is reduced (i ≥ 1) — each chunk's reduction starts as its GEMM chunk completes.
 */
export function chunkSchedule(pattern: ChunkPattern, t: number, c: number, rank: number): ChunkStage[] {
  if (!(Number.isInteger(t) && t >= 2)) throw new Error(`chunkSchedule: t must be a whole number ≥ 2, got ${t}.`);
  if (!(Number.isInteger(c) && c >= 1)) throw new Error(`chunkSchedule: c must be a whole number ≥ 1, got ${c}.`);
  if (!(Number.isInteger(rank) && rank >= 0 && rank < t))
    throw new Error(`chunkSchedule: rank ${rank} is not in a group of ${t}.`);
  const stages: ChunkStage[] = [];
  const gatherFirst = pattern === 'gather-gemm';
  for (let i = 0; i <= c; i++) {
    const commChunk = gatherFirst ? i : i - 1;
    const gemmChunk = gatherFirst ? i - 1 : i;
    stages.push({
      ...(commChunk >= 0 &&
        commChunk < c && { comm: { chunk: commChunk, steps: ringSteps(pattern, rank, t, commChunk) } }),
      ...(gemmChunk >= 0 && gemmChunk < c && { multiply: gemmChunk }),
    });
  }
  return stages;
}

/**
 * Why c chunks cannot run on a configuration, or undefined when they can: c must divide the
 * tokens each chunk cuts (sl = s/t under SP, s without). At t = 1 there is nothing to overlap and
 * the chunks are ignored (tpOverlapNote says so).
 */
export function tpOverlapProblem(c: Pick<LayerConfig, 's' | 'tp' | 'sp' | 'tpOverlapChunks'>): string | undefined {
  const k = tpOverlapChunks(c);
  if (k === 1) return undefined;
  if (!(Number.isSafeInteger(k) && k >= 2)) return `tpoverlap chunks must be a whole number ≥ 2, got ${k}.`;
  if (c.tp < 2) return undefined;
  const rows = c.sp ? c.s / c.tp : c.s;
  if (!Number.isInteger(rows) || rows % k !== 0) {
    const what = c.sp ? `each rank's s/t = ${c.s}/${c.tp} tokens` : `the s = ${c.s} tokens`;
    const legal: number[] = [];
    for (let d = 2; d <= rows; d++) if (Number.isInteger(rows) && rows % d === 0) legal.push(d);
    return `tpoverlap=chunks:${k} must divide ${what} (chunks cut the sequence): legal chunk counts are ${legal.length ? legal.join(', ') : 'none'}, or set tpoverlap=off.`;
  }
  return undefined;
}

/** A note when chunks are set where they do nothing (t = 1: no TP communication to overlap). */
export function tpOverlapNote(c: Pick<LayerConfig, 'tp' | 'tpOverlapChunks'>): string | undefined {
  const k = tpOverlapChunks(c);
  return k > 1 && c.tp < 2
    ? `tpoverlap=chunks:${k} does nothing at t = 1: there is no TP communication to overlap.`
    : undefined;
}
