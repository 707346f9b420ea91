import { headDim, type LayerConfig, type ModelShape } from './config.ts';
import { gatheredQkv, qkvOutWidth } from './qkv-layout.ts';
import { degreesWhere, list, type ConfigField, type ValidationIssue } from './validate-issue.ts';

/**
 * groups vs t (Megatron-Core's TransformerConfig, core_v0.19.0: num_query_groups must be a
 * multiple or divisor of tensor_model_parallel_size): groups ≥ t needs groups % t = 0 (whole
 * groups per rank); groups < t needs t % groups = 0 (t/groups ranks share a group).
 */
function groupsFit(groups: number, t: number): boolean {
  return groups >= t ? groups % t === 0 : t % groups === 0;
}

/**
 * groups < t: linear_qkv is a ColumnParallelLinear whose output W is split evenly into t slices
 * (Megatron's `divide(output_size, world_size)`), then all-gathered: W % t = 0. With groups ≥ t
 * heads % t = 0 and groups % t = 0 already make it so.
 */
function qkvWidthFits(c: Pick<ModelShape, 'h' | 'heads' | 'groups' | 'kvChannels'>, t: number): boolean {
  return c.groups >= t || qkvOutWidth(c) % t === 0;
}

/** Every attention rule on t: heads % t = 0, groups vs t, and W % t = 0 when groups < t. */
export const attentionFits = (c: Pick<ModelShape, 'h' | 'heads' | 'groups' | 'kvChannels'>, t: number): boolean =>
  c.heads % t === 0 && groupsFit(c.groups, t) && qkvWidthFits(c, t);

/**
 * The attention rules on t (groups vs t; W % t when groups < t) and, when groups < t, the note on
 * the gathered QKV: what each rank computes and what rank 0 takes.
 */
export function checkAttentionDegree(
  c: LayerConfig,
  bad: ReadonlySet<ConfigField>,
  errors: ValidationIssue[],
  notes: ValidationIssue[],
): void {
  const t = c.tp;
  // Reported only when heads % t = 0: a t that breaks heads % t is already reported by the heads rule.
  if (
    !bad.has('groups') &&
    !bad.has('heads') &&
    c.heads % c.groups === 0 &&
    c.heads % t === 0 &&
    !groupsFit(c.groups, t)
  ) {
    const legal = degreesWhere((u) => attentionFits(c, u));
    const why =
      c.groups >= t
        ? `query groups (${c.groups}) must be divisible by the TP degree t = ${t} when groups ≥ t (each rank holds groups/t whole KV groups)`
        : `the TP degree t = ${t} must be a multiple of query groups (${c.groups}) when t > groups (t/groups ranks share each KV group, as Megatron-Core requires)`;
    errors.push({
      rule: 'groups-vs-tp',
      field: 'groups',
      fields: ['groups', 'tp'],
      legal,
      legalFor: 'tp',
      message: `${why}: legal t for ${c.groups} groups and ${c.heads} heads are ${list(legal)}.`,
    });
  }
  // Reported only when the rules above hold, with h divisible by heads (d whole).
  if (
    !bad.has('groups') &&
    !bad.has('heads') &&
    !bad.has('h') &&
    Number.isInteger(headDim(c)) &&
    c.heads % c.groups === 0 &&
    c.heads % t === 0 &&
    groupsFit(c.groups, t) &&
    !qkvWidthFits(c, t)
  ) {
    const d = headDim(c);
    const legal = degreesWhere((u) => attentionFits(c, u));
    errors.push({
      rule: 'qkv-width-divisible-by-tp',
      field: 'tp',
      fields: ['tp', 'groups', 'heads', 'h'],
      legal,
      legalFor: 'tp',
      message: `with query groups (${c.groups}) < t = ${t}, linear_qkv's output width (heads + 2·groups)·d = (${c.heads} + 2·${c.groups})·${d} = ${qkvOutWidth(c)} must be divisible by t (Megatron-Core splits it evenly over the ranks, then all-gathers it): legal t for ${c.heads} heads in ${c.groups} group${c.groups > 1 ? 's' : ''} with h = ${c.h} are ${list(legal)}.`,
    });
  }
  if (
    !bad.has('groups') &&
    !bad.has('heads') &&
    !bad.has('h') &&
    c.groups < t &&
    Number.isInteger(headDim(c)) &&
    attentionFits(c, t)
  ) {
    const per = t / c.groups;
    const W = qkvOutWidth(c);
    const r0 = gatheredQkv(c, 0);
    const heads0 =
      r0.heads[1] - r0.heads[0] > 1 ? `query heads ${r0.heads[0]}–${r0.heads[1] - 1}` : `query head ${r0.heads[0]}`;
    notes.push({
      rule: 'qkv-gather',
      field: 'groups',
      fields: ['groups', 'tp'],
      message:
        `${c.groups} query group${c.groups > 1 ? 's' : ''} < t = ${t}: as Megatron-Core does (since core_v0.16), each rank computes an even ${W / t}-column slice of linear_qkv's ${W} columns ` +
        `(laid out per group: [q heads | k | v] of group 0, then group 1, …), all-gathers them along the last dim (reduce-scatter in backward), ` +
        `and takes group block ⌊r / ${per}⌋ with its own ${c.heads / t} of that group's query heads: rank 0 takes block ${r0.block}, ${heads0}. Each weight column has one owner.`,
    });
  }
}
