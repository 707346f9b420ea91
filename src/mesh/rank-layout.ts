/**
 * The rank layout of a mesh of N = tp·cp·dp·pp ranks, as Megatron-Core lays out its process groups
 * (megatron/core/parallel_state.py at core_v0.19.0: RankGenerator, generate_masked_orthogonal_rank_groups,
 * initialize_model_parallel). Ranks are numbered in an order string, first token fastest:
 *
 *   rank = Σ_k coord_k · stride_k,  stride_k = Π_{j<k} size_j
 *
 * and a group of a set of tokens is a set of ranks that differ only in those tokens' coordinates.
 * Two generators share the ranks: the dense one (tp, cp, ep = 1, dp, pp) for attention and dense
 * layers, and the expert one (etp, cp = 1, ep, edp, pp) for the experts, edp = N / (etp·ep·pp)
 * ("parallel folding": world = tp·cp·dp·pp = etp·ep·edp·pp). EP therefore adds no ranks of its own:
 * it folds into the dense DP·CP·TP ranks.
 */

/** Megatron's rank orders: the default, and --use-tp-pp-dp-mapping's (megatron/training/initialize.py). */
export type RankOrder = 'tp-cp-ep-dp-pp' | 'tp-cp-ep-pp-dp';

/** The order Megatron-LM uses with or without --use-tp-pp-dp-mapping. */
export function rankOrder(useTpPpDpMapping: boolean): RankOrder {
  return useTpPpDpMapping ? 'tp-cp-ep-pp-dp' : 'tp-cp-ep-dp-pp';
}

/** A token of the order string (RankGenerator's name_to_size keys; gtp_remat is always 1 here). */
export type RankToken = 'tp' | 'cp' | 'ep' | 'dp' | 'pp';
type Token = RankToken;

/**
 * The degrees of a mesh: tensor, context, data and pipeline parallel; for the experts, expert
 * parallel `ep` and expert tensor parallel `etp` (Megatron's default: etp = tp).
 */
export interface MeshDegrees {
  readonly tp: number;
  readonly cp: number;
  readonly dp: number;
  readonly pp: number;
  readonly ep: number;
  readonly etp: number;
}

/** A mesh as plain data (it crosses to the rank workers): its degrees and rank order. */
export interface MeshSpec {
  readonly degrees: MeshDegrees;
  readonly order: RankOrder;
}

/** Where one rank sits: its coordinate along every dense and expert dimension. */
export interface MeshCoords {
  readonly tp: number;
  readonly cp: number;
  readonly dp: number;
  readonly pp: number;
  readonly etp: number;
  readonly ep: number;
  readonly edp: number;
}

/** The process groups a rank belongs to: dense tp, cp, dp, pp, Megatron's gradient group dp-cp, and the expert mesh's etp, ep, edp. */
export type GroupKind = 'tp' | 'cp' | 'dp' | 'pp' | 'dp-cp' | 'etp' | 'ep' | 'edp';

/** Every group kind, dense first. */
export const groupKinds: readonly GroupKind[] = ['tp', 'cp', 'dp', 'pp', 'dp-cp', 'etp', 'ep', 'edp'];

/** The expert kinds: groups of the expert generator. */
export const expertKinds: ReadonlySet<GroupKind> = new Set(['etp', 'ep', 'edp']);

/** Which generator builds a kind, and from which tokens (initialize_model_parallel's get_ranks calls). */
const kindTokens: Readonly<Record<GroupKind, { readonly expert: boolean; readonly tokens: readonly Token[] }>> = {
  tp: { expert: false, tokens: ['tp'] },
  cp: { expert: false, tokens: ['cp'] },
  dp: { expert: false, tokens: ['dp'] },
  pp: { expert: false, tokens: ['pp'] },
  'dp-cp': { expert: false, tokens: ['dp', 'cp'] },
  etp: { expert: true, tokens: ['tp'] },
  ep: { expert: true, tokens: ['ep'] },
  edp: { expert: true, tokens: ['dp'] },
};

/** Most ranks a mesh has here: one worker per rank, each with its own GPUDevice, and one shared ring per group serves at most 16 (comm/sab-layout.ts). */
export const maxMeshRanks = 16;

/**
 * generate_masked_orthogonal_rank_groups: `sizes` per token in order (first fastest), `mask` the
 * tokens a group spans. Group g takes the unmasked coordinates of g (decomposed over the unmasked
 * sizes, first fastest) and member m the masked coordinates of m; its rank is Σ coord · stride
 * over all tokens. Groups and their members come in Megatron's order.
 */
export function maskedGroups(sizes: readonly number[], mask: readonly boolean[]): number[][] {
  const strides: number[] = [];
  let world = 1;
  for (const s of sizes) {
    strides.push(world);
    world *= s;
  }
  const pick = (on: boolean) => sizes.flatMap((s, k) => (mask[k] === on ? [{ size: s, stride: strides[k]! }] : []));
  const masked = pick(true);
  const unmasked = pick(false);
  // Σ over `dims` of (the i-th mixed-radix digit of `index` over their sizes) · stride.
  const offset = (index: number, dims: readonly { size: number; stride: number }[]): number => {
    let at = 0;
    for (const d of dims) {
      at += (index % d.size) * d.stride;
      index = Math.floor(index / d.size);
    }
    return at;
  };
  const groupSize = masked.reduce((p, d) => p * d.size, 1);
  return Array.from({ length: world / groupSize }, (_, g) =>
    Array.from({ length: groupSize }, (_, m) => offset(m, masked) + offset(g, unmasked)),
  );
}

/**
 * RankGenerator.get_ranks: the groups spanning the tokens `span` of ranks laid out in `order` with
 * `sizes` per token. No limit on the ranks (the projection lays out whole clusters with it).
 */
export function orderedGroups(
  order: RankOrder,
  sizes: Readonly<Record<RankToken, number>>,
  span: readonly RankToken[],
): number[][] {
  const tokens = order.split('-') as RankToken[];
  return maskedGroups(
    tokens.map((t) => sizes[t]),
    tokens.map((t) => span.includes(t)),
  );
}

/** A rank's group of one kind: its index among the kind's groups, and its members (global ranks, in ring order). */
export interface GroupPlace {
  readonly kind: GroupKind;
  readonly index: number;
  readonly members: readonly number[];
}

/** A mesh laid out: coordinates of every rank and its groups of every kind. */
export interface RankMesh {
  readonly spec: MeshSpec;
  /** N = tp·cp·dp·pp. */
  readonly world: number;
  /** Expert data parallel degree: N / (etp·ep·pp). */
  readonly edp: number;
  /** Every group of a kind, in Megatron's enumeration order. */
  groups(kind: GroupKind): readonly (readonly number[])[];
  /** The group of `kind` that holds `rank`. */
  groupOf(rank: number, kind: GroupKind): GroupPlace;
  coords(rank: number): MeshCoords;
}

const whole = (v: number): boolean => Number.isInteger(v) && v >= 1;

/** The degrees with defaults (1, and etp = tp), checked: throws naming what is wrong and what to write. */
export function meshDegrees(d: Partial<MeshDegrees>): MeshDegrees {
  const tp = d.tp ?? 1;
  const full: MeshDegrees = { tp, cp: d.cp ?? 1, dp: d.dp ?? 1, pp: d.pp ?? 1, ep: d.ep ?? 1, etp: d.etp ?? tp };
  for (const [k, v] of Object.entries(full))
    if (!whole(v)) throw new Error(`mesh: ${k} ${v} must be a whole number ≥ 1 (1 leaves that dimension out).`);
  const world = full.tp * full.cp * full.dp * full.pp;
  if (world > maxMeshRanks)
    throw new Error(
      `mesh: tp ${full.tp} × cp ${full.cp} × dp ${full.dp} × pp ${full.pp} = ${world} ranks, more than the ${maxMeshRanks} allowed here (each rank is a worker with its own GPUDevice, and one shared-memory ring serves at most ${maxMeshRanks} ranks); lower a degree so that the product is at most ${maxMeshRanks}.`,
    );
  const expert = full.etp * full.ep * full.pp;
  if (world % expert !== 0)
    throw new Error(
      `mesh: the ${world} ranks do not divide into etp ${full.etp} × ep ${full.ep} × pp ${full.pp} = ${expert} (Megatron: world size not divisible by expert_tensor_model_pipeline_parallel size); choose ep and etp whose product with pp divides ${world}.`,
    );
  return full;
}

/** Lays out a mesh of `degrees` in `order` (default Megatron's tp-cp-ep-dp-pp). */
export function rankMesh(degrees: Partial<MeshDegrees>, order: RankOrder = 'tp-cp-ep-dp-pp'): RankMesh {
  const d = meshDegrees(degrees);
  const world = d.tp * d.cp * d.dp * d.pp;
  const edp = world / (d.etp * d.ep * d.pp);
  // initialize_model_parallel: with pp not last, a stage's ranks must be the same for both generators.
  if (!order.endsWith('pp') && d.pp > 1 && edp !== d.dp)
    throw new Error(
      `mesh: with order ${order} (pp not last) and pp ${d.pp} > 1 the experts' data parallel degree (${edp}) must equal dp ${d.dp} (Megatron: "the data parallel size of the attention and moe layers must be the same"); use order tp-cp-ep-dp-pp or choose etp × ep = tp × cp.`,
    );
  const dense: Record<Token, number> = { tp: d.tp, cp: d.cp, ep: 1, dp: d.dp, pp: d.pp };
  const experts: Record<Token, number> = { tp: d.etp, cp: 1, ep: d.ep, dp: edp, pp: d.pp };
  const cache = new Map<GroupKind, number[][]>();
  const groups = (kind: GroupKind): number[][] => {
    let g = cache.get(kind);
    if (!g) {
      const { expert, tokens: span } = kindTokens[kind];
      g = orderedGroups(order, expert ? experts : dense, span);
      cache.set(kind, g);
    }
    return g;
  };
  const checkRank = (rank: number): void => {
    if (!Number.isInteger(rank) || rank < 0 || rank >= world)
      throw new Error(`mesh: rank ${rank} is not a rank of this mesh of ${world} (0…${world - 1}).`);
  };
  const groupOf = (rank: number, kind: GroupKind): GroupPlace => {
    checkRank(rank);
    const all = groups(kind);
    const index = all.findIndex((g) => g.includes(rank));
    return { kind, index, members: all[index]! };
  };
  const at = (rank: number, kind: GroupKind): number => groupOf(rank, kind).members.indexOf(rank);
  return {
    spec: { degrees: d, order },
    world,
    edp,
    groups,
    groupOf,
    coords: (rank) => ({
      tp: at(rank, 'tp'),
      cp: at(rank, 'cp'),
      dp: at(rank, 'dp'),
      pp: at(rank, 'pp'),
      etp: at(rank, 'etp'),
      ep: at(rank, 'ep'),
      edp: at(rank, 'edp'),
    }),
  };
}

/** The mesh of a plain tensor-parallel pool: t ranks, one TP group. */
export function tpMesh(t: number): MeshSpec {
  return rankMesh({ tp: t }).spec;
}
