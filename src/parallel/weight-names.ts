/**
 * The layer's parameters, stored [in, out] (Y = X·W): wqkv [h, (heads + 2·groups)·d] with column
 * blocks [Q | K | V]; wo [heads·d, h]; g1, g2 [h] RMSNorm gains; wfc1 [h, 2·ffn] with column blocks
 * [gate | up]; wdown [ffn, h]; with a vocabulary, emb [V_p, h] and the untied output layer wout [h, V_p].
 */
export const weightNames = ['wqkv', 'wo', 'g1', 'g2', 'wfc1', 'wdown', 'emb', 'wout'] as const;

/** One parameter's name. */
export type WeightName = (typeof weightNames)[number];
