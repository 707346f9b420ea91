import { agRecvChunk, agSendChunk, rsRecvChunk, rsSendChunk } from '../comm/ring-schedule.ts';
import type { LayerConfig } from './config.ts';
import { quoted } from '../core/quote.ts';

/**
 * Chunked tensor-parallel communication overlap (Megatron's `--tp-comm-overlap`; the "collective
 * matmul" decomposition of Wang et al., ASPLOS 2023, and Transformer Engine's userbuffers ring
 * exchange): the collective at a ColumnParallelLinear's input or a RowParallelLinear's output is
 * cut into c chunks along the sequence, and the GEMM runs chunk by chunk in ring order.
 *
 * Chunk j of c is token rows [j·s/c, (j+1)·s/c) of the full [s, b, ·] tensor. Under SP (t ranks,
 * sl = s/t tokens each) c = t·m with m dividing sl: rank q's shard holds chunks q·m … q·m + m − 1,
 * and the collective runs in m rounds, round i moving chunks {q·m + i : q < t} (piece i of every
 * shard). Within a round the GEMM chunks follow the ring: for an all-gather rank r multiplies its
 * own chunk first (it holds it: no wait), then the chunks of r − 1, r − 2, … in the order the ring
 * brings them; for a reduce-scatter it computes the partial that travels farthest first (block
 * r − 1) and its own block last. Without SP, chunk j's rows of the row-parallel output are
 * all-reduced (c divides s).
 */

/**
 * Which chunk of how many an op belongs to (absent on an op that is not chunked). A GEMM chunk's
 * index is its position in the rank's ring order (under SP: round i, ring step k → i·t + k; step 0
 * of an all-gather round is the rank's own chunk), the same on every rank, so every rank runs the
 * same plan; `ringChunk` gives the chunk of rows it multiplies. A chunked collective's index is
 * its round i of m (without SP: its chunk j of c).
 */
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
 * Under SP, the chunk rank `rank` multiplies at ring position n (round i = ⌊n/t⌋, step k = n mod t)
 * of a `gather-gemm` or `gemm-reduce-scatter` pattern with c = t·m chunks, and the rank whose shard
 * holds it (its block in the round's gathered or reduce-scattered tensor).
 */
export function ringChunk(
  pattern: Exclude<ChunkPattern, 'gemm-all-reduce'>,
  t: number,
  c: number,
  rank: number,
  n: number,
): { readonly chunk: number; readonly block: number } {
  const m = c / t;
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
 * One stage of a rank's chunk schedule. Under SP (ring exchange): `multiply`, the chunk whose GEMM
 * runs, and `send` / `recv`, the chunk sent to rank r + 1 and received from r − 1 in the same stage
 * (absent at a round's last step). Without SP: `multiply` and `allReduce`, the chunk whose
 * all-reduce moves, with its ring steps.
 */
export interface ChunkStage {
  readonly multiply?: number;
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
 * Under SP (c = t·m): m rounds of t stages, stage (i, k) at position i·t + k. `gather-gemm`
 * (collective matmul's all-gather + GEMM): the rank multiplies chunk (r − k)·m + i while sending it
 * to r + 1 and receiving chunk (r − k − 1)·m + i from r − 1 — its own chunk at k = 0, then each
 * chunk as the ring brings it. `gemm-reduce-scatter` (GEMM + reduce-scatter): the rank multiplies
 * the partial of chunk (r − k − 1)·m + i and sends it (added to the partial received at the step
 * before) to r + 1, receiving the running sum of chunk (r − k − 2)·m + i; at k = t − 1 it multiplies
 * its own chunk and adds the sum it received: its reduced chunk.
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
        ...(i < c && { multiply: i }),
        ...(i >= 1 && { allReduce: { chunk: i - 1, steps: allReduceSteps(rank, t, i - 1) } }),
      });
    return stages;
  }
  if (c % t !== 0)
    throw new Error(
      `chunkSchedule: under SP c must be a multiple of t (each rank's shard is m = c/t chunks), got c = ${c}, t = ${t}.`,
    );
  const m = c / t;
  const gather = pattern === 'gather-gemm';
  const stages: ChunkStage[] = [];
  for (let n = 0; n < c; n++) {
    const i = Math.floor(n / t);
    const k = n % t;
    const multiply = ringChunk(pattern, t, c, rank, n).chunk;
    const recv = (gather ? agRecvChunk(rank, k, t) : rsRecvChunk(rank, k, t)) * m + i;
    stages.push({ multiply, ...(k < t - 1 && { send: multiply, recv }) });
  }
  return stages;
}

/**
 * Why c chunks cannot run on a configuration, or undefined when they can. Under SP c = t·m with m
 * dividing each rank's s/t tokens (a chunk is a rank's shard or a piece of one); without SP c
 * divides s. At t = 1 there is nothing to overlap and the chunks are ignored (tpOverlapNote says so).
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
    ? `tpoverlap=chunks:${k} must be t = ${c.tp} times a divisor of each rank's s/t = ${c.s}/${c.tp} tokens (under SP a chunk is a rank's shard or an equal piece of one, taken in ring order): ${counts}`
    : `tpoverlap=chunks:${k} must divide the s = ${c.s} tokens (chunks cut the sequence): ${counts}`;
}

/** The chunk counts ≥ 2 a configuration at t ≥ 2 can run: t·m with m dividing s/t under SP, the divisors of s without. */
export function legalTpOverlapChunks(c: Pick<LayerConfig, 's' | 'tp' | 'sp'>): number[] {
  const legal: number[] = [];
  if (c.sp) {
    const sl = c.s / c.tp;
    if (Number.isInteger(sl)) for (let m = 1; m <= sl; m++) if (sl % m === 0 && c.tp * m >= 2) legal.push(c.tp * m);
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
