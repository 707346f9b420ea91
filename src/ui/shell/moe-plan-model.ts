// What the page's top card says of the MoE block the ranks run (pure, no DOM): its stages in
// Megatron-Core's terms (core_v0.19.0) with each rank's local shapes, from the run's own arguments
// (MoeRunArgs: the config, h, the tokens a rank routes, the layout) and, once it ran, the rows each
// rank's experts processed (MoeRun). src/parallel/moe-ep.ts is the program these stages describe.
import type { ExpertGemmInfo } from '../../core/trace-event.ts';
import { rankMesh } from '../../mesh/rank-layout.ts';
import { moeMeshDegrees, moeWorld } from '../../parallel/moe-layout.ts';
import { moePoolMesh, type MoeRun, type MoeRunArgs } from '../../session/moe-run.ts';

/** One tensor of a stage on one rank: Megatron's symbols and this run's sizes. */
export interface MoePlanTensor {
  readonly name: string;
  /** Its local shape in the symbols of MoePlan.symbols, e.g. "[T, h]". */
  readonly symbolic: string;
  /** Its size on every rank; null where the routing sets it (R rows: MoePlan.expertRows). */
  readonly shape: readonly number[] | null;
  /** A parameter the rank holds (the router's weight, its experts' shard, the shared expert's shard), not an activation. */
  readonly weight?: true;
}

/** A stage of the block: the router, the dispatch, the experts' grouped GEMMs, the shared expert, the combine. */
export type MoePlanStageName = 'router' | 'dispatch' | 'experts' | 'shared' | 'combine';

/** One stage as every rank runs it. */
export interface MoePlanStage {
  readonly stage: MoePlanStageName;
  /** Megatron-Core's class and file at core_v0.19.0. */
  readonly megatron: string;
  /** What the stage does on a rank, and over which ranks it communicates. */
  readonly words: string;
  readonly tensors: readonly MoePlanTensor[];
}

/** One symbol of the shapes and its value in this run. */
export interface MoePlanSymbol {
  readonly symbol: string;
  readonly value: number;
  readonly meaning: string;
}

/** Rows one rank's local experts processed in the run (their ETP shard's, from every rank of its tp_ep group). */
export interface MoeRankRows {
  readonly rank: number;
  /** Its first local expert and the rows per local expert [E/EP], as its GEMM events record them. */
  readonly experts: ExpertGemmInfo;
}

/**
 * What one of the N ranks owns in the MoE layer: its place in the attention mesh (TP rank: its heads,
 * KV groups, qkv columns and SP shard of the dense plan's rank `tp`; DP replica: its own micro-batch)
 * and in the expert mesh (EP rank: its L local experts; ETP rank: its f′ columns of each; EDP replica).
 */
export interface MoeRankOwner {
  readonly rank: number;
  readonly tp: number;
  readonly dp: number;
  readonly ep: number;
  readonly etp: number;
  readonly edp: number;
  /** Its local experts, half-open: [ep·L, (ep + 1)·L). */
  readonly experts: readonly [number, number];
  /** Its columns of each local expert's f (fc1's gate and up, fc2's rows), half-open: [etp·f′, (etp + 1)·f′) (etpExpertShard). */
  readonly expertFfn: readonly [number, number];
}

/** The MoE block on the ranks: the meshes folded over them, the symbols, the stages, the rows the run measured. */
export interface MoePlan {
  /** N = lcm(t, ETP·EP) ranks: attention t × DP, experts ETP × EP × EDP (moe-layout.ts). */
  readonly ranks: number;
  readonly degrees: {
    readonly tp: number;
    readonly dp: number;
    readonly ep: number;
    readonly etp: number;
    readonly edp: number;
  };
  readonly symbols: readonly MoePlanSymbol[];
  readonly stages: readonly MoePlanStage[];
  /** Every rank's place in both meshes, rank order (the pool's, moePoolMesh). */
  readonly owners: readonly MoeRankOwner[];
  /** Per rank, the rows its experts ran; null before the run. */
  readonly expertRows: readonly MoeRankRows[] | null;
}

/**
 * The plan of the block `a` describes (its dispatcher, EP, ETP, the shared expert), with the rows
 * of `run` when given. Shapes as moe-ep.ts holds them: router weight [h, E]; each rank's shard of
 * its L = E/EP local experts fc1 [L, h, 2f′] (gate then up) and fc2 [L, f′, h], f′ = f/ETP
 * (etpExpertShard); the shared expert fc1 [h, 2f_s/t], fc2 [f_s/t, h].
 */
export function moePlan(a: MoeRunArgs, run?: MoeRun): MoePlan {
  const c = a.config;
  const l = a.layout;
  const N = moeWorld(l);
  const d = moeMeshDegrees(l);
  const degrees = { tp: l.tp, dp: d.dp ?? 1, ep: l.ep, etp: l.etp, edp: N / (l.etp * l.ep) };
  const T = a.tokens;
  const { h } = a;
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const L = E / l.ep;
  const f = c.moeFfnHiddenSize / l.etp;
  const G = T * l.ep * l.etp;
  const cf = c.moeExpertCapacityFactor;
  // dropless: every pick is a row; with a capacity factor the dropped ones are neither sent nor combined
  const picks = cf === null ? '[T·k, h]' : '[≤ T·k, h]';
  const tokensFrom = l.sp && l.tp > 1 ? 's·b/t, its sequence shard' : l.tp > 1 ? 's·b, its TP group’s' : 's·b';
  const symbols: MoePlanSymbol[] = [
    { symbol: 'T', value: T, meaning: `tokens a rank routes (${tokensFrom})` },
    { symbol: 'h', value: h, meaning: 'hidden size' },
    { symbol: 'E', value: E, meaning: 'experts' },
    { symbol: 'k', value: k, meaning: 'experts per token' },
    { symbol: 'L', value: L, meaning: 'local experts a rank, E/EP' },
    { symbol: 'f′', value: f, meaning: l.etp > 1 ? 'an expert’s FFN over ETP, f/ETP' : 'an expert’s FFN' },
    ...(l.dispatcher === 'allgather'
      ? [{ symbol: 'G', value: G, meaning: 'tokens gathered over the tp_ep group, T·EP·ETP' }]
      : []),
  ];
  const t = (name: string, symbolic: string, shape: readonly number[] | null): MoePlanTensor => ({
    name,
    symbolic,
    shape,
  });
  const w = (name: string, symbolic: string, shape: readonly number[]): MoePlanTensor => ({
    ...t(name, symbolic, shape),
    weight: true,
  });
  const etpGather =
    l.etp > 1 ? `, all-gathered over the ${l.etp} ETP ranks (each holds f/ETP of every local expert)` : '';
  const etpScatter = l.etp > 1 ? `the ETP partial sums reduce-scattered over the ${l.etp} ETP ranks, ` : '';
  const router: MoePlanStage = {
    stage: 'router',
    megatron: 'TopKRouter (router.py)',
    words: `logits = x · W_r, ${c.moeRouterScoreFunction} scores, each token’s top-${k} experts${
      cf === null
        ? ', dropless'
        : `; at most ⌈T·k/E · ${cf}⌉ = ${Math.ceil(((T * k) / E) * cf)} picks per expert, the rest dropped`
    }`,
    tensors: [
      t('x', '[T, h]', [T, h]),
      w('W_r', '[h, E]', [h, E]),
      t('logits', '[T, E]', [T, E]),
      t('picks', '[T, k]', [T, k]),
    ],
  };
  const dispatch: MoePlanStage =
    l.dispatcher === 'alltoall'
      ? {
          stage: 'dispatch',
          megatron: 'MoEAlltoAllTokenDispatcher (token_dispatcher.py)',
          words: `the kept picks permuted by expert, the counts all-gathered, one all-to-all over the ${l.ep} EP ranks to the experts’ ranks${etpGather}, sorted by local expert into R rows`,
          tensors: [t('permuted', picks, cf === null ? [T * k, h] : null), t('received', '[R, h]', null)],
        }
      : {
          stage: 'dispatch',
          megatron: 'MoEAllGatherTokenDispatcher (token_dispatcher.py)',
          words: `x, the picks and their probabilities all-gathered over the tp_ep group (${l.ep} EP × ${l.etp} ETP ranks); each rank permutes the picks of its own L experts into R rows`,
          tensors: [t('gathered', '[G, h]', [G, h]), t('permuted', '[R, h]', null)],
        };
  const experts: MoePlanStage = {
    stage: 'experts',
    megatron: 'TEGroupedMLP (experts.py), --moe-grouped-gemm',
    words: `one grouped GEMM over the rank’s ${L} local expert${L > 1 ? 's' : ''} for fc1, SwiGLU, one for fc2${
      l.etp > 1 ? ' (fc2 row parallel: partial sums over f)' : ''
    }; backward, each GEMM’s dgrad and wgrad`,
    tensors: [
      w('fc1', '[L, h, 2f′]', [L, h, 2 * f]),
      w('fc2', '[L, f′, h]', [L, f, h]),
      t('fc1 out', '[R, 2f′]', null),
      t('SwiGLU', '[R, f′]', null),
      t('fc2 out', '[R, h]', null),
    ],
  };
  const fs = c.moeSharedExpertIntermediateSize;
  const sharedRows = l.sp && l.tp > 1 ? T * l.tp : T;
  const shared: MoePlanStage[] =
    fs === null
      ? []
      : [
          {
            stage: 'shared',
            megatron: 'SharedExpertMLP (shared_experts.py)',
            words: `every token through one SwiGLU of ${fs}${l.tp > 1 ? `, split over the ${l.tp} TP ranks as the dense MLP (${l.sp ? 'gathered, then reduce-scattered' : 'all-reduced'})` : ''}, added to the routed output`,
            tensors: [
              w('fc1', l.tp > 1 ? '[h, 2f_s/t]' : '[h, 2f_s]', [h, (2 * fs) / l.tp]),
              w('fc2', l.tp > 1 ? '[f_s/t, h]' : '[f_s, h]', [fs / l.tp, h]),
              t('rows', l.sp && l.tp > 1 ? '[T·t, h]' : '[T, h]', [sharedRows, h]),
            ],
          },
        ];
  const combine: MoePlanStage =
    l.dispatcher === 'alltoall'
      ? {
          stage: 'combine',
          megatron: 'MoEAlltoAllTokenDispatcher.combine, unpermute (moe_utils.py)',
          words: `${etpScatter}one all-to-all back over the ${l.ep} EP ranks, then y = Σ_j p_j · (expert j’s row) over each token’s k picks`,
          tensors: [t('returned', picks, cf === null ? [T * k, h] : null), t('y', '[T, h]', [T, h])],
        }
      : {
          stage: 'combine',
          megatron: 'MoEAllGatherTokenDispatcher.combine, unpermute (moe_utils.py)',
          words: `each rank’s rows unpermuted weighted by p_j into [G, h], reduce-scattered over the tp_ep group back to each token’s rank`,
          tensors: [t('unpermuted', '[G, h]', [G, h]), t('y', '[T, h]', [T, h])],
        };
  const mesh = rankMesh(moePoolMesh(l).degrees);
  const owners = Array.from({ length: N }, (_, rank): MoeRankOwner => {
    const x = mesh.coords(rank);
    return {
      rank,
      tp: x.tp,
      dp: x.dp,
      ep: x.ep,
      etp: x.etp,
      edp: x.edp,
      experts: [x.ep * L, (x.ep + 1) * L],
      expertFfn: [x.etp * f, (x.etp + 1) * f],
    };
  });
  return {
    ranks: N,
    degrees,
    symbols,
    stages: [router, dispatch, experts, ...shared, combine],
    owners,
    expertRows: run
      ? run.ranks.map((q) => ({ rank: q.rank, experts: { firstExpert: q.firstExpert, tokens: q.expertRows } }))
      : null,
  };
}

/** One parameter of the block on a rank, for the shapes card: its stage, name, shapes and float32 bytes. */
export interface MoeWeightRow {
  readonly stage: MoePlanStageName;
  readonly tensor: MoePlanTensor;
  /** 4 bytes per element: the ranks hold float32. */
  readonly bytes: number;
  /** The router on every rank (replicated); the experts over EP × ETP and the shared expert over t a shard where split, else replicated (whole on one rank). */
  readonly holds: 'replicated' | 'shard' | 'whole';
}

/** The parameters each rank holds of the block `p` describes (the tensors of its stages marked `weight`). */
export function moeWeightRows(p: MoePlan): MoeWeightRow[] {
  const d = p.degrees;
  // a weight no group splits is the same on every rank: replicated, or whole on a single rank
  const split = (x: boolean) => (x ? 'shard' : p.ranks > 1 ? 'replicated' : 'whole');
  const holds: Record<MoePlanStageName, MoeWeightRow['holds']> = {
    router: 'replicated',
    dispatch: 'replicated',
    experts: split(d.ep * d.etp > 1),
    shared: split(d.tp > 1),
    combine: 'replicated',
  };
  return p.stages.flatMap((s) =>
    s.tensors
      .filter((x) => x.weight)
      .map((x) => ({
        stage: s.stage,
        tensor: x,
        bytes: 4 * x.shape!.reduce((a, n) => a * n, 1),
        holds: holds[s.stage],
      })),
  );
}

/** A tensor in words: "[T, h] = [8, 16]", or the symbols alone where the routing sets its size. */
export const planTensorText = (x: MoePlanTensor): string =>
  x.shape ? `${x.symbolic} = [${x.shape.join(', ')}]` : x.symbolic;
