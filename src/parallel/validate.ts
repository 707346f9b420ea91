import type { LayerConfig, ModelSizes } from './config.ts';
import { paddedVocab } from './ownership.ts';
import { tpOverlapNote, tpOverlapProblem } from './tp-overlap.ts';
import { attentionFits, checkAttentionDegree } from './validate-attention.ts';
import {
  degreesWhere,
  list,
  maxTp,
  type ConfigField,
  type ValidationIssue,
  type ValidationResult,
} from './validate-issue.ts';

export { maxTp };
export type { ConfigField, ValidationIssue, ValidationResult, ValidationRule } from './validate-issue.ts';

/** Largest head width: the rope kernel keeps d/2 frequencies in its uniform block (kernels/rope.ts maxRopePairs = 256). */
export const maxHeadDim = 512;

/**
 * Largest value of any size (s, b, h, heads, groups, ffn, vocab): the kernels index with 32-bit
 * integers and RoPE takes positions as float32, which holds every integer exactly only up to 2^24.
 * It also bounds every rule's work: divisors of a size take at most √(2^24) = 4096 steps.
 */
export const maxSize = 2 ** 24;

/**
 * Largest head count: attention's batched GEMMs dispatch one workgroup layer per (batch, head) and
 * WebGPU guarantees 65,535 workgroups per dimension (maxComputeWorkgroupsPerDimension).
 */
export const maxHeads = 65_535;

/** Positive divisors of n in increasing order (n ≥ 1), found in pairs (d, n/d) for d ≤ √n: O(√n). */
export function divisors(n: number): number[] {
  const low: number[] = [];
  const high: number[] = [];
  for (let d = 1; d * d <= n; d++) {
    if (n % d !== 0) continue;
    low.push(d);
    if (d * d !== n) high.push(n / d);
  }
  return low.concat(high.reverse());
}

/**
 * TP degrees t ∈ [1, max] that split `sizes` legally: heads % t = 0, groups vs t and
 * W % t = 0 when groups < t (attentionFits, validate-attention.ts), ffn % t = 0, and with SP s % t = 0. The
 * vocabulary never restricts t (it is padded).
 */
export function legalTpDegrees(sizes: ModelSizes, sp: boolean, max = maxTp): number[] {
  const out: number[] = [];
  for (let t = 1; t <= max; t++) {
    if (!attentionFits(sizes, t) || sizes.ffn % t !== 0) continue;
    if (sp && sizes.s % t !== 0) continue;
    out.push(t);
  }
  return out;
}

const isPosInt = (v: number): boolean => Number.isInteger(v) && v >= 1;

/** The error for a size above maxSize. */
const tooLarge = (f: ConfigField, name: string, v: number): ValidationIssue => ({
  rule: 'size-max',
  field: f,
  fields: [f],
  message:
    f === 'heads'
      ? `${name} (${v}) is more than the maximum of ${maxHeads} (attention dispatches one workgroup layer per head and WebGPU guarantees ${maxHeads} per dimension); lower it.`
      : `${name} (${v}) is more than the playground's maximum of ${maxSize} (2^24: kernels index with 32-bit integers and RoPE positions are float32, exact only up to 2^24); lower it.`,
});

/** The integer checks; returns the fields that failed so later rules skip them. */
function checkIntegers(c: LayerConfig, errors: ValidationIssue[]): Set<ConfigField> {
  const bad = new Set<ConfigField>();
  const names: Record<'s' | 'b' | 'h' | 'heads' | 'groups' | 'ffn', string> = {
    s: 'sequence length s',
    b: 'micro-batch size b',
    h: 'hidden size h',
    heads: 'attention heads',
    groups: 'query groups',
    ffn: 'FFN hidden size',
  };
  for (const f of Object.keys(names) as (keyof typeof names)[]) {
    if (!isPosInt(c[f])) {
      bad.add(f);
      errors.push({
        rule: 'integer',
        field: f,
        fields: [f],
        message: `${names[f]} (${c[f]}) must be a positive integer (≥ 1).`,
      });
    } else if (c[f] > (f === 'heads' ? maxHeads : maxSize)) {
      bad.add(f);
      errors.push(tooLarge(f, names[f], c[f]));
    }
  }
  if (!(Number.isInteger(c.vocab) && c.vocab >= 0)) {
    bad.add('vocab');
    errors.push({
      rule: 'integer',
      field: 'vocab',
      fields: ['vocab'],
      message: `vocabulary size (${c.vocab}) must be an integer ≥ 0 (0 = no embedding and no loss).`,
    });
  } else if (c.vocab > maxSize) {
    bad.add('vocab');
    errors.push(tooLarge('vocab', 'vocabulary size', c.vocab));
  }
  if (!(Number.isInteger(c.seed) && c.seed >= 0 && c.seed < 2 ** 32)) {
    bad.add('seed');
    errors.push({
      rule: 'integer',
      field: 'seed',
      fields: ['seed'],
      message: `seed (${c.seed}) must be an integer in [0, 2^32).`,
    });
  }
  if (!(Number.isInteger(c.tp) && c.tp >= 1 && c.tp <= maxTp)) {
    bad.add('tp');
    const legal =
      bad.has('heads') || bad.has('groups') || bad.has('ffn') || bad.has('s') ? undefined : legalTpDegrees(c, c.sp);
    errors.push({
      rule: 'tp-range',
      field: 'tp',
      fields: ['tp'],
      message:
        `the TP degree t (${c.tp}) must be an integer from 1 to ${maxTp}` +
        (legal ? `: legal t for this model are ${list(legal)}.` : '.'),
      ...(legal ? { legal, legalFor: 'tp' as const } : {}),
    });
  }
  for (const [f, what] of [
    ['eps', 'RMSNorm ε'],
    ['ropeBase', 'RoPE base θ'],
  ] as const) {
    if (!(Number.isFinite(c[f]) && c[f] > 0)) {
      bad.add(f);
      errors.push({
        rule: 'finite-positive',
        field: f,
        fields: [f],
        message: `${what} (${c[f]}) must be a finite number > 0.`,
      });
    }
  }
  return bad;
}

/** Rules on the model's own shape (independent of t). */
function checkShape(c: LayerConfig, bad: Set<ConfigField>, errors: ValidationIssue[]): void {
  if (c.kvChannels !== undefined) {
    // --kv-channels sets d apart from h / heads (arguments.py:1291-1293 asserts h % heads only without it).
    const d = c.kvChannels;
    if (!(isPosInt(d) && d % 2 === 0 && d <= maxHeadDim)) {
      bad.add('kvChannels');
      errors.push({
        rule: 'head-dim-even',
        field: 'kvChannels',
        fields: ['kvChannels'],
        message: `head width d = --kv-channels (${d}) must be a whole even number ≤ ${maxHeadDim} (RoPE's rotate-half pairs element k with k + d/2; the kernel holds d/2 frequencies).`,
      });
    }
  } else if (!bad.has('h') && !bad.has('heads')) {
    if (c.h % c.heads !== 0) {
      const legal = divisors(c.h);
      errors.push({
        rule: 'h-divisible-by-heads',
        field: 'heads',
        fields: ['heads', 'h'],
        legal,
        legalFor: 'heads',
        message: `hidden size h (${c.h}) must be divisible by heads (${c.heads}) so every head has width d = h/heads: legal heads for h = ${c.h} are ${list(legal)}.`,
      });
    } else {
      const d = c.h / c.heads;
      if (d % 2 !== 0) {
        const legal = divisors(c.h).filter((n) => (c.h / n) % 2 === 0);
        errors.push({
          rule: 'head-dim-even',
          field: 'heads',
          fields: ['heads', 'h'],
          legal,
          legalFor: 'heads',
          message: `head width d = h/heads = ${c.h}/${c.heads} = ${d} must be even (RoPE's rotate-half pairs element k with k + d/2): legal heads for h = ${c.h} are ${list(legal)}.`,
        });
      } else if (d > maxHeadDim) {
        const legal = divisors(c.h).filter((n) => (c.h / n) % 2 === 0 && c.h / n <= maxHeadDim);
        errors.push({
          rule: 'head-dim-max',
          field: 'heads',
          fields: ['heads', 'h'],
          legal,
          legalFor: 'heads',
          message: `head width d = h/heads = ${c.h}/${c.heads} = ${d} must be at most ${maxHeadDim} (the RoPE kernel holds d/2 frequencies): legal heads for h = ${c.h} are ${list(legal)}.`,
        });
      }
    }
  }
  if (!bad.has('heads') && !bad.has('groups') && c.heads % c.groups !== 0) {
    const legal = divisors(c.heads);
    errors.push({
      rule: 'heads-divisible-by-groups',
      field: 'groups',
      fields: ['groups', 'heads'],
      legal,
      legalFor: 'groups',
      message: `heads (${c.heads}) must be divisible by query groups (${c.groups}) so each KV group serves heads/groups query heads: legal groups for ${c.heads} heads are ${list(legal)}.`,
    });
  }
}

/** Rules that tie a size to the TP degree t, and the notes about who owns what. */
function checkDegree(c: LayerConfig, bad: Set<ConfigField>, errors: ValidationIssue[], notes: ValidationIssue[]): void {
  if (bad.has('tp')) return;
  const t = c.tp;
  if (!bad.has('heads') && c.heads % t !== 0) {
    const legal = degreesWhere((u) => c.heads % u === 0);
    errors.push({
      rule: 'heads-divisible-by-tp',
      field: 'heads',
      fields: ['heads', 'tp'],
      legal,
      legalFor: 'tp',
      message: `heads (${c.heads}) must be divisible by the TP degree t = ${t} (each rank computes heads/t whole heads): legal t for ${c.heads} heads are ${list(legal)}.`,
    });
  }
  checkAttentionDegree(c, bad, errors, notes);
  if (!bad.has('ffn') && c.ffn % t !== 0) {
    const legal = degreesWhere((u) => c.ffn % u === 0);
    errors.push({
      rule: 'ffn-divisible-by-tp',
      field: 'ffn',
      fields: ['ffn', 'tp'],
      legal,
      legalFor: 'tp',
      message: `FFN hidden size (${c.ffn}) must be divisible by the TP degree t = ${t} (gate and up are split by columns, down by rows): legal t for ffn = ${c.ffn} are ${list(legal)}.`,
    });
  }
  if (c.sp && !bad.has('s') && c.s % t !== 0) {
    const legal = degreesWhere((u) => c.s % u === 0);
    errors.push({
      rule: 'seq-divisible-by-tp',
      field: 's',
      fields: ['s', 'tp', 'sp'],
      legal,
      legalFor: 'tp',
      message: `with sequence parallel the sequence length s (${c.s}) must be divisible by the TP degree t = ${t} (each rank keeps s/t tokens): legal t for s = ${c.s} are ${list(legal)}, or turn sequence parallel off.`,
    });
  }
  if (c.sp && t === 1) {
    notes.push({
      rule: 'sp-without-tp',
      field: 'sp',
      fields: ['sp', 'tp'],
      message:
        'sequence parallel changes nothing at t = 1 (Megatron disables it): every rank already holds all s tokens.',
    });
  }
  if (!bad.has('vocab') && c.vocab > 0) {
    const vp = paddedVocab(c);
    if (vp !== c.vocab) {
      notes.push({
        rule: 'vocab-padding',
        field: 'vocab',
        fields: ['vocab', 'tp'],
        message: `vocabulary ${c.vocab} is padded to ${vp} (the next multiple of t = ${t}) with ${vp - c.vocab} unused row${vp - c.vocab > 1 ? 's' : ''}; each rank holds ${vp / t} rows.`,
      });
    }
  }
}

/** Chunked TP overlap (tp-overlap.ts): under SP c divides t or is t·m with m dividing s/t, without SP c divides s. */
function checkTpOverlap(c: LayerConfig, errors: ValidationIssue[], notes: ValidationIssue[]): void {
  const fields: ConfigField[] = ['tpOverlapChunks', 'tp', 's', 'sp'];
  const problem = tpOverlapProblem(c);
  if (problem) errors.push({ rule: 'tp-overlap-chunks', field: 'tpOverlapChunks', fields, message: problem });
  const note = tpOverlapNote(c);
  if (note) notes.push({ rule: 'tp-overlap-chunks', field: 'tpOverlapChunks', fields, message: note });
}

/** Checks every rule before any work; errors state the rule, the offending values and the legal ones. */
export function validateConfig(c: LayerConfig): ValidationResult {
  const errors: ValidationIssue[] = [];
  const notes: ValidationIssue[] = [];
  const bad = checkIntegers(c, errors);
  checkShape(c, bad, errors);
  checkDegree(c, bad, errors, notes);
  if (!bad.has('tp') && !bad.has('s')) checkTpOverlap(c, errors, notes);
  return { ok: errors.length === 0, errors, notes };
}

/** Throws one Error listing every error of validateConfig (notes are not errors). */
export function assertValid(c: LayerConfig): void {
  const { errors } = validateConfig(c);
  if (errors.length === 0) return;
  const lines = errors.map((e) => `- ${e.message}`).join('\n');
  throw new Error(`Invalid layer configuration (${errors.length} error${errors.length > 1 ? 's' : ''}):\n${lines}`);
}
