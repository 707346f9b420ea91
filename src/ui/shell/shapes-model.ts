// What <tp-shapes> shows, from the plan (pure, no DOM): activations at each boundary of the layer, ownership, memory.
import type { PlanAccounting, RankMemory } from '../../accounting/accounting.ts';
import type { GemmProduct, LayerPlan, PlannedOp } from '../../parallel/plan-types.ts';
import type { WeightName } from '../../parallel/weight-names.ts';

/** How an activation is laid out across the t ranks. */
export type Layout = 'replicated' | 'sequence-sharded' | 'split-last' | 'partial-sums';

/** One boundary of the forward pass: the activation after an op (`op` its label), its layout and local shape on every rank. */
export interface Boundary {
  /** The op's index in the plan, and its label (for display). */
  readonly opIndex: number;
  readonly op: string;
  readonly label: string;
  /** Megatron's symbolic local shape, e.g. "[s/t, b, h]". */
  readonly symbolic: string;
  readonly layout: Layout;
  /** This rank's shape (every rank holds the same shape). */
  readonly shape: readonly number[];
}

/** Which forward op a boundary shows, from the plan's typed fields (never its label). */
type OpMatch = (op: PlannedOp) => boolean;

/** Where a boundary's op is: the op itself, or the collective right before or after it (absent without one). */
type Locate = { readonly op: OpMatch } | { readonly collectiveBefore: OpMatch } | { readonly collectiveAfter: OpMatch };

interface BoundarySpec {
  /** The first of these found in the forward ops gives the boundary (none found: skipped). */
  readonly at: readonly Locate[];
  readonly label: string;
  readonly symbolic: (sp: boolean) => string;
  readonly layout: (sp: boolean) => Layout;
  /**
   * Not in the page's MoE layer: the dense MLP's (its input gather, gate/up, down, the collective
   * after; the MoE block replaces it) and the vocabulary's (the MoE run has none: moeRequestOf).
   */
  readonly notInMoeLayer?: true;
}

const hidden = (sp: boolean): string => (sp ? '[s/t, b, h]' : '[s, b, h]');
const hiddenLayout = (sp: boolean): Layout => (sp ? 'sequence-sharded' : 'replicated');
const gathered = (): string => '[s, b, h]';

/** The GEMM computing `product` itself (its forward). */
const product =
  (p: GemmProduct): OpMatch =>
  (op) =>
    op.kind === 'gemm' && op.gemm.site.product === p && op.gemm.site.computes === 'C';
/** The forward kernel reading weight `w` (the RMSNorms by their gains, the embedding by its table). */
const kernelOf =
  (w: WeightName): OpMatch =>
  (op) =>
    op.kind === 'kernel' && op.weight === w;

/** The boundaries in forward order; ops missing from a plan (no vocabulary, no SP, t = 1) are skipped. */
const specs: readonly BoundarySpec[] = [
  {
    at: [{ collectiveAfter: kernelOf('emb') }, { op: kernelOf('emb') }],
    label: 'embedding output (after g)',
    notInMoeLayer: true,
    symbolic: hidden,
    layout: hiddenLayout,
  },
  { at: [{ op: kernelOf('g1') }], label: 'RMSNorm 1 output', symbolic: hidden, layout: hiddenLayout },
  {
    at: [{ collectiveBefore: product('q') }, { collectiveBefore: product('qkv') }],
    label: 'attention input (all-gathered)',
    symbolic: gathered,
    layout: () => 'replicated',
  },
  // groups < t: linear_qkv's even slice of W = (heads + 2·groups)·d columns, then all-gathered along the last dim.
  {
    at: [{ op: product('qkv') }],
    label: 'linear_qkv: this rank’s W/t columns',
    symbolic: () => '[s, b, W/t]',
    layout: () => 'split-last',
  },
  {
    at: [{ collectiveAfter: product('qkv') }],
    label: 'QKV all-gathered (last dim)',
    symbolic: () => '[s, b, W]',
    layout: () => 'replicated',
  },
  {
    at: [{ op: product('q') }],
    label: 'Q: this rank’s heads',
    symbolic: () => '[s, b, heads/t, d]',
    layout: () => 'split-last',
  },
  {
    at: [{ op: product('k') }],
    label: 'K: this rank’s KV groups',
    symbolic: () => '[s, b, kv/t, d]',
    layout: () => 'split-last',
  },
  {
    at: [{ op: product('context') }],
    label: 'attention context',
    symbolic: () => '[s, b, heads/t, d]',
    layout: () => 'split-last',
  },
  {
    at: [{ op: product('proj') }],
    label: 'output projection (row-parallel)',
    symbolic: () => '[s, b, h]',
    layout: () => 'partial-sums',
  },
  {
    at: [{ collectiveAfter: product('proj') }],
    label: 'after g (all-reduce, or reduce-scatter with SP)',
    symbolic: hidden,
    layout: hiddenLayout,
  },
  { at: [{ op: kernelOf('g2') }], label: 'RMSNorm 2 output', symbolic: hidden, layout: hiddenLayout },
  {
    at: [{ collectiveBefore: product('gate') }],
    label: 'MLP input (all-gathered)',
    notInMoeLayer: true,
    symbolic: gathered,
    layout: () => 'replicated',
  },
  {
    at: [{ op: product('gate') }],
    label: 'gate / up (column-parallel)',
    notInMoeLayer: true,
    symbolic: () => '[s, b, ffn/t]',
    layout: () => 'split-last',
  },
  {
    at: [{ op: product('down') }],
    label: 'down (row-parallel)',
    notInMoeLayer: true,
    symbolic: () => '[s, b, h]',
    layout: () => 'partial-sums',
  },
  {
    at: [{ collectiveAfter: product('down') }],
    label: 'after g (all-reduce, or reduce-scatter with SP)',
    notInMoeLayer: true,
    symbolic: hidden,
    layout: hiddenLayout,
  },
  {
    at: [{ collectiveBefore: product('logits') }],
    label: 'output-layer input (all-gathered)',
    notInMoeLayer: true,
    symbolic: gathered,
    layout: () => 'replicated',
  },
  {
    at: [{ op: product('logits') }],
    label: 'logits: this rank’s vocabulary rows',
    notInMoeLayer: true,
    symbolic: () => '[s, b, V/t]',
    layout: () => 'split-last',
  },
];

/** The forward op a Locate points at in `ops` (the forward ops in order), if any. */
function locate(ops: readonly PlannedOp[], at: Locate): PlannedOp | undefined {
  const find = 'op' in at ? at.op : 'collectiveBefore' in at ? at.collectiveBefore : at.collectiveAfter;
  const i = ops.findIndex(find);
  if (i < 0 || 'op' in at) return ops[i];
  const next = ops[i + ('collectiveBefore' in at ? -1 : 1)];
  return next?.kind === 'collective' ? next : undefined;
}

/** In words, for the page. */
export const layoutWords: Record<Layout, string> = {
  replicated: 'replicated',
  'sequence-sharded': 'sequence-sharded',
  'split-last': 'split on the last dim',
  'partial-sums': 'partial sums',
};

/**
 * The forward boundaries of a plan. At t = 1 every activation is whole, so its layout is
 * 'replicated' and the symbolic shape drops "/t". `moeLayer` keeps what the page's MoE layer runs:
 * not the dense MLP's (the MoE block in its place: its shapes are moePlan's), nor the vocabulary's.
 */
export function boundaries(plan: LayerPlan, opts: { readonly moeLayer?: boolean } = {}): Boundary[] {
  const t = plan.ranks.length;
  const sp = plan.config.sp && t > 1;
  const forward = plan.ops.filter((op) => op.phase === 'forward');
  const out: Boundary[] = [];
  for (const spec of specs) {
    if (spec.notInMoeLayer && opts.moeLayer) continue;
    const op = spec.at.map((at) => locate(forward, at)).find((o) => o !== undefined);
    if (!op) continue;
    const layout = t === 1 ? 'replicated' : spec.layout(sp);
    const symbolic = t === 1 ? spec.symbolic(false).replace(/\/t/g, '') : spec.symbolic(sp);
    out.push({ opIndex: op.index, op: op.name, label: spec.label, symbolic, layout, shape: op.outShape });
  }
  return out;
}

/** Ranks whose memory is identical, merged: "ranks 0–3" and their shared numbers. */
export interface MemoryGroup {
  readonly ranks: readonly number[];
  readonly memory: RankMemory;
}

/** Consecutive ranks with equal parameter, gradient and activation bytes, merged (t = 64 stays a short table). */
export function memoryGroups(acc: PlanAccounting): MemoryGroup[] {
  const out: { ranks: number[]; memory: RankMemory }[] = [];
  for (const m of acc.memory) {
    const last = out[out.length - 1];
    const same =
      last &&
      last.memory.parameterBytes === m.parameterBytes &&
      last.memory.gradientBytes === m.gradientBytes &&
      last.memory.activationBytes === m.activationBytes;
    if (same) last.ranks.push(m.rank);
    else out.push({ ranks: [m.rank], memory: m });
  }
  return out;
}

/** "rank 3" or "ranks 0–7". */
export function rankRange(ranks: readonly number[]): string {
  return ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks[0]}–${ranks[ranks.length - 1]}`;
}

/** "[a, b)" of a half-open range, or "—" when empty. */
export function rangeText(r: readonly [number, number]): string {
  return r[1] > r[0] ? `${r[0]}–${r[1] - 1}` : '—';
}
