import type { LayerConfig } from './config.ts';

/** The control a validation issue belongs to (a LayerConfig key). */
export type ConfigField = keyof Omit<LayerConfig, 'skipSpNormGradAllReduce'>;

/** Rule identifiers, one per check (stable for tests and the page). */
export type ValidationRule =
  | 'integer'
  | 'size-max'
  | 'tp-range'
  | 'finite-positive'
  | 'h-divisible-by-heads'
  | 'head-dim-even'
  | 'head-dim-max'
  | 'heads-divisible-by-groups'
  | 'heads-divisible-by-tp'
  | 'groups-vs-tp'
  | 'qkv-width-divisible-by-tp'
  | 'ffn-divisible-by-tp'
  | 'seq-divisible-by-tp'
  | 'qkv-gather'
  | 'vocab-padding'
  | 'sp-without-tp'
  | 'tp-overlap-chunks';

/**
 * One finding. `field` is the control to show it next to (the size the rule names first);
 * `fields` every control involved (so the page can prefer the one the user just changed);
 * `legal` the values of the control `legalFor` that would pass, all else unchanged
 * (heads or groups for the shape rules, tp for the rules "X % t").
 */
export interface ValidationIssue {
  readonly rule: ValidationRule;
  readonly field: ConfigField;
  readonly fields: readonly ConfigField[];
  readonly message: string;
  readonly legal?: readonly number[];
  readonly legalFor?: ConfigField;
}

/** errors block a run; notes are information (the gathered QKV when groups < t, vocabulary padding, SP at t = 1). */
export interface ValidationResult {
  readonly ok: boolean;
  readonly errors: readonly ValidationIssue[];
  readonly notes: readonly ValidationIssue[];
}

/** Largest TP degree the playground accepts: one worker and one GPUDevice per rank, as many as RankPool starts. */
export const maxTp = 16;

/** Values a message lists before it says how many more there are. */
const listMax = 24;

/** "1, 2, 3" (at most listMax values, then "… and N more") */
export const list = (xs: readonly number[]): string =>
  !xs.length
    ? 'none'
    : xs.length <= listMax
      ? xs.join(', ')
      : `${xs.slice(0, listMax).join(', ')} … and ${xs.length - listMax} more`;

/** The degrees u ∈ [1, maxTp] for which `pred(u)` holds (the legal t a message lists). */
export const degreesWhere = (pred: (t: number) => boolean): number[] =>
  Array.from({ length: maxTp }, (_, i) => i + 1).filter(pred);
