import type { RingCollectiveOp } from '../comm/collectives.ts';
import { ringBytesSent } from '../comm/ring-bytes.ts';
import { presets, type LayerConfig } from './config.ts';
import type { NamedCollective } from './layer-comm.ts';
import { oracleTolerance } from './oracle.ts';
import { attentionPicture } from './attention-picture.ts';
import { qkvOutWidth } from './qkv-layout.ts';
import { legalTpDegrees } from './validate.ts';
import type { RankSlowdown } from '../core/rank-slowdown.ts';
import { tpOverlapProblem } from './tp-overlap.ts';

/** A matrix as it crosses the worker boundary: row-major values and its shape [rows, cols]. */
export interface ClassroomMatrix {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/**
 * Every intermediate of one rank's tensor-parallel SwiGLU MLP (and attention output), forward and
 * backward. Shapes (b = 1 folded into s, f = ffn/t, sl = s/t under SP, else s):
 * x [sl, h] this rank's input; xFull [s, h] the MLP input after f (or the SP all-gather);
 * w1Gate, w1Up [h, f]; yGate, yUp [s, f] = xFull·W1; act [s, f] = silu(yGate) ⊙ yUp; w2 [f, h];
 * zPartial [s, h] = act·W2 (a partial sum); z [sl, h] after g (or the SP reduce-scatter);
 * dz [sl, h] the upstream gradient; dzFull [s, h] after g's backward (identity) or the SP all-gather;
 * dxPartial [s, h] this rank's dX; dx [sl, h] after f's backward all-reduce (or SP reduce-scatter);
 * attnPartial [s, h] this rank's heads through the output projection, attn [s, h] their all-reduce.
 */
export interface ClassroomRankData {
  readonly rank: number;
  readonly tp: number;
  readonly sp: boolean;
  readonly x: ClassroomMatrix;
  readonly xFull: ClassroomMatrix;
  readonly w1Gate: ClassroomMatrix;
  readonly w1Up: ClassroomMatrix;
  readonly yGate: ClassroomMatrix;
  readonly yUp: ClassroomMatrix;
  readonly act: ClassroomMatrix;
  readonly w2: ClassroomMatrix;
  readonly zPartial: ClassroomMatrix;
  readonly z: ClassroomMatrix;
  readonly dz: ClassroomMatrix;
  readonly dzFull: ClassroomMatrix;
  readonly dxPartial: ClassroomMatrix;
  readonly dx: ClassroomMatrix;
  readonly attnPartial: ClassroomMatrix;
  readonly attn: ClassroomMatrix;
  /** The collectives this rank issued, in order, with their Megatron mapping (none at t = 1). */
  readonly collectives: readonly NamedCollective[];
}

/** The three runs a classroom needs: TP=t without SP and with SP (per rank), and TP=1 on rank 0. */
export interface ClassroomRuns {
  readonly config: LayerConfig;
  readonly tp: readonly ClassroomRankData[];
  /** Absent when SP is not legal for the config (s % t ≠ 0). */
  readonly sp?: readonly ClassroomRankData[];
  readonly reference: ClassroomRankData;
}

/** A collective as a step names it: what it does, its payload (float32 bytes) and who does it in Megatron. */
export interface ClassroomCollective {
  readonly op: RingCollectiveOp | 'identity';
  /** Logical tensor moved: [s, h] for all-reduce; the gathered / pre-scatter [s, h] for the SP pair. */
  readonly payloadBytes: number;
  /** Bytes each rank sends on a ring: all-reduce 2(t−1)/t·S, all-gather and reduce-scatter (t−1)/t·S. */
  readonly ringBytesPerRank: number;
  readonly megatron: string;
  readonly why: string;
}

/** A matrix in a step, with its symbolic shape and who holds it (a rank, or null = every rank / logical). */
export interface ClassroomPanel {
  readonly label: string;
  /** Symbolic shape, e.g. `[s, f/t]`. */
  readonly dims: string;
  readonly rank: number | null;
  readonly matrix: ClassroomMatrix;
}

/** A comparison a step prints: max |a − b| against a stated tolerance. */
export interface ClassroomCheck {
  readonly label: string;
  readonly maxAbs: number;
  readonly tolerance: number;
  readonly pass: boolean;
}

/** The steps of the walk-through, in order (their words and figures live with the view, src/ui/classroom/). */
export const classroomStepIds = [
  'split-w1',
  'local-y',
  'swiglu',
  'partial-z',
  'all-reduce',
  'backward',
  'sequence-parallel',
  'attention',
  'tp-overlap',
  'straggler',
] as const;

/** One step of the walk-through by what it shows. */
export type ClassroomStepId = (typeof classroomStepIds)[number];

/** One step of the walk-through: its collectives, the matrices it shows, and the checks it prints. */
export interface ClassroomStep {
  readonly id: ClassroomStepId;
  readonly collectives: readonly ClassroomCollective[];
  readonly panels: readonly ClassroomPanel[];
  readonly checks: readonly ClassroomCheck[];
}

/** The classroom degree for a requested t: t itself when legal for the preset, else the largest legal degree below it. */
export function classroomDegree(tp: number): number {
  const legal = legalTpDegrees(presets.classroom, true);
  return legal.filter((d) => d <= tp).pop() ?? 1;
}

/** max |a_i − b_i| (Infinity when the lengths differ). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Element-wise sum of equally shaped matrices: Σ_r Z_r. */
export function sumMatrices(ms: readonly ClassroomMatrix[]): ClassroomMatrix {
  const data = new Float32Array(ms[0].data.length);
  for (const m of ms) for (let i = 0; i < data.length; i++) data[i] += m.data[i];
  return { shape: ms[0].shape, data };
}

/** Row-wise concatenation (dim 0): SP shards [s/t, h] in rank order → [s, h]. */
export function concatRows(ms: readonly ClassroomMatrix[]): ClassroomMatrix {
  const rows = ms.reduce((n, m) => n + m.shape[0], 0);
  const data = new Float32Array(ms.reduce((n, m) => n + m.data.length, 0));
  let o = 0;
  for (const m of ms) {
    data.set(m.data, o);
    o += m.data.length;
  }
  return { shape: [rows, ms[0].shape[1]], data };
}

/**
 * A check of `got` against the TP=1 `ref` with the oracle's tolerance 16·ε·(K+1)·max|ref|, K the
 * longest reduction of the layer (here ffn = 32 or h): TP=t sums the same float32 products in
 * another order (f/t-long shard dots, then the ring sum over t), so they differ by rounding only.
 */
export function checkAgainst(
  c: LayerConfig,
  label: string,
  got: ClassroomMatrix,
  ref: ClassroomMatrix,
): ClassroomCheck {
  const refMax = ref.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const maxAbs = maxAbsDiff(got.data, ref.data);
  const tolerance = oracleTolerance(c, refMax);
  return { label, maxAbs, tolerance, pass: maxAbs <= tolerance };
}

function collective(
  op: ClassroomCollective['op'],
  payloadBytes: number,
  t: number,
  megatron: string,
  why: string,
): ClassroomCollective {
  return {
    op,
    payloadBytes: op === 'identity' || t <= 1 ? 0 : payloadBytes,
    ringBytesPerRank: op === 'identity' ? 0 : ringBytesSent(op, payloadBytes, t),
    megatron,
    why,
  };
}

const shared = (label: string, dims: string, matrix: ClassroomMatrix): ClassroomPanel => ({
  label,
  dims,
  rank: null,
  matrix,
});
const perRank = (
  ranks: readonly ClassroomRankData[],
  label: (r: number) => string,
  dims: string,
  pick: (d: ClassroomRankData) => ClassroomMatrix,
): ClassroomPanel[] => ranks.map((d) => ({ label: label(d.rank), dims, rank: d.rank, matrix: pick(d) }));

/**
 * The walk-through of the issue (steps 1–7, then attention) from real rank data: each step names
 * its collective (op, payload bytes, ring bytes per rank, Megatron function), its matrices per rank
 * in `[s, f/t]`-style shapes, and the checks against TP=1 it prints.
 */
export function classroomSteps(runs: ClassroomRuns): ClassroomStep[] {
  const c = runs.config;
  const t = c.tp;
  const R = runs.tp;
  const ref = runs.reference;
  const bytesSH = c.s * c.b * c.h * 4;
  const fwd: ClassroomStep[] = [
    {
      id: 'split-w1',
      collectives: [
        collective(
          'identity',
          bytesSH,
          t,
          'copy_to_tensor_model_parallel_region',
          'f forward: X is already on every rank',
        ),
      ],
      panels: [
        shared('X (every rank)', '[s, h]', R[0].xFull),
        ...perRank(
          R,
          (r) => `W₁ gate, rank ${r}`,
          '[h, f/t]',
          (d) => d.w1Gate,
        ),
        ...perRank(
          R,
          (r) => `W₁ up, rank ${r}`,
          '[h, f/t]',
          (d) => d.w1Up,
        ),
      ],
      checks: [],
    },
    {
      id: 'local-y',
      collectives: [],
      panels: [
        ...perRank(
          R,
          (r) => `Y gate, rank ${r}`,
          '[s, f/t]',
          (d) => d.yGate,
        ),
        ...perRank(
          R,
          (r) => `Y up, rank ${r}`,
          '[s, f/t]',
          (d) => d.yUp,
        ),
      ],
      checks: [],
    },
    {
      id: 'swiglu',
      collectives: [],
      panels: perRank(
        R,
        (r) => `A = SwiGLU, rank ${r}`,
        '[s, f/t]',
        (d) => d.act,
      ),
      checks: [],
    },
    {
      id: 'partial-z',
      collectives: [],
      panels: [
        ...perRank(
          R,
          (r) => `W₂, rank ${r}`,
          '[f/t, h]',
          (d) => d.w2,
        ),
        ...perRank(
          R,
          (r) => `Z partial, rank ${r}`,
          '[s, h]',
          (d) => d.zPartial,
        ),
      ],
      checks: [],
    },
    {
      id: 'all-reduce',
      collectives: [
        collective(
          'allReduce',
          bytesSH,
          t,
          'reduce_from_tensor_model_parallel_region',
          'g forward: sum the partial outputs',
        ),
      ],
      panels: [
        ...perRank(
          R,
          (r) => `Z partial, rank ${r}`,
          '[s, h]',
          (d) => d.zPartial,
        ),
        shared('Z = Σ Zᵢ (all-reduced)', '[s, h]', R[0].z),
        shared('Z at TP=1 (rank 0 alone)', '[s, h]', ref.z),
      ],
      checks: [
        checkAgainst(c, 'Σᵢ Zᵢ on rank 0 vs TP=1', R[0].z, ref.z),
        ...R.slice(1).map((d) =>
          checkAgainst(c, `rank ${d.rank}'s Z vs rank 0's (all-reduce gives every rank the same)`, d.z, R[0].z),
        ),
      ],
    },
    {
      id: 'backward',
      collectives: [
        collective(
          'identity',
          bytesSH,
          t,
          'reduce_from_tensor_model_parallel_region (backward)',
          'g backward: dZ is already replicated',
        ),
        collective(
          'allReduce',
          bytesSH,
          t,
          'copy_to_tensor_model_parallel_region (backward)',
          'f backward: sum the partial dX',
        ),
      ],
      panels: [
        shared('dZ (every rank, unchanged by g)', '[s, h]', R[0].dzFull),
        ...perRank(
          R,
          (r) => `dX partial, rank ${r}`,
          '[s, h]',
          (d) => d.dxPartial,
        ),
        shared('dX = Σ dXᵢ (all-reduced)', '[s, h]', R[0].dx),
        shared('dX at TP=1', '[s, h]', ref.dx),
      ],
      checks: [
        ...R.map((d) =>
          checkAgainst(
            c,
            `rank ${d.rank}'s dZ after g's backward vs TP=1's dZ (identity: nothing to reduce)`,
            d.dzFull,
            ref.dz,
          ),
        ),
        checkAgainst(c, 'Σᵢ dXᵢ vs TP=1', R[0].dx, ref.dx),
      ],
    },
  ];
  return [...fwd, spStep(runs), attentionStep(runs), overlapStep(runs), stragglerStep(runs)];
}

/**
 * The configuration the chunked-overlap step runs: the classroom preset at t with SP and c = t
 * chunks, each rank's shard one chunk (src/parallel/tp-overlap.ts); null where it cannot run
 * (t = 1, or s not divisible by t).
 */
export function classroomOverlapConfig(c: LayerConfig): LayerConfig | null {
  const o = { ...c, sp: true, tpOverlapChunks: c.tp };
  return c.tp > 1 && c.s % c.tp === 0 && !tpOverlapProblem(o) ? o : null;
}

function overlapStep(runs: ClassroomRuns): ClassroomStep {
  const c = runs.config;
  const bytesSH = c.s * c.b * c.h * 4;
  const o = classroomOverlapConfig(c);
  const k = o?.tpOverlapChunks ?? 1;
  return {
    id: 'tp-overlap',
    collectives: o
      ? [
          collective(
            'allGather',
            bytesSH / (k / c.tp),
            c.tp,
            '--tp-comm-overlap (Transformer Engine userbuffers)',
            `forward: [s, h] all-gathered in ${k} chunks (one per rank) while gate/up multiply each rank's own chunk first, then the others in ring order`,
          ),
          collective(
            'reduceScatter',
            bytesSH / (k / c.tp),
            c.tp,
            '--tp-comm-overlap (Transformer Engine userbuffers)',
            `forward: the down GEMM's output computed in ${k} chunks in ring order (each rank's own last), then reduce-scattered`,
          ),
        ]
      : [],
    panels: [],
    checks: [],
  };
}

/**
 * The straggler the classroom slows on purpose (seed 004 M108, docs/sources.md): the last rank
 * does 3× the work (each kernel dispatched 3 times, as #slow=r:3), so every collective waits for
 * it; null at t = 1.
 */
export function classroomStraggler(t: number): RankSlowdown | null {
  return t > 1 ? { rank: t - 1, factor: 3 } : null;
}

function stragglerStep(runs: ClassroomRuns): ClassroomStep {
  const c = runs.config;
  const bytesSH = c.s * c.b * c.h * 4;
  return {
    id: 'straggler',
    collectives:
      c.tp > 1
        ? [
            collective(
              'allReduce',
              bytesSH,
              c.tp,
              'reduce_from_tensor_model_parallel_region',
              'no rank can leave before the last one has entered: the others wait inside it',
            ),
          ]
        : [],
    panels: [],
    checks: [],
  };
}

function spStep(runs: ClassroomRuns): ClassroomStep {
  const c = runs.config;
  const t = c.tp;
  const bytesSH = c.s * c.b * c.h * 4;
  const base = { id: 'sequence-parallel' } as const;
  const S = runs.sp;
  if (!S) {
    return {
      ...base,
      collectives: [],
      panels: [],
      checks: [],
    };
  }
  const ref = runs.reference;
  const z = concatRows(S.map((d) => d.z));
  const dx = concatRows(S.map((d) => d.dx));
  return {
    ...base,
    collectives: [
      collective(
        'allGather',
        bytesSH,
        t,
        'LinearWithGradAccumulationAndAsyncCommunication',
        'forward: [s/t, h] → [s, h] before W₁',
      ),
      collective(
        'reduceScatter',
        bytesSH,
        t,
        'reduce_scatter_to_sequence_parallel_region',
        'forward: Σ Zᵢ, keep [s/t, h] after W₂',
      ),
      collective(
        'allGather',
        bytesSH,
        t,
        'reduce_scatter_to_sequence_parallel_region (backward)',
        'backward: dZ [s/t, h] → [s, h]',
      ),
      collective(
        'reduceScatter',
        bytesSH,
        t,
        'LinearWithGradAccumulationAndAsyncCommunication (backward)',
        'backward: Σ dXᵢ, keep [s/t, h]',
      ),
    ],
    panels: [
      ...perRank(
        S,
        (r) => `X shard, rank ${r}`,
        '[s/t, h]',
        (d) => d.x,
      ),
      shared('X all-gathered (every rank)', '[s, h]', S[0].xFull),
      ...perRank(
        S,
        (r) => `Z partial, rank ${r}`,
        '[s, h]',
        (d) => d.zPartial,
      ),
      ...perRank(
        S,
        (r) => `Z shard after reduce-scatter, rank ${r}`,
        '[s/t, h]',
        (d) => d.z,
      ),
      ...perRank(
        S,
        (r) => `dX shard after reduce-scatter, rank ${r}`,
        '[s/t, h]',
        (d) => d.dx,
      ),
    ],
    checks: [
      checkAgainst(c, 'Z shards (rank order) vs TP=1', z, ref.z),
      checkAgainst(c, 'dX shards (rank order) vs TP=1', dx, ref.dx),
    ],
  };
}

function attentionStep(runs: ClassroomRuns): ClassroomStep {
  const c = runs.config;
  const t = c.tp;
  const R = runs.tp;
  const pic = attentionPicture(c);
  const bytesSH = c.s * c.b * c.h * 4;
  const W = qkvOutWidth(c);
  const bytesQkv = c.s * c.b * W * 4;
  return {
    id: 'attention',
    collectives: [
      ...(pic.gathered
        ? [
            collective(
              'allGather',
              bytesQkv,
              t,
              'all_gather_last_dim_from_tensor_parallel_region',
              "every rank's linear_qkv slice, so each can take its group's q, k, v",
            ),
          ]
        : []),
      collective(
        'allReduce',
        bytesSH,
        t,
        'reduce_from_tensor_model_parallel_region',
        "g forward: sum the heads' partial outputs",
      ),
    ],
    panels: [
      ...perRank(
        R,
        (r) => `attention partial, rank ${r}`,
        '[s, h]',
        (d) => d.attnPartial,
      ),
      shared('Σ over ranks (all-reduced)', '[s, h]', R[0].attn),
      shared('attention output at TP=1', '[s, h]', runs.reference.attn),
    ],
    checks: [checkAgainst(c, 'attention output vs TP=1', R[0].attn, runs.reference.attn)],
  };
}
