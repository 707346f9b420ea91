/**
 * The layer's parameters, stored [in, out] (Y = X·W): wqkv [h, (heads + 2·groups)·d] with column
 * blocks [Q | K | V]; wo [heads·d, h]; g1, g2 [h] RMSNorm gains; wfc1 [h, 2·ffn] with column blocks
 * [gate | up]; wdown [ffn, h]; with a vocabulary, emb [V_p, h] and the untied output layer wout [h, V_p].
 */
export const weightNames = ['wqkv', 'wo', 'g1', 'g2', 'wfc1', 'wdown', 'emb', 'wout'] as const;

/** One parameter's name. */
export type WeightName = (typeof weightNames)[number];

/**
 * The layer's parameters in Megatron's registration order (embedding; TransformerLayer:
 * input_layernorm, self_attention linear_qkv, linear_proj, pre_mlp_layernorm, mlp linear_fc1,
 * linear_fc2; output_layer). A gradient buffer places them reversed, as backward produces them.
 */
export const registrationOrder: readonly WeightName[] = ['emb', 'g1', 'wqkv', 'wo', 'g2', 'wfc1', 'wdown', 'wout'];
