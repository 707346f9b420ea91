// What <tp-shapes> shows, from the plan (pure, no DOM): activations at each boundary of the layer, ownership, memory.
import type { PlanAccounting, RankMemory } from '../model/accounting.ts';
import type { LayerPlan, PlannedOp } from '../parallel/plan-types.ts';

/** How an activation is laid out across the t ranks. */
export type Layout = 'replicated' | 'sequence-sharded' | 'split-last' | 'partial-sums';

/** One boundary of the forward pass: the activation after op `op`, its layout and local shape on every rank. */
export interface Boundary {
  readonly op: string;
  readonly label: string;
  /** Megatron's symbolic local shape, e.g. "[s/t, b, h]". */
  readonly symbolic: string;
  readonly layout: Layout;
  /** This rank's shape (every rank holds the same shape). */
  readonly shape: readonly number[];
}

interface BoundarySpec {
  readonly op: string;
  readonly label: string;
  readonly symbolic: (sp: boolean) => string;
  readonly layout: (sp: boolean) => Layout;
}

const hidden = (sp: boolean): string => (sp ? '[s/t, b, h]' : '[s, b, h]');
const hiddenLayout = (sp: boolean): Layout => (sp ? 'sequence-sharded' : 'replicated');
const gathered = (): string => '[s, b, h]';

/** The boundaries in forward order; ops missing from a plan (no vocabulary, no SP) are skipped. */
const specs: readonly BoundarySpec[] = [
  { op: 'embed.reduce', label: 'embedding output (after g)', symbolic: hidden, layout: hiddenLayout },
  { op: 'ln1', label: 'RMSNorm 1 output', symbolic: hidden, layout: hiddenLayout },
  { op: 'ln1.gather', label: 'attention input (all-gathered)', symbolic: gathered, layout: () => 'replicated' },
  // groups < t: linear_qkv's even slice, then all-gathered along the last dim (W = (heads + 2·groups)·d).
  {
    op: 'qkv',
    label: 'linear_qkv: this rank’s W/t columns',
    symbolic: () => '[s, b, W/t]',
    layout: () => 'split-last',
  },
  { op: 'qkv.gather', label: 'QKV all-gathered (last dim)', symbolic: () => '[s, b, W]', layout: () => 'replicated' },
  { op: 'qkv.q', label: 'Q: this rank’s heads', symbolic: () => '[s, b, heads/t, d]', layout: () => 'split-last' },
  { op: 'qkv.k', label: 'K: this rank’s KV groups', symbolic: () => '[s, b, kv/t, d]', layout: () => 'split-last' },
  { op: 'attn.context', label: 'attention context', symbolic: () => '[s, b, heads/t, d]', layout: () => 'split-last' },
  {
    op: 'attn.proj',
    label: 'output projection (row-parallel)',
    symbolic: () => '[s, b, h]',
    layout: () => 'partial-sums',
  },
  {
    op: 'attn.reduce',
    label: 'after g (all-reduce, or reduce-scatter with SP)',
    symbolic: hidden,
    layout: hiddenLayout,
  },
  { op: 'ln2', label: 'RMSNorm 2 output', symbolic: hidden, layout: hiddenLayout },
  { op: 'ln2.gather', label: 'MLP input (all-gathered)', symbolic: gathered, layout: () => 'replicated' },
  { op: 'mlp.gate', label: 'gate / up (column-parallel)', symbolic: () => '[s, b, ffn/t]', layout: () => 'split-last' },
  { op: 'mlp.down', label: 'down (row-parallel)', symbolic: () => '[s, b, h]', layout: () => 'partial-sums' },
  {
    op: 'mlp.reduce',
    label: 'after g (all-reduce, or reduce-scatter with SP)',
    symbolic: hidden,
    layout: hiddenLayout,
  },
  { op: 'logits.gather', label: 'output-layer input (all-gathered)', symbolic: gathered, layout: () => 'replicated' },
  {
    op: 'logits',
    label: 'logits: this rank’s vocabulary rows',
    symbolic: () => '[s, b, V/t]',
    layout: () => 'split-last',
  },
];

/** In words, for the page. */
export const layoutWords: Record<Layout, string> = {
  replicated: 'replicated',
  'sequence-sharded': 'sequence-sharded',
  'split-last': 'split on the last dim',
  'partial-sums': 'partial sums',
};

/**
 * The forward boundaries of a plan. At t = 1 every activation is whole, so its layout is
 * 'replicated' and the symbolic shape drops "/t".
 */
export function boundaries(plan: LayerPlan): Boundary[] {
  const t = plan.ranks.length;
  const sp = plan.config.sp && t > 1;
  const byName = new Map<string, PlannedOp>();
  for (const op of plan.ops) if (op.phase === 'forward' && !byName.has(op.name)) byName.set(op.name, op);
  const out: Boundary[] = [];
  for (const spec of specs) {
    const op = byName.get(spec.op) ?? (spec.op === 'embed.reduce' ? byName.get('embed') : undefined);
    if (!op) continue;
    const layout = t === 1 ? 'replicated' : spec.layout(sp);
    const symbolic = t === 1 ? spec.symbolic(false).replace(/\/t/g, '') : spec.symbolic(sp);
    out.push({ op: op.name, label: spec.label, symbolic, layout, shape: op.outShape });
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
