// The figure of each classroom step as data (pure; no DOM): blocks per rank, GEMMs, rings and heads.
import { attentionPicture, type AttentionPicture } from '../../parallel/attention-picture.ts';
import {
  classroomOverlapConfig,
  classroomStraggler,
  type ClassroomRankData,
  type ClassroomRuns,
  type ClassroomStepId,
} from '../../parallel/classroom.ts';
import { gathersQkv, qkvOutWidth } from '../../parallel/qkv-layout.ts';
import type { RingCollectiveOp } from '../../comm/collectives.ts';
import { ringBytesSent } from '../../comm/ring-bytes.ts';
import type { RankSlowdown } from '../../core/rank-slowdown.ts';
import type { LayerConfig } from '../../parallel/config.ts';
import { chunkSchedule, type ChunkStage } from '../../parallel/tp-overlap.ts';

/** A tensor drawn as a block: rows × cols elements, tinted by `rank` (null: replicated on every rank). */
export interface BlockSpec {
  readonly label: string;
  /** Symbolic shape, e.g. `[s, f/t]`. */
  readonly dims: string;
  readonly rows: number;
  readonly cols: number;
  readonly rank: number | null;
}

/** An operator between blocks of a row. */
export type RowOp = '×' | '⊙' | '→';

/** One rank's row of a block figure: blocks and operators in reading order, and its local GEMM sizes. */
export interface BlockRow {
  readonly rank: number;
  readonly terms: readonly (BlockSpec | RowOp)[];
  /** Local GEMM sizes [M, K]·[K, N] → [M, N] when the row is a GEMM. */
  readonly gemm?: { readonly m: number; readonly n: number; readonly k: number };
}

/** Tensors as blocks, one row per rank (a GEMM row reads A × B → C). */
export interface BlockFigure {
  readonly kind: 'blocks';
  readonly title: string;
  readonly rows: readonly BlockRow[];
}

/** A collective between the rank rows: each rank's [rows, cols] tensor cut into the ring's t chunks. */
export interface RingFigure {
  readonly kind: 'ring';
  readonly title: string;
  readonly op: RingCollectiveOp;
  readonly t: number;
  /** The tensor each rank holds in full (the gathered / pre-scatter [s, h]). */
  readonly rows: number;
  readonly cols: number;
  /** The dim the ring's t chunks cut: rows (dim 0, the [s, h] collectives) or columns (the last dim). */
  readonly along: 'rows' | 'cols';
  readonly dims: string;
  /** Logical tensor bytes S (float32). */
  readonly payloadBytes: number;
  /** Bytes each rank sends: all-reduce 2(t−1)/t·S, reduce-scatter and all-gather (t−1)/t·S. */
  readonly ringBytesPerRank: number;
}

/** Each rank's linear_qkv columns, and the query heads and KV group its attention reads. */
export interface HeadsFigure {
  readonly kind: 'heads';
  readonly title: string;
  readonly t: number;
  readonly picture: AttentionPicture;
}

/** The layer run again on the ranks (`config`, with `slow` one rank doing f× the work), drawn as its timeline. */
export interface RunFigure {
  readonly kind: 'run';
  readonly title: string;
  readonly config: LayerConfig;
  readonly slow: RankSlowdown | null;
}

/**
 * The column/row pair's chunk schedules (chunkSchedule, ring order): per rank, per stage, the pieces
 * of the GEMM chunk that starts there and the pieces sent to r + 1 and received from r − 1.
 */
export interface ChunksFigure {
  readonly kind: 'chunks';
  readonly title: string;
  readonly t: number;
  readonly chunks: number;
  /** gate/up input under SP: all-gather + GEMM, the rank's own chunk first; [rank][stage]. */
  readonly gather: readonly (readonly ChunkStage[])[];
  /** down output under SP: GEMM + reduce-scatter, the partial that travels farthest first, the rank's own last; [rank][stage]. */
  readonly reduce: readonly (readonly ChunkStage[])[];
}

/** Any figure of a step. */
export type StepFigure = BlockFigure | RingFigure | HeadsFigure | RunFigure | ChunksFigure;

const rc = (m: { shape: readonly number[] }): [number, number] => [m.shape[0], m.shape[m.shape.length - 1]];
const block = (label: string, dims: string, m: { shape: readonly number[] }, rank: number | null): BlockSpec => {
  const [rows, cols] = rc(m);
  return { label, dims, rows, cols, rank };
};

/** A GEMM row A [M, K] × B [K, N] → C [M, N] of rank r. */
function gemmRow(rank: number, a: BlockSpec, b: BlockSpec, c: BlockSpec): BlockRow {
  return { rank, terms: [a, '×', b, '→', c], gemm: { m: a.rows, k: a.cols, n: b.cols } };
}

function ring(
  title: string,
  op: RingCollectiveOp,
  runs: ClassroomRuns,
  dims = '[s, h]',
  cols = runs.config.h,
  along: RingFigure['along'] = 'rows',
): RingFigure {
  const c = runs.config;
  const rows = c.s * c.b;
  const payloadBytes = rows * cols * 4;
  return {
    kind: 'ring',
    title,
    op,
    t: c.tp,
    rows,
    cols,
    along,
    dims,
    payloadBytes,
    ringBytesPerRank: ringBytesSent(op, payloadBytes, c.tp),
  };
}

/** Backward of the MLP's first GEMMs on rank r: dY [s, 2f/t] × W₁ᵀ [2f/t, h] → dX partial [s, h]. */
function dgradRow(d: ClassroomRankData): BlockRow {
  const [s, f] = rc(d.yGate);
  const [h] = rc(d.w1Gate);
  return gemmRow(
    d.rank,
    { label: 'dY (gate | up)', dims: '[s, 2f/t]', rows: s, cols: 2 * f, rank: d.rank },
    { label: 'W₁ᵀ', dims: '[2f/t, h]', rows: 2 * f, cols: h, rank: d.rank },
    block('dX partial', '[s, h]', d.dxPartial, d.rank),
  );
}

/**
 * The figures of the classroom step `id`: what the lecturer draws on the board, from the shapes
 * the ranks really held.
 */
export function stepFigures(id: ClassroomStepId, runs: ClassroomRuns): StepFigure[] {
  const R = runs.tp;
  const t = runs.config.tp;
  switch (id) {
    case 'split-w1':
      return [
        {
          kind: 'blocks',
          title: 'X on every rank; W₁ (gate, up) split by columns',
          rows: R.map((d) => ({
            rank: d.rank,
            terms: [
              block('X (copy)', '[s, h]', d.xFull, d.rank),
              block('W₁ gate', '[h, f/t]', d.w1Gate, d.rank),
              block('W₁ up', '[h, f/t]', d.w1Up, d.rank),
            ],
          })),
        },
      ];
    case 'local-y':
      return [
        {
          kind: 'blocks',
          title: 'Local GEMMs: X × W₁ᵢ → Yᵢ (gate shown; up is the same shape)',
          rows: R.map((d) =>
            gemmRow(
              d.rank,
              block('X', '[s, h]', d.xFull, d.rank),
              block('W₁ gate', '[h, f/t]', d.w1Gate, d.rank),
              block('Y gate', '[s, f/t]', d.yGate, d.rank),
            ),
          ),
        },
      ];
    case 'swiglu':
      return [
        {
          kind: 'blocks',
          title: 'Local SwiGLU: silu(Y gate) ⊙ Y up → A, element by element',
          rows: R.map((d) => ({
            rank: d.rank,
            terms: [
              block('silu(Y gate)', '[s, f/t]', d.yGate, d.rank),
              '⊙',
              block('Y up', '[s, f/t]', d.yUp, d.rank),
              '→',
              block('A', '[s, f/t]', d.act, d.rank),
            ],
          })),
        },
      ];
    case 'partial-z':
      return [
        {
          kind: 'blocks',
          title: 'W₂ split by rows: Aᵢ × W₂ᵢ → partial Zᵢ',
          rows: R.map((d) =>
            gemmRow(
              d.rank,
              block('A', '[s, f/t]', d.act, d.rank),
              block('W₂', '[f/t, h]', d.w2, d.rank),
              block('Z partial', '[s, h]', d.zPartial, d.rank),
            ),
          ),
        },
      ];
    case 'all-reduce':
      return [ring('All-reduce of the partial Zᵢ (g forward)', 'allReduce', runs)];
    case 'backward':
      return [
        { kind: 'blocks', title: 'dgrad on each rank: dYᵢ × W₁ᵢᵀ → partial dXᵢ', rows: R.map(dgradRow) },
        ring("All-reduce of the partial dXᵢ (f's backward)", 'allReduce', runs),
      ];
    case 'sequence-parallel': {
      const S = runs.sp;
      if (!S) return [];
      return [
        {
          kind: 'blocks',
          title: 'Outside the TP region each rank keeps s/t tokens',
          rows: S.map((d) => ({
            rank: d.rank,
            terms: [block('X shard', '[s/t, h]', d.x, d.rank), block('Z shard', '[s/t, h]', d.z, d.rank)],
          })),
        },
        ring('All-gather before W₁: [s/t, h] → [s, h]', 'allGather', runs),
        ring('Reduce-scatter after W₂: Σ Zᵢ, keep [s/t, h]', 'reduceScatter', runs),
      ];
    }
    case 'attention':
      return [
        {
          kind: 'heads',
          title: 'linear_qkv columns, query heads and KV groups by rank',
          t,
          picture: attentionPicture(runs.config),
        },
        ...(gathersQkv(runs.config)
          ? [
              ring(
                'All-gather of the linear_qkv slices along the last dim: [s, W/t] → [s, W]',
                'allGather',
                runs,
                '[s, W]',
                qkvOutWidth(runs.config),
                'cols',
              ),
            ]
          : []),
        ring("All-reduce of the heads' partial outputs (g)", 'allReduce', runs),
      ];
    case 'tp-overlap': {
      const o = classroomOverlapConfig(runs.config);
      if (!o) return [];
      const k = o.tpOverlapChunks ?? 1;
      const ranks = [...Array(t).keys()];
      return [
        {
          kind: 'chunks',
          title: `${k} chunks in ring order: each rank multiplies one chunk while the ring moves the next`,
          t,
          chunks: k,
          gather: ranks.map((r) => chunkSchedule('gather-gemm', t, k, r)),
          reduce: ranks.map((r) => chunkSchedule('gemm-reduce-scatter', t, k, r)),
        },
        { kind: 'run', title: `The layer with SP and ${k} chunks, run on the ranks`, config: o, slow: null },
      ];
    }
    case 'straggler': {
      const slow = classroomStraggler(t);
      return slow
        ? [
            {
              kind: 'run',
              title: `The layer with rank ${slow.rank} ${slow.factor}× slower: who waits for whom`,
              config: runs.config,
              slow,
            },
          ]
        : [];
    }
  }
}
