import type { RingCollectiveOp } from '../comm/collectives.ts';
import { ringBytesSent } from '../comm/ring-bytes.ts';
import { presets, type LayerConfig } from './config.ts';
import type { NamedCollective } from './layer-comm.ts';
import { oracleTolerance } from './oracle.ts';
import { attentionPicture } from './attention-picture.ts';
import { qkvOutWidth } from './qkv-layout.ts';
import { legalTpDegrees } from './validate.ts';

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

/** One step of the walk-through. */
export interface ClassroomStep {
  readonly id: string;
  readonly title: string;
  readonly text: string;
  /** Megatron classes and functions at work in this step. */
  readonly megatron: readonly string[];
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
  const tNote = t === 1 ? ' At t = 1 there is nothing to communicate.' : '';
  const fwd: ClassroomStep[] = [
    {
      id: 'split-w1',
      title: '1 · X replicated, W₁ split by columns',
      text: `Every rank holds the whole input X [s, h] = [${c.s}, ${c.h}]. The gate and up weights W₁ [h, f] (f = ${c.ffn}) are cut by columns: rank r keeps columns [r·f/t, (r+1)·f/t) of each, [h, f/t] = [${c.h}, ${c.ffn / t}]. The input enters the tensor-parallel region through f, whose forward is the identity.${tNote}`,
      megatron: ['ColumnParallelLinear (gate, up)', 'copy_to_tensor_model_parallel_region (f): forward identity'],
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
      title: '2 · Each rank computes Yᵢ = X·W₁ᵢ',
      text: `Each rank multiplies the full X by its own columns: [s, h]·[h, f/t] → [s, f/t] = [${c.s}, ${c.ffn / t}], for gate and for up. The result is sharded by columns; no rank has all of Y and none needs it.`,
      megatron: ['ColumnParallelLinear.forward (gather_output=False)'],
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
      title: '3 · SwiGLU is local: no communication',
      text: 'A = silu(Y_gate) ⊙ Y_up is element-wise, and rank r holds the gate and the up column j for the same j: every element it needs is already local. This is why W₁ is split by columns and not by rows — a row split would need an all-reduce before the non-linearity.',
      megatron: ['bias_swiglu_impl (element-wise, per rank)'],
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
      title: '4 · W₂ split by rows: partial Zᵢ = Aᵢ·W₂ᵢ',
      text: `W₂ [f, h] is cut by rows, matching A's columns: rank r keeps rows [r·f/t, (r+1)·f/t), [f/t, h] = [${c.ffn / t}, ${c.h}]. Its product [s, f/t]·[f/t, h] → [s, h] is a full-size contribution: Z = Σᵢ Aᵢ·W₂ᵢ, a sum over the split inner dimension.`,
      megatron: ['RowParallelLinear (input_is_parallel=True)'],
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
      title: '5 · All-reduce: the partial sums add up to the TP=1 result',
      text: `g sums the t partial Zᵢ on every rank (all-reduce of [s, h] = ${bytesSH} bytes). The sum equals the TP=1 result up to float32 rounding (another summation order).${tNote}`,
      megatron: ['reduce_from_tensor_model_parallel_region (g): forward all-reduce', 'RowParallelLinear.forward'],
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
      title: '6 · Backward: g → identity, f → all-reduce of dX',
      text: `Backward runs the same boundaries in reverse with the conjugate collectives (Megatron-LM mappings.py: _CopyToModelParallelRegion and _ReduceFromModelParallelRegion; Shoeybi et al. 2019, §3). dZ [s, h] arrives replicated; g's backward is the identity (every rank already holds all of dZ). Each rank computes its partial dXᵢ = dYᵢ·W₁ᵢᵀ [s, f/t]·[f/t, h] → [s, h], and f's backward all-reduces them (${bytesSH} bytes). Forward all-reduce after W₂, backward all-reduce before W₁: one each way.${tNote}`,
      megatron: [
        'reduce_from_tensor_model_parallel_region (g): backward identity',
        'copy_to_tensor_model_parallel_region (f): backward all-reduce',
        'ColumnParallelLinear dgrad',
      ],
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
  return [...fwd, spStep(runs), attentionStep(runs)];
}

function spStep(runs: ClassroomRuns): ClassroomStep {
  const c = runs.config;
  const t = c.tp;
  const bytesSH = c.s * c.b * c.h * 4;
  const base = {
    id: 'sequence-parallel',
    title: '7 · With sequence parallelism: [s/t, h] shards',
    megatron: [
      'LinearWithGradAccumulationAndAsyncCommunication (sequence_parallel, before W₁): forward all-gather · backward reduce-scatter',
      'reduce_scatter_to_sequence_parallel_region: forward reduce-scatter · backward all-gather',
    ],
  };
  const S = runs.sp;
  if (!S) {
    return {
      ...base,
      text: `Sequence parallelism needs s % t = 0 (s = ${c.s}, t = ${t}).`,
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
    text: `Outside the tensor-parallel region each rank keeps only its s/t = ${c.s / t} tokens, [s/t, h]. Before W₁ an all-gather rebuilds X [s, h]; after W₂ a reduce-scatter both sums the partial Zᵢ and leaves each rank its [s/t, h] rows. Each moves (t−1)/t of [s, h] per rank: the pair costs what one all-reduce does, and the activations between layers are t times smaller. Backward swaps them: all-gather dZ, reduce-scatter dX.`,
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
  const per = t / c.groups;
  const split = pic.gathered
    ? `With ${c.groups} KV groups < t = ${t}, Megatron-Core (since core_v0.16) lays linear_qkv's ${W} output columns out per group — [q heads | k | v] of group 0, then group 1 — and splits them evenly: each rank computes ${W / t} columns, which may cut across heads and across q, k, v. An all-gather along the last dim (${bytesQkv} bytes) gives every rank all ${W}; rank r takes group block ⌊r/${per}⌋ and its own ${c.heads / t} query head${c.heads / t > 1 ? 's' : ''} of it. In backward the gradient of the gathered QKV is reduce-scattered back to the slices, so each weight column has exactly one owner.`
    : `With ${c.groups} KV groups for ${c.heads} heads, each rank computes the columns of groups/t = ${c.groups / t} whole group(s) — their query heads, k and v — and needs nothing from the others.`;
  return {
    id: 'attention',
    title: pic.gathered
      ? '8 · Attention: heads split across ranks, QKV gathered'
      : '8 · Attention: heads split across ranks',
    text: `The same pattern: QKV is a ColumnParallelLinear (linear_qkv), attention per head is local (rank r keeps heads/t = ${c.heads / t} query heads), and the output projection is a RowParallelLinear whose partial sums g all-reduces. ${split}`,
    megatron: [
      'ColumnParallelLinear (linear_qkv)',
      ...(pic.gathered ? ['all_gather_last_dim_from_tensor_parallel_region'] : []),
      'RowParallelLinear (linear_proj)',
      'reduce_from_tensor_model_parallel_region',
    ],
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
