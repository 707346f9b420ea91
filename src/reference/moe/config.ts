// One MoE layer's configuration, spelled as Megatron-Core's TransformerConfig spells it at
// core_v0.19.0 (megatron/core/transformer/transformer_config.py), camel-cased: num_moe_experts →
// numMoeExperts, and so on. Only the options the single-device reference implements are here; the
// parallel sizes (EP, ETP) and the dispatcher belong to the rank program.

/** moe_router_score_function: 'softmax' or 'sigmoid' ('sqrtsoftplus' is not implemented). */
export type MoeScoreFunction = 'softmax' | 'sigmoid';

/** moe_token_drop_policy: keep the highest-probability tokens of an expert, or its earliest ones. */
export type MoeDropPolicy = 'probs' | 'position';

/** An MoE block's configuration (Megatron-Core TransformerConfig fields, core_v0.19.0). */
export interface MoeConfig {
  /** num_moe_experts: E, the routed experts. */
  readonly numMoeExperts: number;
  /** moe_router_topk: k experts per token. */
  readonly moeRouterTopk: number;
  /** moe_ffn_hidden_size: each routed expert's SwiGLU width f_moe (gate and up are [h, f_moe] each). */
  readonly moeFfnHiddenSize: number;
  /** moe_router_score_function. */
  readonly moeRouterScoreFunction: MoeScoreFunction;
  /** moe_router_pre_softmax: softmax over all E before top-k (else top-k of the logits, then softmax over the k); the sigmoid path ignores it, as topk_routing_with_score_function does. */
  readonly moeRouterPreSoftmax: boolean;
  /** moe_aux_loss_coeff: the switch load-balancing loss's coefficient (moe_router_load_balancing_type 'aux_loss'); 0: off. */
  readonly moeAuxLossCoeff: number;
  /** moe_z_loss_coeff: the router z-loss's coefficient; null: off (Megatron's None). */
  readonly moeZLossCoeff: number | null;
  /** moe_expert_capacity_factor: capacity = ceil(T·k/E · factor) tokens per expert; null: dropless. */
  readonly moeExpertCapacityFactor: number | null;
  /** moe_token_drop_policy (used only with a capacity factor). */
  readonly moeTokenDropPolicy: MoeDropPolicy;
  /** moe_pad_expert_input_to_capacity: must be false (padding is not implemented). */
  readonly moePadExpertInputToCapacity: boolean;
  /** moe_shared_expert_intermediate_size: the shared expert's SwiGLU width; null: no shared expert. */
  readonly moeSharedExpertIntermediateSize: number | null;
  /**
   * Not Megatron's: a fixed bias on the router logits that makes imbalance and drops visible,
   * logit[t, e] += routerSkew · (E − 1 − 2e) / (E − 1) (routerBias): expert 0 gains routerSkew,
   * expert E − 1 loses it, linear between. 0: none. Not trained (it has no gradient).
   */
  readonly routerSkew: number;
}

/** Megatron-Core's defaults (transformer_config.py) for everything but E, k and f_moe. */
export const moeConfigDefaults = {
  moeRouterScoreFunction: 'softmax',
  moeRouterPreSoftmax: false,
  moeAuxLossCoeff: 0,
  moeZLossCoeff: null,
  moeExpertCapacityFactor: null,
  moeTokenDropPolicy: 'probs',
  moePadExpertInputToCapacity: false,
  moeSharedExpertIntermediateSize: null,
  routerSkew: 0,
} as const satisfies Partial<MoeConfig>;

/** A full MoE config from E, k, f_moe and any overrides of the defaults. */
export function moeConfig(
  sizes: Pick<MoeConfig, 'numMoeExperts' | 'moeRouterTopk' | 'moeFfnHiddenSize'>,
  overrides: Partial<MoeConfig> = {},
): MoeConfig {
  return { ...moeConfigDefaults, ...sizes, ...overrides };
}

const isPositiveInt = (v: number): boolean => Number.isInteger(v) && v >= 1;

/**
 * Every problem of `c`, one message each (what is wrong and what to write): empty when valid.
 * Sources: transformer_config.py __post_init__ at core_v0.19.0 (k = 1 with softmax after top-k,
 * padding without a capacity factor, the shared expert's size) and the ranges the formulas need.
 */
export function moeConfigErrors(c: MoeConfig): string[] {
  const errors: string[] = [];
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  if (!isPositiveInt(E)) errors.push(`numMoeExperts (num_moe_experts) is ${E}; write an integer ≥ 1.`);
  if (!isPositiveInt(k) || (isPositiveInt(E) && k > E))
    errors.push(
      `moeRouterTopk (moe_router_topk) is ${k}; write an integer in [1, ${isPositiveInt(E) ? E : 'numMoeExperts'}] (1 ≤ k ≤ E).`,
    );
  if (!isPositiveInt(c.moeFfnHiddenSize))
    errors.push(`moeFfnHiddenSize (moe_ffn_hidden_size) is ${c.moeFfnHiddenSize}; write an integer ≥ 1.`);
  if (c.moeRouterScoreFunction !== 'softmax' && c.moeRouterScoreFunction !== 'sigmoid')
    errors.push(
      `moeRouterScoreFunction (moe_router_score_function) is "${String(c.moeRouterScoreFunction)}"; write "softmax" or "sigmoid".`,
    );
  // transformer_config.py: "Please use --moe-router-pre-softmax when topk is 1" (a softmax over one
  // selected logit is 1 whatever the logit: the router would get no gradient).
  if (k === 1 && c.moeRouterScoreFunction === 'softmax' && !c.moeRouterPreSoftmax)
    errors.push(
      'moeRouterTopk = 1 with softmax after top-k gives the router no gradient; write moeRouterPreSoftmax: true (--moe-router-pre-softmax).',
    );
  if (!(Number.isFinite(c.moeAuxLossCoeff) && c.moeAuxLossCoeff >= 0))
    errors.push(
      `moeAuxLossCoeff (moe_aux_loss_coeff) is ${c.moeAuxLossCoeff}; write a finite number ≥ 0 (0: no aux loss).`,
    );
  if (c.moeZLossCoeff !== null && !(Number.isFinite(c.moeZLossCoeff) && c.moeZLossCoeff >= 0))
    errors.push(
      `moeZLossCoeff (moe_z_loss_coeff) is ${c.moeZLossCoeff}; write a finite number ≥ 0, or null for no z-loss.`,
    );
  const cf = c.moeExpertCapacityFactor;
  if (cf !== null && !(Number.isFinite(cf) && cf > 0))
    errors.push(
      `moeExpertCapacityFactor (moe_expert_capacity_factor) is ${cf}; write a finite number > 0, or null for dropless.`,
    );
  if (c.moeTokenDropPolicy !== 'probs' && c.moeTokenDropPolicy !== 'position')
    errors.push(
      `moeTokenDropPolicy (moe_token_drop_policy) is "${String(c.moeTokenDropPolicy)}"; write "probs" or "position".`,
    );
  if (c.moePadExpertInputToCapacity)
    errors.push('moePadExpertInputToCapacity (moe_pad_expert_input_to_capacity) is not implemented; write false.');
  const fs = c.moeSharedExpertIntermediateSize;
  if (fs !== null && !isPositiveInt(fs))
    errors.push(
      `moeSharedExpertIntermediateSize (moe_shared_expert_intermediate_size) is ${fs}; write an integer ≥ 1, or null for no shared expert.`,
    );
  if (!Number.isFinite(c.routerSkew))
    errors.push(
      `routerSkew is ${c.routerSkew}; write a finite number (0: no skew; 2: expert 0's logits +2, expert E − 1's −2).`,
    );
  return errors;
}

/** Throws one error listing every problem of `c` (moeConfigErrors); returns `c` when valid. */
export function checkMoeConfig(c: MoeConfig): MoeConfig {
  const errors = moeConfigErrors(c);
  if (errors.length > 0) throw new Error(`MoE config: ${errors.join(' ')}`);
  return c;
}

/**
 * Tokens each expert keeps under a capacity factor: ceil((T·k / E) · factor), moe_utils.py
 * get_capacity(num_tokens = T·k) as apply_router_token_dropping calls it; null when dropless.
 * The float64 operations are Python's, in its order, so the value is Megatron's bit for bit.
 */
export function expertCapacity(c: MoeConfig, tokens: number): number | null {
  const cf = c.moeExpertCapacityFactor;
  return cf === null ? null : Math.ceil(((tokens * c.moeRouterTopk) / c.numMoeExperts) * cf);
}

/** The router skew's bias per expert [E]: b_e = routerSkew · (E − 1 − 2e) / (E − 1) (0 when E = 1). */
export function routerBias(c: MoeConfig): Float64Array {
  const E = c.numMoeExperts;
  return Float64Array.from({ length: E }, (_, e) => (E > 1 ? (c.routerSkew * (E - 1 - 2 * e)) / (E - 1) : 0));
}

/** logits [T, E] += routerBias(c) on every row, in place; returns them. */
export function addRouterBias<A extends Float32Array | Float64Array>(c: MoeConfig, logits: A): A {
  if (c.routerSkew === 0) return logits;
  const b = routerBias(c);
  const E = b.length;
  for (let i = 0; i < logits.length; i++) logits[i] += b[i % E]!;
  return logits;
}
